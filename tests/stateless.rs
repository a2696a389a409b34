//! The stateless 2026-07-28 revision served next to the handshake-era sessions on the same
//! endpoint, over real HTTP on 127.0.0.1: one test per MUST line of the checklist in
//! `shared/spec/stateless-2026-07-28.md` §7, named after the rule it checks.
//!
//! Most tests run the real binary ([`TestServer`]); tests that need a list change, a
//! graceful shutdown, resources, prompts or a tool with a side effect run the server in
//! process through the library (`Server::builder()` … `serve_with_shutdown`).

mod common;

use std::collections::BTreeSet;
use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use common::{ACCEPT_BOTH, Client, Reply, SseReader, TestServer, read_reply};
use mcp_actor::config::CacheScope;
use mcp_actor::protocol::{ElicitResult, LogLevel};
use mcp_actor::{
    CallToolResult, Config, Content, GetPromptResult, Prompt, PromptMessage, Resource,
    ResourceContents, ResourceError, ResourceTemplate, Role, Server, ServerBuilder, ServerEvent,
    Tool,
};
use reqwest::StatusCode;
use serde_json::{Map, Value, json};
use tokio::sync::oneshot;

// ----- Constants written out from the spec, not imported from the crate -----

const MODERN: &str = "2026-07-28";
const HANDSHAKE_LATEST: &str = "2025-11-25";

const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const RESOURCE_NOT_FOUND_2025: i64 = -32002;
const HEADER_MISMATCH: i64 = -32020;
const MISSING_CLIENT_CAPABILITY: i64 = -32021;
const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// Longest any one exchange may take before the test fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(20);
/// How long to wait for one SSE event that is expected.
const EVENT_WAIT: Duration = Duration::from_secs(5);

// ----- A builder for 2026-07-28 requests -----

/// One modern POST: the body's params with the `_meta` envelope, and the headers. By
/// default everything a valid request needs is present; the methods change one thing.
#[derive(Clone, Debug)]
struct Modern {
    id: Option<Value>,
    method: String,
    params: Map<String, Value>,
    headers: Vec<(String, String)>,
}

impl Modern {
    /// A request with a full envelope (no client capabilities) and the two headers every
    /// request carries.
    fn request(id: impl Into<Value>, method: &str) -> Modern {
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
    fn notification(method: &str) -> Modern {
        Modern {
            id: None,
            ..Modern::request(0, method)
        }
    }

    /// `tools/call` of `name` with `arguments`, `Mcp-Name` included.
    fn call(id: impl Into<Value>, name: &str, arguments: Value) -> Modern {
        Modern::request(id, "tools/call")
            .name(name)
            .param("arguments", arguments)
    }

    /// Sets `params.name` and the matching `Mcp-Name` header.
    fn name(self, name: &str) -> Modern {
        self.param("name", json!(name)).set_header("Mcp-Name", name)
    }

    /// Sets `params.uri` and the matching `Mcp-Name` header.
    fn uri(self, uri: &str) -> Modern {
        self.param("uri", json!(uri)).set_header("Mcp-Name", uri)
    }

    fn param(mut self, key: &str, value: Value) -> Modern {
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

    fn meta(mut self, key: &str, value: Value) -> Modern {
        self.meta_object().insert(key.into(), value);
        self
    }

    fn without_meta_key(mut self, key: &str) -> Modern {
        self.meta_object().remove(key);
        self
    }

    fn without_meta(mut self) -> Modern {
        self.params.remove("_meta");
        self
    }

    /// The client capabilities declared in this request.
    fn caps(self, capabilities: Value) -> Modern {
        self.meta(META_CLIENT_CAPABILITIES, capabilities)
    }

    fn progress_token(self, token: Value) -> Modern {
        self.meta("progressToken", token)
    }

    fn log_level(self, level: &str) -> Modern {
        self.meta(META_LOG_LEVEL, json!(level))
    }

    /// Adds a header line (a second one if the name is already there).
    fn header(mut self, name: &str, value: &str) -> Modern {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Replaces every header of that name (any case) with one line.
    fn set_header(self, name: &str, value: &str) -> Modern {
        self.remove_header(name).header(name, value)
    }

    fn remove_header(mut self, name: &str) -> Modern {
        self.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        self
    }

    fn body(&self) -> Value {
        let mut body = json!({ "jsonrpc": "2.0", "method": self.method, "params": self.params });
        if let Some(id) = &self.id {
            body["id"] = id.clone();
        }
        body
    }

    fn id(&self) -> Value {
        self.id.clone().expect("a request has an id")
    }

    /// POSTs the request with `Accept: application/json, text/event-stream`.
    async fn send(&self, client: &Client) -> reqwest::Response {
        self.send_accepting(client, ACCEPT_BOTH).await
    }

    async fn send_accepting(&self, client: &Client, accept: &str) -> reqwest::Response {
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
    async fn reply(&self, client: &Client) -> Reply {
        read_reply(self.send(client).await).await
    }

    /// POSTs, asserts success, and returns the `result`.
    async fn result(&self, client: &Client) -> Value {
        let reply = self.reply(client).await;
        expect_result(&reply, &self.id())
    }
}

/// A client whose every exchange, body included, fails after [`LIMIT`].
fn bounded(url: &str) -> Client {
    Client {
        http: reqwest::Client::builder()
            .timeout(LIMIT)
            .pool_max_idle_per_host(16)
            .build()
            .expect("client"),
        url: url.to_string(),
    }
}

fn client_of(server: &TestServer) -> Client {
    bounded(&server.url)
}

/// `http://host:port` of an endpoint URL.
fn base_of(url: &str) -> String {
    let rest = url.trim_start_matches("http://");
    let host = rest.split('/').next().unwrap_or(rest);
    format!("http://{host}")
}

/// The live session count from the health probe.
async fn session_count(client: &Client) -> u64 {
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
fn expect_result(reply: &Reply, id: &Value) -> Value {
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
fn expect_error(reply: &Reply, status: StatusCode, code: i64, id: &Value) -> Value {
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

fn assert_no_session_header(reply: &Reply) {
    assert!(
        reply.headers.get("mcp-session-id").is_none(),
        "a modern response never carries Mcp-Session-Id: {reply:#?}"
    );
}

/// The notifications (messages without id) of a reply, in order.
fn notifications<'a>(reply: &'a Reply, method: &str) -> Vec<&'a Value> {
    reply
        .messages
        .iter()
        .filter(|m| m["method"] == method && m.get("id").is_none())
        .collect()
}

/// The `(key, entry)` of the one input request of an `input_required` result.
fn single_input_request(result: &Value) -> (String, Value) {
    assert_eq!(result["resultType"], "input_required", "{result}");
    let requests = result["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("inputRequests is an object: {result}"));
    assert_eq!(requests.len(), 1, "one question asked: {result}");
    let (key, entry) = requests.iter().next().expect("one entry");
    (key.clone(), entry.clone())
}

fn request_state(result: &Value) -> String {
    let state = result["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("a requestState string: {result}"));
    assert!(!state.is_empty(), "{result}");
    state.to_string()
}

fn first_text(result: &Value) -> &str {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("text content: {result}"))
}

fn accept(answer: &str) -> Value {
    json!({ "action": "accept", "content": { "answer": answer } })
}

// ----- An in-process server -----

/// The library server on 127.0.0.1:0, stopped through a oneshot.
struct InProcess {
    server: Server,
    url: String,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl InProcess {
    async fn start(builder: ServerBuilder) -> InProcess {
        let server = builder.build().expect("server builds");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(server.clone().serve_with_shutdown(listener, async {
            rx.await.ok();
        }));
        InProcess {
            server,
            url: format!("http://{addr}/mcp"),
            stop: Some(stop),
            task: Some(task),
        }
    }

    fn client(&self) -> Client {
        bounded(&self.url)
    }

    /// Signals a graceful shutdown and waits (bounded) for the server to finish.
    async fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            tokio::time::timeout(LIMIT, task)
                .await
                .expect("the server stops within the limit")
                .expect("server task")
                .expect("serve");
        }
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// A tool that asks one elicitation question through the library API.
fn elicit_schema(question: &str) -> Value {
    json!({
        "type": "object",
        "properties": { "answer": { "type": "string", "description": question } },
        "required": ["answer"],
    })
}

fn answer_of(result: &ElicitResult) -> String {
    result
        .content
        .as_ref()
        .and_then(|c| c.get("answer"))
        .and_then(Value::as_str)
        .unwrap_or("<none>")
        .to_string()
}

/// A prompt and a resource that need the user's input, plus a plain resource, a template
/// and a plain prompt.
fn builder_with_input_features(config: Config) -> ServerBuilder {
    let greet = Prompt::new(
        "greet",
        "Greets whoever the user names",
        Vec::new(),
        |ctx, _args| async move {
            let answer = ctx
                .elicit("Whom to greet?", elicit_schema("name"))
                .await
                .map_err(|e| e.to_string())?;
            Ok::<_, String>(GetPromptResult {
                description: None,
                messages: vec![PromptMessage {
                    role: Role::User,
                    content: Content::text(format!("Hello {}", answer_of(&answer))),
                }],
            })
        },
    );
    let plain_prompt = Prompt::new("plain", "A fixed prompt", Vec::new(), |_ctx, _args| async {
        Ok::<_, String>(GetPromptResult {
            description: None,
            messages: vec![PromptMessage {
                role: Role::User,
                content: Content::text("plain"),
            }],
        })
    });
    let secret = Resource::new(
        "test://secret",
        "secret",
        Some("text/plain"),
        |ctx, uri| async move {
            let answer = ctx
                .elicit("Password?", elicit_schema("password"))
                .await
                .map_err(|e| ResourceError::Failed(e.to_string()))?;
            Ok::<_, ResourceError>(vec![ResourceContents::text(
                uri,
                "text/plain",
                format!("secret for {}", answer_of(&answer)),
            )])
        },
    );
    let fixed_a = Resource::new(
        "test://fixed/a",
        "a",
        Some("text/plain"),
        |_ctx, uri| async move {
            Ok::<_, ResourceError>(vec![ResourceContents::text(uri, "text/plain", "A")])
        },
    );
    let fixed_b = Resource::new(
        "test://fixed/b",
        "b",
        Some("text/plain"),
        |_ctx, uri| async move {
            Ok::<_, ResourceError>(vec![ResourceContents::text(uri, "text/plain", "B")])
        },
    );
    let items = ResourceTemplate::new(
        "test://items/{id}",
        "item",
        Some("text/plain"),
        |_ctx, uri, args| async move {
            let id = args.get("id").cloned().unwrap_or_default();
            Ok::<_, ResourceError>(vec![ResourceContents::text(
                uri,
                "text/plain",
                format!("item {id}"),
            )])
        },
    )
    .expect("template");
    Server::builder()
        .config(config)
        .prompt(greet)
        .prompt(plain_prompt)
        .resource(secret)
        .resource(fixed_a)
        .resource(fixed_b)
        .resource_template(items)
        .tool(
            "echo",
            "Returns the text",
            |_ctx, args: EchoArgs| async move {
                Ok::<_, mcp_actor::ToolError>(CallToolResult::text(args.text))
            },
        )
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    text: String,
}

/// Reads the next JSON-RPC message of a stream, failing the test if none comes in time.
async fn next_message(reader: &mut SseReader, what: &str) -> Value {
    let (id, message) = reader
        .next_message(EVENT_WAIT)
        .await
        .unwrap_or_else(|| panic!("no {what} within {EVENT_WAIT:?}"));
    assert_eq!(id, None, "2026-07-28 streams carry no event ids: {message}");
    message
}

/// Opens a listen stream and returns it after reading and checking its acknowledgement.
async fn listen(client: &Client, id: Value, filter: Value) -> (SseReader, Value) {
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

/// A minimal HTTP/1.1 exchange written by hand, so header names and values go on the wire
/// exactly as given. Returns the status and the JSON body.
async fn raw_post(addr: &str, path: &str, header_lines: &[String], body: &str) -> (u16, Value) {
    let host = format!("Host: {addr}");
    let mut lines: Vec<&str> = vec![&host];
    lines.extend(header_lines.iter().map(String::as_str));
    let reply = common::raw_request(
        addr,
        &format!("POST {path} HTTP/1.1"),
        &lines,
        body.as_bytes(),
        LIMIT,
    )
    .await;
    let json = reply
        .json()
        .unwrap_or_else(|| panic!("no JSON body in {reply:?}"));
    (reply.status, json)
}

// =====================================================================================
// Envelope and headers
// =====================================================================================

#[tokio::test]
async fn valid_request_gets_200_with_result_type_and_same_id() {
    let server = TestServer::start();
    let client = client_of(&server);
    for id in [json!(7), json!("req-7")] {
        let reply = Modern::request(id.clone(), "tools/list")
            .reply(&client)
            .await;
        assert!(
            reply.content_type.starts_with("application/json"),
            "{reply:#?}"
        );
        let result = expect_result(&reply, &id);
        assert_eq!(result["resultType"], "complete");
        assert!(result["tools"].is_array(), "{result}");
    }
    let reply = Modern::call(8, "echo", json!({ "text": "hi" }))
        .reply(&client)
        .await;
    let result = expect_result(&reply, &json!(8));
    assert_eq!(result["resultType"], "complete");
    assert_eq!(first_text(&result), "hi");
}

#[tokio::test]
async fn missing_meta_envelope_gets_400_invalid_params() {
    let server = TestServer::start();
    let client = client_of(&server);
    // The version header is present in every case: the envelope is checked regardless.
    let cases = [
        ("no _meta", Modern::request(1, "tools/list").without_meta()),
        (
            "_meta not an object",
            Modern::request(2, "tools/list").param("_meta", json!("2026-07-28")),
        ),
        (
            "no protocolVersion",
            Modern::request(3, "tools/list").without_meta_key(META_PROTOCOL_VERSION),
        ),
        (
            "no clientCapabilities",
            Modern::request(4, "tools/list").without_meta_key(META_CLIENT_CAPABILITIES),
        ),
        (
            "clientCapabilities not an object",
            Modern::request(5, "tools/list").meta(META_CLIENT_CAPABILITIES, json!(true)),
        ),
        (
            // The envelope rung comes before the header rung (§2.5 order).
            "no _meta and a wrong Mcp-Method",
            Modern::request(7, "tools/list")
                .without_meta()
                .set_header("Mcp-Method", "prompts/list"),
        ),
        (
            "no _meta on tools/call",
            Modern::call("six", "echo", json!({ "text": "x" })).without_meta(),
        ),
    ];
    for (what, request) in cases {
        let reply = request.reply(&client).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{what}: {reply:#?}");
        expect_error(
            &reply,
            StatusCode::BAD_REQUEST,
            INVALID_PARAMS,
            &request.id(),
        );
        assert_no_session_header(&reply);
    }
}

#[tokio::test]
async fn meta_without_client_info_is_served() {
    let server = TestServer::start();
    let client = client_of(&server);
    let reply = Modern::call(1, "echo", json!({ "text": "anonymous" }))
        .without_meta_key(META_CLIENT_INFO)
        .reply(&client)
        .await;
    let result = expect_result(&reply, &json!(1));
    assert_eq!(first_text(&result), "anonymous");
    let discover = Modern::request(2, "server/discover")
        .without_meta_key(META_CLIENT_INFO)
        .result(&client)
        .await;
    assert_eq!(discover["resultType"], "complete");
}

#[tokio::test]
async fn protocol_version_header_mismatch_gets_400_header_mismatch() {
    let server = TestServer::start();
    let client = client_of(&server);
    // Header absent (no session): the body's claim routes it to the modern ladder.
    let absent = Modern::request(1, "tools/list").remove_header("MCP-Protocol-Version");
    let reply = absent.reply(&client).await;
    expect_error(&reply, StatusCode::BAD_REQUEST, HEADER_MISMATCH, &json!(1));
    assert_no_session_header(&reply);
    // Header present but naming another (unknown) revision than the body.
    let different =
        Modern::request(2, "tools/list").set_header("MCP-Protocol-Version", "2026-08-01");
    let reply = different.reply(&client).await;
    expect_error(&reply, StatusCode::BAD_REQUEST, HEADER_MISMATCH, &json!(2));
    // Body names another revision than the (modern) header.
    let body_differs = Modern::call(3, "echo", json!({ "text": "x" }))
        .meta(META_PROTOCOL_VERSION, json!("2026-01-01"));
    let reply = body_differs.reply(&client).await;
    expect_error(&reply, StatusCode::BAD_REQUEST, HEADER_MISMATCH, &json!(3));
}

#[tokio::test]
async fn unsupported_version_gets_400_32022_with_supported_list() {
    let server = TestServer::start();
    let client = client_of(&server);
    for (id, version) in [(json!(1), "2099-01-01"), (json!("old"), "1999-01-01")] {
        let request = Modern::request(id.clone(), "tools/list")
            .set_header("MCP-Protocol-Version", version)
            .meta(META_PROTOCOL_VERSION, json!(version));
        let reply = request.reply(&client).await;
        let error = expect_error(
            &reply,
            StatusCode::BAD_REQUEST,
            UNSUPPORTED_PROTOCOL_VERSION,
            &id,
        );
        let supported = error["data"]["supported"]
            .as_array()
            .unwrap_or_else(|| panic!("data.supported is an array: {error}"));
        assert!(
            supported.contains(&json!(MODERN)),
            "data.supported lists {MODERN}: {error}"
        );
        assert_eq!(error["data"]["requested"], version, "{error}");
        assert_no_session_header(&reply);
    }
}

#[tokio::test]
async fn mcp_method_case_mismatch_gets_400_header_mismatch() {
    let server = TestServer::start();
    let client = client_of(&server);
    let cases = [
        Modern::request(1, "tools/list").remove_header("Mcp-Method"),
        Modern::request(2, "tools/list").set_header("Mcp-Method", "prompts/list"),
        Modern::request(3, "tools/list").set_header("Mcp-Method", "TOOLS/LIST"),
        Modern::call(4, "echo", json!({ "text": "x" })).set_header("Mcp-Method", "Tools/Call"),
    ];
    for request in cases {
        let reply = request.reply(&client).await;
        expect_error(
            &reply,
            StatusCode::BAD_REQUEST,
            HEADER_MISMATCH,
            &request.id(),
        );
    }
}

#[tokio::test]
async fn header_names_any_case_and_whitespace_values_accepted() {
    let server = TestServer::start();
    let request = Modern::call(1, "echo", json!({ "text": "spaced" }));
    let body = request.body().to_string();
    let path = "/mcp";
    let lines = |version: &str, method: &str, name: &str| {
        vec![
            "Content-Type: application/json".to_string(),
            format!("Accept: {ACCEPT_BOTH}"),
            format!("{version}:  \t{MODERN} \t"),
            format!("{method}: \ttools/call  "),
            format!("{name}:   echo\t"),
        ]
    };
    for (version, method, name) in [
        ("MCP-PROTOCOL-VERSION", "MCP-METHOD", "MCP-NAME"),
        ("mcp-protocol-version", "mcp-method", "mcp-name"),
        ("Mcp-Protocol-Version", "mCp-MeThOd", "mcP-naME"),
    ] {
        let (status, reply) =
            raw_post(&server.addr, path, &lines(version, method, name), &body).await;
        assert_eq!(status, 200, "{version}/{method}/{name}: {reply}");
        assert_eq!(reply["id"], 1, "{reply}");
        assert_eq!(reply["result"]["resultType"], "complete", "{reply}");
        assert_eq!(reply["result"]["content"][0]["text"], "spaced", "{reply}");
    }
}

#[tokio::test]
async fn mcp_name_missing_or_mismatched_gets_400_header_mismatch() {
    let server = TestServer::start();
    let client = client_of(&server);
    let cases = [
        Modern::call(1, "echo", json!({ "text": "x" })).remove_header("Mcp-Name"),
        Modern::call(2, "echo", json!({ "text": "x" })).set_header("Mcp-Name", "sleep"),
        // A literal value without the wrapper is compared verbatim, so case matters.
        Modern::call(3, "echo", json!({ "text": "x" })).set_header("Mcp-Name", "ECHO"),
        Modern::request(4, "resources/read")
            .uri("test://a")
            .set_header("Mcp-Name", "test://b"),
        Modern::request(5, "resources/read")
            .uri("test://a")
            .remove_header("Mcp-Name"),
        Modern::request(6, "prompts/get")
            .name("greet")
            .set_header("Mcp-Name", "other"),
        Modern::request(7, "prompts/get")
            .name("greet")
            .remove_header("Mcp-Name"),
    ];
    for request in cases {
        let reply = request.reply(&client).await;
        expect_error(
            &reply,
            StatusCode::BAD_REQUEST,
            HEADER_MISMATCH,
            &request.id(),
        );
    }
}

#[tokio::test]
async fn mcp_name_base64_wrapper_accepted() {
    let server = TestServer::start();
    let client = client_of(&server);
    let wrapped = format!("=?base64?{}?=", STANDARD.encode("echo"));
    let reply = Modern::call(1, "echo", json!({ "text": "wrapped" }))
        .set_header("Mcp-Name", &wrapped)
        .reply(&client)
        .await;
    let result = expect_result(&reply, &json!(1));
    assert_eq!(first_text(&result), "wrapped");
    // The decoded value must equal the body's: a wrapper around another name is refused.
    let other = format!("=?base64?{}?=", STANDARD.encode("sleep"));
    let reply = Modern::call(2, "echo", json!({ "text": "x" }))
        .set_header("Mcp-Name", &other)
        .reply(&client)
        .await;
    expect_error(&reply, StatusCode::BAD_REQUEST, HEADER_MISMATCH, &json!(2));
    // A non-ASCII URI travels wrapped; it decodes to the body's URI, which passes the
    // header check and reaches the handler (unknown resource: -32602, not -32020).
    let uri = "test://café/ü";
    let reply = Modern::request(3, "resources/read")
        .uri(uri)
        .set_header("Mcp-Name", &format!("=?base64?{}?=", STANDARD.encode(uri)))
        .reply(&client)
        .await;
    expect_error(&reply, StatusCode::BAD_REQUEST, INVALID_PARAMS, &json!(3));
}

#[tokio::test]
async fn mcp_name_malformed_base64_gets_400() {
    let server = TestServer::start();
    let client = client_of(&server);
    for (id, value) in [
        (1, "=?base64?!!!not-base64!!!?="),
        (2, "=?base64?ZWNobw?="), // missing padding: not canonical standard base64
        (3, "=?base64?/w==?="),   // decodes to a lone 0xFF byte: not UTF-8
    ] {
        let reply = Modern::call(id, "echo", json!({ "text": "x" }))
            .set_header("Mcp-Name", value)
            .reply(&client)
            .await;
        expect_error(&reply, StatusCode::BAD_REQUEST, HEADER_MISMATCH, &json!(id));
    }
}

#[tokio::test]
async fn mcp_param_header_must_mirror_the_argument() {
    let schema = json!({
        "type": "object",
        "properties": {
            "region": { "type": "string", "x-mcp-header": "Region" },
            "count": { "type": "integer", "x-mcp-header": "Count" },
        },
    });
    let tool = Tool::new("regional", "Echoes its arguments", schema, |_ctx, args| {
        Box::pin(async move { Ok(CallToolResult::text(args.to_string())) })
    })
    .expect("tool");
    let server = InProcess::start(Server::builder().add_tool(tool)).await;
    let client = server.client();
    let call = |id: i64, arguments: Value| Modern::call(id, "regional", arguments);
    let refused = [
        // Argument present, header missing.
        call(1, json!({ "region": "us-west1" })),
        // Header present, argument absent.
        call(2, json!({})).header("Mcp-Param-Region", "us-west1"),
        // Header present, argument null.
        call(3, json!({ "region": null })).header("Mcp-Param-Region", "us-west1"),
        // Values differ.
        call(4, json!({ "region": "us-west1" })).header("Mcp-Param-Region", "eu-west1"),
        call(5, json!({ "count": 42 })).header("Mcp-Param-Count", "43"),
        // Duplicated.
        call(6, json!({ "region": "us-west1" }))
            .header("Mcp-Param-Region", "us-west1")
            .header("Mcp-Param-Region", "us-west1"),
    ];
    for request in refused {
        let reply = request.reply(&client).await;
        expect_error(
            &reply,
            StatusCode::BAD_REQUEST,
            HEADER_MISMATCH,
            &request.id(),
        );
    }
    let accepted = [
        call(10, json!({ "region": "us-west1" })).header("Mcp-Param-Region", "us-west1"),
        call(11, json!({ "region": "us-west1" })).header("mcp-param-region", " us-west1 "),
        // Integers compare numerically (SHOULD).
        call(12, json!({ "count": 42 })).header("Mcp-Param-Count", "42.0"),
        call(13, json!({})),
        call(14, json!({ "region": "é" })).header(
            "Mcp-Param-Region",
            &format!("=?base64?{}?=", STANDARD.encode("é")),
        ),
    ];
    for request in accepted {
        let reply = request.reply(&client).await;
        let result = expect_result(&reply, &request.id());
        assert_eq!(result["resultType"], "complete", "{result}");
        assert!(result.get("isError").is_none(), "{result}");
    }
}

#[tokio::test]
async fn duplicated_routing_header_gets_400() {
    let server = TestServer::start();
    let client = client_of(&server);
    let cases = [
        Modern::call(1, "echo", json!({ "text": "x" })).header("MCP-Protocol-Version", MODERN),
        Modern::call(2, "echo", json!({ "text": "x" })).header("Mcp-Method", "tools/call"),
        Modern::call(3, "echo", json!({ "text": "x" })).header("Mcp-Name", "echo"),
    ];
    for request in cases {
        let reply = request.reply(&client).await;
        expect_error(
            &reply,
            StatusCode::BAD_REQUEST,
            HEADER_MISMATCH,
            &request.id(),
        );
    }
}

#[tokio::test]
async fn parse_error_gets_400_32700_and_batch_or_response_gets_400_32600() {
    let server = TestServer::start();
    let client = client_of(&server);
    let post = |body: String| {
        client
            .http
            .post(&client.url)
            .header("content-type", "application/json")
            .header("accept", ACCEPT_BOTH)
            .header("MCP-Protocol-Version", MODERN)
            .header("Mcp-Method", "tools/list")
            .body(body)
            .send()
    };
    // Each case is checked, and every deviation reported together.
    let cases = [
        (
            "unparseable JSON",
            "{\"jsonrpc\": \"2.0\", \"id\": 1,".to_string(),
            PARSE_ERROR,
        ),
        (
            "batch",
            json!([Modern::request(1, "tools/list").body()]).to_string(),
            INVALID_REQUEST,
        ),
        (
            "posted response",
            json!({ "jsonrpc": "2.0", "id": 5, "result": {} }).to_string(),
            INVALID_REQUEST,
        ),
        (
            "null id",
            json!({ "jsonrpc": "2.0", "id": null, "method": "tools/list",
                    "params": Modern::request(0, "tools/list").params })
            .to_string(),
            INVALID_REQUEST,
        ),
    ];
    let mut deviations = Vec::new();
    for (what, body, code) in cases {
        let reply = read_reply(post(body).await.expect("POST")).await;
        let got = reply.body.clone().unwrap_or(Value::Null);
        if reply.status != StatusCode::BAD_REQUEST {
            deviations.push(format!("{what}: status {} (want 400): {got}", reply.status));
        }
        if got["error"]["code"] != json!(code) {
            deviations.push(format!("{what}: code (want {code}): {got}"));
        }
        if got.get("id") != Some(&Value::Null) {
            deviations.push(format!("{what}: no `\"id\": null` member: {got}"));
        }
        if got.get("result").is_some() {
            deviations.push(format!("{what}: a result: {got}"));
        }
    }
    assert!(deviations.is_empty(), "{deviations:#?}");
}

#[tokio::test]
async fn no_session_id_header_on_modern_responses() {
    let server = TestServer::start();
    let client = client_of(&server);
    let legacy = client.connect().await;
    let requests = [
        Modern::request(1, "server/discover"),
        Modern::request(2, "tools/list"),
        Modern::call(3, "echo", json!({ "text": "x" })),
        // SSE reply.
        Modern::call(4, "sleep", json!({ "ms": 150 })).progress_token(json!("p")),
        // input_required.
        Modern::call(5, "ask", json!({ "question": "?" })).caps(json!({ "elicitation": {} })),
        // 400, 404.
        Modern::request(6, "tools/list").without_meta(),
        Modern::request(7, "ping"),
    ];
    for request in requests {
        // Even carrying the id of a live legacy session.
        let reply = request
            .clone()
            .header("Mcp-Session-Id", &legacy.id)
            .reply(&client)
            .await;
        assert!(reply.status.is_success() || reply.status.is_client_error());
        assert_no_session_header(&reply);
        let reply = request.reply(&client).await;
        assert_no_session_header(&reply);
    }
    let resp = Modern::notification("notifications/cancelled")
        .param("requestId", json!(3))
        .header("Mcp-Session-Id", &legacy.id)
        .send(&client)
        .await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    assert!(resp.headers().get("mcp-session-id").is_none());
}

// =====================================================================================
// Methods
// =====================================================================================

#[tokio::test]
async fn discover_returns_versions_capabilities_cache_hints_and_server_info() {
    let server = TestServer::start();
    let client = client_of(&server);
    let reply = Modern::request("d1", "server/discover")
        .reply(&client)
        .await;
    assert!(
        reply.content_type.starts_with("application/json"),
        "{reply:#?}"
    );
    let result = expect_result(&reply, &json!("d1"));
    assert_eq!(result["resultType"], "complete", "{result}");
    let versions = result["supportedVersions"]
        .as_array()
        .unwrap_or_else(|| panic!("supportedVersions: {result}"));
    assert!(versions.contains(&json!(MODERN)), "{result}");
    let capabilities = result["capabilities"]
        .as_object()
        .unwrap_or_else(|| panic!("capabilities object: {result}"));
    // The binary serves tools; they must be advertised.
    assert!(
        capabilities.get("tools").is_some_and(Value::is_object),
        "{result}"
    );
    let ttl = result["ttlMs"]
        .as_u64()
        .unwrap_or_else(|| panic!("ttlMs is an integer >= 0: {result}"));
    assert_eq!(ttl, 0, "the default modern.ttl_ms");
    assert_eq!(
        result["cacheScope"], "private",
        "the default modern.cache_scope"
    );
    let info = &result["_meta"][META_SERVER_INFO];
    assert_eq!(info["name"], "mcp-actor", "{result}");
    assert!(info["version"].is_string(), "{result}");
    assert!(
        result.get("protocolVersion").is_none(),
        "not echoed: {result}"
    );
    assert!(
        result.get("serverInfo").is_none(),
        "serverInfo lives in _meta: {result}"
    );
    // Capabilities match what is served: every advertised list method answers.
    for (cap, method) in [
        ("tools", "tools/list"),
        ("prompts", "prompts/list"),
        ("resources", "resources/list"),
    ] {
        if capabilities.contains_key(cap) {
            let listed = Modern::request(cap, method).result(&client).await;
            assert_eq!(listed["resultType"], "complete", "{method}: {listed}");
        }
    }
}

#[tokio::test]
async fn removed_methods_get_404_method_not_found() {
    let server = TestServer::start();
    let client = client_of(&server);
    let cases = [
        Modern::request("init", "initialize")
            .param("protocolVersion", json!(MODERN))
            .param("capabilities", json!({}))
            .param("clientInfo", json!({ "name": "t", "version": "1" })),
        Modern::request(2, "ping"),
        Modern::request(3, "logging/setLevel").param("level", json!("debug")),
        Modern::request(4, "resources/subscribe").param("uri", json!("test://a")),
        Modern::request(5, "resources/unsubscribe").param("uri", json!("test://a")),
        Modern::request("six", "unknown/method"),
    ];
    for request in cases {
        let reply = request.reply(&client).await;
        expect_error(
            &reply,
            StatusCode::NOT_FOUND,
            METHOD_NOT_FOUND,
            &request.id(),
        );
        assert_no_session_header(&reply);
    }
    assert_eq!(
        session_count(&client).await,
        0,
        "initialize opened no session"
    );
}

#[tokio::test]
async fn get_and_delete_with_modern_header_get_405_allow_post() {
    let server = TestServer::start();
    let client = client_of(&server);
    let get = client
        .http
        .get(&client.url)
        .header("accept", "text/event-stream")
        .header("MCP-Protocol-Version", MODERN)
        .send()
        .await
        .expect("GET");
    let delete = client
        .http
        .delete(&client.url)
        .header("MCP-Protocol-Version", MODERN)
        .send()
        .await
        .expect("DELETE");
    for (verb, resp) in [("GET", get), ("DELETE", delete)] {
        assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED, "{verb}");
        let allow = resp
            .headers()
            .get("allow")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_else(|| panic!("{verb}: 405 carries Allow"));
        let allowed: BTreeSet<&str> = allow.split(',').map(str::trim).collect();
        assert_eq!(allowed, BTreeSet::from(["POST"]), "{verb}: Allow {allow:?}");
    }
}

#[tokio::test]
async fn list_and_read_results_carry_ttl_and_cache_scope() {
    let mut config = Config::default();
    config.modern.ttl_ms = 60_000;
    config.modern.cache_scope = CacheScope::Public;
    // One item per page, so a list spans several pages that must all carry the hints.
    config.pagination.page_size = 1;
    let server = InProcess::start(builder_with_input_features(config)).await;
    let client = server.client();
    let check = |what: &str, result: &Value| {
        assert_eq!(result["resultType"], "complete", "{what}: {result}");
        assert_eq!(result["ttlMs"], json!(60_000), "{what}: {result}");
        assert_eq!(result["cacheScope"], "public", "{what}: {result}");
    };
    for (method, key) in [
        ("tools/list", "tools"),
        ("prompts/list", "prompts"),
        ("resources/list", "resources"),
        ("resources/templates/list", "resourceTemplates"),
    ] {
        let mut cursor: Option<Value> = None;
        let mut pages = 0;
        loop {
            let mut request = Modern::request(pages, method);
            if let Some(c) = cursor.take() {
                request = request.param("cursor", c);
            }
            let result = request.result(&client).await;
            check(&format!("{method} page {pages}"), &result);
            assert!(result[key].is_array(), "{result}");
            pages += 1;
            match result.get("nextCursor") {
                Some(next) => cursor = Some(next.clone()),
                None => break,
            }
            assert!(pages < 10, "{method} paginates without end");
        }
        if method == "prompts/list" || method == "resources/list" {
            assert!(pages >= 2, "{method} spans several pages at page_size 1");
        }
    }
    let read = Modern::request(1, "resources/read")
        .uri("test://fixed/a")
        .result(&client)
        .await;
    check("resources/read", &read);
    assert_eq!(read["contents"][0]["text"], "A", "{read}");
    let templated = Modern::request(2, "resources/read")
        .uri("test://items/9")
        .result(&client)
        .await;
    check("resources/read (template)", &templated);
    let discover = Modern::request(3, "server/discover").result(&client).await;
    check("server/discover", &discover);
}

#[tokio::test]
async fn unknown_resource_gets_400_invalid_params_not_32002() {
    let server = TestServer::start();
    let client = client_of(&server);
    let reply = Modern::request("r1", "resources/read")
        .uri("test://does-not-exist")
        .reply(&client)
        .await;
    let error = expect_error(
        &reply,
        StatusCode::BAD_REQUEST,
        INVALID_PARAMS,
        &json!("r1"),
    );
    assert_ne!(error["code"], json!(RESOURCE_NOT_FOUND_2025));
}

#[tokio::test]
async fn unknown_tool_gets_400_invalid_params() {
    let server = TestServer::start();
    let client = client_of(&server);
    let reply = Modern::call(1, "no_such_tool", json!({}))
        .reply(&client)
        .await;
    expect_error(&reply, StatusCode::BAD_REQUEST, INVALID_PARAMS, &json!(1));
}

#[tokio::test]
async fn undeclared_client_capability_gets_400_32021_with_required_capabilities_object() {
    let server = TestServer::start();
    let client = client_of(&server);
    for (id, tool, arguments, capability) in [
        (1, "ask", json!({ "question": "Name?" }), "elicitation"),
        (2, "sample", json!({ "prompt": "Hi" }), "sampling"),
    ] {
        // The request declares nothing (`clientCapabilities: {}`).
        let reply = Modern::call(id, tool, arguments).reply(&client).await;
        let error = expect_error(
            &reply,
            StatusCode::BAD_REQUEST,
            MISSING_CLIENT_CAPABILITY,
            &json!(id),
        );
        let required = error["data"]["requiredCapabilities"]
            .as_object()
            .unwrap_or_else(|| panic!("requiredCapabilities is an object: {error}"));
        assert!(
            required.get(capability).is_some_and(Value::is_object),
            "{capability} required: {error}"
        );
    }
}

#[tokio::test]
async fn result_meta_carries_server_info() {
    let server = TestServer::start();
    let client = client_of(&server);
    let results = [
        Modern::request(1, "server/discover").result(&client).await,
        Modern::request(2, "tools/list").result(&client).await,
        Modern::call(3, "echo", json!({ "text": "x" }))
            .result(&client)
            .await,
        Modern::call(4, "ask", json!({ "question": "?" }))
            .caps(json!({ "elicitation": {} }))
            .result(&client)
            .await,
    ];
    for result in results {
        let info = &result["_meta"][META_SERVER_INFO];
        assert_eq!(info["name"], "mcp-actor", "{result}");
        assert!(info["version"].is_string(), "{result}");
    }
}

#[tokio::test]
async fn notification_post_gets_202() {
    let server = TestServer::start();
    let client = client_of(&server);
    for notification in [
        Modern::notification("notifications/cancelled").param("requestId", json!(1)),
        Modern::notification("notifications/initialized"),
        Modern::notification("notifications/roots/list_changed"),
    ] {
        let resp = notification.send(&client).await;
        assert_eq!(
            resp.status(),
            StatusCode::ACCEPTED,
            "{}",
            notification.method
        );
        let body = resp.bytes().await.expect("body");
        assert!(body.is_empty(), "202 has an empty body: {body:?}");
    }
    assert_eq!(session_count(&client).await, 0);
}

// =====================================================================================
// MRTR
// =====================================================================================

#[tokio::test]
async fn input_required_result_for_elicitation() {
    let server = TestServer::start();
    let client = client_of(&server);
    let reply = Modern::call(1, "ask", json!({ "question": "Your name?" }))
        .caps(json!({ "elicitation": {} }))
        .reply(&client)
        .await;
    let result = expect_result(&reply, &json!(1));
    assert_eq!(result["resultType"], "input_required", "{result}");
    let (_key, entry) = single_input_request(&result);
    let fields: BTreeSet<&str> = entry
        .as_object()
        .expect("entry object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        fields,
        BTreeSet::from(["method", "params"]),
        "entries are {{method, params}} only: {entry}"
    );
    assert_eq!(entry["method"], "elicitation/create", "{entry}");
    assert_eq!(entry["params"]["message"], "Your name?", "{entry}");
    assert!(entry["params"]["requestedSchema"].is_object(), "{entry}");
    assert!(entry["params"].get("elicitationId").is_none(), "{entry}");
    request_state(&result);
    assert!(
        result.get("ttlMs").is_none() && result.get("cacheScope").is_none(),
        "{result}"
    );
    assert!(
        result.get("content").is_none(),
        "not a tool result: {result}"
    );
}

#[tokio::test]
async fn only_declared_input_kinds_are_requested() {
    let server = TestServer::start();
    let client = client_of(&server);
    // A client that declares sampling only is never asked to elicit.
    let reply = Modern::call(1, "ask", json!({ "question": "?" }))
        .caps(json!({ "sampling": {} }))
        .reply(&client)
        .await;
    if reply.status == StatusCode::OK {
        let result = expect_result(&reply, &json!(1));
        let requests = result["inputRequests"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert!(
            requests
                .values()
                .all(|r| r["method"] != "elicitation/create"),
            "elicitation/create asked of a client without elicitation: {result}"
        );
    } else {
        expect_error(
            &reply,
            StatusCode::BAD_REQUEST,
            MISSING_CLIENT_CAPABILITY,
            &json!(1),
        );
    }
    // The same client is asked for what it declared.
    let result = Modern::call(2, "sample", json!({ "prompt": "Hi" }))
        .caps(json!({ "sampling": {} }))
        .result(&client)
        .await;
    let (_, entry) = single_input_request(&result);
    assert_eq!(entry["method"], "sampling/createMessage", "{entry}");
    assert_eq!(
        entry["params"]["messages"][0]["content"]["text"], "Hi",
        "{entry}"
    );
}

#[tokio::test]
async fn retry_with_input_responses_and_state_completes() {
    let server = TestServer::start();
    let client = client_of(&server);
    let ask = Modern::call(1, "ask", json!({ "question": "Your name?" }))
        .caps(json!({ "elicitation": {} }));
    let first = ask.result(&client).await;
    let (key, _) = single_input_request(&first);
    let state = request_state(&first);
    let retry = Modern {
        id: Some(json!(2)),
        ..ask.clone()
    }
    .param("inputResponses", json!({ key: accept("bob") }))
    .param("requestState", json!(state));
    let reply = retry.reply(&client).await;
    let done = expect_result(&reply, &json!(2));
    assert_eq!(done["resultType"], "complete", "{done}");
    assert_eq!(first_text(&done), "bob", "{done}");
    assert!(done.get("isError").is_none(), "{done}");
    assert!(done.get("inputRequests").is_none(), "{done}");
    // Sampling round trip too.
    let sample =
        Modern::call(3, "sample", json!({ "prompt": "Hi" })).caps(json!({ "sampling": {} }));
    let first = sample.result(&client).await;
    let (key, _) = single_input_request(&first);
    let mut retry = Modern {
        id: Some(json!(4)),
        ..sample
    }
    .param(
        "inputResponses",
        json!({ key: { "role": "assistant", "model": "m",
                       "content": { "type": "text", "text": "Hello back" } } }),
    );
    if let Some(state) = first.get("requestState") {
        retry = retry.param("requestState", state.clone());
    }
    let done = retry.result(&client).await;
    assert_eq!(done["resultType"], "complete", "{done}");
    assert_eq!(first_text(&done), "Hello back", "{done}");
}

/// `token` with one character in its middle changed.
fn tamper(token: &str) -> String {
    let mut chars: Vec<char> = token.chars().collect();
    let middle = chars.len() / 2;
    chars[middle] = if chars[middle] == 'A' { 'B' } else { 'A' };
    chars.into_iter().collect()
}

#[tokio::test]
async fn tampered_request_state_gets_400_invalid_params() {
    let server = TestServer::start();
    let client = client_of(&server);
    let ask = Modern::call(1, "ask", json!({ "question": "Your name?" }))
        .caps(json!({ "elicitation": {} }));
    let first = ask.result(&client).await;
    let (key, _) = single_input_request(&first);
    let state = request_state(&first);
    for (id, bad) in [
        (json!(2), json!(tamper(&state))),
        (json!(3), json!(format!("{state}A"))),
        (json!(4), json!("v1.forged")),
        (json!(5), json!("")),
    ] {
        let retry = Modern {
            id: Some(id.clone()),
            ..ask.clone()
        }
        .param("inputResponses", json!({ key.clone(): accept("bob") }))
        .param("requestState", bad);
        let reply = retry.reply(&client).await;
        expect_error(&reply, StatusCode::BAD_REQUEST, INVALID_PARAMS, &id);
    }
}

#[tokio::test]
async fn request_state_bound_to_arguments() {
    let server = TestServer::start();
    let client = client_of(&server);
    let ask = Modern::call(1, "ask", json!({ "question": "Your name?" }))
        .caps(json!({ "elicitation": {} }));
    let first = ask.result(&client).await;
    let (key, _) = single_input_request(&first);
    let state = request_state(&first);
    let answers = json!({ key: accept("bob") });
    // Same tool, other arguments.
    let other_args = Modern::call(2, "ask", json!({ "question": "Your password?" }))
        .caps(json!({ "elicitation": {} }))
        .param("inputResponses", answers.clone())
        .param("requestState", json!(state));
    let reply = other_args.reply(&client).await;
    expect_error(&reply, StatusCode::BAD_REQUEST, INVALID_PARAMS, &json!(2));
    // Another tool (with arguments it accepts).
    let other_tool = Modern::call(3, "echo", json!({ "text": "Your name?" }))
        .param("inputResponses", answers.clone())
        .param("requestState", json!(state));
    let reply = other_tool.reply(&client).await;
    expect_error(&reply, StatusCode::BAD_REQUEST, INVALID_PARAMS, &json!(3));
    // The original request still completes with it.
    let retry = Modern {
        id: Some(json!(4)),
        ..ask
    }
    .param("inputResponses", answers)
    .param("requestState", json!(state));
    let done = retry.result(&client).await;
    assert_eq!(first_text(&done), "bob", "{done}");
}

#[tokio::test]
async fn missing_input_response_key_asks_again_not_error() {
    let server = TestServer::start();
    let client = client_of(&server);
    let ask = Modern::call(1, "ask", json!({ "question": "Your name?" }))
        .caps(json!({ "elicitation": {} }));
    let first = ask.result(&client).await;
    let (key, entry) = single_input_request(&first);
    let state = request_state(&first);
    let retry = |id: i64, responses: Value| {
        Modern {
            id: Some(json!(id)),
            ..ask.clone()
        }
        .param("inputResponses", responses)
        .param("requestState", json!(state))
    };
    // Wrong key, no responses at all, and a structurally invalid answer: asked again.
    for (id, responses) in [
        (2, json!({ "not-the-key": accept("bob") })),
        (3, json!({})),
        (4, json!({ key.clone(): 12345 })),
    ] {
        let reply = retry(id, responses).reply(&client).await;
        let again = expect_result(&reply, &json!(id));
        assert_eq!(again["resultType"], "input_required", "{again}");
        let (again_key, again_entry) = single_input_request(&again);
        assert_eq!(again_key, key, "the same question under the same key");
        assert_eq!(again_entry, entry);
        request_state(&again);
    }
    // Extra keys beside the right one are ignored.
    let reply = retry(
        5,
        json!({ key.clone(): accept("bob"), "extra": accept("eve") }),
    )
    .reply(&client)
    .await;
    let done = expect_result(&reply, &json!(5));
    assert_eq!(done["resultType"], "complete", "{done}");
    assert_eq!(first_text(&done), "bob", "{done}");
}

#[tokio::test]
async fn prompts_get_and_resources_read_can_return_input_required() {
    let server = InProcess::start(builder_with_input_features(Config::default())).await;
    let client = server.client();
    let caps = json!({ "elicitation": {} });
    for (request, expected) in [
        (
            Modern::request(1, "prompts/get")
                .name("greet")
                .caps(caps.clone()),
            "Hello bob",
        ),
        (
            Modern::request(3, "resources/read")
                .uri("test://secret")
                .caps(caps.clone()),
            "secret for bob",
        ),
    ] {
        let first = request.result(&client).await;
        assert_eq!(first["resultType"], "input_required", "{first}");
        assert!(
            first.get("ttlMs").is_none(),
            "no cache hints on input_required: {first}"
        );
        let (key, entry) = single_input_request(&first);
        assert_eq!(entry["method"], "elicitation/create", "{entry}");
        let state = request_state(&first);
        let retry_id = json!(request.id().as_i64().unwrap() + 1);
        let retry = Modern {
            id: Some(retry_id.clone()),
            ..request.clone()
        }
        .param("inputResponses", json!({ key: accept("bob") }))
        .param("requestState", json!(state));
        let done = retry.result(&client).await;
        assert_eq!(done["resultType"], "complete", "{done}");
        let text = done["messages"][0]["content"]["text"]
            .as_str()
            .or_else(|| done["contents"][0]["text"].as_str());
        assert_eq!(text, Some(expected), "{done}");
    }
}

#[tokio::test]
async fn tools_list_never_returns_input_required() {
    let server = InProcess::start(builder_with_input_features(Config::default())).await;
    let client = server.client();
    let all = json!({ "elicitation": {}, "sampling": {}, "roots": {} });
    for (id, method) in [
        (1, "tools/list"),
        (2, "prompts/list"),
        (3, "resources/list"),
    ] {
        let result = Modern::request(id, method)
            .caps(all.clone())
            .result(&client)
            .await;
        assert_eq!(result["resultType"], "complete", "{method}: {result}");
        assert!(result.get("inputRequests").is_none(), "{result}");
        assert!(result.get("requestState").is_none(), "{result}");
    }
}

#[tokio::test]
async fn no_json_rpc_request_on_response_stream() {
    let server = TestServer::start();
    let client = client_of(&server);
    let all = json!({ "elicitation": {}, "sampling": {}, "roots": {} });
    let replies = [
        Modern::call(1, "sleep", json!({ "ms": 250 }))
            .progress_token(json!(1))
            .log_level("debug")
            .reply(&client)
            .await,
        Modern::call(2, "ask", json!({ "question": "?" }))
            .caps(all.clone())
            .reply(&client)
            .await,
        Modern::call(3, "sample", json!({ "prompt": "?" }))
            .caps(all.clone())
            .progress_token(json!("t"))
            .log_level("debug")
            .reply(&client)
            .await,
    ];
    assert!(
        replies[0].is_sse(),
        "the sleep reply streams: {:#?}",
        replies[0]
    );
    for reply in &replies {
        assert_eq!(reply.status, StatusCode::OK, "{reply:#?}");
        for message in &reply.messages {
            assert!(
                !(message.get("method").is_some() && message.get("id").is_some()),
                "a JSON-RPC request on a response stream: {message}"
            );
        }
    }
}

// =====================================================================================
// Streams, progress, logging, cancellation
// =====================================================================================

#[tokio::test]
async fn progress_frames_precede_response_on_same_stream() {
    let server = TestServer::start();
    let client = client_of(&server);
    let reply = Modern::call("p1", "sleep", json!({ "ms": 450 }))
        .progress_token(json!("tok-1"))
        .reply(&client)
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(reply.is_sse(), "progress needs the SSE form: {reply:#?}");
    let last = reply.messages.last().expect("messages");
    assert_eq!(last["id"], "p1", "the response ends the stream: {reply:#?}");
    let result = expect_result(&reply, &json!("p1"));
    assert_eq!(first_text(&result), "slept 450 ms");
    let before = &reply.messages[..reply.messages.len() - 1];
    assert!(before.len() >= 2, "several progress frames: {reply:#?}");
    let mut previous = f64::MIN;
    for frame in before {
        assert_eq!(frame["method"], "notifications/progress", "{frame}");
        assert_eq!(frame["params"]["progressToken"], "tok-1", "{frame}");
        let progress = frame["params"]["progress"].as_f64().expect("progress");
        assert!(progress > previous, "progress increases: {reply:#?}");
        previous = progress;
    }
    // Without a token: no progress, a plain JSON reply.
    let reply = Modern::call(2, "sleep", json!({ "ms": 250 }))
        .reply(&client)
        .await;
    assert!(
        notifications(&reply, "notifications/progress").is_empty(),
        "{reply:#?}"
    );
    expect_result(&reply, &json!(2));
}

#[tokio::test]
async fn no_log_frames_without_log_level() {
    let server = TestServer::start();
    let client = client_of(&server);
    // The builtin sleep logs at info twice; with a progress token the reply is a stream,
    // so a log frame would have somewhere to go.
    let reply = Modern::call(1, "sleep", json!({ "ms": 250 }))
        .progress_token(json!(1))
        .reply(&client)
        .await;
    expect_result(&reply, &json!(1));
    assert!(reply.is_sse(), "{reply:#?}");
    assert!(
        notifications(&reply, "notifications/message").is_empty(),
        "no logLevel, no notifications/message: {reply:#?}"
    );
    // Control: asking for logs gets them on the same kind of request.
    let reply = Modern::call(2, "sleep", json!({ "ms": 50 }))
        .log_level("info")
        .reply(&client)
        .await;
    expect_result(&reply, &json!(2));
    assert_eq!(
        notifications(&reply, "notifications/message").len(),
        2,
        "{reply:#?}"
    );
}

#[tokio::test]
async fn log_level_filters_lower_levels() {
    let server = TestServer::start();
    let client = client_of(&server);
    // sleep logs at info: a request asking for notice and above gets none of it.
    let reply = Modern::call(1, "sleep", json!({ "ms": 250 }))
        .progress_token(json!(1))
        .log_level("notice")
        .reply(&client)
        .await;
    expect_result(&reply, &json!(1));
    assert!(
        notifications(&reply, "notifications/message").is_empty(),
        "info frames below notice: {reply:#?}"
    );
    // At info and at debug they come, each at level info, before the response.
    for (id, level) in [(2, "info"), (3, "debug")] {
        let reply = Modern::call(id, "sleep", json!({ "ms": 50 }))
            .log_level(level)
            .reply(&client)
            .await;
        expect_result(&reply, &json!(id));
        let logs = notifications(&reply, "notifications/message");
        assert_eq!(logs.len(), 2, "{level}: {reply:#?}");
        for log in logs {
            assert_eq!(log["params"]["level"], "info", "{log}");
        }
        assert_eq!(reply.messages.last().expect("last")["id"], json!(id));
    }
}

#[tokio::test]
async fn log_level_info_sends_no_debug_frames() {
    let tool = Tool::new(
        "chatty",
        "Logs at three levels",
        json!({ "type": "object" }),
        |ctx, _| {
            Box::pin(async move {
                ctx.log(LogLevel::Debug, Some("chatty"), json!("debug line"))
                    .await;
                ctx.log(LogLevel::Info, Some("chatty"), json!("info line"))
                    .await;
                ctx.log(LogLevel::Warning, Some("chatty"), json!("warning line"))
                    .await;
                Ok(CallToolResult::text("done"))
            })
        },
    )
    .expect("tool");
    let server = InProcess::start(Server::builder().add_tool(tool)).await;
    let client = server.client();
    let reply = Modern::call(1, "chatty", json!({}))
        .log_level("info")
        .reply(&client)
        .await;
    expect_result(&reply, &json!(1));
    let levels: Vec<&Value> = notifications(&reply, "notifications/message")
        .into_iter()
        .map(|m| &m["params"]["level"])
        .collect();
    assert_eq!(levels, [&json!("info"), &json!("warning")], "{reply:#?}");
    // And an unknown level is invalid params.
    let reply = Modern::call(2, "chatty", json!({}))
        .log_level("verbose")
        .reply(&client)
        .await;
    expect_error(&reply, StatusCode::BAD_REQUEST, INVALID_PARAMS, &json!(2));
}

#[tokio::test]
async fn sse_responses_have_no_event_ids() {
    let server = TestServer::start();
    let client = client_of(&server);
    let resp = Modern::call(1, "sleep", json!({ "ms": 350 }))
        .progress_token(json!(1))
        .log_level("info")
        .send(&client)
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    let header = |name: &str| {
        resp.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    assert!(header("content-type").starts_with("text/event-stream"));
    assert_eq!(header("x-accel-buffering"), "no");
    let text = resp.text().await.expect("SSE body");
    let mut data_lines = 0;
    for line in text.lines() {
        assert!(!line.starts_with("id:"), "event id sent: {text:?}");
        assert!(!line.starts_with("retry:"), "retry sent: {text:?}");
        if let Some(data) = line.strip_prefix("data:") {
            assert!(!data.trim().is_empty(), "no empty priming event: {text:?}");
            let message: Value = serde_json::from_str(data.trim()).expect("data is JSON");
            assert!(message.is_object(), "{message}");
            data_lines += 1;
        }
    }
    // Two log lines, three progress frames, the response.
    assert!(data_lines >= 4, "{text:?}");
}

#[tokio::test]
async fn last_event_id_ignored() {
    let server = TestServer::start();
    let client = client_of(&server);
    // A first stream, then a "resumption" naming an id: it is a fresh request like any other.
    let first = Modern::call(1, "sleep", json!({ "ms": 250 }))
        .progress_token(json!(1))
        .reply(&client)
        .await;
    expect_result(&first, &json!(1));
    for last_event_id in ["0", "1/2", "stream-1:7"] {
        let reply = Modern::call(2, "sleep", json!({ "ms": 250 }))
            .progress_token(json!(2))
            .header("Last-Event-ID", last_event_id)
            .reply(&client)
            .await;
        let result = expect_result(&reply, &json!(2));
        assert_eq!(first_text(&result), "slept 250 ms");
        assert!(reply.event_ids.is_empty(), "{reply:#?}");
        assert!(
            !notifications(&reply, "notifications/progress").is_empty(),
            "a full fresh stream: {reply:#?}"
        );
        assert!(
            reply
                .messages
                .iter()
                .all(|m| m.get("id").is_none() || m["id"] == 2),
            "nothing of request 1 replayed: {reply:#?}"
        );
        let listed = Modern::request(3, "tools/list")
            .header("Last-Event-ID", last_event_id)
            .reply(&client)
            .await;
        expect_result(&listed, &json!(3));
    }
}

/// Sets its flag when dropped: the tool's future was dropped (aborted) or finished.
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_disconnect_cancels_the_handler() {
    let ticks = Arc::new(AtomicUsize::new(0));
    let dropped = Arc::new(AtomicBool::new(false));
    let finished = Arc::new(AtomicBool::new(false));
    let tool = {
        let (ticks, dropped, finished) = (ticks.clone(), dropped.clone(), finished.clone());
        Tool::new(
            "ticker",
            "Ticks for ten seconds",
            json!({ "type": "object" }),
            move |ctx, _| {
                let (ticks, dropped, finished) = (ticks.clone(), dropped.clone(), finished.clone());
                Box::pin(async move {
                    let _guard = SetOnDrop(dropped);
                    for i in 1..=500 {
                        ticks.fetch_add(1, Ordering::SeqCst);
                        ctx.progress(f64::from(i), Some(500.0), None).await;
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    finished.store(true, Ordering::SeqCst);
                    Ok(CallToolResult::text("finished"))
                })
            },
        )
        .expect("tool")
    };
    let server = InProcess::start(Server::builder().add_tool(tool)).await;
    let client = server.client();
    let resp = Modern::call(1, "ticker", json!({}))
        .progress_token(json!("t"))
        .send(&client)
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    let mut reader = SseReader::new(resp);
    for _ in 0..3 {
        let frame = next_message(&mut reader, "progress").await;
        assert_eq!(frame["method"], "notifications/progress", "{frame}");
    }
    assert!(
        !dropped.load(Ordering::SeqCst),
        "the handler runs while the client reads"
    );
    // The client goes away.
    drop(reader);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !dropped.load(Ordering::SeqCst) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the handler still runs 5 s after the client disconnected (ticks {})",
            ticks.load(Ordering::SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!finished.load(Ordering::SeqCst), "stopped, not finished");
    let stopped_at = ticks.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        ticks.load(Ordering::SeqCst),
        stopped_at,
        "no work after the handler stopped"
    );
    assert!(stopped_at < 500, "cut early: {stopped_at} ticks");
}

// =====================================================================================
// subscriptions/listen
// =====================================================================================

#[tokio::test]
async fn listen_requires_event_stream_accept() {
    let server = TestServer::start();
    let client = client_of(&server);
    let resp = Modern::request(1, "subscriptions/listen")
        .param("notifications", json!({ "toolsListChanged": true }))
        .send_accepting(&client, "application/json")
        .await;
    assert_eq!(resp.status(), StatusCode::NOT_ACCEPTABLE);
    assert!(resp.headers().get("mcp-session-id").is_none());
    let health: Value = client
        .http
        .get(format!("{}/healthz", base_of(&client.url)))
        .send()
        .await
        .expect("health")
        .json()
        .await
        .expect("health JSON");
    assert_eq!(health["listenStreams"], 0, "no stream was opened: {health}");
}

#[tokio::test]
async fn listen_acknowledges_first_with_subscription_id_and_honored_filter() {
    let server = TestServer::start();
    let client = client_of(&server);
    let (_string_stream, ack) = listen(
        &client,
        json!("sub-1"),
        json!({ "toolsListChanged": true, "promptsListChanged": false,
                "resourceSubscriptions": ["test://a"] }),
    )
    .await;
    let honored = &ack["params"]["notifications"];
    assert_eq!(honored["toolsListChanged"], true, "{ack}");
    assert_eq!(
        honored["resourceSubscriptions"],
        json!(["test://a"]),
        "{ack}"
    );
    assert_ne!(
        honored.get("promptsListChanged"),
        Some(&json!(true)),
        "{ack}"
    );
    assert_ne!(
        honored.get("resourcesListChanged"),
        Some(&json!(true)),
        "{ack}"
    );
    // A numeric id stays a number.
    let (_number_stream, ack) =
        listen(&client, json!(42), json!({ "promptsListChanged": true })).await;
    assert_eq!(ack["params"]["_meta"][META_SUBSCRIPTION_ID], json!(42));
    assert_eq!(
        ack["params"]["notifications"]["promptsListChanged"], true,
        "{ack}"
    );
    assert_ne!(
        ack["params"]["notifications"].get("toolsListChanged"),
        Some(&json!(true)),
        "{ack}"
    );
    assert_eq!(session_count(&client).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listen_delivers_only_requested_kinds_with_subscription_id() {
    let server = InProcess::start(builder_with_input_features(Config::default())).await;
    let client = server.client();
    let (mut tools_only, _) =
        listen(&client, json!("a"), json!({ "toolsListChanged": true })).await;
    let (mut prompts_and_a, _) = listen(
        &client,
        json!(7),
        json!({ "promptsListChanged": true, "resourceSubscriptions": ["test://fixed/a"] }),
    )
    .await;
    // Events come out in order, so the first frame each stream gets tells whether an
    // unrequested kind slipped through before it.
    let notify = |event| server.server.notify(event);
    notify(ServerEvent::PromptsListChanged);
    notify(ServerEvent::ResourcesListChanged);
    notify(ServerEvent::ResourceUpdated {
        uri: "test://fixed/b".into(),
    });
    notify(ServerEvent::ResourceUpdated {
        uri: "test://fixed/a".into(),
    });
    notify(ServerEvent::ToolsListChanged);

    let frame = next_message(&mut tools_only, "tools/list_changed").await;
    assert_eq!(
        frame["method"], "notifications/tools/list_changed",
        "{frame}"
    );
    assert_eq!(
        frame["params"]["_meta"][META_SUBSCRIPTION_ID], "a",
        "{frame}"
    );
    assert!(frame.get("id").is_none(), "{frame}");

    let frame = next_message(&mut prompts_and_a, "prompts/list_changed").await;
    assert_eq!(
        frame["method"], "notifications/prompts/list_changed",
        "{frame}"
    );
    assert_eq!(
        frame["params"]["_meta"][META_SUBSCRIPTION_ID],
        json!(7),
        "{frame}"
    );
    let frame = next_message(&mut prompts_and_a, "resources/updated").await;
    assert_eq!(
        frame["method"], "notifications/resources/updated",
        "{frame}"
    );
    assert_eq!(frame["params"]["uri"], "test://fixed/a", "{frame}");
    assert_eq!(
        frame["params"]["_meta"][META_SUBSCRIPTION_ID],
        json!(7),
        "{frame}"
    );

    // A last round: each stream's next frame is again only of its own kinds.
    notify(ServerEvent::ToolsListChanged);
    notify(ServerEvent::PromptsListChanged);
    let frame = next_message(&mut tools_only, "second tools/list_changed").await;
    assert_eq!(
        frame["method"], "notifications/tools/list_changed",
        "{frame}"
    );
    let frame = next_message(&mut prompts_and_a, "second prompts/list_changed").await;
    assert_eq!(
        frame["method"], "notifications/prompts/list_changed",
        "{frame}"
    );
    // Nothing else is pending on either stream.
    for reader in [&mut tools_only, &mut prompts_and_a] {
        let extra = reader.next_message(Duration::from_millis(300)).await;
        assert!(extra.is_none(), "unrequested frame: {extra:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listen_graceful_close_sends_complete_result() {
    let mut server = InProcess::start(builder_with_input_features(Config::default())).await;
    let client = server.client();
    let (mut stream, _) = listen(&client, json!("L1"), json!({ "toolsListChanged": true })).await;
    let (mut numbered, _) = listen(&client, json!(5), json!({ "promptsListChanged": true })).await;
    server.shutdown().await;
    for (reader, id) in [(&mut stream, json!("L1")), (&mut numbered, json!(5))] {
        let last = next_message(reader, "the final result").await;
        assert_eq!(last["jsonrpc"], "2.0", "{last}");
        assert_eq!(last["id"], id, "{last}");
        assert!(last.get("error").is_none(), "{last}");
        assert_eq!(last["result"]["resultType"], "complete", "{last}");
        assert_eq!(last["result"]["_meta"][META_SUBSCRIPTION_ID], id, "{last}");
        // Then the stream ends.
        let after = reader.next_message(EVENT_WAIT).await;
        assert!(after.is_none(), "nothing after the final result: {after:?}");
    }
}

// =====================================================================================
// Dual era on the same URL
// =====================================================================================

#[tokio::test]
async fn initialize_without_header_still_opens_legacy_session() {
    let server = TestServer::start();
    let client = client_of(&server);
    let session = client.connect().await;
    assert_eq!(session.version, HANDSHAKE_LATEST);
    assert!(!session.id.is_empty());
    assert_eq!(session_count(&client).await, 1);
    let init = &session.init_result["result"];
    assert!(init.get("resultType").is_none(), "{init}");
    let listed = session.call(json!(1), "tools/list", json!({})).await;
    assert!(listed["tools"].is_array(), "{listed}");
    for field in ["resultType", "ttlMs", "cacheScope"] {
        assert!(
            listed.get(field).is_none(),
            "2025 shape has no {field}: {listed}"
        );
    }
    assert!(listed["_meta"].get(META_SERVER_INFO).is_none(), "{listed}");
    let called = session
        .call(
            json!(2),
            "tools/call",
            json!({ "name": "echo", "arguments": { "text": "old" } }),
        )
        .await;
    assert_eq!(first_text(&called), "old");
    assert!(called.get("resultType").is_none(), "{called}");
    let pong = session.call(json!(3), "ping", json!({})).await;
    assert_eq!(pong, json!({}));
}

#[tokio::test]
async fn discover_on_legacy_session_gets_method_not_found() {
    let server = TestServer::start();
    let client = client_of(&server);
    let session = client.connect().await;
    let reply = session
        .request(json!(1), "server/discover", json!({}))
        .await;
    let response = reply
        .response(&json!(1))
        .unwrap_or_else(|| panic!("no response: {reply:#?}"));
    assert_eq!(response["error"]["code"], METHOD_NOT_FOUND, "{response}");
}

#[tokio::test]
async fn initialize_proposing_2026_gets_2025_11_25() {
    let server = TestServer::start();
    let client = client_of(&server);
    let session = client.initialize(MODERN, json!({})).await;
    assert_eq!(session.version, HANDSHAKE_LATEST, "{}", session.init_result);
    assert!(!session.id.is_empty());
    assert_eq!(session_count(&client).await, 1);
}

#[tokio::test]
async fn legacy_session_with_unknown_version_header_gets_400() {
    let server = TestServer::start();
    let client = client_of(&server);
    let session = client.connect().await;
    for (id, version) in [(1, "1999-01-01"), (2, "2099-12-31")] {
        let resp = client
            .http
            .post(&client.url)
            .header("content-type", "application/json")
            .header("accept", ACCEPT_BOTH)
            .header("Mcp-Session-Id", &session.id)
            .header("MCP-Protocol-Version", version)
            .body(json!({ "jsonrpc": "2.0", "id": id, "method": "tools/list" }).to_string())
            .send()
            .await
            .expect("POST");
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{version}");
    }
    // The session itself is unharmed.
    let listed = session.call(json!(3), "tools/list", json!({})).await;
    assert!(listed["tools"].is_array());
}

#[tokio::test]
async fn modern_request_never_creates_a_session() {
    let server = TestServer::start();
    let client = client_of(&server);
    assert_eq!(session_count(&client).await, 0);
    let caps = json!({ "elicitation": {}, "sampling": {} });
    let mut burst = Vec::new();
    for i in 0..8 {
        burst.push(Modern::request(i * 10, "server/discover"));
        burst.push(Modern::request(i * 10 + 1, "tools/list"));
        burst.push(Modern::call(i * 10 + 2, "echo", json!({ "text": "x" })));
        burst.push(Modern::call(i * 10 + 3, "ask", json!({ "question": "?" })).caps(caps.clone()));
        burst.push(Modern::call(i * 10 + 4, "sleep", json!({ "ms": 20 })).progress_token(json!(i)));
        burst.push(Modern::request(i * 10 + 5, "initialize"));
        burst.push(Modern::request(i * 10 + 6, "tools/list").without_meta());
    }
    let replies =
        futures_util::future::join_all(burst.iter().map(|request| request.reply(&client))).await;
    for reply in &replies {
        assert!(
            reply.status == StatusCode::OK
                || reply.status == StatusCode::BAD_REQUEST
                || reply.status == StatusCode::NOT_FOUND,
            "{reply:#?}"
        );
        assert_no_session_header(reply);
    }
    let ok = replies
        .iter()
        .filter(|r| r.status == StatusCode::OK)
        .count();
    assert_eq!(ok, 8 * 5, "the valid requests succeed");
    assert_eq!(
        session_count(&client).await,
        0,
        "no session after the burst"
    );
    // The probe does count sessions.
    let _legacy = client.connect().await;
    assert_eq!(session_count(&client).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_and_modern_clients_call_tools_concurrently() {
    let server = TestServer::start();
    let client = client_of(&server);
    let session = client.connect().await;
    let legacy = futures_util::future::join_all((0..10).map(|i| {
        let session = session.clone();
        async move {
            session
                .call_tool_text(json!(i), "echo", json!({ "text": format!("legacy {i}") }))
                .await
        }
    }));
    let modern = futures_util::future::join_all((0..10).map(|i| {
        let client = client.clone();
        async move {
            let result = Modern::call(i, "echo", json!({ "text": format!("modern {i}") }))
                .result(&client)
                .await;
            first_text(&result).to_string()
        }
    }));
    let (legacy, modern) = tokio::join!(legacy, modern);
    for i in 0..10 {
        assert_eq!(legacy[i], format!("legacy {i}"));
        assert_eq!(modern[i], format!("modern {i}"));
    }
    assert_eq!(session_count(&client).await, 1);
}

// =====================================================================================
// Several nodes, no stickiness
// =====================================================================================

/// 32 random bytes, base64.
fn random_key() -> String {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .expect("read /dev/urandom");
    STANDARD.encode(bytes)
}

fn node_config(key: Option<&str>) -> String {
    let modern = match key {
        Some(key) => format!("[modern]\nrequest_state_key = \"{key}\"\n"),
        None => String::new(),
    };
    format!("{modern}\n[[tools]]\nbuiltin = \"ask\"\n\n[[tools]]\nbuiltin = \"echo\"\n")
}

#[tokio::test]
async fn modern_traffic_spread_over_three_nodes_without_stickiness() {
    let key = random_key();
    let nodes: Vec<TestServer> = (0..3)
        .map(|_| TestServer::with_config(&node_config(Some(&key))))
        .collect();
    let stranger = TestServer::with_config(&node_config(None));
    let clients: Vec<Client> = nodes.iter().map(client_of).collect();
    let caps = json!({ "elicitation": {} });

    // Node 1 asks.
    let ask = Modern::call(1, "ask", json!({ "question": "Your name?" })).caps(caps.clone());
    let first = ask.result(&clients[0]).await;
    let (key_1, _) = single_input_request(&first);
    let state = request_state(&first);
    let retry = Modern {
        id: Some(json!(2)),
        ..ask.clone()
    }
    .param("inputResponses", json!({ key_1: accept("bob") }))
    .param("requestState", json!(state));
    // Node 2 finishes it.
    let done = retry.result(&clients[1]).await;
    assert_eq!(done["resultType"], "complete", "{done}");
    assert_eq!(first_text(&done), "bob", "{done}");

    // An independent round trip started on node 3 and finished on node 1.
    let other = Modern::call(3, "ask", json!({ "question": "Colour?" })).caps(caps.clone());
    let started = other.result(&clients[2]).await;
    let (key_3, _) = single_input_request(&started);
    let finished = Modern {
        id: Some(json!(4)),
        ..other
    }
    .param("inputResponses", json!({ key_3: accept("blue") }))
    .param("requestState", json!(request_state(&started)))
    .result(&clients[0])
    .await;
    assert_eq!(first_text(&finished), "blue", "{finished}");
    let echoed = Modern::call(5, "echo", json!({ "text": "node 3" }))
        .result(&clients[2])
        .await;
    assert_eq!(first_text(&echoed), "node 3");

    // A node with its own key cannot open node 1's state.
    let reply = Modern {
        id: Some(json!(6)),
        ..retry
    }
    .reply(&client_of(&stranger))
    .await;
    expect_error(&reply, StatusCode::BAD_REQUEST, INVALID_PARAMS, &json!(6));

    for client in &clients {
        assert_eq!(session_count(client).await, 0, "no node holds a session");
    }
}

#[tokio::test]
async fn listen_streams_beyond_the_limit_get_503_with_retry_after() {
    let server = TestServer::with_config(
        "[modern]\nmax_listen_streams = 1\n\n[[tools]]\nbuiltin = \"echo\"\n",
    );
    let client = client_of(&server);
    let (_open, _) = listen(&client, json!(1), json!({ "toolsListChanged": true })).await;
    let refused = Modern::request(2, "subscriptions/listen")
        .param("notifications", json!({ "toolsListChanged": true }))
        .send(&client)
        .await;
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(refused.headers().get("retry-after").is_some());
    let body: Value = refused.json().await.expect("JSON error");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("modern.max_listen_streams"), "{message}");
    drop(_open);
    // The slot comes back when the stream closes.
    let mut reopened = None;
    for _ in 0..50 {
        let resp = Modern::request(3, "subscriptions/listen")
            .param("notifications", json!({ "toolsListChanged": true }))
            .send(&client)
            .await;
        if resp.status() == StatusCode::OK {
            reopened = Some(resp);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        reopened.is_some(),
        "the slot was given back after the stream closed"
    );
}
