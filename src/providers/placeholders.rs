//! The two substitution languages of provider configuration.
//!
//! - `{argument}` in a command tool's argv: replaced by a call's argument, one argv element
//!   at a time. The value is never re-split or given to a shell, so `; rm -rf /` stays one
//!   literal argument. `{{` and `}}` write literal braces.
//! - `${NAME}` in env values, headers and URLs: replaced once, when the configuration is
//!   loaded, by the server's own environment variable, so secrets stay out of the TOML file.
//!   An unset variable never becomes an empty string, because an empty `Authorization`
//!   header fails far from its cause: the tool is left out with a warning, or, with
//!   `required = true`, it is a configuration error ([`unset_env_vars`] decides which before
//!   the tool is built). `$${` writes a literal `${`.

use serde_json::{Map, Value};

/// One piece of an argv element.
#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Literal(String),
    Argument(String),
}

/// One argv element with its `{argument}` placeholders.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ArgTemplate {
    pieces: Vec<Piece>,
}

/// What an argv element became for one call.
#[derive(Debug, PartialEq)]
pub(crate) enum Rendered {
    /// The element, and whether a substituted value made it start with `-`.
    Arg { value: String, flag_injected: bool },
    /// The element names an argument the call did not supply: leave it out.
    Absent,
}

impl ArgTemplate {
    pub fn parse(text: &str) -> Result<ArgTemplate, String> {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    literal.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    literal.push('}');
                }
                '{' => {
                    let mut name = String::new();
                    loop {
                        match chars.next() {
                            Some('}') => break,
                            Some(c) if c.is_ascii_alphanumeric() || c == '_' || c == '-' => {
                                name.push(c)
                            }
                            Some(c) => {
                                return Err(format!(
                                    "{text:?}: {c:?} cannot appear in a placeholder; use {{name}} with letters, digits, '_' or '-', and {{{{ for a literal brace"
                                ));
                            }
                            None => return Err(format!("{text:?}: unclosed '{{'")),
                        }
                    }
                    if name.is_empty() {
                        return Err(format!("{text:?}: empty placeholder {{}}"));
                    }
                    if !literal.is_empty() {
                        pieces.push(Piece::Literal(std::mem::take(&mut literal)));
                    }
                    pieces.push(Piece::Argument(name));
                }
                '}' => {
                    return Err(format!(
                        "{text:?}: unmatched '}}'; write }}}} for a literal brace"
                    ));
                }
                c => literal.push(c),
            }
        }
        if !literal.is_empty() {
            pieces.push(Piece::Literal(literal));
        }
        Ok(ArgTemplate { pieces })
    }

    /// The argument names this element refers to.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.pieces.iter().filter_map(|p| match p {
            Piece::Argument(name) => Some(name.as_str()),
            Piece::Literal(_) => None,
        })
    }

    /// The element for one call's (already validated) arguments.
    pub fn render(&self, arguments: &Map<String, Value>) -> Rendered {
        let mut value = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Literal(text) => value.push_str(text),
                Piece::Argument(name) => match arguments.get(name).and_then(argument_text) {
                    Some(text) => value.push_str(&text),
                    None => return Rendered::Absent,
                },
            }
        }
        // Only a value at the very start can turn an element into an option; a literal
        // prefix such as `--file={path}` keeps the value an option's argument.
        let flag_injected =
            matches!(self.pieces.first(), Some(Piece::Argument(_))) && value.starts_with('-');
        Rendered::Arg {
            value,
            flag_injected,
        }
    }
}

/// An argument as command-line text: strings as they are, numbers and booleans in their
/// JSON form, arrays and objects as JSON. `null` counts as absent.
pub(crate) fn argument_text(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// Replaces every `${NAME}` with the server's environment variable `NAME`.
pub(crate) fn expand_env(text: &str) -> Result<String, String> {
    expand_env_with(text, |name| std::env::var(name).ok())
}

/// The variables that `${NAME}` references in `text` name but the server's environment
/// does not set. A malformed reference is left for [`expand_env`] to report.
pub(crate) fn unset_env_vars(text: &str) -> Vec<String> {
    unset_env_vars_with(text, |name| std::env::var(name).ok())
}

pub(crate) fn unset_env_vars_with(
    text: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Vec<String> {
    let unset = std::cell::RefCell::new(Vec::new());
    let _ = expand_env_with(text, |name| {
        lookup(name).or_else(|| {
            unset.borrow_mut().push(name.to_string());
            Some(String::new())
        })
    });
    unset.into_inner()
}

pub(crate) fn expand_env_with(
    text: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(escaped) = after.strip_prefix("${") {
            out.push_str("${");
            rest = escaped;
        } else if let Some(inner) = after.strip_prefix('{') {
            let end = inner
                .find('}')
                .ok_or_else(|| format!("unclosed ${{ in {text:?}"))?;
            let name = &inner[..end];
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!("${{{name}}} is not an environment variable name"));
            }
            let value = lookup(name).ok_or_else(|| {
                format!("environment variable {name} is not set (referenced as ${{{name}}})")
            })?;
            out.push_str(&value);
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    proptest::proptest! {
        #[test]
        fn a_value_is_substituted_verbatim_whatever_it_holds(
            prefix in "[a-z=./]{0,8}",
            value in "\\PC{0,40}",
            suffix in "[a-z=./]{0,8}",
        ) {
            let t = ArgTemplate::parse(&format!("{prefix}{{v}}{suffix}")).expect("template");
            let expected = format!("{prefix}{value}{suffix}");
            let injected = prefix.is_empty() && value.starts_with('-');
            proptest::prop_assert_eq!(
                t.render(&args(json!({ "v": value }))),
                Rendered::Arg { value: expected, flag_injected: injected }
            );
        }

        #[test]
        fn any_template_text_parses_or_is_refused(text in "\\PC{0,40}") {
            let _ = ArgTemplate::parse(&text);
        }

        #[test]
        fn env_expansion_replaces_only_what_it_names(
            before in "[a-z /:]{0,12}",
            secret in "[A-Za-z0-9+/]{1,24}",
            after in "[a-z /:]{0,12}",
        ) {
            let lookup = |name: &str| (name == "TOKEN").then(|| secret.clone());
            proptest::prop_assert_eq!(
                expand_env_with(&format!("{before}${{TOKEN}}{after}"), lookup),
                Ok(format!("{before}{secret}{after}"))
            );
            proptest::prop_assert_eq!(
                expand_env_with(&format!("{before}$${{TOKEN}}{after}"), lookup),
                Ok(format!("{before}${{TOKEN}}{after}"))
            );
        }
    }

    #[test]
    fn placeholders_substitute_whole_values_without_splitting() {
        let t = ArgTemplate::parse("{text}").unwrap();
        assert_eq!(
            t.render(&args(json!({ "text": "a; rm -rf / $(x)" }))),
            Rendered::Arg {
                value: "a; rm -rf / $(x)".into(),
                flag_injected: false
            }
        );
        let t = ArgTemplate::parse("--name={n}.txt").unwrap();
        assert_eq!(
            t.render(&args(json!({ "n": "-x" }))),
            Rendered::Arg {
                value: "--name=-x.txt".into(),
                flag_injected: false
            }
        );
    }

    #[test]
    fn a_leading_dash_from_a_value_is_flagged() {
        let t = ArgTemplate::parse("{path}").unwrap();
        assert!(matches!(
            t.render(&args(json!({ "path": "--delete" }))),
            Rendered::Arg {
                flag_injected: true,
                ..
            }
        ));
        assert_eq!(t.render(&args(json!({}))), Rendered::Absent);
        assert_eq!(t.render(&args(json!({ "path": null }))), Rendered::Absent);
    }

    #[test]
    fn braces_escape_and_bad_placeholders_are_refused() {
        let t = ArgTemplate::parse("{{x}} {y}").unwrap();
        assert_eq!(t.names().collect::<Vec<_>>(), ["y"]);
        assert!(ArgTemplate::parse("{a b}").is_err());
        assert!(ArgTemplate::parse("{a").is_err());
        assert!(ArgTemplate::parse("a}").is_err());
        assert!(ArgTemplate::parse("{}").is_err());
    }

    #[test]
    fn env_references_expand_or_fail_loudly() {
        let lookup = |n: &str| (n == "TOKEN").then(|| "s3cret".to_string());
        assert_eq!(
            expand_env_with("Bearer ${TOKEN}", lookup).unwrap(),
            "Bearer s3cret"
        );
        assert_eq!(
            expand_env_with("$${TOKEN} $5", lookup).unwrap(),
            "${TOKEN} $5"
        );
        assert!(
            expand_env_with("${MISSING}", lookup)
                .unwrap_err()
                .contains("MISSING")
        );
        assert!(expand_env_with("${TOKEN", lookup).is_err());
    }

    #[test]
    fn unset_references_are_listed_and_set_or_escaped_ones_are_not() {
        let lookup = |n: &str| (n == "TOKEN").then(|| "s3cret".to_string());
        assert_eq!(
            unset_env_vars_with("${TOKEN} ${A} $${B} ${C}", lookup),
            ["A", "C"]
        );
        assert!(unset_env_vars_with("${TOKEN}", lookup).is_empty());
    }
}
