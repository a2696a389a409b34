//! Hot reload of the configuration file: on change (`[reload] watch`) and on SIGHUP.

mod common;

use std::time::Duration;

use common::{Session, SseReader, TempDir, TestServer};
use serde_json::{Value, json};

fn config(watch: bool, extra_tools: &str) -> String {
    format!(
        r#"
[reload]
watch = {watch}
debounce = "100ms"

[[tools]]
name = "first"
command = ["echo", "first"]

[[tools]]
name = "slow"
description = "old slow"
command = ["sh", "-c", "sleep 1; echo old"]
{extra_tools}
"#
    )
}

const SECOND: &str = r#"
[[tools]]
name = "second"
command = ["echo", "second"]
"#;

async fn tool_names(session: &Session) -> Vec<String> {
    let list = session.call(json!("list"), "tools/list", json!({})).await;
    list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect()
}

async fn next_notification(stream: &mut SseReader, method: &str, wait: Duration) -> Option<Value> {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let (_, message) = stream.next_message(left).await?;
        if message["method"] == method {
            return Some(message);
        }
    }
}

#[tokio::test]
async fn file_change_adds_a_tool_for_every_session_and_a_broken_edit_is_rejected() {
    let dir = TempDir::new("reload");
    let path = dir.write("config.toml", &config(true, ""));
    let server = TestServer::with_config_file(&path, &[]);
    let a = server.client().connect().await;
    let b = server.client().connect().await;
    let mut a_stream = SseReader::new(a.get(None).await);
    let mut b_stream = SseReader::new(b.get(None).await);
    assert_eq!(tool_names(&a).await, ["first", "slow"]);
    tokio::time::sleep(Duration::from_millis(300)).await;

    std::fs::write(&path, config(true, SECOND)).unwrap();
    for stream in [&mut a_stream, &mut b_stream] {
        next_notification(
            stream,
            "notifications/tools/list_changed",
            Duration::from_secs(5),
        )
        .await
        .expect("every session gets tools/list_changed");
    }
    for session in [&a, &b] {
        assert_eq!(tool_names(session).await, ["first", "slow", "second"]);
        assert_eq!(
            session.call_tool_text(json!(1), "second", json!({})).await,
            "second\n"
        );
    }

    // A broken edit: the old configuration stays, and nothing is announced.
    std::fs::write(
        &path,
        config(
            true,
            "[[tools]]\nname = \"broken\"\ncommand = [\"echo\"]\ncolour = \"red\"\n",
        ),
    )
    .unwrap();
    assert!(
        next_notification(
            &mut a_stream,
            "notifications/tools/list_changed",
            Duration::from_secs(1)
        )
        .await
        .is_none(),
        "a rejected configuration changes nothing"
    );
    assert_eq!(tool_names(&a).await, ["first", "slow", "second"]);
    assert_eq!(
        a.call_tool_text(json!(2), "first", json!({})).await,
        "first\n"
    );
    assert_eq!(
        b.call_tool_text(json!(3), "second", json!({})).await,
        "second\n"
    );
}

#[tokio::test]
async fn sighup_reloads_and_a_running_call_finishes_on_its_old_tool() {
    let dir = TempDir::new("reload-hup");
    let path = dir.write("config.toml", &config(false, ""));
    let server = TestServer::with_config_file(&path, &[]);
    let session = server.client().connect().await;
    let mut stream = SseReader::new(session.get(None).await);

    let running = {
        let session = session.clone();
        tokio::spawn(async move { session.call_tool_text(json!(9), "slow", json!({})).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let new_config = config(false, SECOND).replace(
        "description = \"old slow\"\ncommand = [\"sh\", \"-c\", \"sleep 1; echo old\"]",
        "description = \"new slow\"\ncommand = [\"echo\", \"new\"]",
    );
    std::fs::write(&path, new_config).unwrap();
    let pid = nix::unistd::Pid::from_raw(server.pid() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).unwrap();

    next_notification(
        &mut stream,
        "notifications/tools/list_changed",
        Duration::from_secs(5),
    )
    .await
    .expect("tools/list_changed after SIGHUP");
    assert_eq!(
        running.await.unwrap(),
        "old\n",
        "the call in flight keeps the tool it started with"
    );
    assert_eq!(
        session.call_tool_text(json!(10), "slow", json!({})).await,
        "new\n"
    );
    assert!(tool_names(&session).await.contains(&"second".to_string()));
}

#[test]
fn check_locates_errors_in_the_third_tools_table() {
    let dir = TempDir::new("reload-check");
    let path = dir.write(
        "bad.toml",
        "[[tools]]\nbuiltin = \"echo\"\n\n[[tools]]\nname = \"a\"\ncommand = [\"echo\"]\n\n[[tools]]\nname = \"b\"\ncommand = [\"echo\", \"{oops\"]\n",
    );
    let (status, _, stderr) = common::run_check(&path, &[]);
    assert!(!status.success());
    assert!(
        stderr.contains("bad.toml:10:1: tools[2].command:"),
        "{stderr}"
    );
    assert!(stderr.contains("unclosed"), "{stderr}");
}
