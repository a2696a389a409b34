//! The label values of the metrics: closed enums, so that nothing a client sends can add a
//! series. Each enum's position indexes the handles [`Metrics`](super::Metrics) resolved
//! for it, and `label` is the value exported.

/// The protocol revision a request was served in (the `version` label): the session's
/// negotiated version, or the stateless revision.
pub use crate::revision::Revision;

/// Why a session ended (`mcp_sessions_ended_total{reason}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionEnd {
    /// The client sent DELETE.
    Delete,
    /// `sessions.idle_ttl` passed with nothing in flight.
    Idle,
    /// A server limit ended it.
    Limit,
    /// The server drained or shut down.
    Shutdown,
}

impl SessionEnd {
    pub const ALL: [SessionEnd; 4] = [
        SessionEnd::Delete,
        SessionEnd::Idle,
        SessionEnd::Limit,
        SessionEnd::Shutdown,
    ];

    pub fn label(self) -> &'static str {
        match self {
            SessionEnd::Delete => "delete",
            SessionEnd::Idle => "idle",
            SessionEnd::Limit => "limit",
            SessionEnd::Shutdown => "shutdown",
        }
    }
}

/// How a server→client request (elicitation, sampling, roots) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientRequestEnd {
    /// The client answered, with a result or an error.
    Answered,
    /// `client_requests.timeout` passed first.
    TimedOut,
    /// The request that asked finished or was cancelled, or the session ended.
    Cancelled,
}

impl ClientRequestEnd {
    pub const ALL: [ClientRequestEnd; 3] = [
        ClientRequestEnd::Answered,
        ClientRequestEnd::TimedOut,
        ClientRequestEnd::Cancelled,
    ];

    pub fn label(self) -> &'static str {
        match self {
            ClientRequestEnd::Answered => "answered",
            ClientRequestEnd::TimedOut => "timed_out",
            ClientRequestEnd::Cancelled => "cancelled",
        }
    }
}

/// A limit that refused a request or closed a connection
/// (`mcp_limit_rejections_total{limit}`); each label names its configuration key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// `http.max_body_bytes` (413).
    MaxBodyBytes,
    /// `sessions.max_in_flight` (429).
    MaxInFlight,
    /// `stateless.max_in_flight` (429).
    StatelessMaxInFlight,
    /// `sessions.max_sessions` (503).
    MaxSessions,
    /// A session's mailbox stayed full for `sessions.mailbox_wait` (503).
    MailboxFull,
    /// `http.max_connections` (503, then the connection closes).
    MaxConnections,
    /// `stateless.max_listen_streams` (503).
    MaxListenStreams,
    /// The node is draining (503).
    Draining,
    /// `client_requests.max_pending`: a tool's server→client request was refused.
    MaxPending,
    /// `command_tools.max_processes` or `max_processes_per_session`: a command was refused.
    MaxProcesses,
    /// `http.header_timeout` closed a connection.
    HeaderTimeout,
    /// `http.body_timeout` (408).
    BodyTimeout,
    /// `http.write_timeout` closed a connection.
    WriteTimeout,
    /// `http.idle_timeout` closed a keep-alive connection.
    IdleTimeout,
    /// `auth.max_sessions_per_principal` (429).
    PrincipalSessions,
    /// `auth.max_in_flight_per_principal` (429).
    PrincipalInFlight,
    /// `auth.max_tasks_per_principal`: a task-augmented call was refused (429).
    PrincipalTasks,
    /// `tasks.max_tasks`: a task-augmented call was refused (503).
    MaxTasks,
    /// `http.initialize_rate_per_ip` (429).
    InitializeRateIp,
    /// `auth.initialize_rate_per_principal` (429).
    InitializeRatePrincipal,
    /// `http.max_sse_streams` (503).
    MaxSseStreams,
    /// `sessions.max_streams_per_session` (429).
    MaxStreamsPerSession,
    /// `http.max_batch_size` (400).
    MaxBatchSize,
    /// `http.max_json_values` (400).
    MaxJsonValues,
    /// `http.max_sse_streams_per_principal` (503).
    PrincipalSseStreams,
    /// `http.max_connections_per_ip` (429, then the connection closes).
    MaxConnectionsPerIp,
    /// `auth.max_listen_streams_per_principal` (429).
    PrincipalListenStreams,
    /// `gateway.max_children` or `max_children_per_session`: an upstream was not started.
    MaxUpstreamChildren,
    /// `gateway.stderr_line_bytes`: the rest of an upstream's stderr line was skipped.
    StderrLineBytes,
    /// `gateway.max_message_bytes`: an HTTP upstream's reply was cut and its call failed.
    UpstreamMessageBytes,
    /// `replay.max_bytes_per_session` or `replay.max_bytes`: replay log events were dropped.
    ReplayBytes,
    /// `tasks.max_bytes`: finished tasks' results were dropped.
    TaskBytes,
    /// `audit.queue` or `audit.max_line_bytes`: an audit line was dropped.
    AuditQueue,
    /// `store.max_task_result`: a finished task's result was not written to the store.
    StoreTaskResult,
}

impl Limit {
    pub const ALL: [Limit; 34] = [
        Limit::MaxBodyBytes,
        Limit::MaxInFlight,
        Limit::StatelessMaxInFlight,
        Limit::MaxSessions,
        Limit::MailboxFull,
        Limit::MaxConnections,
        Limit::MaxListenStreams,
        Limit::Draining,
        Limit::MaxPending,
        Limit::MaxProcesses,
        Limit::HeaderTimeout,
        Limit::BodyTimeout,
        Limit::WriteTimeout,
        Limit::IdleTimeout,
        Limit::PrincipalSessions,
        Limit::PrincipalInFlight,
        Limit::PrincipalTasks,
        Limit::MaxTasks,
        Limit::InitializeRateIp,
        Limit::InitializeRatePrincipal,
        Limit::MaxSseStreams,
        Limit::MaxStreamsPerSession,
        Limit::MaxBatchSize,
        Limit::MaxJsonValues,
        Limit::PrincipalSseStreams,
        Limit::MaxConnectionsPerIp,
        Limit::PrincipalListenStreams,
        Limit::MaxUpstreamChildren,
        Limit::StderrLineBytes,
        Limit::UpstreamMessageBytes,
        Limit::ReplayBytes,
        Limit::TaskBytes,
        Limit::AuditQueue,
        Limit::StoreTaskResult,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Limit::MaxBodyBytes => "max_body_bytes",
            Limit::MaxInFlight => "max_in_flight",
            Limit::StatelessMaxInFlight => "modern_max_in_flight",
            Limit::MaxSessions => "max_sessions",
            Limit::MailboxFull => "mailbox_full",
            Limit::MaxConnections => "max_connections",
            Limit::MaxListenStreams => "max_listen_streams",
            Limit::Draining => "draining",
            Limit::MaxPending => "max_pending",
            Limit::MaxProcesses => "max_processes",
            Limit::HeaderTimeout => "header_timeout",
            Limit::BodyTimeout => "body_timeout",
            Limit::WriteTimeout => "write_timeout",
            Limit::IdleTimeout => "idle_timeout",
            Limit::PrincipalSessions => "max_sessions_per_principal",
            Limit::PrincipalInFlight => "max_in_flight_per_principal",
            Limit::PrincipalTasks => "max_tasks_per_principal",
            Limit::MaxTasks => "max_tasks",
            Limit::InitializeRateIp => "initialize_rate_per_ip",
            Limit::InitializeRatePrincipal => "initialize_rate_per_principal",
            Limit::MaxSseStreams => "max_sse_streams",
            Limit::MaxStreamsPerSession => "max_streams_per_session",
            Limit::MaxBatchSize => "max_batch_size",
            Limit::MaxJsonValues => "max_json_values",
            Limit::PrincipalSseStreams => "max_sse_streams_per_principal",
            Limit::MaxConnectionsPerIp => "max_connections_per_ip",
            Limit::PrincipalListenStreams => "max_listen_streams_per_principal",
            Limit::MaxUpstreamChildren => "max_upstream_children",
            Limit::StderrLineBytes => "stderr_line_bytes",
            Limit::UpstreamMessageBytes => "upstream_max_message_bytes",
            Limit::ReplayBytes => "replay_bytes",
            Limit::TaskBytes => "task_bytes",
            Limit::AuditQueue => "audit_queue",
            Limit::StoreTaskResult => "store_max_task_result",
        }
    }
}

/// A method's row in the request series: its index in the method list
/// [`Metrics::new`](super::Metrics::new) was given, or [`MethodLabel::OTHER`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MethodLabel(pub(super) usize);

impl MethodLabel {
    /// A method the server does not serve in the request's era (label `other`).
    pub const OTHER: MethodLabel = MethodLabel(usize::MAX);

    pub fn new(index: usize) -> Self {
        MethodLabel(index)
    }
}

/// How a configuration reload ended (`mcp_config_reloads_total{outcome}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReloadOutcome {
    /// Everything the new file changed is in effect.
    Ok,
    /// Rejected: the running configuration stays as it was.
    Failed,
    /// Taken, but some changed tables (such as `[auth]`) keep their startup values until a
    /// restart; an operator who reads `ok` would believe the change is live.
    NeedsRestart,
}

impl ReloadOutcome {
    pub const ALL: [ReloadOutcome; 3] = [
        ReloadOutcome::Ok,
        ReloadOutcome::Failed,
        ReloadOutcome::NeedsRestart,
    ];

    pub fn label(self) -> &'static str {
        match self {
            ReloadOutcome::Ok => "ok",
            ReloadOutcome::Failed => "failed",
            ReloadOutcome::NeedsRestart => "needs_restart",
        }
    }
}
