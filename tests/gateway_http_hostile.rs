//! The gateway's Streamable HTTP transport against a hostile upstream
//! (`tests/upstreams/hostile_http.py`, standard library only): a call that never answers,
//! an SSE line that never ends (or grows slowly past its call's timeout), GET streams held
//! open, a log on one caller's POST stream while another caller's call is in flight, an
//! elicitation on a shared GET stream, and a JSON reply past the size limit.
//!
//! What is checked: calls to one shared connection run side by side; what the upstream
//! sends is bounded by `gateway.max_message_bytes` as it is read, and a reply past it fails
//! its call at once; a call that ends stops being read; a connection's streams end with
//! it; and a message on a POST's stream reaches that POST's caller only, while a request on
//! a shared GET stream reaches no caller.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Session, TestServer, eventually, rss_kib};
use serde_json::{Value, json};

const LIMIT: Duration = Duration::from_secs(15);

/// The hostile upstream, killed on drop.
struct Hostile {
    child: Child,
    port: u16,
}

impl Hostile {
    fn start() -> Hostile {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/upstreams/hostile_http.py"
        );
        let port_file = std::env::temp_dir().join(format!("hostile-http-{}", common::unique()));
        let child = Command::new("python3")
            .arg(script)
            .arg(&port_file)
            .stdout(Stdio::null())
            .spawn()
            .expect("start python3 tests/upstreams/hostile_http.py");
        let deadline = Instant::now() + Duration::from_secs(10);
        let port = loop {
            if let Some(port) = std::fs::read_to_string(&port_file)
                .ok()
                .and_then(|p| p.trim().parse().ok())
            {
                break port;
            }
            assert!(
                Instant::now() < deadline,
                "the hostile upstream did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let _ = std::fs::remove_file(&port_file);
        Hostile { child, port }
    }

    /// mcp-actor with this upstream as `h`, in `scope`, with a short `call_timeout`.
    fn gateway(&self, scope: &str) -> TestServer {
        TestServer::with_config(&format!(
            "[[upstreams]]\nname = \"h\"\nurl = \"http://127.0.0.1:{}/mcp\"\nscope = \"{scope}\"\n\
             call_timeout = \"4s\"\nstartup_timeout = \"5s\"\n",
            self.port
        ))
    }

    /// Sockets from another process to this upstream that are established now.
    fn established_to(&self) -> usize {
        let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
        let port = format!("{:04X}", self.port);
        table
            .lines()
            .skip(1)
            .filter(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                fields.len() > 3
                    && fields[3] == "01"
                    && fields[2].rsplit(':').next() == Some(port.as_str())
            })
            .count()
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn session(server: &TestServer) -> Session {
    server.bounded_client(LIMIT).connect().await
}

/// Calls upstream tool `name`: every message of the reply, and how long it took.
async fn call(session: &Session, id: i64, name: &str, arguments: Value) -> (Vec<Value>, Duration) {
    let started = Instant::now();
    let params = json!({ "name": format!("h__{name}"), "arguments": arguments });
    let reply = session.request(json!(id), "tools/call", params).await;
    (reply.messages, started.elapsed())
}

/// The text of the result of request `id` among `messages`, or its error as text.
fn outcome(messages: &[Value], id: i64) -> String {
    messages
        .iter()
        .find(|m| m["id"] == json!(id))
        .map(|m| match m["result"]["content"][0]["text"].as_str() {
            Some(text) => text.to_string(),
            None => m.to_string(),
        })
        .unwrap_or_else(|| format!("no response in {messages:?}"))
}

#[tokio::test]
async fn a_fast_call_is_answered_while_another_call_to_the_shared_upstream_hangs() {
    let upstream = Hostile::start();
    let server = upstream.gateway("shared");
    let (a, b) = (session(&server).await, session(&server).await);
    let hung = tokio::spawn(async move { call(&a, 1, "hang", json!({})).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (messages, took) = call(&b, 2, "fast", json!({})).await;
    eprintln!("fast call behind a hung one: {took:?}");
    assert_eq!(outcome(&messages, 2), "fast", "{messages:?}");
    assert!(took < Duration::from_secs(1), "the fast call took {took:?}");
    // The hung call ends at call_timeout, and the connection still serves.
    let (messages, took) = hung.await.expect("hung call");
    assert!(took < Duration::from_secs(8), "the hung call took {took:?}");
    assert!(
        outcome(&messages, 1).contains("did not answer"),
        "{messages:?}"
    );
    let (messages, _) = call(&b, 3, "fast", json!({})).await;
    assert_eq!(outcome(&messages, 3), "fast", "{messages:?}");
}

#[tokio::test]
async fn an_unterminated_sse_line_is_cut_at_max_message_bytes() {
    let upstream = Hostile::start();
    let server = upstream.gateway("shared");
    let a = session(&server).await;
    let start = rss_kib(server.pid());
    let sampling = tokio::spawn({
        let pid = server.pid();
        async move {
            let mut peak = 0;
            for _ in 0..80 {
                peak = peak.max(rss_kib(pid));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            peak
        }
    });
    let (messages, took) = call(&a, 1, "huge_sse", json!({})).await;
    let peak = sampling.await.expect("sampling");
    let grew_mib = peak.saturating_sub(start) / 1024;
    eprintln!(
        "512 MiB SSE line: RSS {start} KiB -> peak {peak} KiB (+{grew_mib} MiB), call took {took:?}"
    );
    assert!(grew_mib < 64, "RSS grew by {grew_mib} MiB");
    let text = outcome(&messages, 1);
    assert!(text.contains("gateway.max_message_bytes"), "{text}");
    assert!(took < Duration::from_secs(3), "the call took {took:?}");
    assert_eq!(message_limit_hits(&server).await, 1.0);
}

#[tokio::test]
async fn a_timed_out_call_stops_reading_its_stream() {
    let upstream = Hostile::start();
    let server = upstream.gateway("shared");
    let a = session(&server).await;
    // The shared connection's GET stream stays open throughout.
    let (messages, _) = call(&a, 1, "fast", json!({})).await;
    assert_eq!(outcome(&messages, 1), "fast", "{messages:?}");
    assert!(eventually(Duration::from_secs(5), || upstream.established_to() == 1).await);
    let (messages, took) = call(&a, 2, "trickle", json!({})).await;
    assert!(
        outcome(&messages, 2).contains("did not answer"),
        "{messages:?}"
    );
    let closed = eventually(Duration::from_secs(2), || upstream.established_to() == 1).await;
    eprintln!(
        "sockets to the upstream 2 s after a trickling call timed out at {took:?}: {} (1 is the GET stream)",
        upstream.established_to()
    );
    assert!(closed, "the timed-out call's stream is still read");
}

#[tokio::test]
async fn get_streams_to_the_upstream_end_with_their_sessions() {
    let upstream = Hostile::start();
    let server = upstream.gateway("session");
    let mut sessions = Vec::new();
    for id in 0..10 {
        let s = session(&server).await;
        let (messages, _) = call(&s, id, "fast", json!({})).await;
        assert_eq!(outcome(&messages, id), "fast", "{messages:?}");
        sessions.push(s);
    }
    assert!(
        eventually(Duration::from_secs(5), || upstream.established_to() >= 10).await,
        "the GET streams never opened: {}",
        upstream.established_to()
    );
    for s in &sessions {
        s.delete().await;
    }
    let ended = eventually(Duration::from_secs(5), || upstream.established_to() == 0).await;
    eprintln!(
        "sockets to the upstream 5 s after deleting 10 sessions: {}",
        upstream.established_to()
    );
    assert!(ended, "{} sockets still open", upstream.established_to());
}

#[tokio::test]
async fn a_log_on_one_callers_post_stream_never_reaches_another_caller() {
    let upstream = Hostile::start();
    let server = upstream.gateway("shared");
    let (a, b) = (session(&server).await, session(&server).await);
    let logging =
        tokio::spawn(async move { call(&a, 1, "log_then_answer", json!({ "who": "A" })).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (b_messages, _) = call(&b, 2, "slow", json!({})).await;
    let (a_messages, _) = logging.await.expect("A's call");
    let leaked = b_messages
        .iter()
        .any(|m| m.to_string().contains("private to A"));
    eprintln!("B received A's log: {leaked}");
    assert!(!leaked, "B got A's log: {b_messages:?}");
    assert_eq!(outcome(&a_messages, 1), "done for A");
    assert!(
        a_messages.iter().any(
            |m| m["method"] == "notifications/message" && m["params"]["data"] == "private to A"
        ),
        "A did not get its own log: {a_messages:?}"
    );
}

#[tokio::test]
async fn a_request_on_a_shared_get_stream_is_refused_not_relayed_to_a_caller() {
    let upstream = Hostile::start();
    let server = upstream.gateway("shared");
    let a = session(&server).await;
    let (messages, _) = call(&a, 1, "fast", json!({})).await;
    assert_eq!(outcome(&messages, 1), "fast", "{messages:?}");
    assert!(eventually(Duration::from_secs(5), || upstream.established_to() == 1).await);
    let (messages, took) = call(&a, 2, "elicit_on_get", json!({})).await;
    let relayed = messages.iter().any(|m| m["method"] == "elicitation/create");
    let answer = outcome(&messages, 2);
    eprintln!(
        "elicitation on the shared GET stream relayed to a caller: {relayed}; upstream got {answer} after {took:?}"
    );
    assert!(!relayed, "{messages:?}");
    assert!(
        answer.contains("-32600") && answer.contains("cannot tell whose"),
        "{answer}"
    );
}

#[tokio::test]
async fn an_oversized_json_reply_fails_the_call_at_once_naming_the_limit() {
    let upstream = Hostile::start();
    let server = upstream.gateway("shared");
    let a = session(&server).await;
    let (messages, took) = call(&a, 1, "big_json", json!({ "bytes": 20 << 20 })).await;
    let text = outcome(&messages, 1);
    eprintln!("oversized JSON reply: error after {took:?}: {text}");
    assert!(text.contains("gateway.max_message_bytes"), "{text}");
    assert!(took < Duration::from_secs(2), "the call took {took:?}");
    assert_eq!(message_limit_hits(&server).await, 1.0);
}

#[tokio::test]
async fn a_json_reply_in_many_chunks_reaches_the_caller_whole() {
    // 3 MiB cannot come in one read: the body is joined from its chunks, not cut at the first.
    let upstream = Hostile::start();
    let server = upstream.gateway("shared");
    let a = session(&server).await;
    let (messages, _) = call(&a, 1, "big_json", json!({ "bytes": 3 << 20 })).await;
    let text = outcome(&messages, 1);
    assert_eq!(text.len(), 3 << 20, "{}", &text[..text.len().min(300)]);
    assert!(text.bytes().all(|b| b == b'y'));
}

/// `mcp_limit_rejections_total{limit="upstream_max_message_bytes"}`, from the admin listener.
async fn message_limit_hits(server: &TestServer) -> f64 {
    let text = reqwest::get(format!("{}/metrics", server.admin_url))
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("metrics text");
    text.lines()
        .find(|l| {
            l.starts_with("mcp_limit_rejections_total{")
                && l.contains("limit=\"upstream_max_message_bytes\"")
        })
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0.0)
}
