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

/// The example's `pixel` resource is a whole PNG an inspector can draw: the signature, then
/// IHDR (1x1), IDAT and IEND chunks, each with a CRC-32 that verifies.
#[tokio::test]
async fn example_pixel_is_a_valid_one_by_one_png() {
    use base64::Engine;
    let server = TestServer::with_config_file(&shipped("example.toml"), &[]);
    let session = server.client().connect().await;
    let read = session
        .call(
            json!(1),
            "resources/read",
            json!({ "uri": "example://pixel" }),
        )
        .await;
    let blob = read["contents"][0]["blob"].as_str().unwrap_or_default();
    let png = base64::engine::general_purpose::STANDARD
        .decode(blob)
        .unwrap_or_default();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "{} bytes", png.len());
    let mut chunks = Vec::new();
    let mut at = 8;
    while at + 12 <= png.len() {
        let len = u32::from_be_bytes(png[at..at + 4].try_into().unwrap_or_default()) as usize;
        let Some(typed) = png.get(at + 4..at + 8 + len) else {
            break;
        };
        let Some(crc) = png.get(at + 8 + len..at + 12 + len) else {
            break;
        };
        assert_eq!(crc32(typed).to_be_bytes(), crc, "chunk at {at}");
        chunks.push((
            String::from_utf8_lossy(&typed[..4]).into_owned(),
            typed[4..].to_vec(),
        ));
        at += 12 + len;
    }
    let names: Vec<&str> = chunks.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["IHDR", "IDAT", "IEND"],
        "{} bytes: {blob}",
        png.len()
    );
    assert_eq!(&chunks[0].1[..8], &[0, 0, 0, 1, 0, 0, 0, 1], "1x1");
    assert_eq!(at, png.len(), "nothing after IEND");
}

/// CRC-32 (ISO 3309), as PNG chunks carry it.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}
