//! File resources: inline and file contents, a directory behind a URI template, traversal
//! attempts, files that are not regular files (FIFOs, devices, folders), hidden files, and
//! `resources/updated` after an edit of a subscribed file.

mod common;

use std::time::Duration;

use common::{SseReader, TempDir, TestServer};
use serde_json::{Value, json};

struct Fixture {
    dir: TempDir,
    server: TestServer,
}

fn fixture() -> Fixture {
    let dir = TempDir::new("resources");
    dir.write("docs/intro.md", "# Intro\n");
    dir.write("docs/guide/setup.md", "# Setup\n");
    dir.write("docs/.hidden", "not listed");
    dir.write("secret.txt", "outside the root");
    std::fs::write(
        dir.path().join("docs/logo.png"),
        [0x89, b'P', b'N', b'G', 0, 1, 2],
    )
    .unwrap();
    std::os::unix::fs::symlink(
        dir.path().join("secret.txt"),
        dir.path().join("docs/escape.md"),
    )
    .unwrap();
    dir.write("notes.txt", "version 1");
    let config = r#"
[[resources]]
uri = "memo://greeting"
name = "greeting"
text = "hello"

[[resources]]
uri = "memo://pixel"
name = "pixel"
blob = "iVBORw0KGgo="
mime_type = "image/png"

[[resources]]
uri = "file:///notes.txt"
name = "notes"
file = "notes.txt"

[[resources]]
uri_template = "file:///docs/{+path}"
name = "docs"
description = "The documentation"
dir = "docs"
"#;
    let path = dir.write("config.toml", config);
    let server = TestServer::with_config_file(&path, &[]);
    Fixture { dir, server }
}

async fn read(session: &common::Session, uri: &str) -> Value {
    read_as(session, json!(1), uri).await
}

/// `resources/read` with request id `id`, for reads in flight together on one session.
async fn read_as(session: &common::Session, id: Value, uri: &str) -> Value {
    let reply = session
        .request(id.clone(), "resources/read", json!({ "uri": uri }))
        .await;
    reply.response(&id).cloned().expect("a response")
}

#[tokio::test]
async fn static_and_file_resources_read_and_list() {
    let f = fixture();
    let session = f.server.client().connect().await;
    let greeting = read(&session, "memo://greeting").await;
    assert_eq!(greeting["result"]["contents"][0]["text"], "hello");
    let pixel = read(&session, "memo://pixel").await;
    assert_eq!(pixel["result"]["contents"][0]["blob"], "iVBORw0KGgo=");
    let notes = read(&session, "file:///notes.txt").await;
    assert_eq!(notes["result"]["contents"][0]["text"], "version 1");
    assert_eq!(notes["result"]["contents"][0]["mimeType"], "text/plain");

    let list = session.call(json!(2), "resources/list", json!({})).await;
    let uris: Vec<&str> = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    for expected in [
        "memo://greeting",
        "file:///notes.txt",
        "file:///docs/intro.md",
        "file:///docs/guide/setup.md",
    ] {
        assert!(uris.contains(&expected), "{expected} missing from {uris:?}");
    }
    assert!(!uris.iter().any(|u| u.contains(".hidden")), "{uris:?}");
    let templates = session
        .call(json!(3), "resources/templates/list", json!({}))
        .await;
    assert_eq!(
        templates["resourceTemplates"][0]["uriTemplate"],
        "file:///docs/{+path}"
    );
    assert_eq!(
        templates["resourceTemplates"][0]["description"],
        "The documentation"
    );
}

#[tokio::test]
async fn directory_template_reads_files_with_mime_types() {
    let f = fixture();
    let session = f.server.client().connect().await;
    let setup = read(&session, "file:///docs/guide/setup.md").await;
    assert_eq!(setup["result"]["contents"][0]["text"], "# Setup\n");
    assert_eq!(setup["result"]["contents"][0]["mimeType"], "text/markdown");
    let logo = read(&session, "file:///docs/logo.png").await;
    assert_eq!(logo["result"]["contents"][0]["mimeType"], "image/png");
    assert!(logo["result"]["contents"][0]["blob"].is_string(), "{logo}");
    f.dir.write("docs/new.md", "created after start");
    let new = read(&session, "file:///docs/new.md").await;
    assert_eq!(
        new["result"]["contents"][0]["text"], "created after start",
        "the template serves files created later"
    );
    let missing = read(&session, "file:///docs/nope.md").await;
    assert_eq!(missing["error"]["code"], -32002, "{missing}");
}

#[tokio::test]
async fn traversal_attempts_are_refused() {
    let f = fixture();
    let session = f.server.client().connect().await;
    for uri in [
        "file:///docs/../secret.txt",
        "file:///docs/guide/../../secret.txt",
        "file:///docs/%2e%2e/secret.txt",
        "file:///docs/%2E%2E%2Fsecret.txt",
        "file:///docs/..%2fsecret.txt",
        "file:///docs//etc/passwd",
        "file:///docs/escape.md",
    ] {
        let reply = read(&session, uri).await;
        let code = reply["error"]["code"].as_i64();
        assert!(
            matches!(code, Some(-32602) | Some(-32002)),
            "{uri} must be refused, got {reply}"
        );
        assert!(
            !reply.to_string().contains("outside the root"),
            "{uri} leaked the file: {reply}"
        );
    }
}

#[tokio::test]
async fn subscribed_file_edit_sends_resources_updated() {
    let f = fixture();
    let session = f.server.client().connect().await;
    let other = f.server.client().connect().await;
    let mut stream = SseReader::new(session.get(None).await);
    // Both sessions listen; only the first subscribes.
    let mut other_stream = SseReader::new(other.get(None).await);
    session
        .call(
            json!(1),
            "resources/subscribe",
            json!({ "uri": "file:///notes.txt" }),
        )
        .await;
    session
        .call(
            json!(2),
            "resources/subscribe",
            json!({ "uri": "file:///docs/intro.md" }),
        )
        .await;
    // Let the watcher settle before the edit.
    tokio::time::sleep(Duration::from_millis(200)).await;
    f.dir.write("notes.txt", "version 2");
    let updated = next_update(&mut stream)
        .await
        .expect("resources/updated after the edit");
    assert_eq!(updated["params"]["uri"], "file:///notes.txt");
    let notes = read(&session, "file:///notes.txt").await;
    assert_eq!(notes["result"]["contents"][0]["text"], "version 2");

    f.dir.write("docs/intro.md", "# Intro, edited\n");
    let updated = next_update(&mut stream)
        .await
        .expect("resources/updated for the directory file");
    assert_eq!(updated["params"]["uri"], "file:///docs/intro.md");
    assert!(
        next_update(&mut other_stream).await.is_none(),
        "a session that did not subscribe gets nothing"
    );
}

async fn next_update(stream: &mut SseReader) -> Option<Value> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let (_, message) = stream.next_message(left).await?;
        if message["method"] == "notifications/resources/updated" {
            return Some(message);
        }
    }
}

/// A served folder holding what a hostile client aims at: a FIFO (whose plain open blocks
/// until a writer comes), a symlink to a device, a folder, and hidden files. `extra` is added
/// to the `dir` resource's table.
fn hostile_fixture(extra: &str) -> Fixture {
    let dir = TempDir::new("hostile");
    dir.write("docs/readme.md", "# Readme\n");
    dir.write("docs/.env", "SECRET=hunter2\n");
    dir.write("docs/.git/config", "[core]\n\tbare = false\n");
    dir.write("docs/guide/setup.md", "# Setup\n");
    dir.write("notes.txt", "version 1");
    nix::unistd::mkfifo(&dir.path().join("docs/pipe"), nix::sys::stat::Mode::S_IRWXU)
        .expect("mkfifo");
    std::os::unix::fs::symlink("/dev/zero", dir.path().join("docs/zero")).expect("symlink");
    std::os::unix::fs::symlink(".env", dir.path().join("docs/env-link.txt")).expect("symlink");
    let config = format!(
        r#"
[[resources]]
uri = "file:///notes.txt"
name = "notes"
file = "notes.txt"

[[resources]]
uri_template = "file:///dev/{{+path}}"
name = "devices"
dir = "/dev"
list = false

[[resources]]
uri_template = "file:///docs/{{+path}}"
name = "docs"
dir = "docs"
{extra}
"#
    );
    let path = dir.write("config.toml", &config);
    let server = TestServer::with_config_file(&path, &[]);
    Fixture { dir, server }
}

/// `resources/read` that must answer within `limit`: a read that hangs fails the test.
async fn read_within(session: &common::Session, uri: &str, limit: Duration) -> Value {
    tokio::time::timeout(limit, read(session, uri))
        .await
        .unwrap_or_else(|_| panic!("resources/read {uri} did not answer within {limit:?}"))
}

fn assert_refused(reply: &Value, uri: &str, why: &str) {
    let code = reply["error"]["code"].as_i64();
    assert!(
        matches!(code, Some(-32602) | Some(-32002)),
        "{uri} must be refused, got {reply}"
    );
    let message = reply["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(why), "{uri}: {message:?} lacks {why:?}");
}

/// Reads each of `uris` from a fresh hostile fixture: each must be refused for `why` (an
/// error, so no contents) within 5s.
async fn expect_refusal(uris: &[&str], why: &str) {
    let f = hostile_fixture("");
    let session = f.server.client().connect().await;
    for uri in uris {
        let reply = read_within(&session, uri, Duration::from_secs(5)).await;
        assert_refused(&reply, uri, why);
    }
}

#[tokio::test]
async fn fifo_in_served_folder_is_refused_at_once() {
    expect_refusal(&["file:///docs/pipe"], "is a FIFO, not a regular file").await;
}

#[tokio::test]
async fn file_resource_replaced_by_a_fifo_is_refused_at_once() {
    let f = hostile_fixture("");
    let notes = f.dir.path().join("notes.txt");
    std::fs::remove_file(&notes).unwrap();
    nix::unistd::mkfifo(&notes, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    let session = f.server.client().connect().await;
    let reply = read_within(&session, "file:///notes.txt", Duration::from_secs(5)).await;
    assert_refused(&reply, "file:///notes.txt", "not a regular file");
}

#[tokio::test]
async fn many_fifo_reads_leave_ordinary_reads_working() {
    let f = hostile_fixture("");
    // More than tokio's 512 blocking threads; per session at most `max_in_flight` (256).
    let sessions = [
        f.server.client().connect().await,
        f.server.client().connect().await,
        f.server.client().connect().await,
        f.server.client().connect().await,
    ];
    let mut attempts = tokio::task::JoinSet::new();
    for i in 0..600 {
        let session = sessions[i % sessions.len()].clone();
        attempts.spawn(async move {
            let read = read_as(&session, json!(i), "file:///docs/pipe");
            tokio::time::timeout(Duration::from_secs(20), read).await
        });
    }
    let session = f.server.client().connect().await;
    let readme = read_within(&session, "file:///docs/readme.md", Duration::from_secs(10)).await;
    assert_eq!(
        readme["result"]["contents"][0]["text"], "# Readme\n",
        "{readme}"
    );
    while let Some(reply) = attempts.join_next().await {
        let reply = reply.unwrap().expect("every FIFO read answers within 20s");
        assert_refused(&reply, "file:///docs/pipe", "not a regular file");
    }
}

#[tokio::test]
async fn symlink_to_a_device_is_refused() {
    expect_refusal(&["file:///docs/zero"], "outside the resource's directory").await;
}

#[tokio::test]
async fn device_in_served_folder_is_refused() {
    let devices = ["file:///dev/zero", "file:///dev/null"];
    expect_refusal(&devices, "is a character device, not a regular file").await;
}

#[tokio::test]
async fn folder_is_refused_as_a_resource() {
    expect_refusal(&["file:///docs/guide"], "is a folder, not a regular file").await;
}

#[tokio::test]
async fn hidden_files_are_refused_by_default() {
    expect_refusal(&["file:///docs/.env", "file:///docs/.git/config"], "hidden").await;
}

#[tokio::test]
async fn symlink_to_a_hidden_file_is_refused_by_default() {
    expect_refusal(&["file:///docs/env-link.txt"], "hidden").await;
}

#[tokio::test]
async fn hidden_files_are_served_and_listed_when_opted_in() {
    let f = hostile_fixture("hidden = true");
    let session = f.server.client().connect().await;
    let env = read_within(&session, "file:///docs/.env", Duration::from_secs(5)).await;
    assert_eq!(
        env["result"]["contents"][0]["text"], "SECRET=hunter2\n",
        "{env}"
    );
    let git = read_within(&session, "file:///docs/.git/config", Duration::from_secs(5)).await;
    assert_eq!(
        git["result"]["contents"][0]["text"],
        "[core]\n\tbare = false\n"
    );
    let uris = listed_uris(&session).await;
    for expected in ["file:///docs/.env", "file:///docs/.git/config"] {
        assert!(
            uris.iter().any(|u| u == expected),
            "{expected} missing from {uris:?}"
        );
    }
}

#[tokio::test]
async fn listing_leaves_out_hidden_files_and_non_regular_files_by_default() {
    let f = hostile_fixture("");
    let session = f.server.client().connect().await;
    let uris = listed_uris(&session).await;
    assert!(
        uris.iter().any(|u| u == "file:///docs/readme.md"),
        "{uris:?}"
    );
    assert!(
        uris.iter().any(|u| u == "file:///docs/guide/setup.md"),
        "{uris:?}"
    );
    for absent in [".env", ".git", "pipe", "zero", "env-link"] {
        assert!(
            !uris.iter().any(|u| u.contains(absent)),
            "{absent} listed: {uris:?}"
        );
    }
}

#[tokio::test]
async fn sigterm_exits_promptly_after_a_fifo_read() {
    let f = hostile_fixture("");
    let session = f.server.client().connect().await;
    // Whether or not this read answers, it must not hold the process open.
    let _ = tokio::time::timeout(Duration::from_secs(2), read(&session, "file:///docs/pipe")).await;
    let pid = f.server.pid();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    // An exited child stays a zombie (no command line) until the harness reaps it.
    let exited = common::eventually(Duration::from_secs(10), || {
        std::fs::read(format!("/proc/{pid}/cmdline")).map_or(true, |c| c.is_empty())
    })
    .await;
    assert!(exited, "mcp-actor did not exit within 10s of SIGTERM");
}

async fn listed_uris(session: &common::Session) -> Vec<String> {
    let list = tokio::time::timeout(
        Duration::from_secs(5),
        session.call(json!(2), "resources/list", json!({})),
    )
    .await
    .expect("resources/list answers");
    list["resources"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|r| r["uri"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}
