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
    &["dispatch", "providers", "auth"],
    &["features"],
    &["context"],
    &["events"],
    &["config"],
    &["protocol"],
    &["jsonrpc"],
    &["metrics"],
    &["log_format", "log_limit"],
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
        // Unit tests may reach anything.
        let text = text.split("#[cfg(test)]").next().unwrap_or("");
        for (number, line) in text.lines().enumerate() {
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
