//! The provider entries of the configuration — `[[tools]]`, `[[resources]]`, `[[prompts]]` —
//! and the tables of limits that apply to them.
//!
//! An entry is one flat table whose keys say what kind it is: `builtin`, `command` or `url`
//! for a tool; `uri` with `text`, `blob` or `file`, or `uri_template` with `dir`, for a
//! resource. Flat tables give far better errors than serde's untagged enums ("data did not
//! match any variant" names no key), so the kind is decided here, in [`ToolConfig::kind`]
//! and [`ResourceConfig::kind`], and a key that belongs to another kind is an error naming
//! that key. What needs the file system or the environment (files that must exist, `${ENV}`
//! values, schemas and templates that must compile) is checked when the providers are
//! built, in [`crate::providers`], with the same `file:line` errors.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::protocol::{Role, TaskSupport};

mod validate;
pub(crate) use validate::validate;

/// Why an entry is invalid: the dotted key (`tools[2].cwd`) and what is wrong.
pub(crate) type EntryError = (String, String);

/// `[command_tools]`: limits of tools that run a local command.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CommandToolsSection {
    /// Command-tool processes running at once, server-wide; a call beyond it is refused
    /// with an `isError` result.
    pub max_processes: usize,
    /// Command-tool processes running at once in one session.
    pub max_processes_per_session: usize,
    /// Default of each command tool's `timeout`.
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
    /// Default of each command tool's `max_output_bytes`.
    pub max_output_bytes: usize,
}

impl Default for CommandToolsSection {
    fn default() -> Self {
        CommandToolsSection {
            max_processes: 32,
            max_processes_per_session: 4,
            timeout: Duration::from_secs(30),
            max_output_bytes: 1024 * 1024,
        }
    }
}

/// `[http_tools]`: defaults of tools that call an HTTP API.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpToolsSection {
    /// Default of each HTTP tool's `timeout`.
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
    /// Default of each HTTP tool's `max_response_bytes`.
    pub max_response_bytes: usize,
}

impl Default for HttpToolsSection {
    fn default() -> Self {
        HttpToolsSection {
            timeout: Duration::from_secs(30),
            max_response_bytes: 1024 * 1024,
        }
    }
}

/// `[file_resources]`: resources served from files and directories.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FileResourcesSection {
    /// Default of each file resource's `max_bytes`: larger files are refused.
    pub max_bytes: usize,
    /// Files of one `dir` listed in `resources/list` at most (the rest stay readable).
    pub max_listed: usize,
    /// Watch files so subscribers get `notifications/resources/updated`.
    pub watch: bool,
    /// How long one `resources/read` of a file may take (resolving the path, opening, reading)
    /// before the caller gets an error, so a slow or stuck file system cannot hold a request.
    #[serde(with = "humantime_serde")]
    pub read_timeout: Duration,
}

impl Default for FileResourcesSection {
    fn default() -> Self {
        FileResourcesSection {
            max_bytes: 10 * 1024 * 1024,
            max_listed: 1000,
            watch: true,
            read_timeout: Duration::from_secs(10),
        }
    }
}

/// `[reload]`: hot reload of the configuration file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReloadSection {
    /// Reload when the configuration file changes (SIGHUP always reloads).
    pub watch: bool,
    /// How long the file must be quiet before a reload, so an editor's several writes
    /// make one reload.
    #[serde(with = "humantime_serde")]
    pub debounce: Duration,
}

impl Default for ReloadSection {
    fn default() -> Self {
        ReloadSection {
            watch: false,
            debounce: Duration::from_millis(250),
        }
    }
}

/// Tool annotations (spec `server/tools.mdx`); snake_case or the spec's camelCase keys.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolAnnotations {
    pub title: Option<String>,
    #[serde(alias = "readOnlyHint")]
    pub read_only_hint: Option<bool>,
    #[serde(alias = "destructiveHint")]
    pub destructive_hint: Option<bool>,
    #[serde(alias = "idempotentHint")]
    pub idempotent_hint: Option<bool>,
    #[serde(alias = "openWorldHint")]
    pub open_world_hint: Option<bool>,
}

/// An icon of a tool or prompt (2025-11-25 `Icon`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IconConfig {
    pub src: String,
    #[serde(alias = "mimeType")]
    pub mime_type: Option<String>,
    #[serde(default)]
    pub sizes: Vec<String>,
    /// `light` or `dark`.
    pub theme: Option<String>,
}

/// What an HTTP tool sends as its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BodyMode {
    /// The call's arguments as a JSON object.
    Arguments,
    /// No body.
    None,
}

/// Which redirects an HTTP tool follows (at most 10 in a row).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FollowRedirects {
    /// Only to the tool's own origin (scheme, host and port); a redirect elsewhere fails
    /// the call.
    #[default]
    SameOrigin,
    /// None: a 3xx response is the call's (error) result.
    None,
    /// Any http(s) URL. The configured headers are not sent once a redirect has left the
    /// tool's origin.
    Any,
}

/// One `[[tools]]` entry: a builtin, a command or an HTTP call.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolConfig {
    /// The name of a builtin tool: `echo`, `sleep`, `ask` or `sample`.
    pub builtin: Option<String>,
    /// argv of a command tool, with `{argument}` placeholders.
    pub command: Option<Vec<String>>,
    /// RFC 6570 URL template of an HTTP tool.
    pub url: Option<String>,

    /// Exposed name; required except for builtins (default: the builtin's name).
    pub name: Option<String>,
    pub title: Option<String>,
    pub description: Option<String>,
    pub annotations: Option<ToolAnnotations>,
    #[serde(default)]
    pub icons: Vec<IconConfig>,
    /// JSON Schema of the arguments; derived from the placeholders when absent.
    pub input_schema: Option<Value>,
    pub output_schema: Option<Value>,
    #[serde(default, with = "humantime_serde")]
    pub timeout: Option<Duration>,
    /// An unset `${NAME}` in the entry is an error. Without it the tool is left out, with a
    /// warning, so a configuration starts without every optional secret.
    #[serde(default)]
    pub required: bool,

    // Command tools.
    pub cwd: Option<PathBuf>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub env_clear: bool,
    /// The argument whose value is written to the command's stdin.
    pub stdin: Option<String>,
    pub max_output_bytes: Option<usize>,
    #[serde(default)]
    pub allow_flags: bool,
    #[serde(default)]
    pub progress: bool,

    // HTTP tools.
    pub method: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    pub body: Option<BodyMode>,
    pub max_response_bytes: Option<usize>,
    /// Which redirects the tool follows; `same-origin` when unset.
    pub follow_redirects: Option<FollowRedirects>,

    /// Whether a 2026-07-28 client that declared the tasks extension gets the call as a
    /// task (`execution.taskSupport`); `forbidden` when unset.
    pub task_support: Option<TaskSupport>,
}

/// What a `[[tools]]` entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    Builtin,
    Command,
    Http,
}

impl ToolConfig {
    /// The entry's kind, or the key to blame when it has none, several, or keys of another.
    pub fn kind(&self) -> Result<ToolKind, (&'static str, String)> {
        let kinds: Vec<(&str, ToolKind)> = [
            (self.builtin.is_some(), "builtin", ToolKind::Builtin),
            (self.command.is_some(), "command", ToolKind::Command),
            (self.url.is_some(), "url", ToolKind::Http),
        ]
        .into_iter()
        .filter(|(set, _, _)| *set)
        .map(|(_, key, kind)| (key, kind))
        .collect();
        let kind = match kinds.as_slice() {
            [(_, kind)] => *kind,
            [] => {
                return Err((
                    "name",
                    "needs one of `builtin`, `command` (argv of a local program) or `url` (an HTTP API)"
                        .into(),
                ));
            }
            [_, (key, _), ..] => {
                return Err((key, "set only one of `builtin`, `command` and `url`".into()));
            }
        };
        let command_keys = [
            ("cwd", self.cwd.is_some()),
            ("env", !self.env.is_empty()),
            ("env_clear", self.env_clear),
            ("stdin", self.stdin.is_some()),
            ("max_output_bytes", self.max_output_bytes.is_some()),
            ("allow_flags", self.allow_flags),
            ("progress", self.progress),
        ];
        let http_keys = [
            ("method", self.method.is_some()),
            ("headers", !self.headers.is_empty()),
            ("body", self.body.is_some()),
            ("max_response_bytes", self.max_response_bytes.is_some()),
            ("follow_redirects", self.follow_redirects.is_some()),
        ];
        let shared_keys = [
            ("timeout", self.timeout.is_some()),
            ("input_schema", self.input_schema.is_some()),
            ("required", self.required),
        ];
        let foreign: Vec<(&str, bool)> = match kind {
            ToolKind::Builtin => command_keys
                .into_iter()
                .chain(http_keys)
                .chain(shared_keys)
                .collect(),
            ToolKind::Command => http_keys.into_iter().collect(),
            ToolKind::Http => command_keys.into_iter().collect(),
        };
        if let Some((key, _)) = foreign.into_iter().find(|(_, set)| *set) {
            let what = match kind {
                ToolKind::Builtin => "a builtin tool",
                ToolKind::Command => "a command tool",
                ToolKind::Http => "an HTTP tool",
            };
            return Err((key, format!("does not apply to {what}")));
        }
        Ok(kind)
    }

    /// The values in which `${NAME}` is replaced by an environment variable, with their
    /// keys relative to the entry: a command tool's `env`, an HTTP tool's `url` and
    /// `headers`.
    pub fn env_expanded_values(&self) -> Vec<(String, &str)> {
        let env = self
            .env
            .iter()
            .map(|(var, value)| (format!("env.{var}"), value.as_str()));
        let url = self.url.iter().map(|url| ("url".to_string(), url.as_str()));
        let headers = self
            .headers
            .iter()
            .map(|(name, value)| (format!("headers.{name}"), value.as_str()));
        env.chain(url).chain(headers).collect()
    }

    /// The exposed name (builtins default to their own name).
    pub fn exposed_name(&self) -> Option<&str> {
        self.name.as_deref().or(self.builtin.as_deref())
    }
}

/// One `[[resources]]` entry.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceConfig {
    /// URI of a single resource.
    pub uri: Option<String>,
    /// URI template of a directory's files, with one variable (`{+path}`) for the path.
    pub uri_template: Option<String>,
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    /// Overrides the MIME type guessed from the file extension.
    pub mime_type: Option<String>,
    /// Inline text content.
    pub text: Option<String>,
    /// Inline binary content, base64.
    pub blob: Option<String>,
    /// A file, read at each `resources/read`.
    pub file: Option<PathBuf>,
    /// The root directory a `uri_template` serves.
    pub dir: Option<PathBuf>,
    pub max_bytes: Option<usize>,
    /// List the directory's files in `resources/list`.
    #[serde(default = "yes")]
    pub list: bool,
    /// For a `dir`: serve and list hidden files (a path segment starting with `.`, such as
    /// `.env` or `.git/config`). Off by default, because a folder's hidden files are far more
    /// often secrets or tooling state than documents meant for a client.
    #[serde(default)]
    pub hidden: bool,
}

fn yes() -> bool {
    true
}

/// What a `[[resources]]` entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceKind {
    Text,
    Blob,
    File,
    Dir,
}

impl ResourceConfig {
    pub fn kind(&self) -> Result<ResourceKind, (&'static str, String)> {
        let sources: Vec<(&str, ResourceKind)> = [
            (self.text.is_some(), "text", ResourceKind::Text),
            (self.blob.is_some(), "blob", ResourceKind::Blob),
            (self.file.is_some(), "file", ResourceKind::File),
            (self.dir.is_some(), "dir", ResourceKind::Dir),
        ]
        .into_iter()
        .filter(|(set, _, _)| *set)
        .map(|(_, key, kind)| (key, kind))
        .collect();
        let kind = match sources.as_slice() {
            [(_, kind)] => *kind,
            [] => {
                return Err((
                    "name",
                    "needs one of `text`, `blob` (base64), `file` or `dir`".into(),
                ));
            }
            [_, (key, _), ..] => {
                return Err((
                    key,
                    "set only one of `text`, `blob`, `file` and `dir`".into(),
                ));
            }
        };
        match (kind, &self.uri, &self.uri_template) {
            (ResourceKind::Dir, _, None) => Err((
                "dir",
                "needs `uri_template`, for example \"file:///docs/{+path}\"".into(),
            )),
            (ResourceKind::Dir, Some(_), _) => Err((
                "uri",
                "a `dir` is served through `uri_template`, not `uri`".into(),
            )),
            (ResourceKind::Dir, None, Some(_)) => Ok(kind),
            (_, _, Some(_)) => Err((
                "uri_template",
                "only a `dir` is served through a template; use `uri`".into(),
            )),
            (_, None, None) => Err(("name", "needs `uri`".into())),
            (_, Some(_), None) if self.hidden => Err((
                "hidden",
                "applies only to a `dir`; a `file` is served whatever its name".into(),
            )),
            (_, Some(_), None) => Ok(kind),
        }
    }
}

/// One declared argument of a `[[prompts]]` entry.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptArgumentConfig {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    #[serde(default)]
    pub required: bool,
    /// Values offered by `completion/complete`, filtered by what the user typed.
    #[serde(default)]
    pub completions: Vec<String>,
}

/// One message of a `[[prompts]]` entry.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptMessageConfig {
    pub role: Role,
    /// A minijinja template over the prompt's arguments.
    pub template: String,
}

/// One `[[prompts]]` entry.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptConfig {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    #[serde(default)]
    pub arguments: Vec<PromptArgumentConfig>,
    #[serde(default)]
    pub icons: Vec<IconConfig>,
    /// One user message, a minijinja template.
    pub template: Option<String>,
    /// One user message, from a template file.
    pub file: Option<PathBuf>,
    /// Several messages.
    #[serde(default)]
    pub messages: Vec<PromptMessageConfig>,
}
