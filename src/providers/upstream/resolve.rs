//! Resolving an `[[upstreams]]` entry: its program found, its `${ENV}` expanded.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::child::ChildSpec;
use super::{Upstream, UpstreamTransport, http};
use crate::config::upstreams::{GatewaySection, UpstreamConfig, UpstreamScope};
use crate::metrics::Metrics;
use crate::providers::ProviderError;
use crate::providers::placeholders::expand_env;

pub(super) fn resolve(
    index: usize,
    entry: &UpstreamConfig,
    gateway: &GatewaySection,
    base_dir: &Path,
    supervisor: Option<PathBuf>,
    metrics: &Arc<Metrics>,
) -> Result<Upstream, Vec<ProviderError>> {
    let key = |k: &str| format!("upstreams[{index}].{k}");
    let mut errors = Vec::new();
    let transport = match &entry.command {
        Some(argv) => {
            let path_var = std::env::var("PATH").ok();
            let program = argv.first().map(String::as_str).unwrap_or_default();
            let program =
                crate::providers::command::find_program(program, base_dir, path_var.as_deref())
                    .map_err(|e| errors.push((key("command"), e)))
                    .unwrap_or_default();
            let mut env = Vec::new();
            for (name, value) in &entry.env {
                match expand_env(value) {
                    Ok(v) => env.push((name.clone(), v)),
                    Err(e) => errors.push((key(&format!("env.{name}")), e)),
                }
            }
            let cwd = match &entry.cwd {
                Some(dir) => base_dir.join(dir),
                None => base_dir.to_path_buf(),
            };
            if !cwd.is_dir() {
                errors.push((key("cwd"), format!("{} is not a directory", cwd.display())));
            }
            UpstreamTransport::Stdio(ChildSpec {
                program,
                args: argv.iter().skip(1).cloned().collect(),
                env,
                env_clear: entry.env_clear,
                cwd,
                supervisor,
                grace: gateway.shutdown_grace,
                stderr_lines: gateway.stderr_lines,
                stderr_line_bytes: gateway.stderr_line_bytes,
                max_message_bytes: gateway.max_message_bytes,
            })
        }
        None => {
            // The configuration checked it; a URL that does not parse is refused here too.
            let url = entry.url.clone().unwrap_or_default();
            let uri = url
                .parse::<::http::Uri>()
                .map_err(|e| errors.push((key("url"), format!("is not a URL: {e}"))))
                .ok();
            let mut headers = reqwest::header::HeaderMap::new();
            for (name, value) in &entry.headers {
                let value = match expand_env(value) {
                    Ok(v) => v,
                    Err(e) => {
                        errors.push((key(&format!("headers.{name}")), e));
                        continue;
                    }
                };
                let parsed = (
                    reqwest::header::HeaderName::from_bytes(name.as_bytes()),
                    reqwest::header::HeaderValue::from_str(&value),
                );
                match parsed {
                    (Ok(name), Ok(mut value)) => {
                        value.set_sensitive(true);
                        headers.insert(name, value);
                    }
                    _ => errors.push((
                        key(&format!("headers.{name}")),
                        "is not a valid HTTP header".into(),
                    )),
                }
            }
            let Some(uri) = uri else {
                return Err(errors);
            };
            UpstreamTransport::Http(Arc::new(http::HttpSpec {
                url,
                uri,
                headers,
                max_message_bytes: gateway.max_message_bytes,
                call_timeout: entry.call_timeout,
                startup_timeout: entry.startup_timeout,
                shared: entry.scope == UpstreamScope::Shared,
                metrics: Arc::clone(metrics),
            }))
        }
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Upstream {
        index,
        name: entry.name.clone(),
        prefix: entry.name_prefix(),
        scope: entry.scope,
        tools: entry.tools.clone(),
        transport,
        startup_timeout: entry.startup_timeout,
        call_timeout: entry.call_timeout,
    })
}
