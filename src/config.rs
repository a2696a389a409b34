//! The TOML configuration: its schema, defaults and validation.
//!
//! Every operator-facing knob lives here, with its default in one place: the `Default` impls
//! below, which `config/default.toml` mirrors and `config/README.md` documents. Unknown keys
//! are errors, and every error names the file, the line and the key, because a typo in a limit
//! should never silently fall back to a default.

use std::path::Path;

use serde::Deserialize;

pub mod audit;
pub mod auth;
mod every_type_error;
mod loaded;
mod locate;
pub mod names;
pub mod providers;
pub mod resource_uri;
mod sections;
pub mod store;
pub mod telemetry;
pub mod upstreams;

pub use loaded::LoadedConfig;
pub(crate) use loaded::read_file;
use locate::locate_key;
pub use providers::{
    BodyMode, CommandToolsSection, FileResourcesSection, FollowRedirects, HttpToolsSection,
    IconConfig, PromptArgumentConfig, PromptConfig, PromptMessageConfig, ReloadSection,
    ResourceConfig, ResourceKind, ToolAnnotations, ToolConfig, ToolKind,
};
pub use sections::{
    AdminSection, CacheScope, ClientRequestsSection, HttpSection, LogFormat, LogSection,
    PaginationSection, ReplaySection, ResponseMode, ServerSection, SessionsSection,
    StatelessSection, TasksSection, decode_request_state_key,
};

/// Checks a node id (`server.node_id`, `--node-id`): it prefixes session ids, so it is
/// visible ASCII without `.` (the separator), at most 64 characters.
pub fn check_node_id(id: &str) -> Result<(), &'static str> {
    if id.len() > 64 {
        return Err("must be at most 64 characters");
    }
    if !id.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b'.') {
        return Err("must be visible ASCII without '.'");
    }
    Ok(())
}

/// The embedded configuration served when `mcp-actor` runs without `--config`.
pub const DEFAULT_CONFIG_TOML: &str = include_str!("../config/default.toml");

/// The whole configuration file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub server: ServerSection,
    pub admin: AdminSection,
    pub http: HttpSection,
    pub sessions: SessionsSection,
    pub client_requests: ClientRequestsSection,
    pub replay: ReplaySection,
    pub pagination: PaginationSection,
    /// `[stateless]`; `[modern]`, its old name, is still read.
    #[serde(alias = "modern")]
    pub stateless: StatelessSection,
    pub tasks: TasksSection,
    pub command_tools: CommandToolsSection,
    pub http_tools: HttpToolsSection,
    pub file_resources: FileResourcesSection,
    pub reload: ReloadSection,
    pub log: LogSection,
    /// Tools the binary exposes. The library API registers tools in code instead.
    pub tools: Vec<ToolConfig>,
    pub resources: Vec<ResourceConfig>,
    pub prompts: Vec<PromptConfig>,
    /// `[auth]`: bearer tokens on every request; absent, the server is open to whoever can
    /// reach it, which is allowed on loopback listeners only.
    pub auth: Option<auth::AuthSection>,
    /// `[gateway]`: limits on the connections to `[[upstreams]]`.
    pub gateway: upstreams::GatewaySection,
    /// MCP servers whose features are served beside this one's.
    pub upstreams: Vec<upstreams::UpstreamConfig>,
    /// `[audit]`: one JSON line per call, for who-ran-what questions.
    pub audit: audit::AuditSection,
    /// `[store]`: durable session records shared by a fleet, or kept across a restart.
    pub store: store::StoreSection,
    /// `[telemetry]`: OpenTelemetry traces over OTLP; off unless enabled.
    pub telemetry: telemetry::TelemetrySection,
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
    /// Every error found in one pass, in file order (`Config::parse` and the providers
    /// report all of theirs at once).
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

    /// Parses and validates configuration text; `origin` names it in errors. Every error is
    /// reported at once, in file order, except a TOML syntax error, which stops the parse.
    pub fn parse(text: &str, origin: &str) -> Result<Config, ConfigError> {
        let config = Config::parse_types(text, origin)?;
        let errors = config.semantic_errors();
        if !errors.is_empty() {
            return Err(located_errors(text, origin, errors));
        }
        Ok(config)
    }

    /// What types alone cannot check: limits, names, `[auth]`, `[[upstreams]]`.
    fn semantic_errors(&self) -> Vec<(String, String)> {
        let mut errors = self.section_errors();
        errors.extend(self.entry_errors());
        errors.extend(self.auth.iter().flat_map(auth::AuthSection::errors));
        errors.extend(upstreams::errors(&self.gateway, &self.upstreams));
        errors.extend(telemetry::errors(&self.telemetry));
        errors
    }

    /// Parses configuration text into its types: TOML syntax, known keys, value types. A
    /// syntax error stops the parse; otherwise every unknown key and type error is
    /// reported together, with the semantic errors of the rest of the file.
    pub(crate) fn parse_types(text: &str, origin: &str) -> Result<Config, ConfigError> {
        let deserializer =
            toml::Deserializer::parse(text).map_err(|e| toml_error(text, origin, "", &e))?;
        if let Some(both) = both_names_of_stateless(text, origin) {
            return Err(both);
        }
        let first = match serde_path_to_error::deserialize(deserializer) {
            Ok(config) => return Ok(config),
            Err(e) => e,
        };
        let (mut errors, rest) = every_type_error::every_type_error(text);
        if errors.is_empty() {
            // Not expected (the table holds what the text does); the first error stands.
            let key = first.path().to_string();
            return Err(toml_error(text, origin, &key, first.inner()));
        }
        if let Some(rest) = rest {
            errors.extend(rest.semantic_errors());
        }
        Err(located_errors(text, origin, errors))
    }

    /// Checks the `[[tools]]`, `[[resources]]` and `[[prompts]]` entries for what their types
    /// cannot: every error as (dotted key, message).
    pub(crate) fn entry_errors(&self) -> Vec<(String, String)> {
        providers::validate(&self.tools, &self.resources, &self.prompts)
    }

    /// Checks the sections for what types alone cannot: every error as (dotted key, message).
    pub(crate) fn section_errors(&self) -> Vec<(String, String)> {
        let mut errors = Vec::new();
        let mut bad = |key: &str, msg: &str| errors.push((key.to_string(), msg.to_string()));
        if !self.server.path.starts_with('/') {
            bad("server.path", "must start with '/', for example \"/mcp\"");
        }
        let server = &self.server;
        let probes = [
            ("server.health_path", &server.health_path),
            ("server.ready_path", &server.ready_path),
        ];
        for (key, probe) in probes {
            if !probe.is_empty() && !probe.starts_with('/') {
                bad(
                    key,
                    "must start with '/' (or be empty to turn the probe off)",
                );
            } else if *probe == server.path {
                bad(
                    key,
                    "must differ from server.path, where the MCP endpoint is served",
                );
            }
        }
        if !server.health_path.is_empty() && server.health_path == server.ready_path {
            bad("server.ready_path", "must differ from server.health_path");
        }
        if let Err(e) = check_node_id(&self.server.node_id) {
            bad("server.node_id", e);
        }
        let admin = &self.admin;
        if admin.enabled && admin.listen.port() != 0 && admin.listen == server.listen {
            bad(
                "admin.listen",
                "must differ from server.listen, where the MCP endpoint is served",
            );
        }
        if admin.token_env.is_some() && admin.token_file.is_some() {
            bad(
                "admin.token_file",
                "set admin.token_env or admin.token_file, not both",
            );
        }
        if self.audit.max_line_bytes < 1024 {
            bad("audit.max_line_bytes", "must be at least 1024");
        }
        if self.http.ipv6_prefix_len > 128 {
            bad(
                "http.ipv6_prefix_len",
                "must be at most 128 (the bits of an IPv6 address)",
            );
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
            ("audit.queue", self.audit.queue),
            (
                "stateless.max_listen_streams",
                self.stateless.max_listen_streams,
            ),
            ("stateless.listen_buffer", self.stateless.listen_buffer),
            ("stateless.max_in_flight", self.stateless.max_in_flight),
            ("http.max_connections", self.http.max_connections),
            (
                "http.max_connections_per_ip",
                self.http.max_connections_per_ip,
            ),
            ("http.max_batch_size", self.http.max_batch_size),
            ("http.max_json_values", self.http.max_json_values),
            ("http.max_sse_streams", self.http.max_sse_streams),
            (
                "http.max_sse_streams_per_principal",
                self.http.max_sse_streams_per_principal,
            ),
            (
                "sessions.max_streams_per_session",
                self.sessions.max_streams_per_session,
            ),
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
                bad(key, "must be greater than 0");
            }
        }
        let durations = [
            ("http.sse_keep_alive", self.http.sse_keep_alive),
            ("http.header_timeout", self.http.header_timeout),
            ("http.body_timeout", self.http.body_timeout),
            ("http.idle_timeout", self.http.idle_timeout),
            ("http.write_timeout", self.http.write_timeout),
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
                bad(key, "must be longer than 0s");
            }
        }
        if self.http.initialize_rate_per_ip > 0 && self.http.initialize_burst_per_ip == 0 {
            bad(
                "http.initialize_burst_per_ip",
                "must be at least 1 while http.initialize_rate_per_ip is on",
            );
        }
        if self.client_requests.max_timeout < self.client_requests.timeout {
            bad(
                "client_requests.max_timeout",
                "must not be shorter than client_requests.timeout",
            );
        }
        if let Some(key) = &self.stateless.request_state_key {
            if let Err(msg) = decode_request_state_key(key) {
                bad("stateless.request_state_key", &msg);
            }
        }
        errors
    }
}

/// Locates every (dotted key, message) error in `text`, the contents of `origin`, in file
/// order: one error as itself, so a lone error reads as it always has; several as
/// [`ConfigError::Several`].
pub(crate) fn located_errors(
    text: &str,
    origin: &str,
    errors: Vec<(String, String)>,
) -> ConfigError {
    let mut located: Vec<ConfigError> = errors
        .into_iter()
        .map(|(key, message)| ConfigError::at_key(text, origin, &key, message))
        .collect();
    // Stable, so errors on one line keep the order their checks found them in.
    located.sort_by_key(|e| match e {
        ConfigError::Invalid { line, column, .. } => (*line, *column),
        _ => (usize::MAX, usize::MAX),
    });
    if located.len() == 1 {
        located.remove(0)
    } else {
        ConfigError::Several(located)
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

/// `[modern]` is the old name of `[stateless]`: a file that sets both would have one of
/// them read and the other ignored, so it is refused, naming both.
fn both_names_of_stateless(text: &str, origin: &str) -> Option<ConfigError> {
    let table = text.parse::<toml::Table>().ok()?;
    if !(table.contains_key("modern") && table.contains_key("stateless")) {
        return None;
    }
    let (line, column) = locate_key(text, "modern");
    Some(ConfigError::Invalid {
        path: origin.into(),
        line,
        column,
        key: "modern: ".into(),
        message: "[modern] and [stateless] are one section ([modern] is its old name); \
                  move its keys into [stateless] and remove [modern]"
            .into(),
    })
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests;
