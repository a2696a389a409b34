//! `[[upstreams]]`: MCP servers behind this one, reached over stdio (a child process) or
//! Streamable HTTP, and `[gateway]`, the limits that apply to all of them.
//!
//! An upstream's tools, resources and prompts are served beside the configured ones under
//! its prefix (`fs__read_file`). What the upstream offers is only known once it answers, so
//! the names are checked for clashes when the catalog is read at startup, in
//! [`crate::providers::upstream`], with the same `file:line` errors.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

/// The separator between an upstream's prefix and its names: `fs__read_file`.
pub const PREFIX_SEPARATOR: &str = "__";

/// `[gateway]`: limits on upstream connections, server-wide.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GatewaySection {
    /// Upstream child processes running at once, server-wide; a session that would start
    /// one more gets an `isError` result naming this key.
    pub max_children: usize,
    /// Upstream child processes one session (or one principal's 2026-07-28 connections)
    /// may hold.
    pub max_children_per_session: usize,
    /// How long a stopping child has between the end of its stdin and SIGTERM, and again
    /// between SIGTERM and SIGKILL (to its whole process group).
    #[serde(with = "humantime_serde")]
    pub shutdown_grace: Duration,
    /// The first wait before restarting an upstream that exited; it doubles per failure in
    /// a row, up to `restart_backoff_max`.
    #[serde(with = "humantime_serde")]
    pub restart_backoff: Duration,
    #[serde(with = "humantime_serde")]
    pub restart_backoff_max: Duration,
    /// How long a principal's connection to a session-scoped upstream, used by 2026-07-28
    /// requests (which have no session), stays open without a call.
    #[serde(with = "humantime_serde")]
    pub principal_idle_ttl: Duration,
    /// The lines of an upstream's stderr kept for error reports.
    pub stderr_lines: usize,
    /// The longest line of an upstream's stderr kept, in bytes; the rest of a longer line
    /// is skipped, so a line without a newline cannot grow the server's memory.
    pub stderr_line_bytes: usize,
    /// The largest message an upstream may send, in bytes; a longer one ends the
    /// connection, as a broken upstream would.
    pub max_message_bytes: usize,
}

impl Default for GatewaySection {
    fn default() -> Self {
        GatewaySection {
            max_children: 256,
            max_children_per_session: 16,
            shutdown_grace: Duration::from_secs(2),
            restart_backoff: Duration::from_millis(500),
            restart_backoff_max: Duration::from_secs(30),
            principal_idle_ttl: Duration::from_secs(300),
            stderr_lines: 20,
            stderr_line_bytes: 4096,
            max_message_bytes: 16 * 1024 * 1024,
        }
    }
}

/// Who shares one upstream connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UpstreamScope {
    /// One connection per client session, started on first use and ended with the session.
    #[default]
    Session,
    /// One connection for every client.
    Shared,
}

/// `tools = { allow = [...], deny = [...] }`: which of the upstream's tools are served, by
/// their names upstream. An empty `allow` allows all; `deny` wins over `allow`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NameFilter {
    pub allow: Vec<String>,
    pub deny: Vec<String>,
}

impl NameFilter {
    pub fn admits(&self, name: &str) -> bool {
        (self.allow.is_empty() || self.allow.iter().any(|a| a == name))
            && !self.deny.iter().any(|d| d == name)
    }
}

/// One `[[upstreams]]` entry.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamConfig {
    pub name: String,
    /// argv of a stdio server, run directly, never through a shell.
    pub command: Option<Vec<String>>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Start the command with only `env` (and `PATH`) rather than the server's environment.
    #[serde(default)]
    pub env_clear: bool,
    pub cwd: Option<PathBuf>,
    /// The endpoint of a Streamable HTTP server.
    pub url: Option<String>,
    /// Headers sent with every request to `url`; values may use `${ENV}`.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub scope: UpstreamScope,
    /// Prepended to every name with `__`; the name when unset, `""` for none.
    pub prefix: Option<String>,
    #[serde(default)]
    pub tools: NameFilter,
    /// How long the upstream has to answer `initialize` after it starts.
    #[serde(default = "default_startup_timeout", with = "humantime_serde")]
    pub startup_timeout: Duration,
    /// How long one forwarded request may take before it is cancelled upstream.
    #[serde(default = "default_call_timeout", with = "humantime_serde")]
    pub call_timeout: Duration,
}

fn default_startup_timeout() -> Duration {
    Duration::from_secs(30)
}

fn default_call_timeout() -> Duration {
    Duration::from_secs(300)
}

impl UpstreamConfig {
    /// The prefix of its names, `__` included, or `""` when it has none.
    pub fn name_prefix(&self) -> String {
        match self.prefix.as_deref().unwrap_or(&self.name) {
            "" => String::new(),
            p => format!("{p}{PREFIX_SEPARATOR}"),
        }
    }
}

/// Checks the entries and `[gateway]` for what their types cannot: every error as
/// (dotted key, message).
pub(crate) fn errors(
    gateway: &GatewaySection,
    upstreams: &[UpstreamConfig],
) -> Vec<(String, String)> {
    let mut errors = Vec::new();
    let mut bad = |key: String, msg: &str| errors.push((key, msg.to_string()));
    for (key, value) in [
        ("gateway.max_children", gateway.max_children),
        (
            "gateway.max_children_per_session",
            gateway.max_children_per_session,
        ),
        ("gateway.stderr_lines", gateway.stderr_lines),
        ("gateway.stderr_line_bytes", gateway.stderr_line_bytes),
        ("gateway.max_message_bytes", gateway.max_message_bytes),
    ] {
        if value == 0 {
            bad(key.into(), "must be greater than 0");
        }
    }
    if gateway.restart_backoff > gateway.restart_backoff_max {
        bad(
            "gateway.restart_backoff".into(),
            "must not exceed gateway.restart_backoff_max",
        );
    }
    let mut names = std::collections::HashSet::new();
    for (i, u) in upstreams.iter().enumerate() {
        let at = |key: &str| format!("upstreams[{i}].{key}");
        let name_ok = !u.name.is_empty()
            && u.name.len() <= 64
            && u.name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !name_ok {
            bad(
                at("name"),
                "must be 1 to 64 ASCII letters, digits, '-' or '_'",
            );
        } else if !names.insert(u.name.as_str()) {
            bad(at("name"), "another upstream has this name");
        }
        if let Some(prefix) = &u.prefix {
            let ok = prefix.len() <= 64
                && prefix
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
            if !ok || prefix.contains(PREFIX_SEPARATOR) {
                bad(
                    at("prefix"),
                    "must be at most 64 ASCII letters, digits, '-', '_' or '.', without \"__\"",
                );
            }
        }
        match (&u.command, &u.url) {
            (Some(_), Some(_)) => bad(
                at("url"),
                "an upstream has either `command` or `url`, not both",
            ),
            (None, None) => bad(
                at("name"),
                "an upstream needs `command` (stdio) or `url` (Streamable HTTP)",
            ),
            (Some(argv), None) => {
                if argv.first().is_none_or(|p| p.is_empty()) {
                    bad(at("command"), "must name the program to run");
                }
                if !u.headers.is_empty() {
                    bad(at("headers"), "only an HTTP upstream (`url`) sends headers");
                }
            }
            (None, Some(url)) => {
                match url::Url::parse(url) {
                    Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => {}
                    _ => bad(at("url"), "must be an absolute http:// or https:// URL"),
                }
                for key in ["env", "cwd"] {
                    let set = match key {
                        "env" => !u.env.is_empty() || u.env_clear,
                        _ => u.cwd.is_some(),
                    };
                    if set {
                        bad(at(key), "only a stdio upstream (`command`) takes this key");
                    }
                }
            }
        }
        if u.startup_timeout.is_zero() {
            bad(at("startup_timeout"), "must be greater than 0");
        }
        if u.call_timeout.is_zero() {
            bad(at("call_timeout"), "must be greater than 0");
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(toml_text: &str) -> UpstreamConfig {
        toml::from_str(toml_text).expect("entry")
    }

    #[test]
    fn prefixes_default_to_the_name_and_may_be_empty() {
        let fs = entry("name = 'fs'\ncommand = ['x']");
        assert_eq!(fs.name_prefix(), "fs__");
        let none = entry("name = 'fs'\ncommand = ['x']\nprefix = ''");
        assert_eq!(none.name_prefix(), "");
        let docs = entry("name = 'fs'\ncommand = ['x']\nprefix = 'docs'");
        assert_eq!(docs.name_prefix(), "docs__");
    }

    #[test]
    fn entries_need_one_transport_and_names_of_their_own() {
        let both = entry("name = 'a'\ncommand = ['x']\nurl = 'http://127.0.0.1:1/mcp'");
        let neither = entry("name = 'a'");
        let stdio_headers = entry("name = 'b'\ncommand = ['x']\nheaders = { A = 'b' }");
        let http_env = entry("name = 'c'\nurl = 'ftp://h/'\nenv = { A = 'b' }");
        let clash = entry("name = 'c'\ncommand = ['x']\nprefix = 'a__b'");
        let errors = errors(
            &GatewaySection::default(),
            &[both, neither, stdio_headers, http_env, clash],
        );
        let keys: Vec<&str> = errors.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "upstreams[0].url",
                "upstreams[1].name",
                "upstreams[1].name",
                "upstreams[2].headers",
                "upstreams[3].url",
                "upstreams[3].env",
                "upstreams[4].name",
                "upstreams[4].prefix",
            ],
            "{errors:?}"
        );
    }

    #[test]
    fn filters_allow_then_deny() {
        let filter = NameFilter {
            allow: vec!["a".into(), "b".into()],
            deny: vec!["b".into()],
        };
        assert!(filter.admits("a"));
        assert!(!filter.admits("b"));
        assert!(!filter.admits("c"));
        assert!(NameFilter::default().admits("anything"));
    }
}
