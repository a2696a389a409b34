//! HTTP tools: `[[tools]] url = "https://api.example.com/items/{id}{?q}"` calls an API.
//!
//! The URL is an RFC 6570 template expanded with `iri-string`, so argument values are
//! percent-encoded by the operator that places them and cannot add path segments or query
//! parameters of their own. `${ENV}` references in the URL and headers are resolved once at
//! load, which keeps secrets out of the TOML file; for the same reason the URL is never
//! repeated in a tool result or a log line, where it could carry such a secret to the model.
//! The whole exchange, body included, is bounded by the tool's `timeout` and the body by
//! `max_response_bytes`.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use iri_string::spec::UriSpec;
use iri_string::template::UriTemplateStr;
use iri_string::template::simple_context::{SimpleContext, Value as TemplateValue};
use reqwest::Method;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use super::placeholders::{argument_text, expand_env};
use super::{ProviderError, ProviderRuntime, input_schema};
use crate::config::{BodyMode, Config, ToolConfig};
use crate::context::RequestContext;
use crate::features::tools::{Tool, ToolError};
use crate::protocol::{CallToolResult, Content};

/// Characters of a non-2xx body quoted in the error result.
const ERROR_EXCERPT: usize = 1000;

#[derive(Debug)]
struct HttpSpec {
    name: String,
    method: Method,
    url: String,
    variables: Vec<String>,
    headers: HeaderMap,
    body: BodyMode,
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
    let (required, optional) = match template_variables(&url) {
        Ok(vars) => vars,
        Err(msg) => {
            errors.push((at("url"), msg));
            (Vec::new(), Vec::new())
        }
    };
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
    let (Some(schema), true) = (schema, errors.is_empty()) else {
        return Err(errors);
    };
    let spec = Arc::new(HttpSpec {
        name: name.clone(),
        method,
        url,
        variables: required.into_iter().chain(optional).collect(),
        headers,
        body,
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

/// The template's variables: (required, optional). Query-style expressions (`{?q}`,
/// `{&q}`) are optional, since leaving them out still makes a sensible URL.
fn template_variables(url: &str) -> Result<(Vec<String>, Vec<String>), String> {
    let template =
        UriTemplateStr::new(url).map_err(|e| format!("is not an RFC 6570 URL template: {e}"))?;
    let mut optional = Vec::new();
    let mut rest = url;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        let expr = &rest[open + 1..open + close];
        if expr.starts_with(['?', '&']) {
            for var in expr[1..].split(',') {
                let name = var.trim_end_matches('*').split(':').next().unwrap_or(var);
                optional.push(name.to_string());
            }
        }
        rest = &rest[open + close + 1..];
    }
    let mut required = Vec::new();
    for var in template.variables() {
        let var = var.as_str().to_string();
        if !optional.contains(&var) && !required.contains(&var) {
            required.push(var);
        }
    }
    Ok((required, optional))
}

async fn call(
    spec: &HttpSpec,
    client: &reqwest::Client,
    _ctx: RequestContext,
    args: Value,
) -> Result<CallToolResult, ToolError> {
    let url = expand_url(spec, &args)?;
    let mut request = client
        .request(spec.method.clone(), url)
        .headers(spec.headers.clone());
    if spec.body == BodyMode::Arguments {
        request = request.json(&args);
    }
    match tokio::time::timeout(spec.timeout, exchange(request, spec.max_bytes)).await {
        Err(_) => {
            tracing::warn!(tool = %spec.name, timeout = ?spec.timeout, "HTTP tool timed out");
            Ok(CallToolResult::error(format!(
                "the HTTP request timed out after {:?} (the tool's timeout)",
                spec.timeout
            )))
        }
        Ok(Err(message)) => {
            tracing::warn!(tool = %spec.name, "HTTP tool failed: {message}");
            Ok(CallToolResult::error(message))
        }
        Ok(Ok((status, content_type, body))) => {
            Ok(response_result(spec, status, &content_type, &body))
        }
    }
}

fn expand_url(spec: &HttpSpec, args: &Value) -> Result<String, ToolError> {
    let mut context = SimpleContext::new();
    for name in &spec.variables {
        let value = match args.get(name) {
            None | Some(Value::Null) => continue,
            Some(Value::Array(items)) => {
                TemplateValue::List(items.iter().filter_map(argument_text).collect())
            }
            Some(Value::Object(map)) => TemplateValue::Assoc(
                map.iter()
                    .filter_map(|(k, v)| argument_text(v).map(|v| (k.clone(), v)))
                    .collect(),
            ),
            Some(other) => TemplateValue::String(argument_text(other).unwrap_or_default()),
        };
        context.insert(name.as_str(), value);
    }
    let template = UriTemplateStr::new(&spec.url)
        .map_err(|e| ToolError::msg(format!("invalid URL template: {e}")))?;
    template
        .expand::<UriSpec, _>(&context)
        .map(|expanded| expanded.to_string())
        .map_err(|e| ToolError::msg(format!("cannot build the URL from the arguments: {e}")))
}

/// Sends the request and reads at most `max_bytes` of the body.
async fn exchange(
    request: reqwest::RequestBuilder,
    max_bytes: usize,
) -> Result<(reqwest::StatusCode, String, Vec<u8>), String> {
    let mut response = request
        .send()
        .await
        .map_err(|e| format!("the HTTP request failed: {}", without_url(&e)))?;
    let status = response.status();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| format!("reading the HTTP response failed: {}", without_url(&e)))?
    {
        if body.len() + chunk.len() > max_bytes {
            if status.is_success() {
                return Err(format!(
                    "the HTTP response is larger than {max_bytes} bytes (max_response_bytes)"
                ));
            }
            body.extend_from_slice(&chunk[..max_bytes - body.len()]);
            break;
        }
        body.extend_from_slice(&chunk);
    }
    Ok((status, content_type, body))
}

/// reqwest's messages include the URL, which may hold a `${ENV}` secret.
fn without_url(e: &reqwest::Error) -> String {
    let mut e = e.to_string();
    if let Some(at) = e.find(" for url (") {
        e.truncate(at);
    }
    e
}

fn response_result(
    spec: &HttpSpec,
    status: reqwest::StatusCode,
    content_type: &str,
    body: &[u8],
) -> CallToolResult {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_variables_are_optional_and_the_rest_required() {
        let (required, optional) =
            template_variables("https://x.test/{+base}/items/{id}{?q,limit}{&page}").unwrap();
        assert_eq!(required, ["base", "id"]);
        assert_eq!(optional, ["q", "limit", "page"]);
        assert!(template_variables("https://x.test/{id").is_err());
    }
}
