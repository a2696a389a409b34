//! What the cheaper echo path must keep: the body deadline still bounds a whole upload when
//! the usual body arms no timer, and a warning inside a request still names the request
//! when the log is at `warn` (its span's fields are formatted without `tracing_subscriber`'s
//! `Writer`). Over real HTTP against the binary, with a real child process for the warning.

mod common;

use std::time::{Duration, Instant};

use common::{BUILTIN_TOOLS_TOML, LATEST, TestServer};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Reads what the server sends until it closes, for at most `limit`.
async fn read_until_closed(
    tcp: &mut (impl AsyncReadExt + Unpin),
    limit: Duration,
) -> Option<String> {
    let mut reply = Vec::new();
    let mut buf = [0u8; 4096];
    tokio::time::timeout(limit, async {
        loop {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => reply.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .ok()?;
    Some(String::from_utf8_lossy(&reply).into_owned())
}

#[tokio::test]
async fn a_body_sent_in_prompt_chunks_still_ends_at_body_timeout() {
    let server = TestServer::with_config(&format!(
        "[http]\nbody_timeout = \"1s\"\n{BUILTIN_TOOLS_TOML}"
    ));
    let tcp = TcpStream::connect(&server.addr).await.expect("connect");
    let (mut reader, mut writer) = tcp.into_split();
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n",
        server.path()
    );
    writer.write_all(head.as_bytes()).await.expect("head");
    let started = Instant::now();
    // A one-byte chunk every 200 ms: no read waits long, but the whole body would take 4 s.
    let sender = tokio::spawn(async move {
        for _ in 0..20 {
            if writer.write_all(b"1\r\n \r\n").await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    let text = read_until_closed(&mut reader, Duration::from_secs(6))
        .await
        .expect("the trickled upload was held open");
    let elapsed = started.elapsed();
    sender.abort();
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("http.body_timeout"), "{text}");
    assert!(
        elapsed < Duration::from_secs(3),
        "the deadline counted per chunk, not for the body: closed after {elapsed:?}"
    );
}

#[tokio::test]
async fn a_warning_inside_a_request_names_the_request_at_warn_level() {
    let log = std::env::temp_dir().join(format!("mcp-actor-echo-floor-{}.log", common::unique()));
    let config = format!(
        "[[tools]]\nname = \"stall\"\ndescription = \"Never answers in time.\"\n\
         command = [\"sleep\", \"30\"]\ntimeout = \"300ms\"\n{BUILTIN_TOOLS_TOML}"
    );
    let server = TestServer::with_config_logging_to(&config, &log);
    let session = server.client().initialize(LATEST, json!({})).await;
    let reply = session
        .request(
            json!("req-7"),
            "tools/call",
            json!({ "name": "stall", "arguments": {} }),
        )
        .await;
    assert_eq!(reply.status, 200, "{reply:?}");
    drop(server);
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    let line = text
        .lines()
        .find(|l| l.contains("command timed out"))
        .unwrap_or_else(|| panic!("no timeout warning in the log:\n{text}"));
    for field in [
        "method=\"tools/call\"",
        "target=\"stall\"",
        "req-7",
        &format!("version=\"{LATEST}\""),
    ] {
        assert!(line.contains(field), "{field} missing from: {line}");
    }
}
