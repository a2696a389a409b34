//! The audit log: one JSON line per `tools/call`, `prompts/get` and `resources/read`, in
//! both eras, answering "who ran what, with which arguments, and how did it end".
//!
//! The request path only formats a line and offers it to a bounded queue
//! ([`writer`]); one writer thread owns the file. A full queue drops the line (counted in
//! `mcp_audit_dropped_total`, logged rate-limited) rather than make a request wait on a
//! disk. Secrets are redacted before the line exists ([`redact`]), so no copy of them
//! reaches the queue, the file or the text logs.

mod line;
mod redact;
mod writer;

use std::io;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use serde_json::Value;

use crate::config::audit::AuditSection;
use crate::features::Features;
use crate::jsonrpc::RpcError;
use crate::metrics::Metrics;
use crate::protocol::Answer;
use crate::protocol::method::FeatureMethod;
use line::{Line, Outcome};
pub use writer::reopen_all;

/// The methods that get a line: the ones that run a tool, a prompt or a resource read.
fn audited(method: FeatureMethod) -> bool {
    matches!(
        method,
        FeatureMethod::ToolsCall | FeatureMethod::PromptsGet | FeatureMethod::ResourcesRead
    )
}

/// The server's audit log: a cheap handle, off unless `[audit] path` is set.
#[derive(Clone, Default)]
pub struct AuditLog(Option<Arc<writer::Writer>>);

/// Who sent a request, as the transport knows it.
pub struct Requester<'a> {
    /// The principal's key (what its sessions and tasks are bound to).
    pub principal: &'a str,
    /// The `Mcp-Session-Id`; `None` on 2026-07-28.
    pub session: Option<&'a str>,
    /// The HTTP `traceparent` header, when the transport has it.
    pub traceparent: Option<&'a str>,
}

impl<'a> Requester<'a> {
    /// A request of the session `session`, created by `principal`.
    pub fn session(principal: &'a str, session: &'a str) -> Self {
        Requester {
            principal,
            session: Some(session),
            traceparent: None,
        }
    }

    /// With the HTTP `traceparent` header of the request, when it had one.
    pub fn traceparent(self, traceparent: Option<&'a str>) -> Self {
        Requester {
            traceparent,
            ..self
        }
    }

    /// A 2026-07-28 request of `principal`, which has no session.
    pub fn stateless(principal: &'a str) -> Self {
        Requester {
            principal,
            session: None,
            traceparent: None,
        }
    }
}

impl AuditLog {
    /// An audit log that records nothing.
    pub fn disabled() -> Self {
        AuditLog(None)
    }

    /// Opens `[audit] path` and starts its writer, or records nothing without a path.
    pub fn open(section: &AuditSection, node: &str, metrics: Arc<Metrics>) -> io::Result<Self> {
        let Some(path) = &section.path else {
            return Ok(AuditLog(None));
        };
        let writer = writer::Writer::start(path, section, node, metrics)?;
        Ok(AuditLog(Some(writer)))
    }

    /// Starts the line of a request about to run, when `method` is audited: the arguments
    /// are redacted now, before the handler takes them. [`Pending::finish`] writes it with
    /// the outcome; a handler whose task is aborted (DELETE, cancellation) drops it
    /// unfinished, which still writes it, with outcome `cancelled`.
    pub fn begin(
        &self,
        features: &Features,
        requester: Requester<'_>,
        method: FeatureMethod,
        params: Option<&Value>,
    ) -> Pending {
        let Some(writer) = self.0.as_ref().filter(|_| audited(method)) else {
            return Pending(None);
        };
        let (name, arguments) = redact::subject(features, method, params, writer.redact());
        Pending(Some(Box::new(PendingLine {
            writer: Arc::clone(writer),
            line: Line {
                time: SystemTime::now(),
                node: writer.node(),
                principal: requester.principal.to_string(),
                session: requester.session.map(str::to_string),
                method: method.method().as_str().to_string(),
                name,
                arguments,
                outcome: Outcome::Cancelled,
                duration_ms: 0.0,
                trace_id: trace_id_of(params, requester.traceparent),
            },
            started: Instant::now(),
        })))
    }
}

/// A line waiting for its handler's outcome (nothing when the request is not audited);
/// written when dropped unfinished too. Boxed, so the future of every call holds one
/// pointer, not a whole line, whether the audit log is on or not.
#[must_use = "a pending audit line is written when finished or dropped"]
pub struct Pending(Option<Box<PendingLine>>);

struct PendingLine {
    writer: Arc<writer::Writer>,
    line: Line,
    started: Instant,
}

impl Pending {
    /// Writes the line with the handler's outcome.
    pub fn finish(mut self, outcome: &Result<Answer, RpcError>) {
        self.write(Outcome::of(outcome));
    }

    fn write(&mut self, outcome: Outcome) {
        if let Some(pending) = self.0.take() {
            let PendingLine {
                writer,
                mut line,
                started,
            } = *pending;
            line.outcome = outcome;
            line.duration_ms = started.elapsed().as_secs_f64() * 1000.0;
            writer.write(line);
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.write(Outcome::Cancelled);
    }
}

/// The W3C trace id of a request: from `params._meta.traceparent`, which wins because one
/// HTTP request can carry several messages, else from the HTTP header; `None` when neither
/// is a valid `traceparent`. The one place the audit log learns of trace context, so the
/// telemetry layer can replace it with the current span's trace id.
pub fn trace_id_of(params: Option<&Value>, header: Option<&str>) -> Option<String> {
    let from_meta = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get("traceparent"))
        .and_then(Value::as_str)
        .and_then(parse_trace_id);
    from_meta.or_else(|| header.and_then(parse_trace_id))
}

/// `version-traceid-parentid-flags`, W3C Trace Context §3.2: 32 lowercase hex digits,
/// not all zero.
fn parse_trace_id(traceparent: &str) -> Option<String> {
    let mut parts = traceparent.trim().split('-');
    let (version, trace_id) = (parts.next()?, parts.next()?);
    let hex = |s: &str| s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let valid = version.len() == 2
        && hex(version)
        && version != "ff"
        && trace_id.len() == 32
        && hex(trace_id)
        && trace_id.bytes().any(|b| b != b'0');
    valid.then(|| trace_id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn meta_traceparent_wins_over_the_header() {
        let header = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let meta = json!({"_meta": {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}});
        assert_eq!(
            trace_id_of(Some(&meta), Some(header)).as_deref(),
            Some("4bf92f3577b34da6a3ce929d0e0e4736")
        );
        assert_eq!(
            trace_id_of(None, Some(header)).as_deref(),
            Some("0af7651916cd43dd8448eb211c80319c")
        );
        assert_eq!(trace_id_of(None, Some("00-zz-00-01")), None);
        assert_eq!(
            trace_id_of(
                None,
                Some("00-00000000000000000000000000000000-b7ad6b7169203331-01")
            ),
            None
        );
    }
}
