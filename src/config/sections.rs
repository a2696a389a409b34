//! The sections of the configuration that tune the server itself — `[server]`, `[admin]`,
//! `[http]`, `[sessions]`, `[client_requests]`, `[replay]`, `[pagination]`, `[stateless]`,
//! `[tasks]` —
//! each with its defaults. The provider entries and their limits are in
//! [`super::providers`]; cross-field checks are in [`super::Config`]'s validation.

use std::net::SocketAddr;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde::Deserialize;

/// `[server]`: identity and where to listen.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerSection {
    pub listen: SocketAddr,
    /// The MCP endpoint path; POST, GET and DELETE are served there.
    pub path: String,
    /// A GET health probe answering `{"status":"ok","sessions":N,"listenStreams":M}`;
    /// empty disables it.
    pub health_path: String,
    /// A GET readiness probe: 200 while the node takes new sessions, 503 while it drains or
    /// is at `sessions.max_sessions`; empty disables it.
    pub ready_path: String,
    /// Threads of the binary's async runtime; 0 means one per CPU core. On a machine shared
    /// with other busy processes (a load generator, a database), fewer threads than cores
    /// avoid cross-thread wake-ups that cost more than they give; see docs/performance.md.
    pub worker_threads: usize,
    pub name: String,
    pub title: Option<String>,
    pub version: String,
    pub description: Option<String>,
    /// Returned as `instructions` in the initialize result.
    pub instructions: Option<String>,
    /// Prefix of every minted session id (visible ASCII, no `.`), so a load balancer can
    /// route on it. Empty by default.
    pub node_id: String,
    /// Serve on a non-loopback address with no authentication. Off by default: a server
    /// reachable from other machines would give anyone who reaches the port its tools.
    pub allow_unauthenticated: bool,
    /// On SIGTERM or Ctrl-C, how long requests in flight may take to finish (each aborted
    /// request gets a JSON-RPC error first); then every remaining connection is closed.
    #[serde(with = "humantime_serde")]
    pub shutdown_timeout: Duration,
    /// On the first SIGTERM or Ctrl-C the node drains: `/readyz` and new sessions get 503,
    /// while existing sessions keep working and each ends once nothing of it is in flight.
    /// After this long, whatever is left is shut down (a second signal does so at once).
    #[serde(with = "humantime_serde")]
    pub drain_timeout: Duration,
}

impl Default for ServerSection {
    fn default() -> Self {
        ServerSection {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            path: "/mcp".into(),
            health_path: "/healthz".into(),
            ready_path: "/readyz".into(),
            worker_threads: 0,
            name: "mcp-actor".into(),
            title: Some("mcp-actor".into()),
            version: env!("CARGO_PKG_VERSION").into(),
            description: Some("An MCP server built on one actor per session".into()),
            instructions: None,
            node_id: String::new(),
            allow_unauthenticated: false,
            shutdown_timeout: Duration::from_secs(10),
            drain_timeout: Duration::from_secs(30),
        }
    }
}

/// `[admin]`: the admin listener, apart from the MCP endpoint: `/metrics` (Prometheus),
/// `/healthz` and `/readyz`, for a scraper or an orchestrator's probes.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdminSection {
    /// Whether the binary serves the admin listener.
    pub enabled: bool,
    /// Where it listens. A non-loopback address needs `server.allow_unauthenticated`, as
    /// the MCP endpoint does.
    pub listen: SocketAddr,
    /// An environment variable holding the admin token: with it (or `token_file`), every
    /// `/admin/*` request needs `Authorization: Bearer <token>`.
    pub token_env: Option<String>,
    /// A file holding the admin token (trailing whitespace ignored).
    pub token_file: Option<std::path::PathBuf>,
    /// Whether `/metrics`, `/healthz` and `/readyz` need the admin token too.
    pub protect_metrics: bool,
}

impl Default for AdminSection {
    fn default() -> Self {
        AdminSection {
            enabled: true,
            listen: SocketAddr::from(([127, 0, 0, 1], 9090)),
            token_env: None,
            token_file: None,
            protect_metrics: false,
        }
    }
}

/// `[log]`: what the binary writes to standard error. `RUST_LOG` still filters it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogSection {
    pub format: LogFormat,
}

/// The shape of each log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per line, with the event's fields and its spans', for log shippers.
    Json,
}

impl std::str::FromStr for LogFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(format!(
                "unknown log format {other:?}: expected text or json"
            )),
        }
    }
}

/// How a POST that carries requests is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ResponseMode {
    /// One JSON body unless the handler sends a notification or request first, then SSE.
    #[default]
    Auto,
    /// Always one JSON body; messages sent before the result go to the GET stream.
    Json,
    /// Always an SSE stream.
    Sse,
}

/// `[http]`: the transport.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpSection {
    /// Largest accepted POST body, in bytes; larger gets 413.
    pub max_body_bytes: usize,
    /// Host header values accepted (with or without a port). Empty means the loopback names
    /// only: localhost, 127.0.0.1 and `[::1]`.
    pub allowed_hosts: Vec<String>,
    /// Origin header values accepted, besides loopback origins. `"*"` accepts any.
    pub allowed_origins: Vec<String>,
    pub response_mode: ResponseMode,
    /// Interval of SSE keep-alive comments.
    #[serde(with = "humantime_serde")]
    pub sse_keep_alive: Duration,
    /// The `retry` field sent with priming events: how long a client waits before it
    /// reconnects after the server closes a stream.
    #[serde(with = "humantime_serde")]
    pub sse_retry: Duration,
    /// Messages buffered towards one SSE connection; a client that falls this far behind is
    /// disconnected and resumes from the replay log with `Last-Event-ID`.
    pub sse_connection_buffer: usize,
    /// Open client connections at most; one more gets 503 and is closed.
    pub max_connections: usize,
    /// How long a client may take to send a request's headers, from its first byte.
    #[serde(with = "humantime_serde")]
    pub header_timeout: Duration,
    /// How long a client may take to send a request's body once its headers arrived.
    #[serde(with = "humantime_serde")]
    pub body_timeout: Duration,
    /// How long a keep-alive connection may stay open with no request on it.
    #[serde(with = "humantime_serde")]
    pub idle_timeout: Duration,
    /// How long a reply may wait on a client that stopped reading it.
    #[serde(with = "humantime_serde")]
    pub write_timeout: Duration,
    /// Open connections from one client address at most; one more gets 429 and is closed.
    /// Addresses in `trusted_proxies` are not capped.
    pub max_connections_per_ip: usize,
    /// Load balancers and proxies whose `X-Forwarded-For` names the client: for them, the
    /// per-address limits apply to the address that header ends with.
    pub trusted_proxies: Vec<std::net::IpAddr>,
    /// `initialize` requests per second one client address may send (0: unlimited); more
    /// get 429 with `Retry-After`.
    pub initialize_rate_per_ip: u32,
    /// How many `initialize` requests one address may send at once before the rate applies.
    pub initialize_burst_per_ip: u32,
    /// Messages in one JSON-RPC batch at most (2025-03-26 sessions); more get 400.
    pub max_batch_size: usize,
    /// JSON values (objects, arrays, strings, numbers, ...) in one POST body at most, every
    /// nested one counted; more get 400 before the rest is decoded. A value costs tens of
    /// bytes decoded but two on the wire, so `max_body_bytes` alone does not bound memory.
    pub max_json_values: usize,
    /// Open SSE streams (responses, GET streams, listen streams) at most, server-wide; one
    /// more gets 503.
    pub max_sse_streams: usize,
    /// Of `max_sse_streams`, how many one principal may hold (with `[auth]`); one more gets
    /// 503, and other principals keep theirs.
    pub max_sse_streams_per_principal: usize,
    /// How much of an IPv6 client address keys its `initialize` rate: 64 charges a whole
    /// /64, which one host is routinely given; 128 keys each address.
    pub ipv6_prefix_len: u8,
}

impl Default for HttpSection {
    fn default() -> Self {
        HttpSection {
            max_body_bytes: 4 * 1024 * 1024,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            response_mode: ResponseMode::Auto,
            sse_keep_alive: Duration::from_secs(15),
            sse_retry: Duration::from_secs(1),
            sse_connection_buffer: 256,
            max_connections: 10_000,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            write_timeout: Duration::from_secs(30),
            max_connections_per_ip: 1_000,
            trusted_proxies: Vec::new(),
            initialize_rate_per_ip: 100,
            initialize_burst_per_ip: 1_000,
            max_batch_size: 100,
            max_json_values: 10_000,
            max_sse_streams: 20_000,
            max_sse_streams_per_principal: 1_000,
            ipv6_prefix_len: 64,
        }
    }
}

/// `[sessions]`: how many, how long, how busy.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SessionsSection {
    /// Live sessions at most; `initialize` beyond it gets 503 with `Retry-After`.
    pub max_sessions: usize,
    /// A session with no traffic, no open stream and no work in flight for this long ends.
    #[serde(with = "humantime_serde")]
    pub idle_ttl: Duration,
    /// Client requests running at once in one session; more get 429.
    pub max_in_flight: usize,
    /// Capacity of each session actor's mailbox.
    pub mailbox_capacity: usize,
    /// How long an HTTP request waits for room in a full mailbox before it gets 503.
    #[serde(with = "humantime_serde")]
    pub mailbox_wait: Duration,
    /// Open SSE streams (POST responses and GET streams) of one session at most; one more
    /// gets 429.
    pub max_streams_per_session: usize,
    /// With `[store]`: how often a session with traffic checks that its node still owns
    /// it; one another node took over ends here within this time.
    #[serde(with = "humantime_serde")]
    pub ownership_check: Duration,
}

impl Default for SessionsSection {
    fn default() -> Self {
        SessionsSection {
            max_sessions: 10_000,
            idle_ttl: Duration::from_secs(30 * 60),
            max_in_flight: 256,
            mailbox_capacity: 512,
            mailbox_wait: Duration::from_secs(5),
            max_streams_per_session: 320,
            ownership_check: Duration::from_secs(5),
        }
    }
}

/// `[client_requests]`: server→client requests (elicitation, sampling, roots).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClientRequestsSection {
    /// How long the server waits for the client's answer.
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
    /// Whether a progress notification from the client restarts the timeout.
    pub reset_timeout_on_progress: bool,
    /// The hard limit, however much progress arrives.
    #[serde(with = "humantime_serde")]
    pub max_timeout: Duration,
    /// Unanswered server→client requests per session at most.
    pub max_pending: usize,
}

impl Default for ClientRequestsSection {
    fn default() -> Self {
        ClientRequestsSection {
            timeout: Duration::from_secs(60),
            reset_timeout_on_progress: true,
            max_timeout: Duration::from_secs(600),
            max_pending: 64,
        }
    }
}

/// `[replay]`: the per-stream logs that make SSE streams resumable.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReplaySection {
    /// Events kept per stream; a `Last-Event-ID` older than the window gets 410.
    pub max_events_per_stream: usize,
    /// Finished request streams kept per session for late resumption.
    pub max_finished_streams: usize,
    /// Bytes of event data one session's replay logs hold at most; past it the oldest
    /// finished streams, then the oldest events, are dropped.
    pub max_bytes_per_session: usize,
    /// Bytes of event data every session's replay logs hold together at most (the event
    /// counts alone let a few sessions of large results fill the memory).
    pub max_bytes: usize,
}

impl Default for ReplaySection {
    fn default() -> Self {
        ReplaySection {
            max_events_per_stream: 512,
            max_finished_streams: 16,
            max_bytes_per_session: 16 * 1024 * 1024,
            max_bytes: 256 * 1024 * 1024,
        }
    }
}

/// `[pagination]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PaginationSection {
    /// Items per page of tools/list, resources/list, resources/templates/list, prompts/list.
    pub page_size: usize,
}

impl Default for PaginationSection {
    fn default() -> Self {
        PaginationSection { page_size: 100 }
    }
}

/// Cache scope advertised on cacheable 2026-07-28 results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    Public,
    #[default]
    Private,
}

impl CacheScope {
    pub fn as_str(self) -> &'static str {
        match self {
            CacheScope::Public => "public",
            CacheScope::Private => "private",
        }
    }
}

/// `[stateless]`: the stateless 2026-07-28 revision served on the same endpoint.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StatelessSection {
    /// Key sealing `requestState` (input_required round trips): 32 bytes, base64. Unset, a
    /// random key is made at start, so only this process can open its states; set the same
    /// key on every node of a cluster to let any node continue any round trip.
    pub request_state_key: Option<String>,
    /// How long a `requestState` stays valid.
    #[serde(with = "humantime_serde")]
    pub request_state_ttl: Duration,
    /// `ttlMs` on cacheable results (discover, lists, resources/read).
    pub ttl_ms: u64,
    /// `cacheScope` on cacheable results.
    pub cache_scope: CacheScope,
    /// `subscriptions/listen` streams open at once, server-wide; more get 503.
    pub max_listen_streams: usize,
    /// Events buffered per listen stream; a stream that falls further behind is ended (the
    /// client listens again and refetches).
    pub listen_buffer: usize,
    /// 2026-07-28 requests running at once, server-wide; more get 429 with `Retry-After`.
    pub max_in_flight: usize,
}

impl Default for StatelessSection {
    fn default() -> Self {
        StatelessSection {
            request_state_key: None,
            request_state_ttl: Duration::from_secs(600),
            ttl_ms: 0,
            cache_scope: CacheScope::Private,
            max_listen_streams: 1024,
            listen_buffer: 256,
            max_in_flight: 1024,
        }
    }
}

/// Decodes a `[stateless] request_state_key`: base64 (standard or URL-safe) of exactly 32
/// bytes. Validation and the sealing key (`stateless::request_state`) both use it, so a key
/// the check accepts is a key the server can use.
pub fn decode_request_state_key(text: &str) -> Result<[u8; 32], String> {
    let bytes = STANDARD
        .decode(text.trim())
        .or_else(|_| URL_SAFE_NO_PAD.decode(text.trim()))
        .map_err(|e| format!("not base64: {e}; generate one with `openssl rand -base64 32`"))?;
    bytes.try_into().map_err(|b: Vec<u8>| {
        format!(
            "must decode to 32 bytes, got {}; generate one with `openssl rand -base64 32`",
            b.len()
        )
    })
}

/// `[tasks]`: the `io.modelcontextprotocol/tasks` extension (SEP-2663) on the stateless
/// 2026-07-28 path. Tasks live in memory, server-wide (they are not session state).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TasksSection {
    /// Tasks kept at once, running or finished; a call that would create one more gets an
    /// error until older tasks expire.
    pub max_tasks: usize,
    /// How long a task stays readable with `tasks/get` after it was created (`ttlMs`); a
    /// task still running then is cancelled.
    #[serde(with = "humantime_serde")]
    pub ttl: Duration,
    /// `pollIntervalMs`: how often clients are asked to poll `tasks/get`.
    #[serde(with = "humantime_serde")]
    pub poll_interval: Duration,
    /// Bytes of results every finished task holds together at most; past it the oldest
    /// finished tasks' results are dropped (their `tasks/result` is an error naming this
    /// key).
    pub max_bytes: usize,
    /// How long a draining node stays up after its last task settled, so that a client
    /// polling every `poll_interval` still reads the result before the node exits.
    #[serde(with = "humantime_serde")]
    pub linger_after_drain: Duration,
}

impl Default for TasksSection {
    fn default() -> Self {
        TasksSection {
            max_tasks: 1024,
            ttl: Duration::from_secs(3600),
            poll_interval: Duration::from_millis(500),
            max_bytes: 256 * 1024 * 1024,
            linger_after_drain: Duration::from_secs(5),
        }
    }
}
