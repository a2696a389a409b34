//! Finding the line of a dotted key such as `tools[2].command` in the configuration text,
//! for errors found after parsing (the TOML parser reports its own spans).
//!
//! The TOML crate drops positions once values are deserialized, so this reads the text
//! again, line by line, following TOML's table rules closely enough for errors: `[[tools]]`
//! opens the next element of `tools`, `[tools.env]` belongs to the latest one, and a line
//! `key = ...` belongs to the table opened last. Multi-line strings may confuse it; it then
//! falls back to the nearest table header, never to a wrong table.

/// One segment of a dotted key: `tools[2]` is ("tools", Some(2)).
#[derive(Debug, Clone, PartialEq)]
struct Segment {
    name: String,
    index: Option<usize>,
}

fn parse_key(key: &str) -> Vec<Segment> {
    key.split('.')
        .filter(|s| !s.is_empty())
        .map(|s| match s.split_once('[') {
            Some((name, rest)) => Segment {
                name: name.to_string(),
                index: rest.trim_end_matches(']').parse().ok(),
            },
            None => Segment {
                name: s.to_string(),
                index: None,
            },
        })
        .collect()
}

fn split_dotted(text: &str) -> Vec<String> {
    text.split('.')
        .map(|s| s.trim().trim_matches('"').trim_matches('\'').to_string())
        .collect()
}

/// How many leading segments of `wanted` the path `line_path` covers, or `None` when the
/// line lies outside `wanted` (another table, another array element). A segment without an
/// index on the line (an inline array) matches any index.
fn coverage(line_path: &[Segment], wanted: &[Segment]) -> Option<usize> {
    if line_path.len() > wanted.len() {
        return None;
    }
    for (have, want) in line_path.iter().zip(wanted) {
        if have.name != want.name {
            return None;
        }
        if let (Some(a), Some(b)) = (have.index, want.index) {
            if a != b {
                return None;
            }
        }
    }
    Some(line_path.len())
}

/// Line and column (1-based) of `key`; the best enclosing table header when the key itself
/// is absent, and (1, 1) when nothing matches.
pub(crate) fn locate_key(text: &str, key: &str) -> (usize, usize) {
    let wanted = parse_key(key);
    let mut table: Vec<Segment> = Vec::new();
    let mut array_counts: std::collections::HashMap<String, usize> = Default::default();
    let mut best: Option<(usize, usize, usize)> = None;
    let mut consider = |path: &[Segment], line: usize, column: usize| {
        if let Some(score) = coverage(path, &wanted) {
            if score > 0 && best.is_none_or(|(s, _, _)| score > s) {
                best = Some((score, line, column));
            }
        }
    };
    for (i, raw) in text.lines().enumerate() {
        let trimmed = raw.trim_start();
        let column = raw.len() - trimmed.len() + 1;
        if trimmed.starts_with('#') || trimmed.is_empty() {
            continue;
        }
        if let Some(inner) = trimmed.strip_prefix("[[") {
            let name = inner.split("]]").next().unwrap_or_default().trim();
            let count = array_counts.entry(name.to_string()).or_insert(0);
            *count += 1;
            let index = *count - 1;
            table = header_path(name, &array_counts);
            if let Some(last) = table.last_mut() {
                last.index = Some(index);
            }
            consider(&table, i + 1, column);
            continue;
        }
        if let Some(inner) = trimmed.strip_prefix('[') {
            let name = inner.split(']').next().unwrap_or_default().trim();
            table = header_path(name, &array_counts);
            consider(&table, i + 1, column);
            continue;
        }
        let Some((lhs, _)) = trimmed.split_once('=') else {
            continue;
        };
        let mut path = table.clone();
        path.extend(
            split_dotted(lhs)
                .into_iter()
                .map(|name| Segment { name, index: None }),
        );
        consider(&path, i + 1, column);
    }
    best.map_or((1, 1), |(_, line, column)| (line, column))
}

/// The path of a table header, each array-table prefix at its latest element.
fn header_path(
    name: &str,
    array_counts: &std::collections::HashMap<String, usize>,
) -> Vec<Segment> {
    let parts = split_dotted(name);
    let mut path = Vec::new();
    for (n, part) in parts.iter().enumerate() {
        let prefix = parts[..=n].join(".");
        path.push(Segment {
            name: part.clone(),
            index: array_counts.get(&prefix).map(|c| c.saturating_sub(1)),
        });
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
[server]
name = \"x\"

[[tools]]
builtin = \"echo\"

[[tools]]
name = \"a\"
command = [\"ls\"]

[[tools]]
name = \"b\"
  command = [\"cat\"]
[tools.env]
KEY = \"v\"

[[prompts]]
name = \"p\"
arguments = [
  { name = \"x\" },
]
";

    #[test]
    fn indexed_keys_point_into_their_array_element() {
        assert_eq!(locate_key(TEXT, "tools[2].command"), (13, 3));
        assert_eq!(locate_key(TEXT, "tools[1].command"), (9, 1));
        assert_eq!(locate_key(TEXT, "tools[2].env.KEY"), (15, 1));
    }

    #[test]
    fn absent_keys_fall_back_to_their_table_header() {
        assert_eq!(locate_key(TEXT, "tools[0].name"), (4, 1));
        assert_eq!(locate_key(TEXT, "prompts[0].arguments[0].name"), (19, 1));
    }

    #[test]
    fn plain_keys_still_work() {
        assert_eq!(locate_key(TEXT, "server.name"), (2, 1));
        assert_eq!(locate_key("", "nothing.here"), (1, 1));
    }
}
