//! The admin API on the admin listener of the real binary (`/admin/*`), behind its token,
//! and `mcp-actor sessions|reload|tasks` against it.

mod common;
mod task_client;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{LATEST, TempDir, TestServer};
use reqwest::StatusCode;
use serde_json::{Value, json};

const TOKEN: &str = "admin-token-0123456789abcdef";
const TOKEN_VAR: &str = "MCP_TEST_ADMIN_TOKEN";

fn config(extra_tool: &str) -> String {
    format!("[admin]\ntoken_env = \"{TOKEN_VAR}\"\n\n[[tools]]\nbuiltin = \"echo\"\n{extra_tool}")
}

/// A tool that runs as a task when the client declares the extension.
const TASK_TOOL: &str = "[[tools]]\nbuiltin = \"sleep\"\ntask_support = \"optional\"\n";

/// The binary on a configuration file in `dir` that needs [`TOKEN`] on `/admin/*`.
fn start(dir: &TempDir) -> (TestServer, std::path::PathBuf) {
    start_with(dir, "")
}

fn start_with(dir: &TempDir, extra_tool: &str) -> (TestServer, std::path::PathBuf) {
    let path = dir.write("server.toml", &config(extra_tool));
    let server = TestServer::with_config_file(&path, &[(TOKEN_VAR, TOKEN)]);
    (server, path)
}

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(15))
        .build()
        .expect("client")
}

async fn admin(
    server: &TestServer,
    method: reqwest::Method,
    path: &str,
    token: Option<&str>,
) -> (StatusCode, Value) {
    let mut request = http().request(method, format!("{}{path}", server.admin_url));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("admin request");
    let status = response.status();
    let body = response.text().await.expect("admin body");
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

async fn get(server: &TestServer, path: &str) -> (StatusCode, Value) {
    admin(server, reqwest::Method::GET, path, Some(TOKEN)).await
}

/// `mcp-actor ARGS` with the admin token in its environment: status, stdout, stderr.
fn cli(args: &[&str]) -> (bool, String, String) {
    let mut child = Command::new(common::binary())
        .args(args)
        .env("MCP_ACTOR_ADMIN_TOKEN", TOKEN)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the CLI");
    let deadline = Instant::now() + Duration::from_secs(15);
    while child.try_wait().expect("wait").is_none() {
        assert!(Instant::now() < deadline, "the CLI did not exit: {args:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("CLI output");
    let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    (out.status.success(), text(out.stdout), text(out.stderr))
}

#[tokio::test]
async fn admin_lists_shows_and_ends_sessions_and_the_ended_one_then_gets_404() {
    let dir = TempDir::new("admin-sessions");
    let (server, _) = start(&dir);
    let client = server.client();
    let first = client.initialize(LATEST, json!({})).await;
    let second = client.initialize(LATEST, json!({})).await;

    let (status, listed) = get(&server, "/admin/sessions").await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    let sessions = listed["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), 2, "{listed}");
    let one = sessions
        .iter()
        .find(|s| s["id"] == first.id.as_str())
        .expect("first listed");
    assert_eq!(one["principal"], "anonymous");
    assert_eq!(one["protocolVersion"], LATEST);
    assert_eq!(
        one["client"],
        json!({ "name": "mcp-actor-tests", "version": "1" })
    );
    assert_eq!(one["inFlight"], 0);
    assert!(
        one["streams"].is_u64() && one["createdAt"].is_string() && one["lastActivity"].is_string()
    );

    let (_, page) = get(&server, "/admin/sessions?limit=1").await;
    assert_eq!(page["sessions"].as_array().map(Vec::len), Some(1), "{page}");
    let cursor = page["nextCursor"]
        .as_str()
        .expect("a next page")
        .to_string();
    let (_, rest) = get(&server, &format!("/admin/sessions?limit=1&cursor={cursor}")).await;
    assert_eq!(rest["sessions"].as_array().map(Vec::len), Some(1), "{rest}");
    assert_ne!(rest["sessions"][0]["id"], page["sessions"][0]["id"]);
    assert_eq!(rest["nextCursor"], Value::Null);
    let (_, nobody) = get(&server, "/admin/sessions?principal=someone-else").await;
    assert_eq!(nobody["sessions"], json!([]));

    let (status, shown) = get(&server, &format!("/admin/sessions/{}", second.id)).await;
    assert_eq!(
        (status, shown["id"].clone()),
        (StatusCode::OK, json!(second.id))
    );

    let path = format!("/admin/sessions/{}", first.id);
    let (status, _) = admin(&server, reqwest::Method::DELETE, &path, Some(TOKEN)).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let next = first.request(json!(1), "tools/list", json!({})).await;
    assert_eq!(
        next.status,
        StatusCode::NOT_FOUND,
        "the ended session's next request"
    );
    assert_eq!(get(&server, &path).await.0, StatusCode::NOT_FOUND);
    let (_, after) = get(&server, "/admin/sessions").await;
    assert_eq!(
        after["sessions"].as_array().map(Vec::len),
        Some(1),
        "{after}"
    );
    assert_eq!(
        second
            .request(json!(2), "tools/list", json!({}))
            .await
            .status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn admin_endpoints_need_the_token_and_the_probes_stay_open() {
    let dir = TempDir::new("admin-token");
    let printenv = "[[tools]]\nname = \"printenv\"\ncommand = [\"env\"]\ninput_schema = { type = \"object\" }\n";
    let (server, _) = start_with(&dir, printenv);
    for (method, path) in [
        (reqwest::Method::GET, "/admin/sessions"),
        (reqwest::Method::GET, "/admin/tasks"),
        (reqwest::Method::POST, "/admin/reload"),
        (reqwest::Method::DELETE, "/admin/sessions/x"),
    ] {
        let (status, body) = admin(&server, method.clone(), path, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {path}: {body}");
        assert!(
            body["error"].as_str().is_some_and(|e| e.contains("Bearer")),
            "{body}"
        );
        let wrong = admin(
            &server,
            method.clone(),
            path,
            Some("admin-token-0123456789abcdeX"),
        )
        .await;
        assert_eq!(
            wrong.0,
            StatusCode::UNAUTHORIZED,
            "{method} {path} with a wrong token"
        );
    }
    for path in ["/metrics", "/healthz", "/readyz"] {
        let (status, _) = admin(&server, reqwest::Method::GET, path, None).await;
        assert_eq!(
            status,
            StatusCode::OK,
            "{path} stays open without protect_metrics"
        );
    }
    let (status, tasks) = get(&server, "/admin/tasks").await;
    assert_eq!((status, tasks), (StatusCode::OK, json!({ "tasks": [] })));
    let (status, upstreams) = get(&server, "/admin/upstreams").await;
    assert_eq!(
        (status, upstreams),
        (StatusCode::OK, json!({ "upstreams": [] }))
    );
    let session = server.client().connect().await;
    let env = session
        .call_tool_text(json!(1), "printenv", json!({}))
        .await;
    assert!(env.contains("PATH="), "{env}");
    assert!(!env.contains(TOKEN), "a child never sees the admin token");
}

#[tokio::test]
async fn admin_reload_of_a_broken_file_returns_its_errors_and_keeps_the_old_config() {
    let dir = TempDir::new("admin-reload");
    let (server, path) = start(&dir);
    std::fs::write(
        &path,
        format!("{}\n[[tools]]\nbuiltin = \"no_such_builtin\"\n", config("")),
    )
    .expect("break");
    let (status, answer) =
        admin(&server, reqwest::Method::POST, "/admin/reload", Some(TOKEN)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    let errors = answer["errors"].as_str().expect("the errors");
    assert!(
        errors.contains("no_such_builtin") && errors.contains("server.toml"),
        "{errors}"
    );
    let session = server.client().connect().await;
    let tools = session.call(json!(1), "tools/list", json!({})).await;
    assert_eq!(
        tools["tools"].as_array().map(Vec::len),
        Some(1),
        "the old tools stay: {tools}"
    );

    std::fs::write(&path, config("\n[[tools]]\nbuiltin = \"sleep\"\n")).expect("fix");
    let (ok, stdout, stderr) = cli(&["reload", "--admin", &server.admin_url]);
    assert!(ok, "{stdout} {stderr}");
    assert_eq!(stdout.trim(), "configuration reloaded");
    let tools = session.call(json!(2), "tools/list", json!({})).await;
    assert_eq!(tools["tools"].as_array().map(Vec::len), Some(2), "{tools}");
}

#[test]
fn a_non_loopback_admin_listener_without_a_token_refuses_to_start() {
    let outcome = common::run_binary(
        &["--listen", "127.0.0.1:0", "--admin-listen", "0.0.0.0:0"],
        Duration::from_secs(15),
    );
    let (status, stderr) = outcome.expect("the binary exits");
    assert!(!status.success());
    assert!(
        stderr.contains("admin.token_env"),
        "names the fix: {stderr}"
    );
}

#[tokio::test]
async fn the_cli_lists_shows_and_ends_sessions() {
    let dir = TempDir::new("admin-cli");
    let (server, _) = start_with(&dir, TASK_TOOL);
    let session = server.client().initialize(LATEST, json!({})).await;
    let base = server.admin_url.clone();

    let (ok, table, stderr) = cli(&["sessions", "list", "--admin", &base]);
    assert!(ok, "{stderr}");
    let rows: Vec<&str> = table.lines().collect();
    assert!(
        rows[0].starts_with("ID") && rows[0].contains("PRINCIPAL"),
        "{table}"
    );
    assert_eq!(rows.len(), 2, "{table}");
    assert!(
        rows[1].starts_with(&session.id) && rows[1].contains("mcp-actor-tests"),
        "{table}"
    );

    let (ok, json_out, _) = cli(&["sessions", "list", "--json", "--admin", &base]);
    assert!(ok);
    let listed: Value = serde_json::from_str(&json_out).expect("--json prints JSON");
    assert_eq!(listed[0]["id"], session.id.as_str());

    let (ok, shown, _) = cli(&["sessions", "show", &session.id, "--admin", &base]);
    assert!(
        ok && shown.contains("protocolVersion") && shown.contains(LATEST),
        "{shown}"
    );

    let (ok, ended, _) = cli(&["sessions", "end", &session.id, "--admin", &base]);
    assert!(ok, "{ended}");
    assert_eq!(ended.trim(), format!("session {} ended", session.id));
    assert_eq!(
        session
            .request(json!(1), "tools/list", json!({}))
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    let (ok, _, stderr) = cli(&["sessions", "end", &session.id, "--admin", &base]);
    assert!(!ok && stderr.contains("404"), "{stderr}");

    let modern = common::modern::client_of(&server);
    let task = task_client::create(&modern, 9, "sleep", json!({ "ms": 60000 }))
        .await
        .expect("a task");
    let (status, listed) = get(&server, "/admin/tasks").await;
    assert_eq!(status, StatusCode::OK);
    let listed = &listed["tasks"][0];
    assert_eq!(
        (
            listed["taskId"].clone(),
            listed["owner"].clone(),
            listed["status"].clone(),
            listed["tool"].clone()
        ),
        (
            json!(task),
            json!("anonymous"),
            json!("working"),
            json!("sleep")
        ),
        "{listed}"
    );
    let (ok, tasks, _) = cli(&["tasks", "list", "--admin", &base]);
    let rows: Vec<&str> = tasks.lines().collect();
    assert!(
        ok && rows[0].starts_with("TASK") && rows.len() == 2,
        "{tasks}"
    );
    assert!(
        rows[1].starts_with(&task) && rows[1].contains("working"),
        "{tasks}"
    );
}

#[tokio::test]
async fn admin_shows_a_sessions_upstream_child_and_protect_metrics_guards_the_probes() {
    let dir = TempDir::new("admin-upstreams");
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/upstreams/fixture.py");
    let extra = format!(
        "[[upstreams]]\nname = \"fx\"\ncommand = [\"python3\", \"{}\", \"admin-{}\"]\n",
        script.display(),
        common::unique()
    );
    let path = dir.write(
        "server.toml",
        &config(&extra).replace("[admin]\n", "[admin]\nprotect_metrics = true\n"),
    );
    let server = TestServer::with_config_file(&path, &[(TOKEN_VAR, TOKEN)]);
    let session = server.client().connect().await;
    let shown = format!("/admin/sessions/{}", session.id);
    assert_eq!(
        get(&server, &shown).await.1["upstreams"],
        json!([]),
        "no child before a call"
    );
    let pid = session.call_tool_text(json!(1), "fx__pid", json!({})).await;
    assert!(pid.parse::<u32>().is_ok(), "the child answers: {pid}");
    assert_eq!(get(&server, &shown).await.1["upstreams"], json!(["fx"]));
    let (status, upstreams) = get(&server, "/admin/upstreams").await;
    assert_eq!(status, StatusCode::OK);
    let fx = &upstreams["upstreams"][0];
    assert_eq!(
        (
            fx["name"].clone(),
            fx["transport"].clone(),
            fx["scope"].clone()
        ),
        (json!("fx"), json!("stdio"), json!("session"))
    );
    assert!(
        fx["childrenRunning"].as_u64().is_some_and(|n| n >= 1),
        "{upstreams}"
    );

    for probe in ["/metrics", "/healthz", "/readyz"] {
        let (status, _) = admin(&server, reqwest::Method::GET, probe, None).await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "{probe} with protect_metrics"
        );
        let (status, _) = admin(&server, reqwest::Method::GET, probe, Some(TOKEN)).await;
        assert_eq!(status, StatusCode::OK, "{probe} with the token");
    }
}
