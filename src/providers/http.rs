//! HTTP tools: `[[tools]] url = "https://api.example.com/items/{id}{?q}"` calls an API.
//!
//! The URL is an RFC 6570 template expanded with `iri-string`, each value percent-encoded as
//! its operator says. What that guarantees for every call, checked in `target` on the URL
//! that is actually sent (a call that breaks a rule is refused with an `isError` result and
//! never reaches the network):
//!
//! - the scheme, host, port and user info are those the template names: no value, not even
//!   of a reserved expression such as `{+path}`, can change them (a `{region}` in the host
//!   varies it only within the encoded label the template gives it);
//! - no path segment is `.` or `..`, in any spelling the client would resolve (`%2e%2e`,
//!   `.%2E`), so a value cannot remove the segments before it: a simple `{var}` fills
//!   exactly its own segment, and `{/var}` and `{+var}` add segments only after the
//!   template's literal prefix;
//! - the value of a simple expression (`{var}`, `{/var}`, `{?var}`, ...) cannot contain a
//!   `/`, `?`, `&`, `#` or `%` that the server would read as such: they are percent-encoded.
//!   The value of a reserved one (`{+var}`, `{#var}`) can, which is what it is for.
//!
//! `mcp-actor check` warns about a `{+var}` placed before the path's first `/`
//! (`warnings`), where only the first rule keeps its value off the host.
//!
//! Redirects are followed only as the tool's `follow_redirects` allows, and configured
//! headers never go to another origin (`exchange`). `${ENV}` references in the URL and
//! headers are resolved once at load, which keeps secrets out of the TOML file; for the same
//! reason the URL is never repeated in a tool result or a log line, where it could carry such
//! a secret to the model. The whole exchange, redirects and body included, is bounded by the
//! tool's `timeout` and the body by `max_response_bytes`.

mod exchange;
mod target;

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use reqwest::Method;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use super::placeholders::expand_env;
use super::{ProviderError, ProviderRuntime, input_schema};
use crate::config::{BodyMode, Config, FollowRedirects, ToolConfig};
use crate::context::RequestContext;
use crate::features::tools::{Tool, ToolError};
use crate::protocol::{CallToolResult, Content};

/// Characters of a non-2xx body quoted in the error result.
const ERROR_EXCERPT: usize = 1000;

#[derive(Debug)]
struct HttpSpec {
    name: String,
    method: Method,
    url: target::UrlTemplate,
    headers: HeaderMap,
    body: BodyMode,
    follow_redirects: FollowRedirects,
    timeout: Duration,
    max_bytes: usize,
}

/// Builds the tool of a `url = ...` entry.
pub(crate) fn tool(
    entry: &ToolConfig,
    key: &str,
    config: &Config,
    runtime: &ProviderRuntime,
) -> Result<Tool, Vec<ProviderError>> {
    let at = |field: &str| format!("{key}.{field}");
    let mut errors = Vec::new();
    let name = entry.name.clone().unwrap_or_default();
    let method_text = entry
        .method
        .as_deref()
        .unwrap_or("GET")
        .to_ascii_uppercase();
    let method = Method::from_str(&method_text).unwrap_or_else(|_| {
        errors.push((
            at("method"),
            format!("{method_text:?} is not an HTTP method"),
        ));
        Method::GET
    });
    let raw_url = entry.url.clone().unwrap_or_default();
    let url = expand_env(&raw_url).unwrap_or_else(|msg| {
        errors.push((at("url"), msg));
        String::new()
    });
    let url = target::UrlTemplate::new(url)
        .map_err(|msg| errors.push((at("url"), msg)))
        .ok();
    let (required, optional) = url
        .as_ref()
        .map(|url| (url.required().to_vec(), url.optional().to_vec()))
        .unwrap_or_default();
    if !(raw_url.starts_with("http://") || raw_url.starts_with("https://")) {
        errors.push((at("url"), "must start with http:// or https://".into()));
    }
    let mut headers = HeaderMap::new();
    for (header, value) in &entry.headers {
        let hkey = format!("{key}.headers.{header}");
        let value = match expand_env(value) {
            Ok(v) => v,
            Err(msg) => {
                errors.push((hkey, msg));
                continue;
            }
        };
        match (HeaderName::from_str(header), HeaderValue::from_str(&value)) {
            (Ok(n), Ok(mut v)) => {
                v.set_sensitive(true);
                headers.insert(n, v);
            }
            (Err(_), _) => errors.push((hkey, "is not a valid header name".into())),
            (_, Err(_)) => errors.push((hkey, "is not a valid header value".into())),
        }
    }
    let body = entry.body.unwrap_or(
        if matches!(method, Method::POST | Method::PUT | Method::PATCH) {
            BodyMode::Arguments
        } else {
            BodyMode::None
        },
    );
    // With a JSON body, arguments beyond the URL's variables are the point of the call, so
    // a derived schema would be wrong: such tools need an input_schema.
    if body == BodyMode::Arguments
        && entry.input_schema.is_none()
        && required.is_empty()
        && optional.is_empty()
    {
        errors.push((
            at("input_schema"),
            "a tool that sends its arguments as a JSON body needs an input_schema describing them"
                .into(),
        ));
    }
    let schema = match input_schema(
        entry.input_schema.as_ref(),
        &required,
        &optional,
        key,
        "url",
    ) {
        Ok(s) => Some(s),
        Err(mut e) => {
            errors.append(&mut e);
            None
        }
    };
    let (Some(schema), Some(url), true) = (schema, url, errors.is_empty()) else {
        return Err(errors);
    };
    let spec = Arc::new(HttpSpec {
        name: name.clone(),
        method,
        url,
        headers,
        body,
        follow_redirects: entry.follow_redirects.unwrap_or_default(),
        timeout: entry.timeout.unwrap_or(config.http_tools.timeout),
        max_bytes: entry
            .max_response_bytes
            .unwrap_or(config.http_tools.max_response_bytes),
    });
    let description = entry
        .description
        .clone()
        .unwrap_or_else(|| format!("Calls {method_text} {raw_url}"));
    let client = runtime.http.clone();
    Tool::new(name, description, schema, move |ctx, args| {
        let spec = Arc::clone(&spec);
        let client = client.clone();
        Box::pin(async move { call(&spec, &client, ctx, args).await })
    })
    .map_err(|e| vec![(at("input_schema"), e.to_string())])
}

/// Warnings about an entry that is valid but probably not what was meant: a `{+var}`
/// where its value could reach the host (`mcp-actor check` prints them, startup logs them).
pub(crate) fn warnings(entry: &ToolConfig, key: &str) -> Vec<ProviderError> {
    let url = entry.url.as_deref().unwrap_or_default();
    target::authority_warnings(url)
        .into_iter()
        .map(|msg| (format!("{key}.url"), msg))
        .collect()
}

async fn call(
    spec: &HttpSpec,
    client: &reqwest::Client,
    _ctx: RequestContext,
    args: Value,
) -> Result<CallToolResult, ToolError> {
    let url = match spec.url.expand(&args) {
        Ok(url) => url,
        Err(refusal) => {
            tracing::warn!(tool = %spec.name, "HTTP tool call refused: {refusal}");
            return Ok(CallToolResult::error(refusal.to_string()));
        }
    };
    let request = exchange::Request {
        client,
        method: spec.method.clone(),
        url,
        headers: &spec.headers,
        body: (spec.body == BodyMode::Arguments).then_some(&args),
        follow: spec.follow_redirects,
        max_bytes: spec.max_bytes,
    };
    match tokio::time::timeout(spec.timeout, exchange::send(request)).await {
        Err(_) => {
            tracing::warn!(tool = %spec.name, timeout = ?spec.timeout, "HTTP tool timed out");
            Ok(CallToolResult::error(format!(
                "the HTTP request timed out after {:?} (the tool's timeout)",
                spec.timeout
            )))
        }
        Ok(Err(failure)) => {
            tracing::warn!(tool = %spec.name, "HTTP tool failed: {failure}");
            Ok(CallToolResult::error(failure.to_string()))
        }
        Ok(Ok(response)) => Ok(response_result(spec, &response)),
    }
}

fn response_result(spec: &HttpSpec, response: &exchange::Response) -> CallToolResult {
    let (status, content_type, body) = (response.status, &response.content_type, &response.body);
    let text = String::from_utf8_lossy(body).into_owned();
    if !status.is_success() {
        tracing::info!(tool = %spec.name, %status, "HTTP tool got a non-2xx status");
        let excerpt: String = text.chars().take(ERROR_EXCERPT).collect();
        return CallToolResult::error(format!("HTTP {status}\n{excerpt}"));
    }
    let is_json = content_type.starts_with("application/json")
        || content_type
            .split(';')
            .next()
            .is_some_and(|t| t.trim().ends_with("+json"));
    match serde_json::from_slice::<Value>(body) {
        Ok(value @ Value::Object(_)) if is_json => CallToolResult {
            content: vec![Content::text(text)],
            structured_content: Some(value),
            is_error: None,
        },
        _ => CallToolResult::text(text),
    }
}
