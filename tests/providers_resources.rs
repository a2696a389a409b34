//! File resources: inline and file contents, a directory behind a URI template, traversal
//! attempts, and `resources/updated` after an edit of a subscribed file.

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
    let reply = session
        .request(json!(1), "resources/read", json!({ "uri": uri }))
        .await;
    reply.response(&json!(1)).cloned().expect("a response")
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
