//! Interop: the official Rust MCP SDK client (`rmcp` 3.x, Streamable HTTP client transport over
//! reqwest) drives the real `mcp-actor` binary over HTTP on 127.0.0.1.
//!
//! rmcp 3.x defaults to protocol `2026-07-28` (no `initialize`, no session). These tests pin
//! the client to `2025-11-25` through `ClientConfig::protocol_version`, so they exercise the
//! session-era flow: `initialize` + `Mcp-Session-Id`, server→client requests (elicitation,
//! sampling) answered by the client handler, progress and log notifications, and the `DELETE`
//! the transport sends when the client shuts down.
//!
//! rmcp's public API does not expose the session id (neither the transport nor the peer hands
//! it out), so the transport is built over a small recording wrapper around rmcp's own reqwest
//! backend (`StreamableHttpClient` is a public trait): it forwards every call unchanged and
//! notes the session ids it sees, including the one `delete_session` is called with.

// rmcp 3.x marks sampling, roots and logging deprecated (SEP-2577, protocol 2026-07-28); they
// are exactly what the 2025-11-25 session revision uses.
#![allow(deprecated)]

mod common;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::join_all;
use futures_util::stream::BoxStream;
use reqwest::StatusCode;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig,
    ClientJsonRpcMessage, ClientRequest, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability, ErrorData,
    FormElicitationCapability, Implementation, JsonObject, LoggingLevel,
    LoggingMessageNotificationParam, ProgressNotificationParam, ProtocolVersion, RootsCapabilities,
    SamplingCapability, SamplingMessage, ServerResult, SetLevelRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpClientTransportConfig, StreamableHttpError,
    StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value, json};
use sse_stream_rmcp::Sse;

use common::{Session, TestServer};

/// The revision the client is pinned to (see the module docs).
const VERSION: ProtocolVersion = ProtocolVersion::V_2025_11_25;

// ---------------------------------------------------------------------------------------------
// The client handler: answers elicitation and sampling, records progress and log notifications.
// ---------------------------------------------------------------------------------------------

/// How the handler answers `elicitation/create`.
#[derive(Clone)]
enum Elicit {
    Accept(String),
    Decline,
}

#[derive(Clone)]
struct Handler {
    elicit: Elicit,
    /// The text the sampling callback answers with.
    sample_text: String,
    /// Elicitation messages received (form mode), with the requested schema as JSON.
    elicitations: Arc<Mutex<Vec<(String, Value)>>>,
    /// Sampling requests received.
    samplings: Arc<Mutex<Vec<CreateMessageRequestParams>>>,
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
    logs: Arc<Mutex<Vec<LoggingMessageNotificationParam>>>,
}

impl Handler {
    fn new() -> Handler {
        Handler {
            elicit: Elicit::Decline,
            sample_text: "no sample text configured".into(),
            elicitations: Default::default(),
            samplings: Default::default(),
            progress: Default::default(),
            logs: Default::default(),
        }
    }

    fn elicit(mut self, elicit: Elicit) -> Handler {
        self.elicit = elicit;
        self
    }

    fn sample_text(mut self, text: &str) -> Handler {
        self.sample_text = text.into();
        self
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        // (`ClientCapabilities::builder()` needs rmcp's `server`/`macros` features.)
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation =
            Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        capabilities.sampling = Some(SamplingCapability::default());
        capabilities.roots = Some(RootsCapabilities::default());
        ClientConfig::new(
            capabilities,
            Implementation::new("mcp-actor-rmcp-interop", "1"),
        )
        .with_protocol_version(VERSION)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            return Ok(ElicitResult::new(ElicitationAction::Cancel));
        };
        let schema = serde_json::to_value(&requested_schema).unwrap_or(Value::Null);
        self.elicitations.lock().unwrap().push((message, schema));
        Ok(match &self.elicit {
            Elicit::Accept(answer) => ElicitResult::new(ElicitationAction::Accept)
                .with_content(json!({ "answer": answer })),
            Elicit::Decline => ElicitResult::new(ElicitationAction::Decline),
        })
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.samplings.lock().unwrap().push(params);
        Ok(CreateMessageResult::new(
            SamplingMessage::assistant_text(self.sample_text.clone()),
            "rmcp-interop-model".into(),
        )
        .with_stop_reason(CreateMessageResult::STOP_REASON_END_TURN))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.logs.lock().unwrap().push(params);
    }
}

// ---------------------------------------------------------------------------------------------
// A recording HTTP backend: rmcp's reqwest backend, plus a note of the session ids it carries.
// ---------------------------------------------------------------------------------------------

#[derive(Default, Debug)]
struct Seen {
    /// Every session id sent with, or handed back by, a POST.
    session_ids: BTreeSet<String>,
    /// `delete_session` calls: the session id and whether the DELETE succeeded.
    deletes: Vec<(String, Result<(), String>)>,
}

#[derive(Clone)]
struct Recording<C> {
    inner: C,
    seen: Arc<Mutex<Seen>>,
}

impl<C> Recording<C> {
    fn note_session(&self, id: Option<&str>) {
        if let Some(id) = id {
            self.seen.lock().unwrap().session_ids.insert(id.to_string());
        }
    }

    fn note_response<E: std::error::Error + Send + Sync + 'static>(
        &self,
        response: &Result<StreamableHttpPostResponse, StreamableHttpError<E>>,
    ) {
        if let Ok(
            StreamableHttpPostResponse::Json(_, id) | StreamableHttpPostResponse::Sse(_, id),
        ) = response
        {
            self.note_session(id.as_deref());
        }
    }
}

impl<C: StreamableHttpClient + Sync> StreamableHttpClient for Recording<C> {
    type Error = C::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<http::HeaderName, http::HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.note_session(session_id.as_deref());
        let response = self
            .inner
            .post_message(uri, message, session_id, auth_header, custom_headers)
            .await;
        self.note_response(&response);
        response
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<http::HeaderName, http::HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.note_session(session_id.as_deref());
        let response = self
            .inner
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        self.note_response(&response);
        response
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<http::HeaderName, http::HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.note_session(session_id.as_deref());
        let response = self
            .inner
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await;
        self.note_response(&response);
        response
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<http::HeaderName, http::HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        let result = self
            .inner
            .delete_session(uri, session_id.clone(), auth_header, custom_headers)
            .await;
        let noted = match &result {
            Ok(()) => Ok(()),
            Err(e) => Err(e.to_string()),
        };
        self.seen
            .lock()
            .unwrap()
            .deletes
            .push((session_id.to_string(), noted));
        result
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<http::HeaderName, http::HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.note_session(session_id.as_deref());
        self.inner
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<http::HeaderName, http::HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.note_session(session_id.as_deref());
        self.inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

type Client = RunningService<RoleClient, Handler>;

/// Connects an rmcp client (initialize + initialized) to `server` with `handler`.
async fn connect(server: &TestServer, handler: Handler) -> (Client, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let http = Recording {
        // rmcp's own backend: `StreamableHttpClient` is implemented for reqwest 0.13's Client.
        inner: reqwest_rmcp::Client::new(),
        seen: seen.clone(),
    };
    let transport = StreamableHttpClientTransport::with_client(
        http,
        StreamableHttpClientTransportConfig::with_uri(server.url.clone()),
    );
    let client = tokio::time::timeout(Duration::from_secs(10), handler.serve(transport))
        .await
        .expect("rmcp client connected within 10 s")
        .expect("rmcp client initialized");
    let negotiated = client
        .peer()
        .peer_info()
        .expect("server info after initialize")
        .protocol_version
        .clone();
    assert_eq!(negotiated, VERSION, "negotiated protocol version");
    (client, seen)
}

/// The one session id the transport used.
fn session_id(seen: &Arc<Mutex<Seen>>) -> String {
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen.session_ids.len(),
        1,
        "exactly one session id on the wire: {seen:?}"
    );
    seen.session_ids.iter().next().unwrap().clone()
}

fn args(value: Value) -> JsonObject {
    value.as_object().expect("arguments object").clone()
}

fn first_text(result: &CallToolResult) -> String {
    result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_else(|| panic!("no text content in {result:?}"))
}

async fn call_text(client: &Client, name: &'static str, arguments: Value) -> String {
    let result = client
        .peer()
        .call_tool(CallToolRequestParams::new(name).with_arguments(args(arguments)))
        .await
        .unwrap_or_else(|e| panic!("tools/call {name}: {e}"));
    assert_ne!(result.is_error, Some(true), "{name} failed: {result:?}");
    first_text(&result)
}

/// The server's live session count from `GET /healthz`.
async fn live_sessions(server: &TestServer) -> u64 {
    let health: Value = reqwest::get(format!("http://{}/healthz", server.addr))
        .await
        .expect("GET /healthz")
        .json()
        .await
        .expect("healthz JSON");
    health["sessions"]
        .as_u64()
        .unwrap_or_else(|| panic!("no sessions count in {health}"))
}

/// Waits up to 5 s for `GET /healthz` to report `want` sessions.
async fn await_sessions(server: &TestServer, want: u64) {
    let mut last = u64::MAX;
    for _ in 0..100 {
        last = live_sessions(server).await;
        if last == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("healthz reports {last} sessions, expected {want}");
}

/// Waits up to 2 s for `cond` (notifications are handled on their own task and may trail the
/// response that follows them on the wire).
async fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    for _ in 0..40 {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    cond()
}

/// A raw POST of `tools/list` on `session_id`, as a client that kept the old id would send it.
async fn raw_post_status(server: &TestServer, session_id: &str) -> StatusCode {
    let session = Session {
        client: server.client(),
        id: session_id.to_string(),
        version: VERSION.to_string(),
        init_result: Value::Null,
    };
    session
        .post_value(&json!({ "jsonrpc": "2.0", "id": 99, "method": "tools/list", "params": {} }))
        .await
        .status()
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn rmcp_client_connects_with_a_session_and_lists_the_four_builtin_tools() {
    let server = TestServer::start();
    let (client, seen) = connect(&server, Handler::new()).await;
    assert!(!session_id(&seen).is_empty());

    let tools = client.peer().list_all_tools().await.expect("tools/list");
    let names: BTreeSet<String> = tools.iter().map(|t| t.name.to_string()).collect();
    for builtin in ["echo", "sleep", "ask", "sample"] {
        assert!(names.contains(builtin), "{builtin} missing from {names:?}");
    }
    client.cancel().await.expect("client shut down");
}

#[tokio::test]
async fn two_hundred_concurrent_rmcp_echo_calls_in_one_session_each_get_their_own_text() {
    let server = TestServer::start();
    let (client, seen) = connect(&server, Handler::new()).await;

    let calls = (0..200).map(|i| {
        let client = &client;
        async move {
            let text = format!("echo #{i} {}", "x".repeat(i % 17));
            let got = call_text(client, "echo", json!({ "text": text })).await;
            (text, got)
        }
    });
    let results = tokio::time::timeout(Duration::from_secs(60), join_all(calls))
        .await
        .expect("200 echo calls finished within 60 s");
    assert_eq!(results.len(), 200);
    for (sent, got) in &results {
        assert_eq!(got, sent, "echo returned another call's text");
    }
    // All of it went through one session.
    session_id(&seen);
    assert_eq!(live_sessions(&server).await, 1);
    client.cancel().await.expect("client shut down");
}

#[tokio::test]
async fn ask_accepted_by_the_rmcp_elicitation_callback_returns_the_answer() {
    let server = TestServer::start();
    let handler = Handler::new().elicit(Elicit::Accept("forty-two".into()));
    let elicitations = handler.elicitations.clone();
    let (client, _) = connect(&server, handler).await;

    let text = call_text(&client, "ask", json!({ "question": "What is the answer?" })).await;
    assert_eq!(text, "forty-two");

    let elicitations = elicitations.lock().unwrap().clone();
    assert_eq!(elicitations.len(), 1, "one elicitation: {elicitations:?}");
    let (message, schema) = &elicitations[0];
    assert!(
        message.contains("What is the answer?"),
        "elicitation message {message:?} carries the question"
    );
    assert_eq!(schema["properties"]["answer"]["type"], "string", "{schema}");
    assert!(
        schema["required"]
            .as_array()
            .is_some_and(|r| r.contains(&json!("answer"))),
        "answer is required: {schema}"
    );
    client.cancel().await.expect("client shut down");
}

#[tokio::test]
async fn ask_declined_by_the_rmcp_elicitation_callback_returns_declined() {
    let server = TestServer::start();
    let handler = Handler::new().elicit(Elicit::Decline);
    let elicitations = handler.elicitations.clone();
    let (client, _) = connect(&server, handler).await;

    let text = call_text(&client, "ask", json!({ "question": "Shall we?" })).await;
    assert_eq!(text, "declined");
    assert_eq!(elicitations.lock().unwrap().len(), 1);
    client.cancel().await.expect("client shut down");
}

#[tokio::test]
async fn sample_answered_by_the_rmcp_sampling_callback_returns_the_callbacks_text() {
    let server = TestServer::start();
    let handler = Handler::new().sample_text("a haiku from the rmcp callback");
    let samplings = handler.samplings.clone();
    let (client, _) = connect(&server, handler).await;

    let text = call_text(&client, "sample", json!({ "prompt": "Write a haiku" })).await;
    assert_eq!(text, "a haiku from the rmcp callback");

    let samplings = samplings.lock().unwrap().clone();
    assert_eq!(samplings.len(), 1, "one sampling request");
    let prompt = serde_json::to_value(&samplings[0].messages).unwrap();
    assert!(
        prompt.to_string().contains("Write a haiku"),
        "the sampling request carries the prompt: {prompt}"
    );
    client.cancel().await.expect("client shut down");
}

#[tokio::test]
async fn sleep_reports_progress_and_log_messages_to_the_rmcp_handler_callbacks() {
    let server = TestServer::start();
    let handler = Handler::new();
    let progress = handler.progress.clone();
    let logs = handler.logs.clone();
    let (client, _) = connect(&server, handler).await;

    client
        .peer()
        .set_level(SetLevelRequestParams::new(LoggingLevel::Info))
        .await
        .expect("logging/setLevel");

    // rmcp puts a fresh progressToken in every request's _meta; the handle tells which.
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("sleep").with_arguments(args(json!({ "ms": 350 }))),
    ));
    let handle = client
        .peer()
        .send_cancellable_request(request, Default::default())
        .await
        .expect("send tools/call sleep");
    let token = handle.progress_token.clone();
    let response = tokio::time::timeout(Duration::from_secs(10), handle.await_response())
        .await
        .expect("sleep answered within 10 s")
        .expect("tools/call sleep");
    let ServerResult::CallToolResult(result) = response else {
        panic!("unexpected result {response:?}");
    };
    assert_eq!(first_text(&result), "slept 350 ms");

    let enough_progress = eventually(|| {
        progress
            .lock()
            .unwrap()
            .iter()
            .filter(|p| p.progress_token == token)
            .count()
            >= 2
    })
    .await;
    let progress = progress.lock().unwrap().clone();
    assert!(
        enough_progress,
        "at least 2 progress notifications for {token:?}: {progress:?}"
    );
    let values: Vec<f64> = progress
        .iter()
        .filter(|p| p.progress_token == token)
        .map(|p| p.progress)
        .collect();
    assert!(
        values.windows(2).all(|w| w[0] < w[1]),
        "progress increases: {values:?}"
    );

    let logged = eventually(|| !logs.lock().unwrap().is_empty()).await;
    let logs = logs.lock().unwrap().clone();
    assert!(logged, "at least one notifications/message");
    let texts: Vec<String> = logs.iter().map(|l| l.data.to_string()).collect();
    assert!(
        texts
            .iter()
            .any(|t| t.contains("sleeping 350 ms") || t.contains("slept 350 ms")),
        "the sleep tool's log lines arrive: {texts:?}"
    );
    assert!(
        logs.iter().all(|l| l.level != LoggingLevel::Debug),
        "nothing below the level set: {logs:?}"
    );
    client.cancel().await.expect("client shut down");
}

#[tokio::test]
async fn closing_the_rmcp_client_sends_delete_and_the_old_session_id_gets_404() {
    let server = TestServer::start();
    let (mut client, seen) = connect(&server, Handler::new()).await;
    assert_eq!(
        call_text(&client, "echo", json!({ "text": "hi" })).await,
        "hi"
    );
    let id = session_id(&seen);
    assert_eq!(live_sessions(&server).await, 1);
    assert_eq!(raw_post_status(&server, &id).await, StatusCode::OK);

    client.close().await.expect("client closed");

    let deletes = seen.lock().unwrap().deletes.clone();
    assert_eq!(
        deletes,
        vec![(id.clone(), Ok(()))],
        "close() sent one successful DELETE for the session"
    );
    await_sessions(&server, 0).await;
    assert_eq!(raw_post_status(&server, &id).await, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn cancelling_the_rmcp_client_sends_delete_and_the_session_count_drops_to_zero() {
    let server = TestServer::start();
    let (client, seen) = connect(&server, Handler::new()).await;
    assert_eq!(
        call_text(&client, "echo", json!({ "text": "hi" })).await,
        "hi"
    );
    let id = session_id(&seen);
    assert_eq!(live_sessions(&server).await, 1);

    client.cancel().await.expect("client cancelled");

    let deletes = seen.lock().unwrap().deletes.clone();
    assert_eq!(deletes, vec![(id.clone(), Ok(()))], "cancel() sent DELETE");
    await_sessions(&server, 0).await;
    assert_eq!(raw_post_status(&server, &id).await, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn an_unpinned_rmcp_client_offering_2026_07_28_in_initialize_is_answered_with_2025_11_25() {
    // rmcp's default `ClientConfig` asks for its newest revision (2026-07-28, which has no
    // `initialize`); `serve` still runs the `initialize` handshake, and the server answers with
    // the newest session revision it speaks.
    let server = TestServer::start();
    let transport = StreamableHttpClientTransport::from_uri(server.url.clone());
    let client = tokio::time::timeout(
        Duration::from_secs(10),
        ClientConfig::default().serve(transport),
    )
    .await
    .expect("connected within 10 s")
    .expect("initialized");
    assert_eq!(
        ClientConfig::default().protocol_version,
        ProtocolVersion::V_2026_07_28
    );
    let negotiated = client
        .peer()
        .peer_info()
        .expect("server info")
        .protocol_version
        .clone();
    assert_eq!(negotiated, VERSION);
    let result = client
        .peer()
        .call_tool(CallToolRequestParams::new("echo").with_arguments(args(json!({ "text": "hi" }))))
        .await
        .expect("tools/call echo");
    assert_eq!(first_text(&result), "hi");
    assert_eq!(live_sessions(&server).await, 1);
    client.cancel().await.expect("client shut down");
    await_sessions(&server, 0).await;
}
