//! URI templates of resource templates (`features::resources::UriTemplate`): any template
//! text parses or is refused, any URI matches or not, and matching is the reverse of
//! expansion: a URI expanded from values (percent-encoded as RFC 6570 does) matches with
//! exactly those values, whenever each value's expansion stops at the literal after it.
//!
//! Input: the template, a newline, the URI to match, a newline, then one value per line for
//! the template's variables, in order.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_actor::fuzzing::UriTemplate;

/// One expression or literal of a template, read again from its text (the parsed form is
/// private to the server): `{name}`, `{+name}` or literal text.
enum Part<'a> {
    Literal(&'a str),
    Simple(&'a str),
    Reserved(&'a str),
}

fn parts(template: &str) -> Vec<Part<'_>> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        if open > 0 {
            out.push(Part::Literal(&rest[..open]));
        }
        let close = open + rest[open..].find('}').expect("parsed, so closed");
        let expr = &rest[open + 1..close];
        out.push(match expr.strip_prefix('+') {
            Some(name) => Part::Reserved(name),
            None => Part::Simple(expr),
        });
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        out.push(Part::Literal(rest));
    }
    out
}

/// RFC 6570 §3.2.1: unreserved characters stay, `{+var}` keeps reserved ones too (here
/// only `/` and the sub-delimiters, never `?` or `#`, which end a path).
fn encode(value: &str, reserved: bool) -> String {
    let mut out = String::new();
    for b in value.bytes() {
        let keep = b.is_ascii_alphanumeric()
            || matches!(b, b'-' | b'.' | b'_' | b'~')
            || (reserved
                && matches!(
                    b,
                    b'/' | b'!'
                        | b'$'
                        | b'&'
                        | b'\''
                        | b'('
                        | b')'
                        | b'*'
                        | b'+'
                        | b','
                        | b';'
                        | b'='
                        | b':'
                        | b'@'
                ));
        if keep {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut lines = text.split('\n');
    let source = lines.next().unwrap_or("");
    let uri = lines.next().unwrap_or("");
    let Ok(template) = UriTemplate::parse(source) else {
        return;
    };
    if let Some(vars) = template.matches(uri) {
        assert!(
            vars.values().all(|v| !v.is_empty()),
            "an empty variable matched"
        );
    }

    // Expand with the given values, then match the expansion.
    let parts = parts(source);
    let mut values = lines;
    let mut expected = std::collections::HashMap::new();
    let mut expanded = String::new();
    // Where each value's expansion starts and ends, to check that matching can find its end.
    let mut spans = Vec::new();
    for part in &parts {
        match part {
            Part::Literal(literal) => expanded.push_str(literal),
            Part::Simple(name) | Part::Reserved(name) => {
                let value = values.next().unwrap_or("v");
                if value.is_empty() {
                    return;
                }
                let start = expanded.len();
                expanded.push_str(&encode(value, matches!(part, Part::Reserved(_))));
                spans.push((start, expanded.len()));
                // A name used twice must take one value.
                if expected
                    .insert(name.to_string(), value.to_string())
                    .is_some_and(|v| v != value)
                {
                    return;
                }
            }
        }
    }
    // Matching takes the shortest value before the next literal (no backtracking), so it
    // can only recover a value whose expansion ends at the first occurrence of that literal.
    let mut var = 0;
    for (i, part) in parts.iter().enumerate() {
        if matches!(part, Part::Literal(_)) {
            continue;
        }
        let (start, end) = spans[var];
        var += 1;
        if let Some(Part::Literal(next)) = parts.get(i + 1) {
            if expanded[start..].find(next) != Some(end - start) {
                return;
            }
        }
    }
    let found = template.matches(&expanded);
    let found = found.unwrap_or_else(|| panic!("{expanded:?} does not match {source:?}"));
    for (name, value) in &expected {
        assert_eq!(
            found.get(name),
            Some(value),
            "variable {name} of {expanded:?}"
        );
    }
});
