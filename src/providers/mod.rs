//! Where tools, resources and prompts come from. Providers build [`Tool`](crate::Tool)s and
//! friends from configuration; the feature layer serves them without knowing their origin.
//!
//! [`build`] turns a validated [`Config`] into a [`FeatureSet`] plus the files to watch for
//! `resources/updated`. Everything that can fail — a missing file, an unset `${ENV}` in a
//! `required` tool, an unknown placeholder, a schema or template that does not compile —
//! fails here, before a server (or a reload) uses any of it, and every failure names its
//! key so [`LoadedConfig`] can point at the file's line. A tool that is not `required` and
//! needs an unset `${ENV}` is left out instead, with a [`ConfigWarning`]: optional
//! integrations (a token for one API) must not stop the rest of a configuration. Entries that
//! are valid but likely not what was meant get a [`ConfigWarning`] too. The binary's startup, `mcp-actor check`
//! and hot reload all go through [`LoadedConfig`], so they accept exactly the same files.

pub mod builtin;
pub mod command;
mod descendants;
mod file_read;
pub mod files;
pub mod http;
mod metadata;
pub(crate) mod placeholders;
mod process;
pub mod prompts;
pub mod upstream;
pub mod watch;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::config::{
    Config, ConfigError, ConfigWarning, ToolConfig, ToolKind, located_errors, read_file,
};
use crate::features::FeatureSet;
use crate::metrics::Metrics;
pub use descendants::{RUN_MARKER_VAR, become_child_subreaper};
use process::ProcessLimits;
pub use watch::{ResourceWatcher, WatchTarget};

/// An error of one provider entry: the dotted key and the message.
pub type ProviderError = (String, String);

/// What providers share for the life of the server, across reloads: the process counts
/// (a reload must not forget processes still running) and one HTTP client (its
/// connection pool). The client follows no redirects: each HTTP tool decides which to
/// follow (`follow_redirects`), so the policy cannot live in the shared client.
#[derive(Clone)]
pub struct ProviderRuntime {
    limits: Arc<ProcessLimits>,
    http: reqwest::Client,
}

impl ProviderRuntime {
    /// A runtime whose command processes are counted in metrics nobody scrapes.
    pub fn new(config: &Config) -> Result<Self, ConfigError> {
        Self::with_metrics(config, Arc::default())
    }

    /// A runtime whose command processes and refusals are counted in `metrics`: the
    /// server's, so its `/metrics` shows them.
    pub fn with_metrics(config: &Config, metrics: Arc<Metrics>) -> Result<Self, ConfigError> {
        let limits = ProcessLimits::new(
            config.command_tools.max_processes,
            config.command_tools.max_processes_per_session,
            metrics,
        );
        let http = reqwest::Client::builder()
            .user_agent(concat!("mcp-actor/", env!("CARGO_PKG_VERSION")))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ConfigError::Read {
                path: "<http client>".into(),
                source: std::io::Error::other(e),
            })?;
        Ok(ProviderRuntime { limits, http })
    }
}

/// What the configuration provides.
#[derive(Clone, Default)]
pub struct Provided {
    pub features: FeatureSet,
    /// Files and directories whose changes become `notifications/resources/updated`.
    pub watch: Vec<WatchTarget>,
    /// Tools left out, each with why (located in the file when built by [`LoadedConfig`]).
    pub warnings: Vec<ConfigWarning>,
}

pub use crate::config::LoadedConfig;

/// Building the providers of a loaded configuration: the half of [`LoadedConfig`] that
/// needs them (reading and parsing it is `config`'s).
impl LoadedConfig {
    /// Reads `path` and builds its providers with a fresh [`ProviderRuntime`], as
    /// [`LoadedConfig::read`] then [`LoadedConfig::build`] do, but reports the errors of both
    /// in one go, in file order: what `mcp-actor check` prints. The providers are built only
    /// when their entries are well formed (one kind each, known builtins, valid and unique
    /// names), since building relies on that; until then the entries' own errors stand in for
    /// the build's. A syntax or type error stops everything at the first, as in
    /// [`Config::parse`]. It accepts exactly the files that `read` then `build` accept.
    pub fn read_and_build(path: &Path) -> Result<(Self, Provided), ConfigError> {
        let (text, origin, base_dir) = read_file(path)?;
        let config = Config::parse_types(&text, &origin)?;
        let mut errors = config.section_errors();
        let entry_errors = config.entry_errors();
        let built = if entry_errors.is_empty() {
            build(&config, &base_dir, &ProviderRuntime::new(&config)?)
        } else {
            Err(entry_errors)
        };
        match built {
            Ok(provided) if errors.is_empty() => {
                let loaded = LoadedConfig {
                    config,
                    text,
                    origin,
                    base_dir,
                };
                let provided = loaded.locate_warnings(provided);
                Ok((loaded, provided))
            }
            Ok(_) => Err(located_errors(&text, &origin, errors)),
            Err(build_errors) => {
                errors.extend(build_errors);
                Err(located_errors(&text, &origin, errors))
            }
        }
    }

    /// Builds every provider, reporting all errors and warnings with their lines.
    pub fn build(&self, runtime: &ProviderRuntime) -> Result<Provided, ConfigError> {
        let provided = build(&self.config, &self.base_dir, runtime)
            .map_err(|errors| located_errors(&self.text, &self.origin, errors))?;
        Ok(self.locate_warnings(provided))
    }

    /// Errors found later (such as an upstream's tool names), located in the file.
    pub fn locate(&self, errors: Vec<ProviderError>) -> ConfigError {
        located_errors(&self.text, &self.origin, errors)
    }

    fn locate_warnings(&self, mut provided: Provided) -> Provided {
        provided.warnings = std::mem::take(&mut provided.warnings)
            .into_iter()
            .map(|w| w.located(&self.text, &self.origin))
            .collect();
        provided
    }
}

/// Builds the tools, resources and prompts of `config`; relative paths resolve against
/// `base_dir`. Every error is collected.
pub fn build(
    config: &Config,
    base_dir: &Path,
    runtime: &ProviderRuntime,
) -> Result<Provided, Vec<ProviderError>> {
    let mut provided = Provided::default();
    let mut errors = Vec::new();
    for (i, entry) in config.tools.iter().enumerate() {
        let key = format!("tools[{i}]");
        if let Some(warning) = missing_optional_env(entry, &key) {
            provided.warnings.push(warning);
            continue;
        }
        let tool = match entry.kind() {
            Ok(ToolKind::Builtin) => builtin::tool(entry, &key),
            Ok(ToolKind::Command) => command::tool(entry, &key, config, base_dir, runtime),
            Ok(ToolKind::Http) => {
                provided.warnings.extend(
                    http::warnings(entry, &key)
                        .into_iter()
                        .map(|(key, message)| ConfigWarning::new(key, message)),
                );
                http::tool(entry, &key, config, runtime)
            }
            Err((field, msg)) => Err(vec![(format!("{key}.{field}"), msg)]),
        };
        match tool.and_then(|tool| metadata::apply(tool, entry, &key)) {
            Ok(tool) => provided.features.tools.push(tool),
            Err(mut e) => errors.append(&mut e),
        }
    }
    for (i, entry) in config.resources.iter().enumerate() {
        let key = format!("resources[{i}]");
        match files::resource(entry, &key, config, base_dir) {
            Ok(built) => {
                provided.features.resources.extend(built.resources);
                provided.features.templates.extend(built.template);
                provided.watch.extend(built.watch);
            }
            Err(mut e) => errors.append(&mut e),
        }
    }
    for (i, entry) in config.prompts.iter().enumerate() {
        let key = format!("prompts[{i}]");
        match prompts::prompt(entry, &key, base_dir) {
            Ok(prompt) => provided.features.prompts.push(prompt),
            Err(mut e) => errors.append(&mut e),
        }
    }
    if errors.is_empty() {
        Ok(provided)
    } else {
        Err(errors)
    }
}

/// Why a tool that is not `required` is left out: the first `${NAME}` it uses that the
/// environment does not set. A `required` tool is built, and its unset variable becomes
/// an error there.
fn missing_optional_env(entry: &ToolConfig, key: &str) -> Option<ConfigWarning> {
    if entry.required {
        return None;
    }
    let (field, var) = entry
        .env_expanded_values()
        .into_iter()
        .find_map(|(field, text)| {
            Some((
                field,
                placeholders::unset_env_vars(text).into_iter().next()?,
            ))
        })?;
    let name = entry.exposed_name().unwrap_or_default();
    Some(ConfigWarning::new(
        format!("{key}.{field}"),
        format!(
            "tool {name:?} is disabled: environment variable {var} is not set (referenced as ${{{var}}}); set it to enable the tool, or add required = true to make this an error"
        ),
    ))
}

/// The input schema of a tool: the configured one, whose properties must cover every
/// placeholder, or one derived from the placeholders (`required` ones must be supplied;
/// all are strings).
pub(crate) fn input_schema(
    configured: Option<&Value>,
    required: &[String],
    optional: &[String],
    key: &str,
    what: &str,
) -> Result<Value, Vec<ProviderError>> {
    let Some(schema) = configured else {
        let properties: serde_json::Map<String, Value> = required
            .iter()
            .chain(optional)
            .map(|name| (name.clone(), json!({ "type": "string" })))
            .collect();
        return Ok(json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        }));
    };
    if schema.get("type") != Some(&json!("object")) {
        return Err(vec![(
            format!("{key}.input_schema"),
            "must be an object schema: { type = \"object\", properties = { ... } }".into(),
        )]);
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    let unknown: Vec<ProviderError> = required
        .iter()
        .chain(optional)
        .filter(|name| !properties.is_some_and(|p| p.contains_key(name.as_str())))
        .map(|name| {
            (
                format!("{key}.input_schema"),
                format!(
                    "{what} uses {{{name}}}, which is not a property of input_schema; add it or fix the placeholder"
                ),
            )
        })
        .collect();
    if unknown.is_empty() {
        Ok(schema.clone())
    } else {
        Err(unknown)
    }
}

/// Resolves a configured path against the configuration file's directory.
pub(crate) fn resolve(base_dir: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() || base_dir == Path::new(".") {
        path.to_path_buf()
    } else {
        base_dir.join(path)
    }
}
