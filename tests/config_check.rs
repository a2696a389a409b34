//! `mcp-actor check` on the shipped configuration files.

use std::process::Command;

fn check(file: &str, env: &[(&str, &str)]) -> (bool, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-actor"));
    cmd.arg("check")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/config/").to_string() + file);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run mcp-actor check");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
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
