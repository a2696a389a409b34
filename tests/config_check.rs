//! The shipped configuration files (`mcp-actor check`, and what they serve), and tools left
//! out because an `${ENV}` they use is unset.

mod common;

use common::{TempDir, TestServer, unique};
use serde_json::{Value, json};

fn shipped(file: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("config")
        .join(file)
}

fn check(file: &str, env: &[(&str, &str)]) -> (bool, String) {
    let (status, stdout, stderr) = common::run_check(&shipped(file), env);
    (status.success(), stdout + &stderr)
}

#[test]
fn example_config_passes_check_when_its_secret_is_set() {
    let (ok, text) = check("example.toml", &[("GITHUB_TOKEN", "test-token")]);
    assert!(ok, "{text}");
    assert!(!text.contains("warning"), "{text}");
}

#[test]
fn gateway_example_passes_check() {
    let (ok, text) = check("gateway.toml", &[]);
    assert!(ok, "{text}");
    assert!(!text.contains("warning"), "{text}");
}

#[test]
fn example_config_passes_check_without_its_secret_and_says_which_tool_is_disabled() {
    let (status, _, stderr) =
        common::run_check_without(&shipped("example.toml"), &[], &["GITHUB_TOKEN"]);
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("example.toml:"), "{stderr}");
    assert!(
        stderr.contains("tools[4].headers.Authorization: tool \"create_issue\" is disabled: environment variable GITHUB_TOKEN is not set"),
        "{stderr}"
    );
}

#[test]
fn default_config_passes_check() {
    let (ok, text) = check("default.toml", &[]);
    assert!(ok, "{text}");
}

/// A configuration whose tools `needs_env` (a command) and `needs_header` (an HTTP API)
/// use the environment variable `var`, which the tests leave unset; `required` is written
/// into `needs_header`.
fn config_with_unset_env(var: &str, required: bool) -> String {
    format!(
        r#"[[tools]]
builtin = "echo"
name = "say"

[[tools]]
name = "needs_env"
command = ["printenv", "KEY"]
env = {{ KEY = "${{{var}}}" }}

[[tools]]
name = "needs_header"
url = "http://127.0.0.1:1/"
required = {required}
headers = {{ Authorization = "Bearer ${{{var}}}" }}
"#
    )
}

#[test]
fn unset_env_in_an_optional_tool_disables_it_with_a_located_warning() {
    let dir = TempDir::new("optional-env");
    let var = format!("MCP_ACTOR_UNSET_{}", unique());
    let path = dir.write("tools.toml", &config_with_unset_env(&var, false));
    let (status, stdout, stderr) = common::run_check(&path, &[]);
    assert!(status.success(), "{stderr}");
    assert!(stdout.contains("tools.toml: ok"), "{stdout}");
    for (line, key, tool) in [
        (8, "env.KEY", "needs_env"),
        (14, "headers.Authorization", "needs_header"),
    ] {
        let expected = format!("tools.toml:{line}:");
        assert!(stderr.contains(&expected), "{expected} in {stderr}");
        let expected =
            format!("{key}: tool \"{tool}\" is disabled: environment variable {var} is not set");
        assert!(stderr.contains(&expected), "{expected} in {stderr}");
    }
}

#[test]
fn unset_env_in_a_required_tool_is_a_located_error() {
    let dir = TempDir::new("required-env");
    let var = format!("MCP_ACTOR_UNSET_{}", unique());
    let path = dir.write("tools.toml", &config_with_unset_env(&var, true));
    let (status, _, stderr) = common::run_check(&path, &[]);
    assert_eq!(status.code(), Some(1), "{stderr}");
    let expected = format!(
        "tools.toml:14:1: tools[2].headers.Authorization: environment variable {var} is not set"
    );
    assert!(stderr.contains(&expected), "{expected} in {stderr}");
}

async fn tool_names(session: &common::Session) -> Vec<String> {
    let list = session.call(json!(1), "tools/list", json!({})).await;
    list["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn server_starts_without_the_tools_whose_env_is_unset() {
    let dir = TempDir::new("optional-env-serve");
    let var = format!("MCP_ACTOR_UNSET_{}", unique());
    let path = dir.write("tools.toml", &config_with_unset_env(&var, false));
    let server = TestServer::with_config_file(&path, &[]);
    let session = server.client().connect().await;
    assert_eq!(tool_names(&session).await, ["say"]);

    let server = TestServer::with_config_file(&path, &[(&var, "s3cret")]);
    let session = server.client().connect().await;
    assert_eq!(
        tool_names(&session).await,
        ["say", "needs_env", "needs_header"],
        "with the variable set, every tool is served"
    );
}

fn call_text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn example_list_dir_lists_only_under_the_docs_folder() {
    let server = TestServer::with_config_file(&shipped("example.toml"), &[]);
    let session = server.client().connect().await;
    let call = |id: i64, args: Value| {
        let session = session.clone();
        async move {
            session
                .request(
                    json!(id),
                    "tools/call",
                    json!({ "name": "list_dir", "arguments": args }),
                )
                .await
        }
    };
    let docs = call(1, json!({})).await;
    let docs = docs.response(&json!(1)).cloned().unwrap_or_default();
    assert!(
        call_text(&docs["result"]).contains("performance.md"),
        "without a path it lists the docs folder: {docs}"
    );
    let sub = call(2, json!({ "path": "performance-data" })).await;
    let sub = sub.response(&json!(2)).cloned().unwrap_or_default();
    assert!(sub["result"].get("isError").is_none(), "{sub}");

    for (id, path) in (3..).zip([
        "/",
        "/root",
        "..",
        "../src",
        "./../..",
        "performance-data/../..",
        "-R",
    ]) {
        let reply = call(id, json!({ "path": path })).await;
        let response = reply.response(&json!(id)).cloned().unwrap_or_default();
        let refused = response.get("error").is_some() || response["result"]["isError"] == true;
        assert!(refused, "{path:?} must be refused: {response}");
        assert!(
            !call_text(&response["result"]).contains("Cargo.toml"),
            "{path:?} listed the repository: {response}"
        );
    }
}

#[test]
fn check_reports_every_semantic_and_tool_error_in_one_run_in_file_order() {
    let dir = TempDir::new("every-error");
    let path = dir.write(
        "errors.toml",
        r#"[server]
path = "mcp"

[sessions]
max_sessions = 0

[client_requests]
timeout = "30s"
max_timeout = "10s"

[pagination]
page_size = 0

[[tools]]
name = "missing_program"
command = ["mcp-actor-no-such-program"]
"#,
    );
    let (status, stdout, stderr) = common::run_check(&path, &[]);
    assert_eq!(status.code(), Some(1), "{stdout}{stderr}");
    let expected = [
        "2:1: server.path: must start with '/', for example \"/mcp\"",
        "5:1: sessions.max_sessions: must be greater than 0",
        "9:1: client_requests.max_timeout: must not be shorter than client_requests.timeout",
        "12:1: pagination.page_size: must be greater than 0",
        "16:1: tools[0].command: program \"mcp-actor-no-such-program\" is not found in PATH",
    ]
    .map(|error| format!("{}:{error}", path.display()));
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines, expected, "{stderr}");
}
