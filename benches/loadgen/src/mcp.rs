//! MCP over Streamable HTTP from the client's side: one HTTP/1.1 keep-alive connection per
//! worker, request building for both eras, and a reply reader that takes a single
//! `application/json` body or a `text/event-stream` of messages.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use sse_stream::SseStream;
use tokio::net::TcpStream;

pub const LEGACY_VERSION: &str = "2025-11-25";
pub const STATELESS_VERSION: &str = "2026-07-28";

pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";

pub const CLIENT_NAME: &str = "mcp-bench";
pub const CLIENT_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Where requests go: the socket address, and the Host header and path of the URL.
#[derive(Clone, Debug)]
pub struct Target {
    pub addr: SocketAddr,
    pub authority: HeaderValue,
    pub path: String,
}

impl Target {
    pub async fn parse(url: &str) -> Result<Target, String> {
        let uri: hyper::Uri = url.parse().map_err(|e| format!("bad URL {url:?}: {e}"))?;
        if uri.scheme_str() != Some("http") {
            return Err(format!("only http:// URLs are supported: {url:?}"));
        }
        let authority = uri.authority().ok_or_else(|| format!("no host in {url:?}"))?;
        let host = authority.host().trim_start_matches('[').trim_end_matches(']');
        let port = authority.port_u16().unwrap_or(80);
        let addr = tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| format!("cannot resolve {host}: {e}"))?
            .next()
            .ok_or_else(|| format!("no address for {host}"))?;
        let path = uri.path_and_query().map(|p| p.as_str().to_string()).unwrap_or_else(|| "/".into());
        Ok(Target {
            addr,
            authority: HeaderValue::from_str(authority.as_str()).map_err(|e| e.to_string())?,
            path,
        })
    }
}

/// One HTTP/1.1 connection; requests on it go one after another (keep-alive).
pub struct Conn {
    sender: SendRequest<Full<Bytes>>,
}

impl Conn {
    pub async fn connect(t: &Target) -> Result<Conn, String> {
        let stream = TcpStream::connect(t.addr).await.map_err(|e| format!("connect {}: {e}", t.addr))?;
        let _ = stream.set_nodelay(true);
        let (sender, conn) = hyper::client::conn::http1::Builder::new()
            .handshake(TokioIo::new(stream))
            .await
            .map_err(|e| format!("handshake: {e}"))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(Conn { sender })
    }

    pub fn is_closed(&self) -> bool {
        self.sender.is_closed()
    }

    /// Sends one request and returns the reply once its headers are in.
    pub async fn send(&mut self, req: Request<Full<Bytes>>) -> Result<Reply, String> {
        self.sender.ready().await.map_err(|e| format!("connection not usable: {e}"))?;
        let resp = self.sender.send_request(req).await.map_err(|e| format!("send: {e}"))?;
        Ok(Reply::new(resp))
    }
}

/// A connection that reconnects when the previous exchange left it unusable.
pub struct Link {
    pub target: Target,
    conn: Option<Conn>,
}

impl Link {
    pub fn new(target: Target) -> Link {
        Link { target, conn: None }
    }

    pub async fn send(&mut self, req: Request<Full<Bytes>>) -> Result<Reply, String> {
        if self.conn.as_ref().is_none_or(Conn::is_closed) {
            self.conn = Some(Conn::connect(&self.target).await?);
        }
        let r = self.conn.as_mut().expect("connected").send(req).await;
        if r.is_err() {
            self.conn = None;
        }
        r
    }

    /// Forgets the connection (it is closed once its last reply is dropped).
    pub fn drop_conn(&mut self) {
        self.conn = None;
    }
}

/// The headers of one request, apart from Host, Content-Type and Accept.
pub type Headers = Vec<(HeaderName, HeaderValue)>;

pub const ACCEPT_BOTH: &str = "application/json, text/event-stream";
pub const ACCEPT_SSE: &str = "text/event-stream";

pub fn build(t: &Target, method: Method, accept: &'static str, headers: &Headers, body: Option<Vec<u8>>) -> Request<Full<Bytes>> {
    let mut b = Request::builder()
        .method(method)
        .uri(t.path.as_str())
        .header(hyper::header::HOST, t.authority.clone())
        .header(hyper::header::ACCEPT, HeaderValue::from_static(accept));
    if body.is_some() {
        b = b.header(hyper::header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    }
    let hm = b.headers_mut().expect("valid builder");
    for (k, v) in headers {
        hm.append(k.clone(), v.clone());
    }
    b.body(Full::new(body.map(Bytes::from).unwrap_or_default())).expect("valid request")
}

pub fn post(t: &Target, headers: &Headers, body: &Value) -> Request<Full<Bytes>> {
    build(t, Method::POST, ACCEPT_BOTH, headers, Some(serde_json::to_vec(body).expect("json")))
}

pub fn hv(s: &str) -> HeaderValue {
    HeaderValue::from_str(s).expect("header value")
}

pub static H_SESSION: HeaderName = HeaderName::from_static("mcp-session-id");
pub static H_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
pub static H_METHOD: HeaderName = HeaderName::from_static("mcp-method");
pub static H_NAME: HeaderName = HeaderName::from_static("mcp-name");
pub static H_LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// The headers of a 2026-07-28 request: version, method and, for tools/call, the tool name.
pub fn modern_headers(method: &str, name: Option<&str>) -> Headers {
    let mut h = vec![
        (H_VERSION.clone(), HeaderValue::from_static(STATELESS_VERSION)),
        (H_METHOD.clone(), hv(method)),
    ];
    if let Some(n) = name {
        h.push((H_NAME.clone(), hv(n)));
    }
    h
}

/// The `_meta` envelope of a 2026-07-28 request, as the Python SDK 2.x client stamps it.
pub fn modern_meta(capabilities: &Value) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert(META_PROTOCOL_VERSION.into(), json!(STATELESS_VERSION));
    m.insert(META_CLIENT_CAPABILITIES.into(), capabilities.clone());
    m.insert(META_CLIENT_INFO.into(), json!({"name": CLIENT_NAME, "version": CLIENT_VERSION}));
    m
}

/// A JSON-RPC request body.
pub fn request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// One message read from a reply.
pub struct Event {
    pub msg: Value,
}

enum Body {
    Json(Option<Incoming>),
    Sse(SseStream<Incoming>),
}

/// A reply whose headers arrived; its body is read message by message.
pub struct Reply {
    pub status: u16,
    pub session_id: Option<String>,
    pub content_type: String,
    /// The id of the last SSE event seen, data or not (priming events carry only an id).
    pub last_event_id: Option<String>,
    body: Body,
}

impl Reply {
    fn new(resp: hyper::Response<Incoming>) -> Reply {
        let h = resp.headers();
        let session_id = h.get(&H_SESSION).and_then(|v| v.to_str().ok()).map(str::to_string);
        let content_type = h
            .get(hyper::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        let status = resp.status().as_u16();
        let body = resp.into_body();
        let body = if content_type.starts_with("text/event-stream") {
            Body::Sse(SseStream::new(body))
        } else {
            Body::Json(Some(body))
        };
        Reply { status, session_id, content_type, last_event_id: None, body }
    }

    pub fn is_sse(&self) -> bool {
        matches!(self.body, Body::Sse(_))
    }

    /// The next JSON-RPC message, or None at the end of the body. SSE events without data
    /// (priming events) and comments are skipped; their ids are still remembered.
    pub async fn next(&mut self) -> Result<Option<Event>, String> {
        match &mut self.body {
            Body::Json(body) => {
                let Some(b) = body.take() else { return Ok(None) };
                let bytes = b.collect().await.map_err(|e| format!("reading body: {e}"))?.to_bytes();
                if bytes.iter().all(u8::is_ascii_whitespace) {
                    return Ok(None);
                }
                let msg = serde_json::from_slice(&bytes)
                    .map_err(|e| format!("body is not JSON ({e}): {}", snippet(&bytes)))?;
                Ok(Some(Event { msg }))
            }
            Body::Sse(s) => loop {
                match s.next().await {
                    None => return Ok(None),
                    Some(Err(e)) => return Err(format!("SSE stream broke: {e}")),
                    Some(Ok(ev)) => {
                        if ev.id.is_some() {
                            self.last_event_id = ev.id.clone();
                        }
                        let Some(data) = ev.data.filter(|d| !d.trim().is_empty()) else { continue };
                        let msg = serde_json::from_str(&data)
                            .map_err(|e| format!("SSE data is not JSON ({e}): {}", snippet(data.as_bytes())))?;
                        return Ok(Some(Event { msg }));
                    }
                }
            },
        }
    }

    /// Reads to the end of the body for at most `grace`; false if it did not end by then
    /// (the connection must then be dropped).
    pub async fn drain(&mut self, grace: Duration) -> bool {
        matches!(
            tokio::time::timeout(grace, async {
                loop {
                    match self.next().await {
                        Ok(Some(_)) => continue,
                        Ok(None) => return true,
                        Err(_) => return false,
                    }
                }
            })
            .await,
            Ok(true)
        )
    }

    /// The body as text (for error reports), at most 300 bytes of it, within 2 s.
    pub async fn text(mut self) -> String {
        let b = match &mut self.body {
            Body::Json(b) => b.take(),
            Body::Sse(_) => return "(event stream)".into(),
        };
        let Some(b) = b else { return String::new() };
        match tokio::time::timeout(Duration::from_secs(2), b.collect()).await {
            Ok(Ok(c)) => snippet(&c.to_bytes()),
            _ => "(body not read)".into(),
        }
    }
}

pub fn snippet(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(&b[..b.len().min(300)]).into_owned();
    if b.len() > 300 { s + "…" } else { s }
}

/// What a message read from the server is.
pub enum Kind<'a> {
    Response { id: &'a Value },
    Request { id: &'a Value, method: &'a str },
    Notification { method: &'a str },
    Other,
}

pub fn kind(v: &Value) -> Kind<'_> {
    match (v.get("id"), v.get("method").and_then(Value::as_str)) {
        (Some(id), Some(method)) => Kind::Request { id, method },
        (None, Some(method)) => Kind::Notification { method },
        (Some(id), None) if v.get("result").is_some() || v.get("error").is_some() => Kind::Response { id },
        _ => Kind::Other,
    }
}

/// A handshake-era session: its id, sent back on every request with the version header.
#[derive(Clone)]
pub struct Session {
    pub headers: Headers,
}

impl Session {
    /// The session `id` (an Mcp-Session-Id the server gave) with the version header.
    pub fn legacy(id: &str) -> Session {
        Session {
            headers: vec![
                (H_SESSION.clone(), hv(id)),
                (H_VERSION.clone(), HeaderValue::from_static(LEGACY_VERSION)),
            ],
        }
    }

    /// The session's id (its Mcp-Session-Id header).
    pub fn id(&self) -> &str {
        self.headers.iter().find(|(k, _)| *k == H_SESSION).and_then(|(_, v)| v.to_str().ok()).unwrap_or("")
    }
}

/// initialize + notifications/initialized on `link`; `capabilities` are the client's.
pub async fn open_session(link: &mut Link, capabilities: Value) -> Result<Session, String> {
    let body = request(
        0,
        "initialize",
        json!({
            "protocolVersion": LEGACY_VERSION,
            "capabilities": capabilities,
            "clientInfo": {"name": CLIENT_NAME, "version": CLIENT_VERSION},
        }),
    );
    let mut r = link.send(post(&link.target, &vec![], &body)).await?;
    if r.status != 200 {
        let st = r.status;
        return Err(format!("initialize: HTTP {st}: {}", r.text().await));
    }
    let sid = r.session_id.clone().ok_or("initialize: no Mcp-Session-Id header in the reply")?;
    let result = loop {
        let ev = r.next().await?.ok_or("initialize: the reply ended without a response")?;
        if let Kind::Response { .. } = kind(&ev.msg) {
            break ev.msg;
        }
    };
    if !r.drain(Duration::from_secs(2)).await {
        link.drop_conn();
    }
    let pv = result.pointer("/result/protocolVersion").and_then(Value::as_str);
    if pv != Some(LEGACY_VERSION) {
        return Err(format!("initialize: protocolVersion {pv:?}, wanted {LEGACY_VERSION}: {result}"));
    }
    let s = Session::legacy(&sid);
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = link.send(post(&link.target, &s.headers, &note)).await?;
    if r.status != 202 {
        let st = r.status;
        return Err(format!("notifications/initialized: HTTP {st} (wanted 202): {}", r.text().await));
    }
    drop(r);
    Ok(s)
}

/// DELETE the session; Ok if the server answered 2xx within `timeout`. The link's
/// connection is kept for the next request unless the exchange left it unusable.
pub async fn close_session(link: &mut Link, s: &Session, timeout: Duration) -> Result<(), String> {
    let req = build(&link.target, Method::DELETE, ACCEPT_BOTH, &s.headers, None);
    match tokio::time::timeout(timeout, link.send(req)).await {
        Ok(Ok(mut r)) => {
            let st = r.status;
            if !(200..300).contains(&st) {
                let text = r.text().await;
                link.drop_conn();
                return Err(format!("DELETE: HTTP {st}: {text}"));
            }
            if !r.drain(Duration::from_secs(1)).await {
                link.drop_conn();
            }
            Ok(())
        }
        Ok(Err(e)) => Err(format!("DELETE: {e}")),
        Err(_) => {
            link.drop_conn();
            Err(format!("DELETE: no reply within {timeout:?}"))
        }
    }
}

/// The text of `result.content[0]` if it is a text block.
pub fn first_text(result: &Value) -> Option<&str> {
    let c = result.get("content")?.get(0)?;
    if c.get("type")?.as_str()? != "text" {
        return None;
    }
    c.get("text")?.as_str()
}
