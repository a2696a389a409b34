//! [`Metrics`]: the server's Prometheus metrics, one registry per server instance.
//!
//! There is no global recorder: tests run many servers in one process, and each server's
//! `/metrics` must show its own traffic only. The server builds one `Metrics` and hands an
//! `Arc` of it to each layer's state (the session environment, the stateless state, the
//! HTTP state, the provider runtime); every layer records through it, which is why this
//! module sits at the bottom of the layers and knows none of them.
//!
//! Recording is on the hot path, so it is atomics only: every series with a small, fixed
//! label set is resolved once, here, into a handle kept in an array indexed by an enum, and
//! recording is one relaxed add on it. The request series (method × era × outcome) are
//! resolved on their first use and kept in a `OnceLock` per cell, so only the combinations
//! that happen are exported, and after the first request of a kind nothing is hashed or
//! allocated. Label values are closed enums, never strings from a request: an unknown
//! method is `other`, so no client can grow the series without bound.
//!
//! The metric names are a contract (dashboards, `config/grafana-dashboard.json`, and the
//! cluster tests read them); `config/README.md` lists them.

mod histogram;
mod labels;
mod tasks;
mod timer;

use std::sync::{Arc, LazyLock, OnceLock};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::{Registry, Unit};

pub use histogram::DurationHistogram;
pub use labels::{ClientRequestEnd, Limit, MethodLabel, ReloadOutcome, Revision, SessionEnd};
pub use tasks::{LiveTask, TaskEnd, TaskMetrics};
pub use timer::{RequestTimer, Running};

type Labels = [(&'static str, &'static str); 3];
type DurationLabels = [(&'static str, &'static str); 2];

/// One method's cells: `[era][outcome]` counters and `[era]` histograms.
#[derive(Debug, Default)]
struct MethodCells {
    requests: [[OnceLock<Counter>; 2]; Revision::ALL.len()],
    durations: [OnceLock<DurationHistogram>; Revision::ALL.len()],
    /// `mcp_server_operation_duration_seconds`, `[outcome]`.
    operations: [OnceLock<DurationHistogram>; 2],
}

/// The server's metrics (module docs). Cheap to record into from any thread.
pub struct Metrics {
    registry: Registry,
    /// The request method labels, `other` last.
    methods: Box<[&'static str]>,
    cells: Box<[MethodCells]>,
    requests: Family<Labels, Counter>,
    durations: Family<DurationLabels, DurationHistogram>,
    operations: Family<DurationLabels, DurationHistogram>,
    sessions_lived: DurationHistogram,
    sessions_active: Gauge,
    sessions_created: Counter,
    sessions_ended: [Counter; SessionEnd::ALL.len()],
    tools_in_flight: Gauge,
    command_processes: Gauge,
    upstream_processes: Gauge,
    upstream_restarts: Counter,
    client_requests_pending: Gauge,
    client_requests: [Counter; ClientRequestEnd::ALL.len()],
    sse_streams_open: Gauge,
    /// Also the server-wide replay budget's count (`replay.max_bytes`): each session's logs
    /// charge and credit it, one atomic add, so sessions share no lock.
    replay_bytes: Gauge,
    sse_events_replayed: Counter,
    sse_replay_misses: Counter,
    limit_rejections: [Counter; Limit::ALL.len()],
    reloads: [Counter; 3],
    tasks: TaskMetrics,
    audit_dropped: Counter,
    store_errors: Counter,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

/// Metrics nobody scrapes: for a provider runtime or a test built without a server.
impl Default for Metrics {
    fn default() -> Self {
        Metrics::new("", [])
    }
}

/// The counters of a family with one label, one per value, all exported from the start
/// (at 0), so a rate over them exists before the first event.
fn labelled<const N: usize>(
    family: &Family<[(&'static str, &'static str); 1], Counter>,
    label: &'static str,
    values: [&'static str; N],
) -> [Counter; N] {
    values.map(|value| family.get_or_create(&[(label, value)]).clone())
}

impl Metrics {
    /// Metrics of the node `node` (the `mcp_build_info` label), whose requests are counted
    /// by `methods` (`Method::metric_names`; any other method counts as `other`).
    pub fn new(node: &str, methods: impl IntoIterator<Item = &'static str>) -> Self {
        let methods: Box<[&'static str]> = methods.into_iter().chain(["other"]).collect();
        let mut registry = Registry::default();
        let r = &mut registry;
        let sessions_active = Gauge::default();
        r.register(
            "mcp_sessions_active",
            "Live sessions",
            sessions_active.clone(),
        );
        let sessions_created = Counter::default();
        r.register(
            "mcp_sessions_created",
            "Sessions started",
            sessions_created.clone(),
        );
        let family = Family::default();
        let sessions_ended = labelled(&family, "reason", SessionEnd::ALL.map(SessionEnd::label));
        r.register("mcp_sessions_ended", "Sessions ended, by reason", family);
        let requests = Family::<Labels, Counter>::default();
        r.register(
            "mcp_requests",
            "JSON-RPC requests answered, by method, protocol revision and outcome \
             (error: a JSON-RPC error, or no answer at all)",
            requests.clone(),
        );
        let durations = Family::<DurationLabels, DurationHistogram>::default();
        r.register_with_unit(
            "mcp_request_duration",
            "Time from a request's dispatch to its answer, by method and protocol revision",
            Unit::Seconds,
            durations.clone(),
        );
        let tools_in_flight = Gauge::default();
        r.register(
            "mcp_tools_in_flight",
            "tools/call handlers running",
            tools_in_flight.clone(),
        );
        let command_processes = Gauge::default();
        r.register(
            "mcp_command_processes",
            "Command-tool processes running",
            command_processes.clone(),
        );
        let upstream_processes = Gauge::default();
        r.register(
            "mcp_upstream_processes",
            "Processes of stdio upstreams running",
            upstream_processes.clone(),
        );
        let upstream_restarts = Counter::default();
        r.register(
            "mcp_upstream_restarts",
            "Upstream connections started again after the previous one ended",
            upstream_restarts.clone(),
        );
        let client_requests_pending = Gauge::default();
        r.register(
            "mcp_client_requests_pending",
            "Server-to-client requests (elicitation, sampling, roots) awaiting an answer",
            client_requests_pending.clone(),
        );
        let family = Family::default();
        let outcomes = ClientRequestEnd::ALL.map(ClientRequestEnd::label);
        let client_requests = labelled(&family, "outcome", outcomes);
        r.register(
            "mcp_client_requests",
            "Server-to-client requests ended, by outcome",
            family,
        );
        let sse_streams_open = Gauge::default();
        r.register(
            "mcp_sse_streams_open",
            "SSE responses open",
            sse_streams_open.clone(),
        );
        let replay_bytes = Gauge::default();
        r.register(
            "mcp_replay_bytes",
            "Bytes of event data held in replay logs, every session together",
            replay_bytes.clone(),
        );
        let sse_events_replayed = Counter::default();
        r.register(
            "mcp_sse_events_replayed",
            "Events replayed to clients resuming a stream with Last-Event-ID",
            sse_events_replayed.clone(),
        );
        let sse_replay_misses = Counter::default();
        r.register(
            "mcp_sse_replay_misses",
            "Resumptions refused because Last-Event-ID was outside the replay window (410)",
            sse_replay_misses.clone(),
        );
        let family = Family::default();
        let limit_rejections = labelled(&family, "limit", Limit::ALL.map(Limit::label));
        r.register(
            "mcp_limit_rejections",
            "Requests refused and connections closed by a limit, by limit",
            family,
        );
        let family = Family::default();
        let reloads = labelled(
            &family,
            "outcome",
            ReloadOutcome::ALL.map(ReloadOutcome::label),
        );
        r.register(
            "mcp_config_reloads",
            "Configuration reloads, by outcome",
            family,
        );
        let store_errors = Counter::default();
        r.register(
            "mcp_store_errors",
            "Session store calls that failed or timed out ([store])",
            store_errors.clone(),
        );
        let build = Info::new(vec![
            ("version", env!("CARGO_PKG_VERSION").to_string()),
            ("node", node.to_string()),
        ]);
        r.register("mcp_build", "This server's version and node id", build);
        let tasks = TaskMetrics::register(r);
        let audit_dropped = Counter::default();
        r.register(
            "mcp_audit_dropped",
            "Audit lines dropped because the writer's queue was full or a line too large",
            audit_dropped.clone(),
        );
        // The OpenTelemetry semantic conventions' MCP metrics (`mcp.server.operation.duration`,
        // `mcp.server.session.duration`), with their attribute names as labels.
        let operations = Family::<DurationLabels, DurationHistogram>::default();
        r.register_with_unit(
            "mcp_server_operation_duration",
            "mcp.server.operation.duration: time to answer a request, by mcp.method.name and \
             error.type (_OTHER for a JSON-RPC error or no answer)",
            Unit::Seconds,
            operations.clone(),
        );
        let sessions_lived = DurationHistogram::default();
        r.register_with_unit(
            "mcp_server_session_duration",
            "mcp.server.session.duration: how long sessions lived, from initialize to their end",
            Unit::Seconds,
            sessions_lived.clone(),
        );
        r.register(
            "mcp_telemetry_spans_dropped",
            "Trace spans never exported: the export queue was full, or the OTLP collector \
             did not take them ([telemetry])",
            spans_dropped().clone(),
        );
        Metrics {
            registry,
            cells: methods.iter().map(|_| MethodCells::default()).collect(),
            methods,
            requests,
            durations,
            operations,
            sessions_lived,
            sessions_active,
            sessions_created,
            sessions_ended,
            tools_in_flight,
            command_processes,
            upstream_processes,
            upstream_restarts,
            client_requests_pending,
            client_requests,
            sse_streams_open,
            replay_bytes,
            sse_events_replayed,
            sse_replay_misses,
            limit_rejections,
            reloads,
            tasks,
            audit_dropped,
            store_errors,
        }
    }

    /// The series of the tasks extension.
    pub fn tasks(&self) -> &TaskMetrics {
        &self.tasks
    }

    /// The registry in the Prometheus text format 0.0.4 (`text/plain; version=0.0.4`).
    pub fn encode_prometheus(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry);
        out
    }

    /// The registry in the OpenMetrics text format 1.0.0, `# EOF` included.
    pub fn encode_openmetrics(&self) -> String {
        let mut out = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    pub fn session_started(&self) {
        self.sessions_created.inc();
        self.sessions_active.inc();
    }

    pub fn session_ended(&self, end: SessionEnd) {
        self.sessions_active.dec();
        self.sessions_ended[end as usize].inc();
    }

    /// Records how long an ended session lived.
    pub fn session_lasted(&self, lived: Duration) {
        self.sessions_lived.observe(lived);
    }

    /// Starts timing a request; the timer records it when finished or dropped.
    pub fn start_request(self: &Arc<Self>, method: MethodLabel, era: Revision) -> RequestTimer {
        RequestTimer::start(Arc::clone(self), method, era)
    }

    /// Records one answered request: `ok` unless its answer was a JSON-RPC error.
    pub fn record_request(&self, method: MethodLabel, era: Revision, ok: bool, elapsed: Duration) {
        let row = method.0.min(self.methods.len() - 1);
        let (name, cells) = (self.methods[row], &self.cells[row]);
        let outcome = usize::from(!ok);
        cells.requests[era as usize][outcome]
            .get_or_init(|| {
                let labels = [
                    ("method", name),
                    ("era", era.as_str()),
                    ("outcome", ["ok", "error"][outcome]),
                ];
                self.requests.get_or_create(&labels).clone()
            })
            .inc();
        cells.durations[era as usize]
            .get_or_init(|| {
                let labels = [("method", name), ("era", era.as_str())];
                self.durations.get_or_create(&labels).clone()
            })
            .observe(elapsed);
        cells.operations[outcome]
            .get_or_init(|| {
                let labels = [
                    ("mcp_method_name", name),
                    ("error_type", ["", "_OTHER"][outcome]),
                ];
                self.operations.get_or_create(&labels).clone()
            })
            .observe(elapsed);
    }

    /// Counts a `tools/call` handler as running until the guard drops.
    pub fn tool_running(&self) -> Running {
        Running::start(&self.tools_in_flight)
    }

    /// Counts a command-tool process as running until the guard drops.
    pub fn command_running(&self) -> Running {
        Running::start(&self.command_processes)
    }

    /// Counts an upstream process as running until the guard drops.
    pub fn upstream_process_running(&self) -> Running {
        Running::start(&self.upstream_processes)
    }

    pub fn upstream_restarted(&self) {
        self.upstream_restarts.inc();
    }

    /// Counts an SSE response as open until the guard drops (with its body).
    pub fn sse_stream_open(&self) -> Running {
        Running::start(&self.sse_streams_open)
    }

    pub fn replay_bytes_charge(&self, bytes: usize) {
        self.replay_bytes
            .inc_by(i64::try_from(bytes).unwrap_or(i64::MAX));
    }

    pub fn replay_bytes_credit(&self, bytes: usize) {
        self.replay_bytes
            .dec_by(i64::try_from(bytes).unwrap_or(i64::MAX));
    }

    /// Bytes held in every session's replay logs.
    pub fn replay_bytes(&self) -> usize {
        usize::try_from(self.replay_bytes.get()).unwrap_or(0)
    }

    pub fn client_request_sent(&self) {
        self.client_requests_pending.inc();
    }

    pub fn client_request_ended(&self, end: ClientRequestEnd) {
        self.client_requests_pending.dec();
        self.client_requests[end as usize].inc();
    }

    pub fn events_replayed(&self, events: usize) {
        self.sse_events_replayed.inc_by(events as u64);
    }

    pub fn replay_missed(&self) {
        self.sse_replay_misses.inc();
    }

    pub fn limit_hit(&self, limit: Limit) {
        self.limit_rejections[limit as usize].inc();
    }

    pub fn audit_line_dropped(&self) {
        self.audit_dropped.inc();
    }

    pub fn store_error(&self) {
        self.store_errors.inc();
    }

    pub fn config_reloaded(&self, outcome: ReloadOutcome) {
        self.reloads[outcome as usize].inc();
    }
}

/// The process's count of trace spans dropped before export. One per process, as the
/// tracer the spans come from is: every server's registry shows it.
pub fn spans_dropped() -> &'static Counter {
    static SPANS_DROPPED: LazyLock<Counter> = LazyLock::new(Counter::default);
    &SPANS_DROPPED
}

#[cfg(test)]
mod tests;
