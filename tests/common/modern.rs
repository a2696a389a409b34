//! The stateless 2026-07-28 revision from the client's side: the request builder
//! [`Modern`], the `_meta` keys and limits it uses, and the assertions that every modern
//! reply must pass (`resultType`, no session header, JSON errors known before any frame).
//! The constants are written out from `shared/spec/stateless-2026-07-28.md`, not imported
//! from the crate, so that a changed constant in the server makes the tests fail.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Map, Value, json};

use super::{ACCEPT_BOTH, Client, Reply, SseReader, TestServer, read_reply};

// ----- Constants written out from the spec, not imported from the crate -----

pub const MODERN: &str = "2026-07-28";

pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// Longest any one exchange may take before the test fails instead of hanging.
pub const LIMIT: Duration = Duration::from_secs(20);
/// How long to wait for one SSE event that is expected.
pub const EVENT_WAIT: Duration = Duration::from_secs(5);

// ----- A builder for 2026-07-28 requests -----

/// One modern POST: the body's params with the `_meta` envelope, and the headers. By
/// default everything a valid request needs is present; the methods change one thing.
#[derive(Clone, Debug)]
pub struct Modern {
    pub id: Option<Value>,
    pub method: String,
    /// The body's `params`, `_meta` envelope included.
    pub params: Map<String, Value>,
    pub headers: Vec<(String, String)>,
}

impl Modern {
    /// A request with a full envelope (no client capabilities) and the two headers every
    /// request carries.
    pub fn request(id: impl Into<Value>, method: &str) -> Modern {
        let mut params = Map::new();
        params.insert(
            "_meta".into(),
            json!({
                META_PROTOCOL_VERSION: MODERN,
                META_CLIENT_CAPABILITIES: {},
                META_CLIENT_INFO: { "name": "stateless-tests", "version": "1" },
            }),
        );
        Modern {
            id: Some(id.into()),
            method: method.to_string(),
            params,
            headers: vec![
                ("MCP-Protocol-Version".into(), MODERN.into()),
                ("Mcp-Method".into(), method.into()),
            ],
        }
    }

    /// A notification (no id) with the version and method headers.
    pub fn notification(method: &str) -> Modern {
        Modern {
            id: None,
            ..Modern::request(0, method)
        }
    }

    /// `tools/call` of `name` with `arguments`, `Mcp-Name` included.
    pub fn call(id: impl Into<Value>, name: &str, arguments: Value) -> Modern {
        Modern::request(id, "tools/call")
            .name(name)
            .param("arguments", arguments)
    }

    /// Sets `params.name` and the matching `Mcp-Name` header.
    pub fn name(self, name: &str) -> Modern {
        self.param("name", json!(name)).set_header("Mcp-Name", name)
    }

    /// Sets `params.uri` and the matching `Mcp-Name` header.
    pub fn uri(self, uri: &str) -> Modern {
        self.param("uri", json!(uri)).set_header("Mcp-Name", uri)
    }

    pub fn param(mut self, key: &str, value: Value) -> Modern {
        self.params.insert(key.into(), value);
        self
    }

    fn meta_object(&mut self) -> &mut Map<String, Value> {
        self.params
            .entry("_meta")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .expect("_meta is an object")
    }

    pub fn meta(mut self, key: &str, value: Value) -> Modern {
        self.meta_object().insert(key.into(), value);
        self
    }

    pub fn without_meta_key(mut self, key: &str) -> Modern {
        self.meta_object().remove(key);
        self
    }

    pub fn without_meta(mut self) -> Modern {
        self.params.remove("_meta");
        self
    }

    /// The client capabilities declared in this request.
    pub fn caps(self, capabilities: Value) -> Modern {
        self.meta(META_CLIENT_CAPABILITIES, capabilities)
    }

    pub fn progress_token(self, token: Value) -> Modern {
        self.meta("progressToken", token)
    }

    pub fn log_level(self, level: &str) -> Modern {
        self.meta(META_LOG_LEVEL, json!(level))
    }

    /// Adds a header line (a second one if the name is already there).
    pub fn header(mut self, name: &str, value: &str) -> Modern {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Replaces every header of that name (any case) with one line.
    pub fn set_header(self, name: &str, value: &str) -> Modern {
        self.remove_header(name).header(name, value)
    }

    pub fn remove_header(mut self, name: &str) -> Modern {
        self.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        self
    }

    pub fn body(&self) -> Value {
        let mut body = json!({ "jsonrpc": "2.0", "method": self.method, "params": self.params });
        if let Some(id) = &self.id {
            body["id"] = id.clone();
        }
        body
    }

    pub fn id(&self) -> Value {
        self.id.clone().expect("a request has an id")
    }

    /// POSTs the request with `Accept: application/json, text/event-stream`.
    pub async fn send(&self, client: &Client) -> reqwest::Response {
        self.send_accepting(client, ACCEPT_BOTH).await
    }

    pub async fn send_accepting(&self, client: &Client, accept: &str) -> reqwest::Response {
        let mut req = client
            .http
            .post(&client.url)
            .header("content-type", "application/json")
            .header("accept", accept)
            .body(self.body().to_string());
        for (k, v) in &self.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        req.send().await.expect("POST")
    }

    /// POSTs and reads the whole reply (JSON, or SSE to its end).
    pub async fn reply(&self, client: &Client) -> Reply {
        read_reply(self.send(client).await).await
    }

    /// POSTs, asserts success, and returns the `result`.
    pub async fn result(&self, client: &Client) -> Value {
        let reply = self.reply(client).await;
        expect_result(&reply, &self.id())
    }
}

/// A client of the binary whose every exchange, body included, fails after [`LIMIT`].
pub fn client_of(server: &TestServer) -> Client {
    server.bounded_client(LIMIT)
}

/// A `[stateless] request_state_key` for nodes that share it: 32 random bytes, base64.
pub fn random_request_state_key() -> String {
    use base64::Engine;
    use std::io::Read;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .expect("read /dev/urandom");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `http://host:port` of an endpoint URL.
pub fn base_of(url: &str) -> String {
    let rest = url.trim_start_matches("http://");
    let host = rest.split('/').next().unwrap_or(rest);
    format!("http://{host}")
}

/// The live session count from the health probe.
pub async fn session_count(client: &Client) -> u64 {
    let resp = client
        .http
        .get(format!("{}/healthz", base_of(&client.url)))
        .send()
        .await
        .expect("GET /healthz");
    assert_eq!(resp.status(), StatusCode::OK, "health probe");
    let body: Value = resp.json().await.expect("health JSON");
    body["sessions"]
        .as_u64()
        .unwrap_or_else(|| panic!("no `sessions` count in {body}"))
}

// ----- Assertions -----

/// The successful result of the response with `id`: status 200, `resultType` present.
pub fn expect_result(reply: &Reply, id: &Value) -> Value {
    assert_eq!(reply.status, StatusCode::OK, "{reply:#?}");
    let response = reply
        .response(id)
        .unwrap_or_else(|| panic!("no response with id {id} in {reply:#?}"));
    assert_eq!(response["id"], *id, "the response echoes the request id");
    let result = response
        .get("result")
        .unwrap_or_else(|| panic!("an error, not a result: {response}"))
        .clone();
    assert!(
        result.get("resultType").is_some_and(Value::is_string),
        "every modern result carries resultType: {result}"
    );
    result
}

/// A JSON (not SSE) error reply: `status`, the JSON-RPC `code`, the `id` echoed (`Value::Null`
/// for errors about a message whose id is unknown). Returns the error object.
pub fn expect_error(reply: &Reply, status: StatusCode, code: i64, id: &Value) -> Value {
    assert_eq!(reply.status, status, "{reply:#?}");
    assert!(
        reply.content_type.starts_with("application/json"),
        "an error known before any frame is a JSON reply: {reply:#?}"
    );
    let body = reply
        .body
        .as_ref()
        .unwrap_or_else(|| panic!("no JSON body: {reply:#?}"));
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert_eq!(body.get("id"), Some(id), "the error echoes id {id}: {body}");
    assert!(body.get("result").is_none(), "{body}");
    let error = body
        .get("error")
        .unwrap_or_else(|| panic!("no error in {body}"));
    assert_eq!(error["code"], json!(code), "{body}");
    assert!(error["message"].is_string(), "{body}");
    error.clone()
}

pub fn assert_no_session_header(reply: &Reply) {
    assert!(
        reply.headers.get("mcp-session-id").is_none(),
        "a modern response never carries Mcp-Session-Id: {reply:#?}"
    );
}

/// The notifications (messages without id) of a reply, in order.
pub fn notifications<'a>(reply: &'a Reply, method: &str) -> Vec<&'a Value> {
    reply
        .messages
        .iter()
        .filter(|m| m["method"] == method && m.get("id").is_none())
        .collect()
}

/// The `(key, entry)` of the one input request of an `input_required` result.
pub fn single_input_request(result: &Value) -> (String, Value) {
    assert_eq!(result["resultType"], "input_required", "{result}");
    let requests = result["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("inputRequests is an object: {result}"));
    assert_eq!(requests.len(), 1, "one question asked: {result}");
    let (key, entry) = requests.iter().next().expect("one entry");
    (key.clone(), entry.clone())
}

pub fn request_state(result: &Value) -> String {
    let state = result["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("a requestState string: {result}"));
    assert!(!state.is_empty(), "{result}");
    state.to_string()
}

pub fn first_text(result: &Value) -> &str {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("text content: {result}"))
}

pub fn accept(answer: &str) -> Value {
    json!({ "action": "accept", "content": { "answer": answer } })
}

/// Reads the next JSON-RPC message of a stream, failing the test if none comes in time.
pub async fn next_message(reader: &mut SseReader, what: &str) -> Value {
    let (id, message) = reader
        .next_message(EVENT_WAIT)
        .await
        .unwrap_or_else(|| panic!("no {what} within {EVENT_WAIT:?}"));
    assert_eq!(id, None, "2026-07-28 streams carry no event ids: {message}");
    message
}

/// Opens a listen stream and returns it after reading and checking its acknowledgement.
pub async fn listen(client: &Client, id: Value, filter: Value) -> (SseReader, Value) {
    let resp = Modern::request(id.clone(), "subscriptions/listen")
        .param("notifications", filter)
        .send(client)
        .await;
    assert_eq!(resp.status(), StatusCode::OK, "listen opens");
    let content_type = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    assert!(
        content_type.starts_with("text/event-stream"),
        "listen answers with SSE, got {content_type:?}"
    );
    assert!(resp.headers().get("mcp-session-id").is_none());
    let mut reader = SseReader::new(resp);
    let ack = next_message(&mut reader, "acknowledgement").await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "the first message is the acknowledgement: {ack}"
    );
    assert!(ack.get("id").is_none(), "{ack}");
    assert_eq!(
        ack["params"]["_meta"][META_SUBSCRIPTION_ID], id,
        "subscriptionId is the listen request id, same JSON type: {ack}"
    );
    (reader, ack)
}
