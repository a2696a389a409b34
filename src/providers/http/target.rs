//! Where an HTTP tool's request goes: its RFC 6570 URL template, expanded per call, and the
//! checks that keep every argument inside the part of the URL the template gave it.
//!
//! Expansion alone does not bound a value. `.` and `..` are unreserved characters, so
//! `{owner}` = `..` expands to a `..` path segment, which the HTTP client (a WHATWG URL
//! parser) resolves, together with `%2e%2e` and `.%2e`, by removing the segment before it:
//! `/repos/{owner}/{repo}/issues` became `/issues`, with the tool's credentials. A reserved
//! expansion (`{+x}`) may hold `@`, `:` and `/`, so in `http://host{+x}` it can name user info,
//! another port or another host. So each call's URL is checked after expansion, on the very
//! string the client parses, and the parsed [`Url`] is what gets sent:
//!
//! - no path segment is `.` or `..` in any spelling the parser would resolve, and the parsed
//!   path has exactly the segments of the expanded text;
//! - the scheme, user info, host and port equal those of the *reference* URL: the template
//!   without its reserved expressions, expanded with the same arguments. Simple expressions
//!   stay in it because their values are percent-encoded and cannot add `@`, `:` or `/`; a
//!   template whose host is itself a `{region}` variable keeps working.

use iri_string::spec::UriSpec;
use iri_string::template::UriTemplateStr;
use iri_string::template::simple_context::{SimpleContext, Value as TemplateValue};
use reqwest::Url;
use serde_json::Value;

use crate::providers::placeholders::argument_text;

/// Why a call's arguments cannot make a URL this tool may request.
#[derive(Debug, thiserror::Error)]
pub(super) enum TargetError {
    #[error("cannot build the URL from the arguments: {0}")]
    Expand(String),
    #[error("the URL built from the arguments is not a valid URL ({0}); check the argument values")]
    Parse(String),
    #[error(
        "the arguments would make {segment:?} a path segment of the URL, and HTTP clients resolve \
         such a segment by removing the one before it, so the request would leave the path this \
         tool calls; use values that are not \".\" or \"..\" (nor %2e forms of them) where they \
         fill a whole path segment"
    )]
    DotSegment { segment: String },
    #[error(
        "the value of {variables} would change the scheme, host, port or user info of the URL \
         (a value starting with '@', ':' or '.' can do that); this tool only calls the host its \
         configuration names, so pass a value that stays in the path"
    )]
    Authority { variables: String },
}

/// The URL template of one tool, checked when the configuration is loaded.
#[derive(Debug)]
pub(super) struct UrlTemplate {
    /// The template, `${ENV}` already resolved.
    template: String,
    /// The template without its reserved expressions (`{+x}`, `{#x}`).
    reference: String,
    /// Variables a call must supply.
    required: Vec<String>,
    /// Variables of query expressions (`{?q}`, `{&q}`): leaving them out still makes a
    /// sensible URL.
    optional: Vec<String>,
    /// The reserved expressions' variables, written as `{+x}`, for error messages.
    reserved: Vec<String>,
}

impl UrlTemplate {
    /// Compiles `template` (`${ENV}` already resolved).
    pub fn new(template: String) -> Result<UrlTemplate, String> {
        let parsed = UriTemplateStr::new(&template)
            .map_err(|e| format!("is not an RFC 6570 URL template: {e}"))?;
        let mut reference = String::with_capacity(template.len());
        let mut reserved = Vec::new();
        let mut optional = Vec::new();
        for piece in pieces(&template) {
            match piece {
                Piece::Expression(expr) if expr.starts_with(['+', '#']) => {
                    let op = if expr.starts_with('#') { '#' } else { '+' };
                    reserved.extend(expression_variables(expr).map(|v| format!("{{{op}{v}}}")));
                }
                Piece::Expression(expr) => {
                    if expr.starts_with(['?', '&']) {
                        optional.extend(expression_variables(expr).map(str::to_string));
                    }
                    reference.push('{');
                    reference.push_str(expr);
                    reference.push('}');
                }
                Piece::Literal(text) => reference.push_str(text),
            }
        }
        let mut required: Vec<String> = Vec::new();
        for var in parsed.variables() {
            let var = var.as_str();
            if !optional.iter().any(|o| o == var) && !required.iter().any(|r| r == var) {
                required.push(var.to_string());
            }
        }
        Ok(UrlTemplate {
            template,
            reference,
            required,
            optional,
            reserved,
        })
    }

    pub fn required(&self) -> &[String] {
        &self.required
    }

    pub fn optional(&self) -> &[String] {
        &self.optional
    }

    /// The URL of one call, or why its arguments cannot make one this tool may request.
    pub fn expand(&self, args: &Value) -> Result<Url, TargetError> {
        let context = self.context(args);
        let expanded = expand(&self.template, &context)?;
        let url = Url::parse(&expanded).map_err(|e| TargetError::Parse(e.to_string()))?;
        if !self.reserved.is_empty() {
            let reference = expand(&self.reference, &context)?;
            let reference =
                Url::parse(&reference).map_err(|e| TargetError::Parse(e.to_string()))?;
            if authority(&url) != authority(&reference) {
                return Err(TargetError::Authority {
                    variables: self.reserved.join(", "),
                });
            }
        }
        check_path(&expanded, &url)?;
        Ok(url)
    }

    fn context(&self, args: &Value) -> SimpleContext {
        let mut context = SimpleContext::new();
        for name in self.required.iter().chain(&self.optional) {
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
        context
    }
}

/// Messages about `{+x}` expressions placed before the end of the URL's authority (the
/// first literal `/`, `?` or `#` after `scheme://`), where a value can reach the host.
pub(super) fn authority_warnings(template: &str) -> Vec<String> {
    let Some(scheme_end) = template.find("://") else {
        return Vec::new();
    };
    let mut warnings = Vec::new();
    for piece in pieces(&template[scheme_end + 3..]) {
        match piece {
            Piece::Literal(text) if text.contains(['/', '?', '#']) => break,
            Piece::Literal(_) => {}
            Piece::Expression(expr) => {
                let Some(names) = expr.strip_prefix('+') else {
                    continue;
                };
                for name in expression_variables(names) {
                    warnings.push(format!(
                        "{{+{name}}} comes before the first '/' of the path, so its value can \
                         change the host, port or user info of the URL; such calls are refused, \
                         but write the host literally and put {{+{name}}} after a '/' (as in \
                         \"https://api.example.com/{{+{name}}}\") so that every value is a path"
                    ));
                }
            }
        }
    }
    warnings
}

fn expand(template: &str, context: &SimpleContext) -> Result<String, TargetError> {
    let template = UriTemplateStr::new(template).map_err(|e| TargetError::Expand(e.to_string()))?;
    template
        .expand::<UriSpec, _>(context)
        .map(|expanded| expanded.to_string())
        .map_err(|e| TargetError::Expand(e.to_string()))
}

/// What decides where a request goes, user info included (the client turns it into a
/// Basic `Authorization` header).
fn authority(url: &Url) -> (&str, &str, Option<&str>, Option<&str>, Option<u16>) {
    (
        url.scheme(),
        url.username(),
        url.password(),
        url.host_str(),
        url.port_or_known_default(),
    )
}

/// Refuses dot segments in the expanded text, and any other rewrite of the path by the
/// parser, so the path sent has exactly the segments the expansion produced.
fn check_path(expanded: &str, url: &Url) -> Result<(), TargetError> {
    let raw = raw_path(expanded);
    // The WHATWG parser reads `\` as `/` in http(s) URLs and drops tabs and newlines.
    let segments: Vec<String> = raw
        .split(['/', '\\'])
        .map(|s| s.replace(['\t', '\n', '\r'], ""))
        .collect();
    if let Some(segment) = segments.iter().find(|s| is_dot_segment(s)) {
        return Err(TargetError::DotSegment {
            segment: segment.clone(),
        });
    }
    let expected = if raw.is_empty() { 2 } else { segments.len() };
    if url.path().split('/').count() != expected {
        return Err(TargetError::Parse(
            "its path would be rewritten by the HTTP client".into(),
        ));
    }
    Ok(())
}

/// The path of a URL as written: after the authority, before `?` or `#`.
fn raw_path(url: &str) -> &str {
    let rest = url.find("://").map_or(url, |at| &url[at + 3..]);
    let start = rest.find(['/', '\\', '?', '#']).unwrap_or(rest.len());
    let rest = &rest[start..];
    &rest[..rest.find(['?', '#']).unwrap_or(rest.len())]
}

/// `.` or `..`, in any spelling the WHATWG URL parser treats as one (`%2e`, `.%2E`, ...).
fn is_dot_segment(segment: &str) -> bool {
    let decoded = segment.to_ascii_lowercase().replace("%2e", ".");
    decoded == "." || decoded == ".."
}

enum Piece<'a> {
    Literal(&'a str),
    /// The text between `{` and `}`.
    Expression(&'a str),
}

/// Splits a template into literals and expressions; an unclosed `{` ends the walk (the
/// template parser has already refused it).
fn pieces(template: &str) -> Vec<Piece<'_>> {
    let mut pieces = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(len) = rest[open..].find('}') else {
            break;
        };
        if open > 0 {
            pieces.push(Piece::Literal(&rest[..open]));
        }
        pieces.push(Piece::Expression(&rest[open + 1..open + len]));
        rest = &rest[open + len + 1..];
    }
    if !rest.is_empty() {
        pieces.push(Piece::Literal(rest));
    }
    pieces
}

/// The variable names of an expression's text, after its operator.
fn expression_variables(expr: &str) -> impl Iterator<Item = &str> {
    expr.trim_start_matches(['+', '#', '.', '/', ';', '?', '&'])
        .split(',')
        .map(|var| var.trim_end_matches('*').split(':').next().unwrap_or(var))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template(text: &str) -> UrlTemplate {
        UrlTemplate::new(text.into()).unwrap()
    }

    #[test]
    fn query_variables_are_optional_and_the_rest_required() {
        let t = template("https://x.test/{+base}/items/{id}{?q,limit}{&page}");
        assert_eq!(t.required(), ["base", "id"]);
        assert_eq!(t.optional(), ["q", "limit", "page"]);
        assert!(UrlTemplate::new("https://x.test/{id".into()).is_err());
    }

    #[test]
    fn dot_segments_are_refused_in_every_spelling() {
        let t = template("https://api.test/users/{user}/profile");
        for user in ["..", "."] {
            assert!(matches!(
                t.expand(&json!({ "user": user })),
                Err(TargetError::DotSegment { .. })
            ));
        }
        // Percent signs in a simple expression are encoded, so %2e%2e stays a name.
        let url = t.expand(&json!({ "user": "%2e%2e" })).unwrap();
        assert_eq!(url.path(), "/users/%252e%252e/profile");
        let t = template("https://api.test/files/{+path}");
        for path in ["a/%2e%2e/x", "a/.%2E/x", "%2e", "a/./b"] {
            assert!(
                t.expand(&json!({ "path": path })).is_err(),
                "{path} was accepted"
            );
        }
        assert_eq!(
            t.expand(&json!({ "path": "a/..b/c." })).unwrap().path(),
            "/files/a/..b/c."
        );
        // A backslash, which the parser would read as '/', and the tabs and newlines it
        // would drop are encoded even by `{+x}`.
        assert_eq!(
            t.expand(&json!({ "path": "a\\..\\x/.\t./y" }))
                .unwrap()
                .path(),
            "/files/a%5C..%5Cx/.%09./y"
        );
    }

    #[test]
    fn reserved_values_cannot_change_the_authority() {
        let t = template("http://api.test:8080{+path}");
        for path in ["@evil.test/x", "@api.test:8080/x", ":@x/"] {
            assert!(
                matches!(
                    t.expand(&json!({ "path": path })),
                    Err(TargetError::Authority { .. })
                ),
                "{path}: {:?}",
                t.expand(&json!({ "path": path }))
            );
        }
        // Not a URL at all: refused as such.
        for path in [":9090/x", "0/x", ".evil.test/x"] {
            assert!(t.expand(&json!({ "path": path })).is_err(), "{path}");
        }
        let portless = template("http://api.test{+path}");
        for path in [".evil.test/x", ":9090/x"] {
            assert!(
                matches!(
                    portless.expand(&json!({ "path": path })),
                    Err(TargetError::Authority { .. })
                ),
                "{path}"
            );
        }
        assert_eq!(
            t.expand(&json!({ "path": "/a/b?c=d" })).unwrap().as_str(),
            "http://api.test:8080/a/b?c=d"
        );
        // A simple variable in the host is the template's own choice, and stays encoded.
        let t = template("https://{region}.api.test/{+path}");
        let url = t.expand(&json!({ "region": "eu", "path": "x/y" })).unwrap();
        assert_eq!(url.as_str(), "https://eu.api.test/x/y");
        assert!(
            t.expand(&json!({ "region": "evil.test/", "path": "x" }))
                .is_err()
        );
    }

    #[test]
    fn reserved_expressions_before_the_path_are_warned_about() {
        assert_eq!(authority_warnings("http://h{+path}").len(), 1);
        assert_eq!(authority_warnings("http://{+host}/x{+path}").len(), 1);
        assert!(authority_warnings("http://h/{+path}").is_empty());
        assert!(authority_warnings("http://{region}.h/{+path}").is_empty());
        assert!(authority_warnings("http://h?{+q}").is_empty());
    }
}
