//! The audit log (`[audit]`) of the real binary: the lines of a known workload in both
//! eras, field by field; secrets that reach neither the file nor the text log; and a
//! logrotate move plus SIGHUP that loses no line.

mod common;

use std::path::Path;
use std::time::Duration;

use common::modern::{Modern, client_of};
use common::{LATEST, TempDir, TestServer};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(10);
const SECRET: &str = "hunter2-never-logged";
const KEY_SECRET: &str = "sk-live-key-never-logged";

/// A configuration with an audit log at `log`: `login` marks `password` writeOnly,
/// `api_key` is redacted by name, `fails` is a tool error.
fn config(log: &Path) -> String {
    format!(
        r#"
[audit]
path = "{}"
redact = ["api_key"]

[[tools]]
builtin = "echo"

[[tools]]
name = "login"
command = ["echo", "{{user}}"]
input_schema = {{ type = "object", properties = {{ user = {{ type = "string" }}, password = {{ type = "string", writeOnly = true }}, api_key = {{ type = "string" }} }}, required = ["user"] }}

[[tools]]
name = "fails"
command = ["false"]
input_schema = {{ type = "object" }}

[[resources]]
uri = "memo://note"
name = "note"
text = "hello"

[[prompts]]
name = "greet"
arguments = [{{ name = "who" }}]
template = "Hello {{{{ who }}}}"
"#,
        log.display()
    )
}

/// The lines of `path`, once it has `count` (waiting up to [`WAIT`]).
async fn lines(path: &Path, count: usize) -> Vec<Value> {
    let read = || {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("each audit line is JSON"))
            .collect::<Vec<_>>()
    };
    common::eventually(WAIT, || read().len() >= count).await;
    read()
}

/// Asserts `line`'s fields, `time` and `duration_ms` by type, the rest exactly.
fn assert_line(line: &Value, expected: Value) {
    let object = line.as_object().expect("an object");
    let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "arguments",
            "duration_ms",
            "method",
            "name",
            "node",
            "outcome",
            "principal",
            "session",
            "time",
            "trace_id"
        ],
        "{line}"
    );
    let time = line["time"].as_str().expect("time is a string");
    assert!(
        time.len() >= 20 && time.ends_with('Z'),
        "RFC 3339 UTC: {time}"
    );
    assert!(
        line["duration_ms"].as_f64().is_some_and(|d| d >= 0.0),
        "{line}"
    );
    for (key, value) in expected.as_object().expect("expected fields") {
        assert_eq!(&line[key], value, "field {key} of {line}");
    }
}

#[tokio::test]
async fn the_audit_lines_of_a_known_workload_match_field_by_field() {
    let dir = TempDir::new("audit-workload");
    let log = dir.path().join("audit.log");
    let server = TestServer::with_config(&config(&log));
    let session = server.client().connect().await;
    let trace = "0af7651916cd43dd8448eb211c80319c";
    let echo = json!({ "name": "echo", "arguments": { "text": "hi" },
                       "_meta": { "traceparent": format!("00-{trace}-b7ad6b7169203331-01") } });
    // `_meta.traceparent` wins over the header; the header serves when `_meta` has none.
    let header = "0123456789abcdef0123456789abcdef";
    let header_value = format!("00-{header}-b7ad6b7169203331-01");
    let traced = |body: Value| {
        let extra = [
            ("mcp-session-id", session.id.as_str()),
            ("mcp-protocol-version", session.version.as_str()),
            ("traceparent", header_value.as_str()),
        ];
        let client = session.client.clone();
        async move {
            common::read_reply(client.post_raw(&body, &extra).await)
                .await
                .status
        }
    };
    let request = |id: i64, params: Value| json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params });
    assert_eq!(traced(request(1, echo)).await, reqwest::StatusCode::OK);
    let fails = request(2, json!({ "name": "fails", "arguments": {} }));
    assert_eq!(traced(fails).await, reqwest::StatusCode::OK);
    let unknown = session
        .request(
            json!(3),
            "tools/call",
            json!({ "name": "nope", "arguments": {} }),
        )
        .await;
    let code = unknown.response(&json!(3)).expect("a response")["error"]["code"].clone();
    assert!(
        code.is_i64(),
        "an unknown tool is a JSON-RPC error: {unknown:?}"
    );
    session
        .call(
            json!(4),
            "prompts/get",
            json!({ "name": "greet", "arguments": { "who": "Ann" } }),
        )
        .await;
    session
        .call(json!(5), "resources/read", json!({ "uri": "memo://note" }))
        .await;
    session.call(json!(6), "tools/list", json!({})).await;
    let modern = Modern::call(7, "echo", json!({ "text": "stateless" }))
        .header("traceparent", &header_value);
    modern.result(&client_of(&server)).await;

    let lines = lines(&log, 6).await;
    assert_eq!(
        lines.len(),
        6,
        "one line per audited call, none for tools/list: {lines:#?}"
    );
    let sid = Value::from(session.id.clone());
    let common = |method: &str, name: &str, arguments: Value, outcome: Value, trace_id: Value| {
        json!({ "node": "", "principal": "anonymous", "session": sid, "method": method,
                "name": name, "arguments": arguments, "outcome": outcome, "trace_id": trace_id })
    };
    assert_line(
        &lines[0],
        common(
            "tools/call",
            "echo",
            json!({ "text": "hi" }),
            json!("ok"),
            json!(trace),
        ),
    );
    assert_line(
        &lines[1],
        common(
            "tools/call",
            "fails",
            json!({}),
            json!("tool_error"),
            json!(header),
        ),
    );
    assert_line(
        &lines[2],
        common("tools/call", "nope", json!({}), code, Value::Null),
    );
    assert_line(
        &lines[3],
        common(
            "prompts/get",
            "greet",
            json!({ "who": "Ann" }),
            json!("ok"),
            Value::Null,
        ),
    );
    assert_line(
        &lines[4],
        common(
            "resources/read",
            "memo://note",
            Value::Null,
            json!("ok"),
            Value::Null,
        ),
    );
    let mut stateless = common(
        "tools/call",
        "echo",
        json!({ "text": "stateless" }),
        json!("ok"),
        json!(header),
    );
    stateless["session"] = Value::Null;
    assert_line(&lines[5], stateless);
}

#[tokio::test]
async fn a_write_only_argument_reaches_neither_the_audit_file_nor_the_log() {
    let dir = TempDir::new("audit-secret");
    let log = dir.path().join("audit.log");
    let stderr = dir.path().join("stderr.log");
    let server = TestServer::with_config_logging_to(&config(&log), &stderr);
    let session = server.client().connect().await;
    let arguments = json!({ "user": "ann", "password": SECRET, "api_key": KEY_SECRET });
    session
        .call(
            json!(1),
            "tools/call",
            json!({ "name": "login", "arguments": arguments }),
        )
        .await;
    let stateless = Modern::call(
        2,
        "login",
        json!({ "user": "bob", "password": SECRET, "api_key": KEY_SECRET }),
    );
    stateless.result(&client_of(&server)).await;
    let lines = lines(&log, 2).await;
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert_eq!(
        lines[0]["arguments"],
        json!({ "user": "ann", "password": "[redacted]", "api_key": "[redacted]" })
    );
    assert_eq!(lines[1]["arguments"]["password"], "[redacted]");
    drop(server);
    let file = std::fs::read_to_string(&log).expect("audit file");
    let text_log = std::fs::read_to_string(&stderr).expect("stderr log");
    for secret in [SECRET, KEY_SECRET] {
        assert!(
            !file.contains(secret),
            "the audit file holds {secret}: {file}"
        );
        assert!(
            !text_log.contains(secret),
            "the text log holds {secret}: {text_log}"
        );
    }
}

#[tokio::test]
async fn logrotate_moving_the_file_then_sighup_loses_no_line() {
    const N: usize = 25;
    let dir = TempDir::new("audit-rotate");
    let log = dir.path().join("audit.log");
    let rotated = dir.path().join("audit.log.1");
    let server = TestServer::with_config(&config(&log));
    let session = server.client().initialize(LATEST, json!({})).await;
    for i in 0..N {
        session
            .call(
                json!(i),
                "tools/call",
                json!({ "name": "echo", "arguments": { "text": format!("before {i}") } }),
            )
            .await;
    }
    assert_eq!(lines(&log, N).await.len(), N);
    std::fs::rename(&log, &rotated).expect("mv, as logrotate does");
    server.signal(nix::sys::signal::Signal::SIGHUP);
    assert!(
        common::eventually(WAIT, || log.exists()).await,
        "SIGHUP reopens the audit log at its path"
    );
    for i in 0..N {
        session
            .call(
                json!(N + i),
                "tools/call",
                json!({ "name": "echo", "arguments": { "text": format!("after {i}") } }),
            )
            .await;
    }
    let (old, new) = (lines(&rotated, N).await, lines(&log, N).await);
    let texts = |lines: &[Value]| -> Vec<String> {
        lines
            .iter()
            .map(|l| l["arguments"]["text"].as_str().unwrap_or("?").to_string())
            .collect()
    };
    assert_eq!(
        texts(&old),
        (0..N).map(|i| format!("before {i}")).collect::<Vec<_>>()
    );
    assert_eq!(
        texts(&new),
        (0..N).map(|i| format!("after {i}")).collect::<Vec<_>>()
    );
}

/// The value of the unlabelled counter `name` on the admin listener's `/metrics`.
async fn counter(server: &TestServer, name: &str) -> f64 {
    let text = reqwest::get(format!("{}/metrics", server.admin_url))
        .await
        .expect("scrape")
        .text()
        .await
        .expect("metrics text");
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} missing from /metrics"))
}

#[tokio::test]
async fn a_stalled_audit_reader_drops_and_counts_lines_and_never_blocks_a_call() {
    use std::os::unix::fs::OpenOptionsExt;
    const CALLS: usize = 300;
    let dir = TempDir::new("audit-stalled");
    let fifo = dir.path().join("audit.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    // A reader that never reads: the pipe fills (64 KiB), then the writer stalls on it.
    let _reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(&fifo)
        .expect("open the FIFO's read end");
    let toml = config(&fifo).replace("redact = [\"api_key\"]", "redact = []\nqueue = 4");
    let server = TestServer::with_config(&toml);
    let session = server.client().initialize(LATEST, json!({})).await;
    let text = "x".repeat(1024);
    let started = std::time::Instant::now();
    for i in 0..CALLS {
        let params = json!({ "name": "echo", "arguments": { "text": text } });
        session.call(json!(i), "tools/call", params).await;
    }
    let elapsed = started.elapsed();
    let dropped = counter(&server, "mcp_audit_dropped_total").await;
    assert!(
        dropped >= 200.0,
        "about CALLS - 64 KiB/1 KiB - queue lines dropped, not {dropped}"
    );
    assert!(
        elapsed < Duration::from_secs(15),
        "{CALLS} calls took {elapsed:?}"
    );
}
