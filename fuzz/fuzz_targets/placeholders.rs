//! The substitution languages of provider configuration (`providers::placeholders`):
//! `{argument}` in a command tool's argv and `${NAME}` in env values, headers and URLs.
//! Any text parses or is refused; a parsed argv element renders every value verbatim, with
//! a leading `-` flagged whenever the element's own text does not start with it; escaping round-trips (`{{`/`}}`,
//! `$${`); and `${NAME}` expansion fails on an unset variable exactly when
//! `unset_env_vars` names one.
//!
//! Input: the text, a newline, then the value given to every argument.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_actor::fuzzing::{ArgvTemplate, expand_env_with, unset_env_vars_with};
use serde_json::{Map, Value};

/// The environment the target sees: two set variables.
fn lookup(name: &str) -> Option<String> {
    match name {
        "TOKEN" => Some("s3cret".into()),
        "EMPTY" => Some(String::new()),
        _ => None,
    }
}

fn check_argv(text: &str, value: &str) {
    // Any text, escaped, is one literal element.
    let escaped = text.replace('{', "{{").replace('}', "}}");
    let literal = ArgvTemplate::parse(&escaped).expect("escaped text must parse");
    assert!(literal.names().is_empty());
    assert_eq!(literal.render(&Map::new()), Some((text.to_string(), false)));

    let Ok(template) = ArgvTemplate::parse(text) else {
        return;
    };
    let names = template.names();
    for name in &names {
        assert!(!name.is_empty());
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        );
    }
    let arguments: Map<String, Value> = names
        .iter()
        .map(|n| (n.clone(), Value::String(value.to_string())))
        .collect();
    let (rendered, flagged) = template.render(&arguments).expect("every argument given");
    // Values are substituted verbatim: rendering with a marker, then putting the value in
    // the marker's place, gives the same element.
    const MARKER: char = '\u{2}';
    if !text.contains(MARKER) && !value.contains(MARKER) {
        let marked: Map<String, Value> = names
            .iter()
            .map(|n| (n.clone(), Value::String(MARKER.to_string())))
            .collect();
        let (skeleton, _) = template.render(&marked).expect("every argument given");
        assert_eq!(
            rendered,
            skeleton.replace(MARKER, value),
            "{text:?} with {value:?}"
        );
    }
    // A leading `-` is flagged exactly when it does not come from the element's own text.
    if flagged {
        assert!(rendered.starts_with('-'));
        assert!(text.starts_with('{') && !text.starts_with("{{"));
    } else if rendered.starts_with('-') {
        assert!(
            text.starts_with('-'),
            "{text:?} with {value:?}: an unflagged option"
        );
    }
    if let Some(first) = names.first() {
        let mut missing = arguments.clone();
        missing.remove(first);
        assert_eq!(
            template.render(&missing),
            None,
            "a missing argument rendered"
        );
        missing.insert(first.clone(), Value::Null);
        assert_eq!(template.render(&missing), None, "a null argument rendered");
    }
}

fn check_env(text: &str) {
    // `$${` writes a literal `${`, so escaping every `${` keeps any text as it is.
    let escaped = text.replace("${", "$${");
    assert_eq!(expand_env_with(&escaped, lookup).as_deref(), Ok(text));

    let unset = unset_env_vars_with(text, lookup);
    match expand_env_with(text, lookup) {
        Ok(expanded) => {
            assert!(
                unset.is_empty(),
                "{text:?} expanded though {unset:?} are unset"
            );
            assert!(!expanded.contains("${TOKEN}") || text.contains("${TOKEN}"));
        }
        Err(message) => {
            if message.starts_with("environment variable ") {
                assert!(!unset.is_empty(), "{message}, yet nothing is unset");
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let (text, value) = input.split_once('\n').unwrap_or((input, "-v"));
    check_argv(text, value);
    check_env(text);
});
