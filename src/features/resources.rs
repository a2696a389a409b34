//! Resources and resource templates (spec `server/resources.mdx`).
//!
//! A concrete resource answers `resources/read` for its exact URI. A template answers for
//! every URI that matches its RFC 6570 `uriTemplate`; the variables it captured are passed to
//! the handler. Matching is the reverse of expansion, which template crates do not offer, so
//! [`UriTemplate`] implements it for the expression forms MCP servers use: `{var}` (one
//! path segment, percent-decoded) and `{+var}` / `{/var*}`-free reserved expansion (the rest,
//! possibly with slashes).

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use crate::context::RequestContext;
use crate::jsonrpc::{RpcError, codes};
use crate::protocol::{Arguments, ResourceContents};

/// Why a resource could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ResourceError {
    #[error("resource not found: {0}")]
    NotFound(String),
    #[error("invalid resource URI: {0}")]
    InvalidUri(String),
    #[error("{0}")]
    Failed(String),
}

impl From<ResourceError> for RpcError {
    fn from(e: ResourceError) -> Self {
        match &e {
            ResourceError::NotFound(uri) => RpcError::new(codes::RESOURCE_NOT_FOUND, e.to_string())
                .with_data(json!({ "uri": uri })),
            ResourceError::InvalidUri(_) => RpcError::invalid_params(e.to_string()),
            ResourceError::Failed(_) => RpcError::internal(e.to_string()),
        }
    }
}

/// The future a resource handler returns.
pub type ResourceFuture = BoxFuture<'static, Result<Vec<ResourceContents>, ResourceError>>;

type ResourceHandler =
    Arc<dyn Fn(RequestContext, String, Arguments) -> ResourceFuture + Send + Sync>;

/// Suggests values for an argument: `(argument name, partial value, other arguments)`.
pub type Completer = Arc<dyn Fn(&str, &str, &Arguments) -> Vec<String> + Send + Sync>;

/// A resource with a fixed URI.
#[derive(Clone)]
pub struct Resource {
    pub(crate) uri: String,
    pub(crate) descriptor: Value,
    pub(crate) handler: ResourceHandler,
}

impl Resource {
    /// `handler` receives the context and the URI.
    pub fn new<F, Fut>(
        uri: impl Into<String>,
        name: impl Into<String>,
        mime_type: Option<&str>,
        handler: F,
    ) -> Self
    where
        F: Fn(RequestContext, String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, ResourceError>> + Send + 'static,
    {
        let uri = uri.into();
        let mut descriptor = json!({ "uri": uri, "name": name.into() });
        if let Some(mime) = mime_type {
            descriptor["mimeType"] = json!(mime);
        }
        let handler = Arc::new(handler);
        Resource {
            uri,
            descriptor,
            handler: Arc::new(move |ctx, uri, _| Box::pin(handler(ctx, uri))),
        }
    }

    /// Sets an optional descriptor field: `title`, `description`, `size`, `annotations`, `icons`.
    pub fn with(mut self, field: &str, value: Value) -> Self {
        self.descriptor[field] = value;
        self
    }
}

/// A family of resources described by a URI template.
#[derive(Clone)]
pub struct ResourceTemplate {
    pub(crate) template: UriTemplate,
    pub(crate) descriptor: Value,
    pub(crate) handler: ResourceHandler,
    pub(crate) completer: Option<Completer>,
}

impl ResourceTemplate {
    /// `handler` receives the context, the URI and the template variables it matched.
    pub fn new<F, Fut>(
        uri_template: &str,
        name: impl Into<String>,
        mime_type: Option<&str>,
        handler: F,
    ) -> Result<Self, ResourceError>
    where
        F: Fn(RequestContext, String, Arguments) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, ResourceError>> + Send + 'static,
    {
        let template = UriTemplate::parse(uri_template)?;
        let mut descriptor = json!({ "uriTemplate": uri_template, "name": name.into() });
        if let Some(mime) = mime_type {
            descriptor["mimeType"] = json!(mime);
        }
        let handler = Arc::new(handler);
        Ok(ResourceTemplate {
            template,
            descriptor,
            handler: Arc::new(move |ctx, uri, args| Box::pin(handler(ctx, uri, args))),
            completer: None,
        })
    }

    descriptor_and_completer!("`title`, `description`, `annotations`, `icons`");
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Literal(String),
    /// `{name}`: one segment, stops at `/`, `?` and `#`.
    Simple(String),
    /// `{+name}`: reserved expansion, may span segments.
    Reserved(String),
}

/// A parsed URI template that can match URIs.
#[derive(Debug, Clone, PartialEq)]
pub struct UriTemplate {
    parts: Vec<Part>,
}

impl UriTemplate {
    pub fn parse(template: &str) -> Result<Self, ResourceError> {
        let bad = |why: &str| ResourceError::InvalidUri(format!("template {template:?}: {why}"));
        let mut parts = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_string()));
            }
            let close = rest[open..].find('}').ok_or_else(|| bad("unclosed '{'"))? + open;
            let expr = &rest[open + 1..close];
            let part = match expr.strip_prefix('+') {
                Some(name) => Part::Reserved(name.to_string()),
                None => Part::Simple(expr.to_string()),
            };
            let name = match &part {
                Part::Simple(n) | Part::Reserved(n) => n,
                Part::Literal(_) => unreachable!("only variables are built here"),
            };
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(bad("only {name} and {+name} expressions are supported"));
            }
            if matches!(parts.last(), Some(Part::Simple(_) | Part::Reserved(_))) {
                return Err(bad("two variables must be separated by literal text"));
            }
            parts.push(part);
            rest = &rest[close + 1..];
        }
        if rest.contains('}') {
            return Err(bad("unmatched '}'"));
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_string()));
        }
        Ok(UriTemplate { parts })
    }

    /// The literal text every URI the template matches starts with.
    pub fn literal_prefix(&self) -> &str {
        match self.parts.first() {
            Some(Part::Literal(text)) => text,
            _ => "",
        }
    }

    /// The variables if `uri` matches, percent-decoded.
    pub fn matches(&self, uri: &str) -> Option<Arguments> {
        let mut vars = Arguments::new();
        let mut rest = uri;
        for (i, part) in self.parts.iter().enumerate() {
            match part {
                Part::Literal(lit) => rest = rest.strip_prefix(lit.as_str())?,
                Part::Simple(name) | Part::Reserved(name) => {
                    let end = match self.parts.get(i + 1) {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let value = &rest[..end];
                    let stops: &[char] = if matches!(part, Part::Simple(_)) {
                        &['/', '?', '#']
                    } else {
                        &['?', '#']
                    };
                    if value.is_empty() || value.contains(stops) {
                        return None;
                    }
                    vars.insert(name.clone(), percent_decode(value)?);
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(vars)
    }
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_variables_match_one_segment() {
        let t = UriTemplate::parse("test://template/{id}/data").unwrap();
        assert_eq!(t.matches("test://template/123/data").unwrap()["id"], "123");
        assert!(t.matches("test://template/1/2/data").is_none());
        assert!(t.matches("test://template//data").is_none());
        assert!(t.matches("test://template/123/datax").is_none());
    }

    #[test]
    fn reserved_variables_span_segments_and_decode() {
        let t = UriTemplate::parse("file:///docs/{+path}").unwrap();
        assert_eq!(
            t.matches("file:///docs/a/b%20c.md").unwrap()["path"],
            "a/b c.md"
        );
    }

    #[test]
    fn malformed_templates_are_refused() {
        assert!(UriTemplate::parse("x://{a").is_err());
        assert!(UriTemplate::parse("x://{a}{b}").is_err());
        assert!(UriTemplate::parse("x://{?q}").is_err());
    }
}
