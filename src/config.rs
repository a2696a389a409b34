//! The TOML configuration: its schema, defaults and validation.
//!
//! Every operator-facing knob lives here, with its default in one place: the `Default` impls
//! below, which `config/default.toml` mirrors and `config/README.md` documents. Unknown keys
//! are errors, and every error names the file, the line and the key, because a typo in a limit
//! should never silently fall back to a default.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

mod locate;
pub mod providers;

use locate::locate_key;
pub use providers::{
    BodyMode, CommandToolsSection, FileResourcesSection, FollowRedirects, HttpToolsSection,
    IconConfig, PromptArgumentConfig, PromptConfig, PromptMessageConfig, ReloadSection,
    ResourceConfig, ResourceKind, ToolAnnotations, ToolConfig, ToolKind,
};

/// The embedded configuration served when `mcp-actor` runs without `--config`.
pub const DEFAULT_CONFIG_TOML: &str = include_str!("../config/default.toml");

/// The whole configuration file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub server: ServerSection,
    pub http: HttpSection,
    pub sessions: SessionsSection,
    pub client_requests: ClientRequestsSection,
    pub replay: ReplaySection,
    pub pagination: PaginationSection,
    pub modern: ModernSection,
    pub tasks: TasksSection,
    pub command_tools: CommandToolsSection,
    pub http_tools: HttpToolsSection,
    pub file_resources: FileResourcesSection,
    pub reload: ReloadSection,
    /// Tools the binary exposes. The library API registers tools in code instead.
    pub tools: Vec<ToolConfig>,
    pub resources: Vec<ResourceConfig>,
    pub prompts: Vec<PromptConfig>,
}

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
}

impl Default for ServerSection {
    fn default() -> Self {
        ServerSection {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            path: "/mcp".into(),
            health_path: "/healthz".into(),
            worker_threads: 0,
            name: "mcp-actor".into(),
            title: Some("mcp-actor".into()),
            version: env!("CARGO_PKG_VERSION").into(),
            description: Some("An MCP server built on one actor per session".into()),
            instructions: None,
            node_id: String::new(),
            allow_unauthenticated: false,
            shutdown_timeout: Duration::from_secs(10),
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
}

impl Default for SessionsSection {
    fn default() -> Self {
        SessionsSection {
            max_sessions: 10_000,
            idle_ttl: Duration::from_secs(30 * 60),
            max_in_flight: 256,
            mailbox_capacity: 512,
            mailbox_wait: Duration::from_secs(5),
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
}

impl Default for ReplaySection {
    fn default() -> Self {
        ReplaySection {
            max_events_per_stream: 512,
            max_finished_streams: 16,
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

/// `[modern]`: the stateless 2026-07-28 revision served on the same endpoint.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModernSection {
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

impl Default for ModernSection {
    fn default() -> Self {
        ModernSection {
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
}

impl Default for TasksSection {
    fn default() -> Self {
        TasksSection {
            max_tasks: 1024,
            ttl: Duration::from_secs(3600),
            poll_interval: Duration::from_millis(500),
        }
    }
}

/// A configuration error, located in its file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: cannot read: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: {key}{message}")]
    Invalid {
        path: String,
        line: usize,
        column: usize,
        key: String,
        message: String,
    },
    /// Every error found in one pass (the providers report all of theirs at once).
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Several(Vec<ConfigError>),
}

impl ConfigError {
    /// An error about `key` (dotted, as `tools[2].command`), located in `text`.
    pub fn at_key(text: &str, origin: &str, key: &str, message: impl Into<String>) -> Self {
        let (line, column) = locate_key(text, key);
        ConfigError::Invalid {
            path: origin.into(),
            line,
            column,
            key: format!("{key}: "),
            message: message.into(),
        }
    }
}

/// Something in a configuration that works but is probably not what was meant, such as a
/// tool left out because an `${ENV}` it needs is unset. Startup and reload log it at warn;
/// `mcp-actor check` prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigWarning {
    /// `file:line:column`, once located in the file's text.
    pub location: Option<String>,
    /// The dotted key it is about, as `tools[4].headers.Authorization`.
    pub key: String,
    pub message: String,
}

impl ConfigWarning {
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigWarning {
            location: None,
            key: key.into(),
            message: message.into(),
        }
    }

    /// The same warning, located at its key in `text`, the contents of `origin`.
    pub fn located(self, text: &str, origin: &str) -> Self {
        let (line, column) = locate_key(text, &self.key);
        ConfigWarning {
            location: Some(format!("{origin}:{line}:{column}")),
            ..self
        }
    }
}

impl std::fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(location) = &self.location {
            write!(f, "{location}: ")?;
        }
        write!(f, "{}: {}", self.key, self.message)
    }
}

impl Config {
    /// Reads and validates a configuration file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let display = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: display.clone(),
            source,
        })?;
        Config::parse(&text, &display)
    }

    /// Parses and validates configuration text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Config, ConfigError> {
        let deserializer =
            toml::Deserializer::parse(text).map_err(|e| toml_error(text, origin, "", &e))?;
        let config: Config = serde_path_to_error::deserialize(deserializer).map_err(|e| {
            let key = e.path().to_string();
            toml_error(text, origin, &key, e.inner())
        })?;
        config
            .validate()
            .map_err(|(key, message)| ConfigError::at_key(text, origin, &key, message))?;
        Ok(config)
    }

    /// Checks what types alone cannot; errors are (dotted key, message).
    fn validate(&self) -> Result<(), (String, String)> {
        let bad = |key: &str, msg: &str| Err((key.to_string(), msg.to_string()));
        if !self.server.path.starts_with('/') {
            return bad("server.path", "must start with '/', for example \"/mcp\"");
        }
        if !self
            .server
            .node_id
            .bytes()
            .all(|b| (0x21..=0x7e).contains(&b) && b != b'.')
        {
            return bad("server.node_id", "must be visible ASCII without '.'");
        }
        let positive = [
            ("http.max_body_bytes", self.http.max_body_bytes),
            (
                "http.sse_connection_buffer",
                self.http.sse_connection_buffer,
            ),
            ("sessions.max_sessions", self.sessions.max_sessions),
            ("sessions.max_in_flight", self.sessions.max_in_flight),
            ("sessions.mailbox_capacity", self.sessions.mailbox_capacity),
            (
                "client_requests.max_pending",
                self.client_requests.max_pending,
            ),
            (
                "replay.max_events_per_stream",
                self.replay.max_events_per_stream,
            ),
            ("pagination.page_size", self.pagination.page_size),
            ("modern.max_listen_streams", self.modern.max_listen_streams),
            ("modern.listen_buffer", self.modern.listen_buffer),
            ("modern.max_in_flight", self.modern.max_in_flight),
            ("http.max_connections", self.http.max_connections),
            ("tasks.max_tasks", self.tasks.max_tasks),
            (
                "command_tools.max_processes",
                self.command_tools.max_processes,
            ),
            (
                "command_tools.max_processes_per_session",
                self.command_tools.max_processes_per_session,
            ),
            (
                "command_tools.max_output_bytes",
                self.command_tools.max_output_bytes,
            ),
            (
                "http_tools.max_response_bytes",
                self.http_tools.max_response_bytes,
            ),
            ("file_resources.max_bytes", self.file_resources.max_bytes),
        ];
        for (key, value) in positive {
            if value == 0 {
                return bad(key, "must be greater than 0");
            }
        }
        let durations = [
            ("http.sse_keep_alive", self.http.sse_keep_alive),
            ("http.header_timeout", self.http.header_timeout),
            ("http.body_timeout", self.http.body_timeout),
            ("http.idle_timeout", self.http.idle_timeout),
            ("server.shutdown_timeout", self.server.shutdown_timeout),
            ("sessions.idle_ttl", self.sessions.idle_ttl),
            ("client_requests.timeout", self.client_requests.timeout),
            (
                "client_requests.max_timeout",
                self.client_requests.max_timeout,
            ),
            ("command_tools.timeout", self.command_tools.timeout),
            ("http_tools.timeout", self.http_tools.timeout),
            (
                "file_resources.read_timeout",
                self.file_resources.read_timeout,
            ),
            ("tasks.ttl", self.tasks.ttl),
            ("tasks.poll_interval", self.tasks.poll_interval),
        ];
        for (key, value) in durations {
            if value.is_zero() {
                return bad(key, "must be longer than 0s");
            }
        }
        if self.client_requests.max_timeout < self.client_requests.timeout {
            return bad(
                "client_requests.max_timeout",
                "must not be shorter than client_requests.timeout",
            );
        }
        if let Some(key) = &self.modern.request_state_key {
            if let Err(msg) = crate::stateless::request_state::decode_key(key) {
                return bad("modern.request_state_key", &msg);
            }
        }
        providers::validate(&self.tools, &self.resources, &self.prompts)
    }
}

fn toml_error(text: &str, origin: &str, key: &str, e: &toml::de::Error) -> ConfigError {
    let (line, column) = match e.span() {
        Some(span) => line_col(text, span.start),
        None => locate_key(text, key),
    };
    ConfigError::Invalid {
        path: origin.into(),
        line,
        column,
        key: if key.is_empty() || key == "." {
            String::new()
        } else {
            format!("{key}: ")
        },
        message: e.message().trim().to_string(),
    }
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_default_config_is_valid() {
        let config = Config::parse(DEFAULT_CONFIG_TOML, "default.toml").unwrap();
        assert_eq!(config.server.path, "/mcp");
        assert_eq!(config.tools.len(), 4);
    }

    #[test]
    fn default_toml_mirrors_the_built_in_defaults() {
        let mut parsed = Config::parse(DEFAULT_CONFIG_TOML, "default.toml").unwrap();
        assert!(parsed.server.instructions.is_some());
        parsed.server.instructions = None;
        parsed.tools.clear();
        parsed.resources.clear();
        parsed.prompts.clear();
        assert_eq!(parsed, Config::default());
    }

    #[test]
    fn unknown_key_names_file_line_and_key() {
        let err =
            Config::parse("[sessions]\nmax_sessions = 5\nmax_sesions = 6\n", "x.toml").unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("x.toml:3:"), "{text}");
        assert!(text.contains("max_sesions"), "{text}");
    }

    #[test]
    fn bad_duration_names_key() {
        let err = Config::parse("[sessions]\nidle_ttl = \"soon\"\n", "x.toml").unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("x.toml:2:"), "{text}");
        assert!(text.contains("sessions.idle_ttl"), "{text}");
    }

    #[test]
    fn hidden_is_refused_outside_a_dir_and_read_timeout_must_be_positive() {
        let file =
            "[[resources]]\nuri = \"file:///a\"\nname = \"a\"\nfile = \"a\"\nhidden = true\n";
        let text = Config::parse(file, "x.toml").unwrap_err().to_string();
        assert!(
            text.contains("resources[0].hidden: applies only to a `dir`"),
            "{text}"
        );
        let zero = "[file_resources]\nread_timeout = \"0s\"\n";
        let text = Config::parse(zero, "x.toml").unwrap_err().to_string();
        assert!(
            text.contains("file_resources.read_timeout: must be longer than 0s"),
            "{text}"
        );
    }

    #[test]
    fn semantic_error_is_located() {
        let err = Config::parse("[pagination]\n\npage_size = 0\n", "x.toml").unwrap_err();
        assert_eq!(
            err.to_string(),
            "x.toml:3:1: pagination.page_size: must be greater than 0"
        );
    }
}
