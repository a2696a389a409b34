//! Reference MCP server on the official Rust SDK (`rmcp`), for the benchmarks.
//!
//! * Streamable HTTP at `http://127.0.0.1:<port>/mcp`, both protocol eras on the one
//!   endpoint: `initialize` opens a handshake-era session (`LocalSessionManager`,
//!   rmcp's default stateful mode, SSE replies); a request carrying the 2026-07-28
//!   `_meta` envelope is served statelessly by the same `StreamableHttpService`.
//! * tools: `echo`, `sleep`, `progress`, `ask` (see `call_tool`).
//! * `POST /bench/list-changed`: sends `notifications/tools/list_changed` to every
//!   handshake-era session (on its GET stream) and to every 2026-07-28
//!   `subscriptions/listen` stream that asked for `toolsListChanged`.
//!
//! Usage: `mcp-peer-rmcp <port>`. Logs at warn level unless `RUST_LOG` says otherwise.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::StatusCode;
use axum::routing::post;
use axum::serve::ListenerExt;
use rmcp::{
    ErrorData, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequest,
        ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, InputRequest,
        InputRequests, InputRequiredResult, JsonObject, ListToolsResult, PaginatedRequestParams,
        ProgressNotificationParam, ProtocolVersion, ServerCapabilities, ServerConfig,
        SubscriptionFilter, Tool,
    },
    service::{
        NotificationContext, Peer, RequestContext, RoleServer, SubscriptionContext,
        SubscriptionSink,
    },
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};
use serde_json::{Value, json};

/// Everyone who gets `notifications/tools/list_changed`.
#[derive(Default)]
struct Listeners {
    /// Handshake-era sessions, registered on `notifications/initialized`.
    sessions: Mutex<Vec<Peer<RoleServer>>>,
    /// 2026-07-28 `subscriptions/listen` streams that accepted `toolsListChanged`.
    streams: Mutex<Vec<SubscriptionSink>>,
}

impl Listeners {
    async fn notify_all(&self) -> usize {
        let sessions: Vec<_> = {
            let mut guard = self.sessions.lock().unwrap();
            guard.retain(|peer| !peer.is_transport_closed());
            guard.clone()
        };
        let streams: Vec<_> = self.streams.lock().unwrap().clone();
        let mut sent = 0;
        for peer in &sessions {
            if peer.notify_tool_list_changed().await.is_ok() {
                sent += 1;
            }
        }
        let mut closed = Vec::new();
        for sink in &streams {
            match sink.notify_tool_list_changed().await {
                Ok(()) => sent += 1,
                Err(_) => closed.push(sink.id().clone()),
            }
        }
        if !closed.is_empty() {
            self.streams
                .lock()
                .unwrap()
                .retain(|sink| !closed.contains(sink.id()));
        }
        sent
    }
}

#[derive(Clone)]
struct BenchServer {
    listeners: Arc<Listeners>,
    tools: Arc<Vec<Tool>>,
}

fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => unreachable!("schemas are objects"),
    }
}

fn tools() -> Vec<Tool> {
    let one = |name: &str, ty: &str| {
        schema(json!({"type": "object", "properties": {name: {"type": ty}}, "required": [name]}))
    };
    vec![
        Tool::new(
            "echo",
            "Return the given text unchanged",
            one("text", "string"),
        ),
        Tool::new(
            "sleep",
            "Sleep for ms milliseconds, then return \"ok\"",
            one("ms", "integer"),
        ),
        Tool::new(
            "progress",
            "Send count progress notifications, then return the count",
            one("count", "integer"),
        ),
        Tool::new(
            "ask",
            "Ask the user a question (form elicitation) and return the answer",
            one("question", "string"),
        ),
    ]
}

fn text(text: impl Into<String>) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(text.into())]).into()
}

fn answer_schema() -> ElicitationSchema {
    ElicitationSchema::builder()
        .required_string("answer")
        .build()
        .expect("the answer schema is valid")
}

/// The text an elicitation result stands for: the answer, "declined" or "cancelled".
fn answer_text(result: &ElicitResult) -> String {
    match result.action {
        ElicitationAction::Accept => result
            .content
            .as_ref()
            .and_then(|c| c.get("answer"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        ElicitationAction::Decline => "declined".into(),
        ElicitationAction::Cancel => "cancelled".into(),
        _ => "cancelled".into(),
    }
}

const ASK_KEY: &str = "answer";

impl BenchServer {
    async fn ask(
        &self,
        request: &CallToolRequestParams,
        question: String,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let modern = context
            .protocol_version()
            .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
        if !modern {
            // Handshake era: a server->client request on this call's SSE stream.
            let result = context
                .peer
                .create_elicitation(ElicitRequestParams::FormElicitationParams {
                    meta: None,
                    message: question,
                    requested_schema: answer_schema(),
                })
                .await
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
            return Ok(text(answer_text(&result)));
        }
        // 2026-07-28: input_required first, the answer on the client's retry.
        if let Some(response) = request
            .input_responses
            .as_ref()
            .and_then(|r| r.get(ASK_KEY))
        {
            let result: ElicitResult = serde_json::from_value(response.clone()).map_err(|e| {
                ErrorData::invalid_params(format!("bad elicitation result: {e}"), None)
            })?;
            return Ok(text(answer_text(&result)));
        }
        let mut requests = InputRequests::new();
        requests.insert(
            ASK_KEY.to_string(),
            InputRequest::Elicitation(ElicitRequest::new(
                ElicitRequestParams::FormElicitationParams {
                    meta: None,
                    message: question,
                    requested_schema: answer_schema(),
                },
            )),
        );
        Ok(CallToolResponse::InputRequired(
            InputRequiredResult::from_input_requests(requests),
        ))
    }
}

fn argument<'a>(request: &'a CallToolRequestParams, name: &str) -> Option<&'a Value> {
    request.arguments.as_ref().and_then(|a| a.get(name))
}

impl ServerHandler for BenchServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let missing =
            |name: &str| ErrorData::invalid_params(format!("missing argument {name}"), None);
        match request.name.as_ref() {
            "echo" => {
                let t = argument(&request, "text")
                    .and_then(Value::as_str)
                    .ok_or_else(|| missing("text"))?;
                Ok(text(t))
            }
            "sleep" => {
                let ms = argument(&request, "ms")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| missing("ms"))?;
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(text("ok"))
            }
            "progress" => {
                let count = argument(&request, "count")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| missing("count"))?;
                if let Some(token) = context.meta.get_progress_token() {
                    for i in 1..=count {
                        let mut param = ProgressNotificationParam::new(token.clone(), i as f64);
                        param.total = Some(count as f64);
                        context
                            .peer
                            .notify_progress(param)
                            .await
                            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                    }
                }
                Ok(text(count.to_string()))
            }
            "ask" => {
                let q = argument(&request, "question")
                    .and_then(Value::as_str)
                    .ok_or_else(|| missing("question"))?;
                let q = q.to_string();
                self.ask(&request, q, context).await
            }
            other => Err(ErrorData::invalid_params(
                format!("unknown tool {other}"),
                None,
            )),
        }
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.listeners.sessions.lock().unwrap().push(context.peer);
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::new();
        accepted.tools_list_changed = requested.tools_list_changed.filter(|b| *b);
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        if context.accepted().tools_list_changed == Some(true) {
            self.listeners
                .streams
                .lock()
                .unwrap()
                .push(context.sink().clone());
        }
        context.cancelled().await;
        let id = context.sink().id().clone();
        self.listeners
            .streams
            .lock()
            .unwrap()
            .retain(|sink| sink.id() != &id);
        Ok(())
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args()
        .nth(1)
        .expect("usage: mcp-peer-rmcp PORT")
        .parse()
        .expect("the port is a number");
    let filter = std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();

    let listeners = Arc::new(Listeners::default());
    let tools = Arc::new(tools());
    let server = BenchServer {
        listeners: listeners.clone(),
        tools,
    };
    // rmcp's defaults: stateful sessions for the handshake era, SSE replies (no JSON
    // response mode), loopback-only Host check.
    let service: StreamableHttpService<BenchServer, LocalSessionManager> =
        StreamableHttpService::new(
            move || Ok(server.clone()),
            Default::default(),
            StreamableHttpServerConfig::default(),
        );
    let app = axum::Router::new()
        .route(
            "/bench/list-changed",
            post(move || {
                let listeners = listeners.clone();
                async move {
                    let sent = listeners.notify_all().await;
                    (StatusCode::OK, format!("{sent}\n"))
                }
            }),
        )
        .nest_service("/mcp", service);

    // TCP_NODELAY on every accepted socket, as mcp-actor and the limit do: SSE replies
    // go out in several small writes, which Nagle would hold for the delayed ACK.
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await?
        .tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
}
