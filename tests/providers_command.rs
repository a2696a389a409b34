//! Command tools, against the real binary and real processes: results, failures, timeouts,
//! cancellation and output caps, and arguments that try to inject shell syntax or flags.

mod common;

use std::time::Duration;

use common::{TempDir, TestServer, eventually, processes_matching, unique, zombie_children};
use serde_json::{Value, json};

const CONFIG: &str = r#"
[command_tools]
max_processes_per_session = 8

[[tools]]
name = "say"
description = "Prints its text"
command = ["printf", "%s", "{text}"]
annotations = { read_only_hint = true, idempotentHint = true }

[[tools]]
name = "say_flags"
command = ["printf", "%s", "{text}"]
allow_flags = true

[[tools]]
name = "fail"
command = ["sh", "-c", "echo partial; echo oops >&2; exit 3"]

[[tools]]
name = "hang"
command = ["sh", "-c", "sleep \"$1\" & sleep \"$1\"; wait", "sh", "{seconds}"]
timeout = "500ms"

[[tools]]
name = "wait_long"
command = ["sh", "-c", "echo started; sleep \"$1\" & sleep \"$1\"; wait", "sh", "{seconds}"]
timeout = "60s"

[[tools]]
name = "detach_hang"
command = ["sh", "-c", "setsid sleep \"$1\" & sleep \"$2\"", "sh", "{detached}", "{waited}"]
timeout = "500ms"

[[tools]]
name = "detach_wait"
command = ["sh", "-c", "setsid sleep \"$1\" & sleep \"$2\"", "sh", "{detached}", "{waited}"]
timeout = "60s"

[[tools]]
name = "detach_and_exit"
command = ["sh", "-c", "setsid sleep \"$1\" & sleep 0.5; echo done", "sh", "{detached}"]
timeout = "20s"

[[tools]]
name = "flood"
command = ["yes", "{word}"]
max_output_bytes = 1000

[[tools]]
name = "cat"
command = ["cat"]
stdin = "text"

[[tools]]
name = "lines"
command = ["sh", "-c", "echo one; echo two; echo three"]
progress = true

[[tools]]
name = "count"
command = ["seq", "{n}"]
input_schema = { type = "object", properties = { n = { type = "integer", minimum = 1 } }, required = ["n"] }
"#;

async fn call(session: &common::Session, id: i64, name: &str, args: Value) -> Value {
    session
        .call(
            json!(id),
            "tools/call",
            json!({ "name": name, "arguments": args }),
        )
        .await
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn successful_command_returns_stdout_and_schema_is_derived() {
    let server = TestServer::with_config(CONFIG);
    let session = server.client().connect().await;
    let result = call(&session, 1, "say", json!({ "text": "hello world" })).await;
    assert_eq!(text(&result), "hello world");
    assert!(result.get("isError").is_none(), "{result}");

    let list = session.call(json!(2), "tools/list", json!({})).await;
    let say = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "say")
        .unwrap();
    assert_eq!(say["inputSchema"]["required"], json!(["text"]));
    assert_eq!(say["inputSchema"]["properties"]["text"]["type"], "string");
    assert_eq!(say["annotations"]["readOnlyHint"], true);
    assert_eq!(say["annotations"]["idempotentHint"], true);

    let counted = call(&session, 3, "count", json!({ "n": 3 })).await;
    assert_eq!(text(&counted), "1\n2\n3\n");
    let invalid = call(&session, 4, "count", json!({ "n": "3; ls" })).await;
    assert_eq!(invalid["isError"], true, "{invalid}");

    let piped = call(&session, 5, "cat", json!({ "text": "via stdin" })).await;
    assert_eq!(text(&piped), "via stdin");
}

#[tokio::test]
async fn non_zero_exit_is_an_error_result_with_stderr_and_code() {
    let server = TestServer::with_config(CONFIG);
    let session = server.client().connect().await;
    let result = call(&session, 1, "fail", json!({})).await;
    assert_eq!(result["isError"], true, "{result}");
    let text = text(&result);
    assert!(text.contains("exited with code 3"), "{text}");
    assert!(text.contains("oops"), "{text}");
}

#[tokio::test]
async fn injection_attempts_stay_literal_arguments() {
    let dir = TempDir::new("canary");
    let canary = dir.write("canary", "still here");
    let server = TestServer::with_config(CONFIG);
    let session = server.client().connect().await;
    let attack = format!(
        "\"; rm -rf {} $(touch {}/pwned) `id`",
        canary.display(),
        dir.path().display()
    );
    let result = call(&session, 1, "say", json!({ "text": attack })).await;
    assert_eq!(text(&result), attack, "the value must reach argv unchanged");
    assert!(canary.exists(), "nothing may run the injected command");
    assert!(!dir.path().join("pwned").exists());

    let flag = call(&session, 2, "say", json!({ "text": "--flag" })).await;
    assert_eq!(flag["isError"], true, "{flag}");
    assert!(text(&flag).contains("starts with '-'"), "{flag}");
    let flag = call(&session, 3, "say", json!({ "text": "-v" })).await;
    assert_eq!(flag["isError"], true, "{flag}");

    let allowed = call(&session, 4, "say_flags", json!({ "text": "--flag" })).await;
    assert_eq!(
        text(&allowed),
        "--flag",
        "allow_flags passes it, still as one literal argument"
    );
}

#[tokio::test]
async fn timeout_kills_the_whole_process_group() {
    let server = TestServer::with_config(CONFIG);
    let session = server.client().connect().await;
    let seconds = format!("3000.{}", unique());
    let result = call(&session, 1, "hang", json!({ "seconds": seconds })).await;
    assert_eq!(result["isError"], true, "{result}");
    assert!(text(&result).contains("timed out"), "{result}");
    let needle = format!("sleep {seconds}");
    assert!(
        eventually(Duration::from_secs(5), || processes_matching(&needle)
            .is_empty())
        .await,
        "orphaned processes remain: {:?}",
        processes_matching(&needle)
    );
}

async fn start_long_call(
    session: &common::Session,
    id: i64,
    seconds: &str,
) -> tokio::task::JoinHandle<()> {
    let needle = format!("sleep {seconds}");
    let session = session.clone();
    let seconds = seconds.to_string();
    let task = tokio::spawn(async move {
        let _ = session
            .request(
                json!(id),
                "tools/call",
                json!({ "name": "wait_long", "arguments": { "seconds": seconds } }),
            )
            .await;
    });
    assert!(
        eventually(Duration::from_secs(10), || processes_matching(&needle)
            .len()
            == 2)
        .await,
        "the command did not start"
    );
    task
}

#[tokio::test]
async fn cancellation_kills_the_process_group() {
    let server = TestServer::with_config(CONFIG);
    let session = server.client().connect().await;
    let seconds = format!("3000.{}", unique());
    let _call = start_long_call(&session, 7, &seconds).await;
    session
        .notify(
            "notifications/cancelled",
            Some(json!({ "requestId": 7, "reason": "user pressed stop" })),
        )
        .await;
    let needle = format!("sleep {seconds}");
    assert!(
        eventually(Duration::from_secs(5), || processes_matching(&needle)
            .is_empty())
        .await,
        "orphaned processes remain after cancellation: {:?}",
        processes_matching(&needle)
    );
}

#[tokio::test]
async fn session_end_kills_the_process_group() {
    let server = TestServer::with_config(CONFIG);
    let session = server.client().connect().await;
    let seconds = format!("3000.{}", unique());
    let _call = start_long_call(&session, 8, &seconds).await;
    session.delete().await;
    let needle = format!("sleep {seconds}");
    assert!(
        eventually(Duration::from_secs(5), || processes_matching(&needle)
            .is_empty())
        .await,
        "orphaned processes remain after DELETE: {:?}",
        processes_matching(&needle)
    );
}

#[tokio::test]
async fn a_drain_that_runs_out_of_time_kills_the_process_group_and_exits_0() {
    let mut server =
        TestServer::with_config(&format!("[server]\ndrain_timeout = \"1s\"\n{CONFIG}"));
    let session = server.client().connect().await;
    let seconds = format!("3000.{}", unique());
    let _call = start_long_call(&session, 9, &seconds).await;
    let status = server
        .terminate(Duration::from_secs(10))
        .expect("exited after the drain timeout");
    assert!(status.success(), "{status:?}");
    let needle = format!("sleep {seconds}");
    assert!(
        eventually(Duration::from_secs(5), || processes_matching(&needle)
            .is_empty())
        .await,
        "orphaned processes remain after the drain: {:?}",
        processes_matching(&needle)
    );
}

/// Two unique sleep durations: one for a process that leaves the group with `setsid`, one
/// for the script's own foreground sleep.
fn detach_arguments() -> (String, String) {
    (format!("1001.{}", unique()), format!("1000.{}", unique()))
}

/// The server adopts the orphans of its commands (a child subreaper), so it must reap them.
async fn assert_no_zombie_remains(server: &TestServer) {
    let zombies = || zombie_children(server.pid());
    assert!(
        eventually(Duration::from_secs(5), || zombies().is_empty()).await,
        "the server left zombie children: {:?}",
        zombies()
    );
}

async fn assert_no_process_remains(needles: &[&str], after: &str) {
    let remaining = || -> Vec<u32> {
        needles
            .iter()
            .flat_map(|needle| processes_matching(needle))
            .collect()
    };
    assert!(
        eventually(Duration::from_secs(5), || remaining().is_empty()).await,
        "processes remain after {after}: {:?}",
        remaining()
    );
}

#[tokio::test]
async fn timeout_kills_descendants_that_left_the_process_group() {
    let server = TestServer::with_config(CONFIG);
    let session = server.client().connect().await;
    let (detached, waited) = detach_arguments();
    let args = json!({ "detached": detached, "waited": waited });
    let result = call(&session, 1, "detach_hang", args).await;
    assert!(text(&result).contains("timed out"), "{result}");
    let (detached, waited) = (format!("sleep {detached}"), format!("sleep {waited}"));
    assert_no_process_remains(&[&detached, &waited], "the timeout").await;
    assert_no_zombie_remains(&server).await;
}

#[tokio::test]
async fn cancellation_kills_descendants_that_left_the_process_group() {
    let server = TestServer::with_config(CONFIG);
    let session = server.client().connect().await;
    let (detached, waited) = detach_arguments();
    let call_session = session.clone();
    let args =
        json!({ "name": "detach_wait", "arguments": { "detached": detached, "waited": waited } });
    let _call = tokio::spawn(async move {
        let _ = call_session.request(json!(5), "tools/call", args).await;
    });
    let (detached, waited) = (format!("sleep {detached}"), format!("sleep {waited}"));
    assert!(
        eventually(Duration::from_secs(10), || {
            processes_matching(&detached).len() == 1 && processes_matching(&waited).len() == 1
        })
        .await,
        "the command did not start"
    );
    session
        .notify(
            "notifications/cancelled",
            Some(json!({ "requestId": 5, "reason": "user pressed stop" })),
        )
        .await;
    assert_no_process_remains(&[&detached, &waited], "cancellation").await;
    assert_no_zombie_remains(&server).await;
}

#[tokio::test]
async fn a_finished_command_leaves_no_detached_descendant_and_returns_at_once() {
    let server = TestServer::with_config(CONFIG);
    let session = server.client().connect().await;
    let (detached, _) = detach_arguments();
    let started = std::time::Instant::now();
    let result = call(
        &session,
        1,
        "detach_and_exit",
        json!({ "detached": detached }),
    )
    .await;
    assert_eq!(text(&result), "done\n", "{result}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "a detached process holding the output pipes must not keep the call waiting"
    );
    let detached = format!("sleep {detached}");
    assert_no_process_remains(&[&detached], "the command exited").await;
    assert_no_zombie_remains(&server).await;
}

#[tokio::test]
async fn output_over_the_cap_stops_the_command() {
    let server = TestServer::with_config(CONFIG);
    let session = server.client().connect().await;
    let word = format!("flood{}", unique());
    let result = call(&session, 1, "flood", json!({ "word": word })).await;
    assert_eq!(result["isError"], true);
    assert!(text(&result).contains("exceeded 1000 bytes"), "{result}");
    assert!(
        text(&result).len() < 1300,
        "the output must be cut at the cap"
    );
    let needle = format!("yes {word}");
    assert!(
        eventually(Duration::from_secs(5), || processes_matching(&needle)
            .is_empty())
        .await
    );
}

#[tokio::test]
async fn each_stdout_line_becomes_a_progress_notification() {
    let server = TestServer::with_config(CONFIG);
    let session = server.client().connect().await;
    let reply = session
        .request(
            json!(1),
            "tools/call",
            json!({ "name": "lines", "arguments": {}, "_meta": { "progressToken": "p1" } }),
        )
        .await;
    let progress: Vec<&Value> = reply
        .messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    let messages: Vec<&str> = progress
        .iter()
        .filter_map(|m| m["params"]["message"].as_str())
        .collect();
    assert_eq!(messages, ["one", "two", "three"], "{reply:?}");
    let response = reply.response(&json!(1)).expect("response");
    assert_eq!(text(&response["result"]), "one\ntwo\nthree\n");
}

#[tokio::test]
async fn per_session_process_limit_refuses_extra_calls() {
    let config = format!(
        "{}\n",
        CONFIG.replace(
            "max_processes_per_session = 8",
            "max_processes_per_session = 1"
        )
    );
    let server = TestServer::with_config(&config);
    let session = server.client().connect().await;
    let seconds = format!("3000.{}", unique());
    let _call = start_long_call(&session, 1, &seconds).await;
    let refused = call(&session, 2, "say", json!({ "text": "x" })).await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(
        text(&refused).contains("max_processes_per_session"),
        "{refused}"
    );
    let other = server.client().connect().await;
    let fine = call(&other, 3, "say", json!({ "text": "x" })).await;
    assert_eq!(text(&fine), "x", "another session has its own budget");
    session.delete().await;
}
