//! Shared test harness: starts the real `mcp-actor` binary on an ephemeral 127.0.0.1 port
//! and gives a small raw MCP client over real HTTP.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::pin::Pin;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use sse_stream::{Sse, SseByteStream};

pub const LATEST: &str = "2025-11-25";
pub const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// A running server binary; killed on drop.
pub struct TestServer {
    pub url: String,
    pub addr: String,
    child: Child,
    _stdout: BufReader<std::process::ChildStdout>,
    _config: Option<tempfile_path::TempPath>,
}

mod tempfile_path {
    /// A file removed on drop.
    pub struct TempPath(pub std::path::PathBuf);
    impl Drop for TempPath {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

impl TestServer {
    /// The binary on its embedded default configuration.
    pub fn start() -> TestServer {
        Self::spawn(None)
    }

    /// The binary with `overrides` appended to the default configuration (TOML tables that
    /// replace the defaults' keys are written whole, so pass complete tables).
    pub fn with_config(toml: &str) -> TestServer {
        Self::spawn(Some(toml))
    }

    /// The binary on the configuration file at `path` (left in place, so a test can edit it
    /// and reload), with extra environment variables.
    pub fn with_config_file(path: &std::path::Path, env: &[(&str, &str)]) -> TestServer {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-actor"));
        cmd.args(["--listen", "127.0.0.1:0", "--config"]).arg(path);
        for (k, v) in env {
            cmd.env(k, v);
        }
        Self::run(cmd, None, None)
    }

    /// The binary's process id, to signal it (SIGHUP reloads).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn spawn(config: Option<&str>) -> TestServer {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-actor"));
        cmd.args(["--listen", "127.0.0.1:0"]);
        let config_file = config.map(|text| {
            let path = std::env::temp_dir().join(format!("mcp-actor-test-{}.toml", uuid_like()));
            let mut f = std::fs::File::create(&path).expect("write test config");
            f.write_all(text.as_bytes()).expect("write test config");
            cmd.arg("--config").arg(&path);
            tempfile_path::TempPath(path)
        });
        Self::run(cmd, config_file, None)
    }

    fn run(
        mut cmd: Command,
        config_file: Option<tempfile_path::TempPath>,
        log_file: Option<std::fs::File>,
    ) -> TestServer {
        // MCP_TEST_SERVER_LOGS=1 shows the server's logs, for debugging a test.
        let logs = std::env::var_os("MCP_TEST_SERVER_LOGS").is_some();
        let stderr = match log_file {
            Some(file) => Stdio::from(file),
            None if logs => Stdio::inherit(),
            None => Stdio::null(),
        };
        cmd.stdout(Stdio::piped())
            .stderr(stderr)
            .env("RUST_LOG", if logs { "info" } else { "warn" });
        let mut child = cmd.spawn().expect("start mcp-actor");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        let mut stdout = BufReader::new(stdout);
        stdout.read_line(&mut line).expect("read listening line");
        let url = line
            .trim()
            .strip_prefix("mcp-actor listening on ")
            .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
            .to_string();
        let addr = url
            .trim_start_matches("http://")
            .split('/')
            .next()
            .unwrap_or_default()
            .to_string();
        TestServer {
            url,
            addr,
            child,
            _stdout: stdout,
            _config: config_file,
        }
    }

    pub fn client(&self) -> Client {
        Client::new(&self.url)
    }

    /// The binary on `toml`, its log (at `RUST_LOG=warn`) written to `log`.
    pub fn with_config_logging_to(toml: &str, log: &std::path::Path) -> TestServer {
        let path = std::env::temp_dir().join(format!("mcp-actor-test-{}.toml", uuid_like()));
        std::fs::write(&path, toml).expect("write test config");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-actor"));
        cmd.args(["--listen", "127.0.0.1:0", "--config"]).arg(&path);
        let file = std::fs::File::create(log).expect("create log file");
        Self::run(cmd, Some(tempfile_path::TempPath(path)), Some(file))
    }

    /// Sends SIGTERM and waits up to `limit` for the process to exit; `None` if it did not.
    pub fn terminate(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
        let deadline = std::time::Instant::now() + limit;
        while std::time::Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("wait for the server") {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A directory removed with its contents on drop.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    pub fn new(label: &str) -> TempDir {
        let path = std::env::temp_dir().join(format!("mcp-actor-{label}-{}", uuid_like()));
        std::fs::create_dir_all(&path).expect("create temp dir");
        TempDir(path)
    }

    pub fn path(&self) -> &std::path::Path {
        &self.0
    }

    /// Writes `contents` to `relative` (creating parent folders) and returns its path.
    pub fn write(&self, relative: &str, contents: &str) -> std::path::PathBuf {
        let path = self.0.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create parent");
        }
        std::fs::write(&path, contents).expect("write file");
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Live processes whose command line contains `needle` (zombies have no command line, so
/// they never match).
pub fn processes_matching(needle: &str) -> Vec<u32> {
    all_pids()
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| {
                    String::from_utf8_lossy(&c)
                        .replace('\0', " ")
                        .contains(needle)
                })
                .unwrap_or(false)
        })
        .collect()
}

/// Zombie children of process `parent` (processes that exited and that `parent` has not
/// waited for).
pub fn zombie_children(parent: u32) -> Vec<u32> {
    let parent = parent.to_string();
    all_pids()
        .into_iter()
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // The command name, in parentheses, may contain spaces: fields follow the last ')'.
            let fields: Vec<&str> = stat
                .rsplit_once(')')
                .map(|(_, rest)| rest.split_whitespace().collect())
                .unwrap_or_default();
            fields.first() == Some(&"Z") && fields.get(1) == Some(&parent.as_str())
        })
        .collect()
}

fn all_pids() -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .collect()
}

/// Waits up to `wait` for `check` to hold.
pub async fn eventually(wait: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        if check() {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A unique token for this test process, to find its child processes in /proc.
pub fn unique() -> String {
    uuid_like().replace('-', "")
}

fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A raw HTTP client for the MCP endpoint.
#[derive(Clone)]
pub struct Client {
    pub http: reqwest::Client,
    pub url: String,
}

/// A decoded reply to a POST.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub content_type: String,
    /// The JSON-RPC messages in the body (one for JSON, every data event for SSE).
    pub messages: Vec<Value>,
    /// SSE event ids in order (including the priming event's).
    pub event_ids: Vec<String>,
    /// The raw body for JSON replies.
    pub body: Option<Value>,
}

impl Reply {
    /// The response carrying `id`.
    pub fn response(&self, id: &Value) -> Option<&Value> {
        self.messages.iter().find(|m| {
            m.get("id") == Some(id) && (m.get("result").is_some() || m.get("error").is_some())
        })
    }

    pub fn is_sse(&self) -> bool {
        self.content_type.starts_with("text/event-stream")
    }
}

impl Client {
    pub fn new(url: &str) -> Client {
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(64)
            .build()
            .expect("client");
        Client {
            http,
            url: url.to_string(),
        }
    }

    /// POSTs a JSON body with the standard headers plus `extra`.
    pub async fn post_raw(&self, body: &Value, extra: &[(&str, &str)]) -> reqwest::Response {
        let mut req = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", ACCEPT_BOTH)
            .body(body.to_string());
        for (k, v) in extra {
            req = req.header(*k, *v);
        }
        req.send().await.expect("POST")
    }

    /// Sends `initialize` and returns the session (no `notifications/initialized` yet).
    pub async fn initialize(&self, version: &str, capabilities: Value) -> Session {
        let body = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": { "protocolVersion": version, "capabilities": capabilities,
                        "clientInfo": { "name": "mcp-actor-tests", "version": "1" } }
        });
        let resp = self.post_raw(&body, &[]).await;
        assert_eq!(resp.status(), StatusCode::OK, "initialize failed");
        let id = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("Mcp-Session-Id header")
            .to_string();
        let result: Value = resp.json().await.expect("initialize JSON");
        let negotiated = result["result"]["protocolVersion"]
            .as_str()
            .expect("protocolVersion")
            .to_string();
        Session {
            client: self.clone(),
            id,
            version: negotiated,
            init_result: result,
        }
    }

    /// `initialize` + `notifications/initialized`, with elicitation, sampling and roots.
    pub async fn connect(&self) -> Session {
        let session = self
            .initialize(
                LATEST,
                json!({ "elicitation": {}, "sampling": {}, "roots": {} }),
            )
            .await;
        assert_eq!(
            session.notify("notifications/initialized", None).await,
            StatusCode::ACCEPTED
        );
        session
    }
}

/// An initialized session.
#[derive(Clone)]
pub struct Session {
    pub client: Client,
    pub id: String,
    pub version: String,
    pub init_result: Value,
}

impl Session {
    fn headers(&self) -> Vec<(&'static str, String)> {
        vec![
            ("mcp-session-id", self.id.clone()),
            ("mcp-protocol-version", self.version.clone()),
        ]
    }

    /// POSTs a JSON-RPC value with the session headers.
    pub async fn post_value(&self, body: &Value) -> reqwest::Response {
        let headers = self.headers();
        let extra: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        self.client.post_raw(body, &extra).await
    }

    /// POSTs and reads the whole reply.
    pub async fn post(&self, body: &Value) -> Reply {
        read_reply(self.post_value(body).await).await
    }

    /// Sends a request and reads the whole reply.
    pub async fn request(&self, id: Value, method: &str, params: Value) -> Reply {
        self.post(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await
    }

    /// Sends a request and returns the `result` of its response, panicking on an error.
    pub async fn call(&self, id: Value, method: &str, params: Value) -> Value {
        let reply = self.request(id.clone(), method, params).await;
        assert_eq!(reply.status, StatusCode::OK, "{method}: {reply:?}");
        let response = reply
            .response(&id)
            .unwrap_or_else(|| panic!("no response for {id} in {reply:?}"));
        response
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{method} failed: {response}"))
    }

    /// `tools/call` returning the first text content.
    pub async fn call_tool_text(&self, id: Value, name: &str, arguments: Value) -> String {
        let result = self
            .call(
                id,
                "tools/call",
                json!({ "name": name, "arguments": arguments }),
            )
            .await;
        result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    pub async fn notify(&self, method: &str, params: Option<Value>) -> StatusCode {
        let mut body = json!({ "jsonrpc": "2.0", "method": method });
        if let Some(p) = params {
            body["params"] = p;
        }
        self.post_value(&body).await.status()
    }

    /// POSTs a JSON-RPC response (the answer to a server→client request).
    pub async fn answer(&self, id: &Value, result: Value) -> StatusCode {
        self.post_value(&json!({ "jsonrpc": "2.0", "id": id, "result": result }))
            .await
            .status()
    }

    /// Opens a GET stream, optionally resuming with `Last-Event-ID`.
    pub async fn get(&self, last_event_id: Option<&str>) -> reqwest::Response {
        let mut req = self
            .client
            .http
            .get(&self.client.url)
            .header("accept", "text/event-stream");
        for (k, v) in self.headers() {
            req = req.header(k, v);
        }
        if let Some(id) = last_event_id {
            req = req.header("last-event-id", id);
        }
        req.send().await.expect("GET")
    }

    pub async fn delete(&self) -> StatusCode {
        let mut req = self.client.http.delete(&self.client.url);
        for (k, v) in self.headers() {
            req = req.header(k, v);
        }
        req.send().await.expect("DELETE").status()
    }
}

/// One SSE event, decoded.
#[derive(Debug, Clone)]
pub struct Event {
    pub id: Option<String>,
    pub retry: Option<u64>,
    /// `None` for events without data, `Some(Value::Null)` for an empty data field.
    pub data: Option<Value>,
}

type EventStream = Pin<Box<dyn Stream<Item = Result<Sse, sse_stream::Error>> + Send>>;

/// Reads SSE events from a response incrementally.
pub struct SseReader {
    inner: EventStream,
}

impl SseReader {
    pub fn new(resp: reqwest::Response) -> SseReader {
        SseReader {
            inner: Box::pin(SseByteStream::new(resp.bytes_stream())),
        }
    }

    /// The next event with an id or data (keep-alive comments are skipped), or `None` when
    /// the stream ends or `wait` passes.
    pub async fn next(&mut self, wait: Duration) -> Option<Event> {
        loop {
            let item = tokio::time::timeout(wait, self.inner.next()).await.ok()??;
            let sse = item.ok()?;
            if sse.id.is_none() && sse.data.is_none() {
                continue;
            }
            let data = sse.data.map(|d| {
                if d.is_empty() {
                    Value::Null
                } else {
                    serde_json::from_str(&d).expect("event data is JSON")
                }
            });
            return Some(Event {
                id: sse.id,
                retry: sse.retry,
                data,
            });
        }
    }

    /// The next event that carries a JSON-RPC message.
    pub async fn next_message(&mut self, wait: Duration) -> Option<(Option<String>, Value)> {
        loop {
            let event = self.next(wait).await?;
            if let Some(data) = event.data.filter(|d| !d.is_null()) {
                return Some((event.id, data));
            }
        }
    }
}

/// Reads a whole POST reply (JSON or SSE until the stream ends).
pub async fn read_reply(resp: reqwest::Response) -> Reply {
    let status = resp.status();
    let headers = resp.headers().clone();
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    if content_type.starts_with("text/event-stream") {
        let mut reader = SseReader::new(resp);
        let mut messages = Vec::new();
        let mut event_ids = Vec::new();
        while let Some(event) = reader.next(Duration::from_secs(30)).await {
            if let Some(id) = event.id {
                event_ids.push(id);
            }
            if let Some(data) = event.data.filter(|d| !d.is_null()) {
                messages.push(data);
            }
        }
        return Reply {
            status,
            headers,
            content_type,
            messages,
            event_ids,
            body: None,
        };
    }
    let text = resp.text().await.unwrap_or_default();
    let body: Option<Value> = serde_json::from_str(&text).ok();
    let messages = match &body {
        Some(Value::Array(items)) => items.clone(),
        Some(v) => vec![v.clone()],
        None => Vec::new(),
    };
    Reply {
        status,
        headers,
        content_type,
        messages,
        event_ids: Vec::new(),
        body,
    }
}

// ----- Helpers for the status, feature and lifecycle tests -----

/// The four builtin tools as `[[tools]]` entries, for configurations passed whole to
/// [`TestServer::with_config`].
pub const BUILTIN_TOOLS_TOML: &str = "
[[tools]]
builtin = \"echo\"

[[tools]]
builtin = \"sleep\"

[[tools]]
builtin = \"ask\"

[[tools]]
builtin = \"sample\"
";

impl TestServer {
    /// A client whose every request, body included, fails after `limit`, so a test can
    /// never hang on an unresponsive server.
    pub fn bounded_client(&self, limit: Duration) -> Client {
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(64)
            .timeout(limit)
            .build()
            .expect("client");
        Client {
            http,
            url: self.url.clone(),
        }
    }

    /// The endpoint path, for example `/mcp`.
    pub fn path(&self) -> &str {
        let after_scheme = self.url.trim_start_matches("http://");
        after_scheme
            .find('/')
            .map_or("/", |slash| &after_scheme[slash..])
    }
}

impl Session {
    /// `req` with this session's `Mcp-Session-Id` and `MCP-Protocol-Version` headers.
    pub fn with_session_headers(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        self.headers()
            .into_iter()
            .fold(req, |req, (k, v)| req.header(k, v))
    }
}

impl Reply {
    /// The JSON-RPC error code of a refusal (a JSON body with `error` and no useful id).
    pub fn error_code(&self) -> Option<i64> {
        self.body.as_ref()?.get("error")?.get("code")?.as_i64()
    }
}

/// A reply read off a hand-written HTTP/1.1 exchange.
#[derive(Debug)]
pub struct RawReply {
    pub status: u16,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body; empty for SSE replies, which are not read.
    pub body: Vec<u8>,
}

impl RawReply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// The JSON-RPC error code in the body, if any.
    pub fn error_code(&self) -> Option<i64> {
        self.json()?.get("error")?.get("code")?.as_i64()
    }
}

/// Sends one HTTP/1.1 request written by hand to `addr`, so that headers reqwest derives
/// from the URL (Host) can be anything. `head_lines` are full header lines such as
/// `"Host: evil.example.com"`; `Content-Length` and `Connection: close` are added. The
/// reply head is read, then the body unless it is an SSE stream. Panics after `limit`.
pub async fn raw_request(
    addr: &str,
    request_line: &str,
    head_lines: &[&str],
    body: &[u8],
    limit: Duration,
) -> RawReply {
    use tokio::io::AsyncWriteExt;
    let exchange = async {
        let mut tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let mut head = format!("{request_line}\r\n");
        for line in head_lines {
            head.push_str(line);
            head.push_str("\r\n");
        }
        head.push_str(&format!(
            "Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        ));
        tcp.write_all(head.as_bytes()).await.expect("write head");
        tcp.write_all(body).await.expect("write body");
        let mut reader = RawReader::default();
        let (status, headers) = reader.read_head(&mut tcp).await;
        let mut reply = RawReply {
            status,
            headers,
            body: Vec::new(),
        };
        let is_sse = reply
            .header("content-type")
            .is_some_and(|t| t.starts_with("text/event-stream"));
        if !is_sse {
            let length = reply.header("content-length").and_then(|n| n.parse().ok());
            let chunked = reply
                .header("transfer-encoding")
                .is_some_and(|t| t.eq_ignore_ascii_case("chunked"));
            reply.body = reader.read_body(&mut tcp, length, chunked).await;
        }
        let _ = tcp.shutdown().await;
        reply
    };
    tokio::time::timeout(limit, exchange)
        .await
        .unwrap_or_else(|_| panic!("no complete reply to {request_line:?} within {limit:?}"))
}

/// Sends a request head announcing a body of `body_len` bytes (with `Content-Length`, or
/// chunked when `chunked`), streams filler after it, and returns the reply as soon as one
/// arrives, without waiting for the upload to finish. Panics after `limit`.
pub async fn raw_upload(
    addr: &str,
    request_line: &str,
    head_lines: &[&str],
    body_len: usize,
    chunked: bool,
    limit: Duration,
) -> RawReply {
    use tokio::io::AsyncWriteExt;
    let exchange = async {
        let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let (mut read, mut write) = tcp.into_split();
        let mut head = format!("{request_line}\r\n");
        for line in head_lines {
            head.push_str(line);
            head.push_str("\r\n");
        }
        if chunked {
            head.push_str("Transfer-Encoding: chunked\r\n\r\n");
        } else {
            head.push_str(&format!("Content-Length: {body_len}\r\n\r\n"));
        }
        let upload = tokio::spawn(async move {
            const CHUNK: usize = 64 * 1024;
            write.write_all(head.as_bytes()).await?;
            let filler = vec![b' '; CHUNK];
            let mut sent = 0;
            while sent < body_len {
                let n = CHUNK.min(body_len - sent);
                if chunked {
                    write.write_all(format!("{n:x}\r\n").as_bytes()).await?;
                }
                write.write_all(&filler[..n]).await?;
                if chunked {
                    write.write_all(b"\r\n").await?;
                }
                sent += n;
            }
            if chunked {
                write.write_all(b"0\r\n\r\n").await?;
            }
            // Keep the write half open until the reply is read: dropping it half-closes
            // the connection, and hyper then closes it without answering.
            Ok::<_, std::io::Error>(write)
        });
        let mut reader = RawReader::default();
        let (status, headers) = reader.read_head(&mut read).await;
        let mut reply = RawReply {
            status,
            headers,
            body: Vec::new(),
        };
        let length = reply.header("content-length").and_then(|n| n.parse().ok());
        if length.is_some() {
            reply.body = reader.read_body(&mut read, length, false).await;
        }
        upload.abort();
        reply
    };
    tokio::time::timeout(limit, exchange)
        .await
        .unwrap_or_else(|_| panic!("no reply to {request_line:?} within {limit:?}"))
}

/// Incremental reader of an HTTP/1.1 reply.
#[derive(Default)]
struct RawReader {
    buf: Vec<u8>,
}

impl RawReader {
    async fn fill<R: tokio::io::AsyncRead + Unpin>(&mut self, r: &mut R) -> bool {
        use tokio::io::AsyncReadExt;
        let mut chunk = [0u8; 8192];
        match r.read(&mut chunk).await {
            Ok(0) => false,
            Err(_) => false,
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                true
            }
        }
    }

    async fn read_head<R: tokio::io::AsyncRead + Unpin>(
        &mut self,
        r: &mut R,
    ) -> (u16, Vec<(String, String)>) {
        let end = loop {
            if let Some(i) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i;
            }
            assert!(
                self.fill(r).await,
                "connection closed before a reply head: {:?}",
                String::from_utf8_lossy(&self.buf)
            );
        };
        let head = String::from_utf8_lossy(&self.buf[..end]).into_owned();
        self.buf.drain(..end + 4);
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let status = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        (status, headers)
    }

    async fn read_body<R: tokio::io::AsyncRead + Unpin>(
        &mut self,
        r: &mut R,
        length: Option<usize>,
        chunked: bool,
    ) -> Vec<u8> {
        match length {
            Some(n) => {
                while self.buf.len() < n && self.fill(r).await {}
                self.buf.truncate(n);
                std::mem::take(&mut self.buf)
            }
            None => {
                while self.fill(r).await {}
                let raw = std::mem::take(&mut self.buf);
                if chunked { dechunk(&raw) } else { raw }
            }
        }
    }
}

/// Decodes a complete chunked body.
fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(i) = raw.windows(2).position(|w| w == b"\r\n") {
        let size_text = String::from_utf8_lossy(&raw[..i]);
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16).unwrap_or(0);
        raw = &raw[i + 2..];
        if size == 0 || raw.len() < size {
            break;
        }
        out.extend_from_slice(&raw[..size]);
        raw = raw.get(size + 2..).unwrap_or_default();
    }
    out
}

/// JSON-RPC error codes as the specifications fix them, written out here (not imported from
/// the crate) so that a changed constant in the server makes the tests fail.
pub mod rpc_codes {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    /// Implementation-defined: transport refusals (TS-SDK convention).
    pub const SERVER_ERROR: i64 = -32000;
    /// Implementation-defined: unknown or ended session (TS-SDK convention).
    pub const SESSION_NOT_FOUND: i64 = -32001;
    /// MCP `resources/read` of an unknown URI (spec `server/resources.mdx`).
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
}

/// Runs `mcp-actor check FILE` with extra environment variables, bounded in time; returns
/// the exit status, stdout and stderr.
pub fn run_check(
    file: &std::path::Path,
    env: &[(&str, &str)],
) -> (std::process::ExitStatus, String, String) {
    run_check_without(file, env, &[])
}

/// [`run_check`], with the environment variables `unset` removed.
pub fn run_check_without(
    file: &std::path::Path,
    env: &[(&str, &str)],
    unset: &[&str],
) -> (std::process::ExitStatus, String, String) {
    const LIMIT: Duration = Duration::from_secs(30);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-actor"));
    cmd.arg("check")
        .arg(file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    for k in unset {
        cmd.env_remove(k);
    }
    let mut child = cmd.spawn().expect("run mcp-actor check");
    let deadline = std::time::Instant::now() + LIMIT;
    while child.try_wait().expect("wait").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "mcp-actor check {} did not exit within {LIMIT:?}",
                file.display()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let output = child.wait_with_output().expect("output");
    (
        output.status,
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}
