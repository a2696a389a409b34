//! The crate's layers and the one direction of their dependencies.
//!
//! [`LAYERS`] is the declared order, top to bottom: a module may use modules of lower
//! layers only, never one of its own layer or above. The test reads every `use crate::…`
//! statement and every `crate::x::` path in the code of `src/` (comments are skipped) and
//! fails on each edge that runs against the order, naming the file and line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Top to bottom. Modules in one row are siblings and must not use each other.
const LAYERS: &[&[&str]] = &[
    // Compiled for `cargo fuzz` only; it exposes entry points of every layer.
    &["fuzzing"],
    // The binary's `mcp-actor call` client: it speaks to a server over HTTP only.
    &["call"],
    &["reload"],
    &["server"],
    &["http"],
    &["session", "stateless"],
    &["core"],
    &["store"],
    &["dispatch", "providers", "auth", "audit"],
    &["features"],
    &["context"],
    &["events"],
    // OpenTelemetry: span attributes, trace context in and out, the OTLP pipeline.
    &["telemetry"],
    &["config"],
    // `log_format` reads a request's id (`jsonrpc`) for the log line; `dispatch` gives it
    // the request's fields, and the binary installs its formatters.
    &["protocol", "log_format"],
    &["jsonrpc"],
    &["metrics"],
    &["log_limit", "keyed_counts", "revision"],
];

fn rank(module: &str) -> Option<usize> {
    LAYERS.iter().position(|row| row.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file of `src/` belongs to (`src/http/post.rs` → `http`).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let relative = file.strip_prefix(src).ok()?;
    let first = relative.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (name != "lib" && name != "main").then(|| name.to_string())
}

/// The code of a line without its comment, or nothing for a comment line.
fn code_of(line: &str) -> &str {
    let trimmed = line.trim_start();
    if trimmed.starts_with("//") {
        return "";
    }
    line.split("//").next().unwrap_or("")
}

/// `code` with string and character literals blanked, so that braces inside them are not
/// counted as blocks.
fn without_literals(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut chars = code.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
                out.push_str("\"\"");
            }
            // A character literal ('{', '\\'', '\\u{7b}'); a lifetime ('a) has no closing quote
            // right after its one character.
            '\'' => {
                let ahead: String = chars.clone().take(10).collect();
                let end = if ahead.starts_with('\\') {
                    ahead
                        .get(2..)
                        .and_then(|rest| rest.find('\''))
                        .map(|at| at + 2)
                } else {
                    ahead
                        .char_indices()
                        .nth(1)
                        .filter(|(_, c)| *c == '\'')
                        .map(|(at, _)| at)
                };
                match end {
                    Some(end) => {
                        for _ in 0..=ahead[..end].chars().count() {
                            chars.next();
                        }
                        out.push_str("' '");
                    }
                    None => out.push(c),
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// The numbered lines of `text` (numbered from 0) that are not part of an item under
/// `#[cfg(test)]`: a `mod tests;` line, or a whole `mod tests { … }` block (or any other item
/// with a body), counted by braces outside comments and literals.
fn lines_outside_tests(text: &str) -> Vec<(usize, &str)> {
    let mut kept = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((number, line)) = lines.next() {
        if code_of(line).trim() != "#[cfg(test)]" {
            kept.push((number, line));
            continue;
        }
        // Skip the attributed item: up to its `;`, or to the brace that closes its body.
        let mut depth = 0usize;
        let mut opened = false;
        for (_, line) in lines.by_ref() {
            let code = without_literals(code_of(line));
            for c in code.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth = depth.saturating_sub(1),
                    _ => {}
                }
            }
            if (opened && depth == 0) || (!opened && code.trim_end().ends_with(';')) {
                break;
            }
        }
    }
    kept
}

/// Every top-level module named by `crate::name` or by `use crate::{a, b::c}` in `code`.
fn targets(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inner = group.split('}').next().unwrap_or("");
            for item in inner.split(',') {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    found.push(name);
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.push(name);
            }
        }
    }
    found
}

#[test]
fn every_module_has_a_declared_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut missing: BTreeMap<String, PathBuf> = BTreeMap::new();
    for file in &files {
        if let Some(module) = module_of(&src, file) {
            if rank(&module).is_none() {
                missing.insert(module, file.clone());
            }
        }
    }
    assert!(
        missing.is_empty(),
        "modules without a layer in LAYERS: {missing:?}"
    );
}

#[test]
fn dependencies_run_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut violations = Vec::new();
    for file in &files {
        let Some(module) = module_of(&src, file) else {
            continue;
        };
        let Some(own) = rank(&module) else {
            continue;
        };
        let text = std::fs::read_to_string(file).expect("read source");
        // Unit tests may reach anything: the items under `#[cfg(test)]` are skipped, and
        // only those.
        for (number, line) in lines_outside_tests(&text) {
            for target in targets(code_of(line)) {
                if target == module {
                    continue;
                }
                let Some(theirs) = rank(&target) else {
                    continue;
                };
                if theirs <= own {
                    violations.push(format!(
                        "{}:{}: {module} uses {target}, which is not below it",
                        file.strip_prefix(&src).unwrap_or(file).display(),
                        number + 1
                    ));
                }
            }
        }
    }
    assert!(
        violations.is_empty(),
        "dependencies against the declared order (tests/layers.rs LAYERS):\n{}",
        violations.join("\n")
    );
}

#[test]
fn the_check_sees_grouped_and_inline_paths() {
    assert_eq!(
        targets("use crate::{http, session::x};"),
        vec!["http", "session"]
    );
    assert_eq!(targets("let x = crate::server::Shared;"), vec!["server"]);
    assert!(targets(code_of("/// see [`crate::server`]")).is_empty());
}

#[test]
fn the_check_skips_only_the_test_items() {
    let text = "use crate::a;\n#[cfg(test)]\nmod tests;\nuse crate::b;\n\
                #[cfg(test)]\nmod inline {\n    fn f() { let _ = \"}\"; let _ = '{'; }\n    use crate::c;\n}\n\
                use crate::d;\n#[cfg(test)]\nuse crate::e;\nfn g<'a>(_: &'a str) {}\nuse crate::f;\n";
    let seen: Vec<String> = lines_outside_tests(text)
        .into_iter()
        .flat_map(|(_, line)| targets(code_of(line)))
        .collect();
    assert_eq!(seen, vec!["a", "b", "d", "f"]);
}

/// The rows of a chart written as `a → b → { c | d } → …`, with notes in parentheses dropped.
fn chart_rows(chart: &str) -> Vec<Vec<String>> {
    chart
        .split('→')
        .map(|row| {
            let row = row.trim().trim_start_matches('{').trim_end_matches('}');
            let row = match row.find('(') {
                Some(at) => &row[..at],
                None => row,
            };
            row.split('|').map(|m| m.trim().to_string()).collect()
        })
        .collect()
}

/// LAYERS of the library: without the fuzzing entry points (compiled for `cargo fuzz` only)
/// and the binary's `call` client (a module of `main.rs`, which the charts name apart).
fn shipped_layers() -> Vec<Vec<String>> {
    LAYERS
        .iter()
        .filter(|row| !row.contains(&"fuzzing") && !row.contains(&"call"))
        .map(|row| row.iter().map(|m| m.to_string()).collect())
        .collect()
}

#[test]
fn the_crate_docs_chart_is_layers() {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"))
        .expect("read src/lib.rs");
    // The chart is the `//!` lines of the text block that starts with ` reload →`.
    let chart: String = lib
        .lines()
        .map(|line| line.trim_start_matches("//!").trim())
        .skip_while(|line| !line.starts_with("reload →"))
        .take_while(|line| !line.starts_with("```"))
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        !chart.is_empty(),
        "src/lib.rs has no chart starting with `reload →`"
    );
    assert_eq!(
        chart_rows(&chart),
        shipped_layers(),
        "the layer chart in src/lib.rs differs from tests/layers.rs LAYERS"
    );
}

#[test]
fn the_architecture_chart_names_every_layer_and_points_down() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md"))
            .expect("read docs/architecture.md");
    let chart: Vec<&str> = doc
        .split("## Layers")
        .nth(1)
        .and_then(|rest| rest.split("```mermaid").nth(1))
        .and_then(|rest| rest.split("```").next())
        .expect("docs/architecture.md has a mermaid chart under ## Layers")
        .lines()
        .skip(1)
        .collect();
    let mut named = std::collections::BTreeSet::new();
    let mut upward = Vec::new();
    for line in &chart {
        let nodes: Vec<String> = line
            .split("-->")
            .map(|node| {
                node.trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect()
            })
            .collect();
        for pair in nodes.windows(2) {
            match (rank(&pair[0]), rank(&pair[1])) {
                (Some(a), Some(b)) if a < b => {}
                _ => upward.push(format!("{} --> {}", pair[0], pair[1])),
            }
        }
        named.extend(nodes.into_iter().filter(|n| !n.is_empty()));
    }
    let missing: Vec<String> = shipped_layers()
        .concat()
        .into_iter()
        .filter(|m| !named.contains(m))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/architecture.md's layer chart leaves out {missing:?}"
    );
    assert!(
        upward.is_empty(),
        "edges that do not point down a layer: {upward:?}"
    );
}

/// Where a method name is read as a string outside `Method::parse`: a quoted name used as a
/// `match` pattern (`"ping" =>`, `"a" | "b"`, `Some("a") =>`, `"a" if …`) or compared with
/// `==` / `!=`. Building a message with a literal name stays allowed.
fn method_name_matches(code: &str) -> Vec<(usize, String)> {
    let names: Vec<String> = mcp_actor::protocol::Method::ALL
        .iter()
        .map(|m| format!("\"{}\"", m.as_str()))
        .collect();
    let mut found = Vec::new();
    let lines = lines_outside_tests(code);
    for (index, &(number, line)) in lines.iter().enumerate() {
        let line = code_of(line);
        // An arm split over lines: `"a"` alone, then `| "b" => …` on the next.
        let next = lines
            .get(index + 1)
            .map_or("", |(_, l)| code_of(l).trim_start());
        for name in &names {
            let mut from = 0;
            while let Some(at) = line[from..].find(name.as_str()) {
                let (start, end) = (from + at, from + at + name.len());
                from = end;
                let before = line[..start].trim_end();
                let after = line[end..].trim_start_matches([' ', ',', '_', ')']);
                let alternative = |s: &str| s.ends_with('|') && !s.ends_with("||");
                let after = if after.trim().is_empty() { next } else { after };
                let pattern = after.starts_with("=>")
                    || after.starts_with("==")
                    || (after.starts_with('=') && !before.ends_with('='))
                    || (after.starts_with('|') && !after.starts_with("||"))
                    || after.starts_with("if ")
                    || alternative(before);
                let compared = before.ends_with("==")
                    || before.ends_with("!=")
                    || line[end..].trim_start().starts_with("==")
                    || line[end..].trim_start().starts_with("!=");
                if pattern || compared {
                    found.push((number + 1, name.clone()));
                }
            }
        }
    }
    found
}

/// The files that may match method names as strings: the one parser, and the binary's
/// `mcp-actor call` client, which imports no layer of the library (it reads what a server
/// sends it over HTTP).
fn may_match_method_names(src: &Path, file: &Path) -> bool {
    let relative = file.strip_prefix(src).unwrap_or(file);
    relative == Path::new("protocol/method.rs") || relative.starts_with("call")
}

#[test]
fn method_names_are_matched_only_by_method_parse() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut violations = Vec::new();
    for file in files.iter().filter(|f| !may_match_method_names(&src, f)) {
        let text = std::fs::read_to_string(file).expect("read source");
        for (line, name) in method_name_matches(&text) {
            violations.push(format!("{}:{line}: {name}", file.display()));
        }
    }
    assert!(
        violations.is_empty(),
        "{} method names matched as strings; parse them with Method::parse and match the \
         enum:\n{}",
        violations.len(),
        violations.join("\n")
    );
}

#[test]
fn the_method_name_check_catches_planted_matches() {
    let planted = "fn f(m: &str) -> u8 {\n    match m {\n        \"tools/call\" => 1,\n        \
                   \"ping\"\n        | \"initialize\" => 2,\n        _ => 0,\n    }\n}\n\
                   fn g(m: &str) -> bool { m == \"tasks/get\" || Some(\"roots/list\") == None }\n\
                   fn h(m: Option<&str>) { if let Some(\"notifications/progress\") = m {} }\n\
                   fn ok() -> serde_json::Value { json!({ \"method\": \"tools/call\" }) }\n\
                   #[cfg(test)]\nmod tests {\n    fn t(m: &str) -> bool { m == \"ping\" }\n}\n";
    let found: Vec<usize> = method_name_matches(planted)
        .into_iter()
        .map(|(line, _)| line)
        .collect();
    assert_eq!(found, vec![3, 4, 5, 9, 9, 10], "{found:?}");
}
