//! `[audit]`: the audit log, one JSON line per `tools/call`, `prompts/get` and
//! `resources/read`, apart from the text logs (see `src/audit/`).

use serde::Deserialize;

/// `[audit]`. Without `path`, nothing is recorded and nothing is spawned.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuditSection {
    /// The file the lines are appended to, or `stdout`. Relative paths resolve against the
    /// working directory, as logrotate's configuration names it.
    pub path: Option<String>,
    /// Lines waiting for the writer at most; past it a line is dropped and counted
    /// (`mcp_audit_dropped_total`), so a slow disk never holds up a request.
    pub queue: usize,
    /// Bytes of one line at most; a longer line has its `arguments` replaced by
    /// `"[too large]"`.
    pub max_line_bytes: usize,
    /// Argument keys written as `"[redacted]"` at any depth, beside the ones the tool's
    /// input schema marks `writeOnly: true` or `format: "password"`.
    pub redact: Vec<String>,
}

impl Default for AuditSection {
    fn default() -> Self {
        AuditSection {
            path: None,
            queue: 10_000,
            max_line_bytes: 64 * 1024,
            redact: Vec::new(),
        }
    }
}
