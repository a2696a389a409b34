//! Every unknown key and type error of a file in one pass.
//!
//! serde stops at the first error, so a file with several needed as many runs of `check`.
//! Here, after the first error, the file is read again as a TOML table, the offending key
//! is taken out (a type error's key, or the unknown key itself), and the rest deserialized
//! again, until it deserializes or nothing more can be taken out. What is taken out falls
//! back to its default, so the checks that need a whole configuration (limits, names) run
//! on the rest too. Array elements are never taken out: that would renumber the elements
//! after them, and the errors would name the wrong one.

use serde_path_to_error::Segment;
use toml::Value;

use super::Config;
use super::names::suggest;

/// Bounds the passes: each one deserializes the whole table again.
const MAX_ERRORS: usize = 64;

/// (dotted key, message) of every unknown key and type error, in the order found, and the
/// configuration without those keys when the rest deserializes.
pub(super) fn every_type_error(text: &str) -> (Vec<(String, String)>, Option<Config>) {
    let mut errors = Vec::new();
    let Ok(table) = text.parse::<toml::Table>() else {
        return (errors, None);
    };
    let mut table = Value::Table(table);
    while errors.len() < MAX_ERRORS {
        let e = match serde_path_to_error::deserialize::<_, Config>(table.clone()) {
            Ok(config) => return (errors, Some(config)),
            Err(e) => e,
        };
        let mut path: Vec<Segment> = e.path().iter().cloned().collect();
        let message = e.inner().message().trim().to_string();
        let (key, message) = match unknown_key(&message) {
            Some((unknown, expected)) => {
                // serde_path_to_error ends the path at the unknown key itself.
                if !matches!(path.last(), Some(Segment::Map { key }) if key == unknown) {
                    path.push(Segment::Map {
                        key: unknown.to_string(),
                    });
                }
                (dotted(&path), unknown_key_message(unknown, &expected))
            }
            None => (dotted(&path), message),
        };
        errors.push((key, message));
        if !remove(&mut table, &path) {
            break;
        }
    }
    (errors, None)
}

/// The unknown key and the expected ones, from serde's "unknown field `x`, expected one
/// of `a`, `b`" (or "expected `a`", "expected `a` or `b`", "there are no fields").
fn unknown_key(message: &str) -> Option<(&str, Vec<&str>)> {
    let rest = message.strip_prefix("unknown field `")?;
    let (unknown, expected) = rest.split_once('`')?;
    let expected = expected.split('`').skip(1).step_by(2).collect();
    Some((unknown, expected))
}

fn unknown_key_message(unknown: &str, expected: &[&str]) -> String {
    match suggest(unknown, expected) {
        Some(near) => format!("unknown key `{unknown}`; did you mean `{near}`?"),
        None if expected.is_empty() => format!("unknown key `{unknown}`; this table takes none"),
        None => format!(
            "unknown key `{unknown}`; this table takes {}",
            expected
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// `tools[2].command`, as the rest of the configuration errors name keys.
fn dotted(path: &[Segment]) -> String {
    let mut key = String::new();
    for segment in path {
        match segment {
            Segment::Seq { index } => key.push_str(&format!("[{index}]")),
            Segment::Map { key: name } | Segment::Enum { variant: name } => {
                if !key.is_empty() {
                    key.push('.');
                }
                key.push_str(name);
            }
            Segment::Unknown => {}
        }
    }
    key
}

/// Takes the key at `path` out of `value`; false when there is none to take, or it is an
/// array element (a key inside one is taken out as any other).
fn remove(value: &mut Value, path: &[Segment]) -> bool {
    match path {
        [Segment::Map { key }] => value
            .as_table_mut()
            .is_some_and(|t| t.remove(key).is_some()),
        [Segment::Map { key }, rest @ ..] => value
            .as_table_mut()
            .and_then(|t| t.get_mut(key))
            .is_some_and(|v| remove(v, rest)),
        [Segment::Seq { index }, rest @ ..] if !rest.is_empty() => value
            .as_array_mut()
            .and_then(|a| a.get_mut(*index))
            .is_some_and(|v| remove(v, rest)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unknown_key_and_type_error_is_found_with_suggestions() {
        let text = "[http]\nmax_conections = 1\n[sessions]\nidle_ttl = \"soon\"\nmax_sesions = 2\n";
        let (errors, config) = every_type_error(text);
        let keys: Vec<&str> = errors.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys.len(), 3, "{errors:?}");
        assert!(keys.contains(&"http.max_conections"), "{errors:?}");
        assert!(keys.contains(&"sessions.idle_ttl"), "{errors:?}");
        assert!(
            errors
                .iter()
                .any(|(_, m)| m.ends_with("did you mean `max_connections`?"))
        );
        assert!(config.is_some());
    }
}
