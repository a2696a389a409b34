//! `mcp-actor check` on the shipped configuration files.

mod common;

fn check(file: &str, env: &[(&str, &str)]) -> (bool, String) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("config")
        .join(file);
    let (status, stdout, stderr) = common::run_check(&path, env);
    (status.success(), stdout + &stderr)
}

#[test]
fn example_config_passes_check_when_its_secret_is_set() {
    let (ok, text) = check("example.toml", &[("GITHUB_TOKEN", "test-token")]);
    assert!(ok, "{text}");
}

#[test]
fn example_config_without_its_secret_names_the_line() {
    let (ok, text) = check("example.toml", &[]);
    assert!(!ok);
    assert!(text.contains("example.toml:"), "{text}");
    assert!(
        text.contains(
            "tools[4].headers.Authorization: environment variable GITHUB_TOKEN is not set"
        ),
        "{text}"
    );
}

#[test]
fn default_config_passes_check() {
    let (ok, text) = check("default.toml", &[]);
    assert!(ok, "{text}");
}
