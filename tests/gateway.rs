//! The gateway (`[[upstreams]]`) against real upstream servers over stdio:
//! `@modelcontextprotocol/server-everything` (npm), `mcp-server-time` (PyPI) and a small
//! standard-library server (`tests/upstreams/fixture.py`) whose tools crash, wait and report
//! the cancellations they saw. `scripts/upstreams.sh` installs the pinned servers.
//!
//! What is checked: names and calls are namespaced; progress, logs, elicitation and sampling
//! travel between upstream and client (a session, and a 2026-07-28 client through
//! `input_required`); cancellation reaches the upstream; a crash is an `isError` with the
//! upstream's exit status (its stderr stays in the log) and the next call restarts it;
//! sessions get processes of their own; and no process outlives its session or the server,
//! however they end.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::modern::{Modern, client_of, expect_result, request_state, single_input_request};
use common::{SseReader, TestServer, eventually, processes_matching, run_binary, unique};
use reqwest::StatusCode;
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(20);

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The path of an installed upstream, or a failure saying how to install it.
fn installed(relative: &str) -> String {
    let path = repo().join(relative);
    assert!(
        path.exists(),
        "{} is missing: run scripts/upstreams.sh",
        path.display()
    );
    path.display().to_string()
}

fn everything() -> String {
    installed("tests/upstreams/node_modules/.bin/mcp-server-everything")
}

fn time_server() -> String {
    installed(".tools/upstreams-py/bin/mcp-server-time")
}

/// A server whose one upstream is server-everything, as `every`.
fn serving_everything() -> TestServer {
    TestServer::with_config(&format!(
        "[[upstreams]]\nname = \"every\"\ncommand = [\"{}\"]\n",
        everything()
    ))
}

/// `[[upstreams]]` running the fixture, its processes marked with `marker`.
fn fixture_upstream(name: &str, marker: &str, extra: &str) -> String {
    let script = installed("tests/upstreams/fixture.py");
    format!(
        "[[upstreams]]\nname = \"{name}\"\ncommand = [\"python3\", \"{script}\", \"{marker}\"]\n{extra}\n"
    )
}

async fn tool_names(session: &common::Session) -> Vec<String> {
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = cursor.map_or(json!({}), |c| json!({ "cursor": c }));
        let page = session.call(json!("list"), "tools/list", params).await;
        for tool in page["tools"].as_array().expect("tools") {
            names.push(tool["name"].as_str().expect("name").to_string());
        }
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => return names,
        }
    }
}

/// The next message of `stream` that `wanted` accepts; the test fails if none comes in time.
async fn next_where(stream: &mut SseReader, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
    loop {
        let (_, message) = stream
            .next_message(WAIT)
            .await
            .unwrap_or_else(|| panic!("no {what} within {WAIT:?}"));
        if wanted(&message) {
            return message;
        }
    }
}

fn call(id: i64, name: &str, arguments: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": name, "arguments": arguments } })
}

#[tokio::test]
async fn upstream_tools_are_listed_and_called_under_their_prefix() {
    let server = TestServer::with_config(&format!(
        "[[upstreams]]\nname = \"every\"\ncommand = [\"{}\"]\ntools = {{ deny = [\"get-env\"] }}\n\
         [[upstreams]]\nname = \"clock\"\nprefix = \"time\"\ncommand = [\"{}\", \"--local-timezone\", \"UTC\"]\n",
        everything(),
        time_server()
    ));
    let session = server.client().connect().await;
    let names = tool_names(&session).await;
    for expected in ["every__echo", "every__get-sum", "time__get_current_time"] {
        assert!(
            names.contains(&expected.to_string()),
            "{expected} in {names:?}"
        );
    }
    assert!(
        !names.contains(&"every__get-env".to_string()),
        "denied: {names:?}"
    );
    assert!(
        !names
            .iter()
            .any(|n| n == "get-sum" || n == "get_current_time"),
        "no unprefixed upstream name: {names:?}"
    );

    let echoed = session
        .call_tool_text(json!(1), "every__echo", json!({ "message": "through" }))
        .await;
    assert_eq!(echoed, "Echo: through");
    let time = session
        .call(
            json!(2),
            "tools/call",
            json!({ "name": "time__get_current_time", "arguments": { "timezone": "UTC" } }),
        )
        .await;
    // Fields the gateway does not model pass through whole.
    assert_eq!(time["structuredContent"]["timezone"], "UTC", "{time}");
    // A call the upstream refuses is an error result naming the upstream.
    let refused = session
        .call(
            json!(3),
            "tools/call",
            json!({ "name": "every__get-sum", "arguments": { "a": "x" } }),
        )
        .await;
    assert_eq!(refused["isError"], true, "{refused}");
}

#[tokio::test]
async fn progress_and_logs_from_the_upstream_reach_the_calls_stream() {
    let server = serving_everything();
    let session = server.client().connect().await;
    let mut body = call(
        1,
        "every__trigger-long-running-operation",
        json!({ "duration": 1, "steps": 3 }),
    );
    body["params"]["_meta"] = json!({ "progressToken": "mine" });
    let reply = session.post(&body).await;
    let progress: Vec<&Value> = reply
        .messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 3, "{reply:?}");
    assert!(
        progress
            .iter()
            .all(|p| p["params"]["progressToken"] == "mine"),
        "{progress:?}"
    );
    assert!(reply.response(&json!(1)).is_some(), "{reply:?}");

    // Logging the upstream starts in a call goes out on that call's stream.
    let reply = session
        .post(&call(2, "every__toggle-simulated-logging", json!({})))
        .await;
    assert!(
        reply
            .messages
            .iter()
            .any(|m| m["method"] == "notifications/message"),
        "{reply:?}"
    );
}

#[tokio::test]
async fn the_upstreams_elicitation_is_answered_by_the_sessions_client() {
    let server = serving_everything();
    let session = server.client().connect().await;
    let resp = session
        .post_value(&call(1, "every__trigger-elicitation-request", json!({})))
        .await;
    let mut stream = SseReader::new(resp);
    let request = next_where(&mut stream, "elicitation/create", |m| {
        m["method"] == "elicitation/create"
    })
    .await;
    assert!(
        request["params"]["requestedSchema"]["properties"]["name"].is_object(),
        "{request}"
    );
    let answer = json!({ "action": "accept", "content": { "name": "Ada", "check": true } });
    assert_eq!(
        session.answer(&request["id"], answer).await,
        StatusCode::ACCEPTED
    );
    let response = next_where(&mut stream, "the call's response", |m| m["id"] == 1).await;
    let text = response["result"]["content"].to_string();
    assert!(text.contains("Ada"), "the answer came back: {response}");
}

#[tokio::test]
async fn the_upstreams_sampling_becomes_input_required_for_a_modern_client() {
    let server = serving_everything();
    let client = client_of(&server);
    let ask = Modern::call(
        1,
        "every__trigger-sampling-request",
        json!({ "prompt": "Hi" }),
    )
    .caps(json!({ "sampling": {} }));
    let first = ask.result(&client).await;
    let (key, entry) = single_input_request(&first);
    assert_eq!(entry["method"], "sampling/createMessage", "{first}");
    let sampled = json!({ "role": "assistant", "model": "m",
                          "content": { "type": "text", "text": "sampled words" } });
    let mut retry = Modern {
        id: Some(json!(2)),
        ..ask
    }
    .param("inputResponses", json!({ key: sampled }));
    if first.get("requestState").is_some() {
        retry = retry.param("requestState", json!(request_state(&first)));
    }
    let reply = retry.reply(&client).await;
    let done = expect_result(&reply, &json!(2));
    assert_eq!(done["resultType"], "complete", "{done}");
    assert!(
        done["content"].to_string().contains("sampled words"),
        "{done}"
    );
}

#[tokio::test]
async fn cancellation_reaches_the_upstream() {
    let marker = format!("gw-cancel-{}", unique());
    let server = TestServer::with_config(&fixture_upstream("fx", &marker, ""));
    let session = server.client().connect().await;
    // The upstream runs before the call, so the call reaches it at once.
    session.call_tool_text(json!(1), "fx__pid", json!({})).await;
    let waiting = {
        let session = session.clone();
        tokio::spawn(async move {
            session
                .post(&call(7, "fx__wait", json!({ "ms": 20000 })))
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(700)).await;
    let params = json!({ "requestId": 7, "reason": "changed my mind" });
    assert_eq!(
        session
            .notify("notifications/cancelled", Some(params))
            .await,
        StatusCode::ACCEPTED
    );
    let mut cancelled = String::new();
    for attempt in 0..100 {
        cancelled = session
            .call_tool_text(json!(100 + attempt), "fx__cancelled", json!({}))
            .await;
        if cancelled != "[]" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let ids: Vec<Value> = serde_json::from_str(&cancelled).expect("ids");
    assert_eq!(
        ids.len(),
        1,
        "one cancellation, with the upstream's id: {cancelled}"
    );
    waiting.abort();
}

#[tokio::test]
async fn a_crashed_upstream_gives_an_error_with_its_exit_status_and_the_next_call_restarts_it() {
    let marker = format!("gw-crash-{}", unique());
    let server = TestServer::with_config(&fixture_upstream("fx", &marker, ""));
    let session = server.client().connect().await;
    let first_pid = session.call_tool_text(json!(1), "fx__pid", json!({})).await;

    // Killed from outside in the middle of a call.
    let waiting = {
        let session = session.clone();
        tokio::spawn(async move {
            session
                .call(
                    json!(2),
                    "tools/call",
                    json!({ "name": "fx__wait", "arguments": { "ms": 20000 } }),
                )
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pid: i32 = first_pid.parse().expect("pid");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill the upstream");
    let result = tokio::time::timeout(WAIT, waiting)
        .await
        .expect("answered")
        .expect("task");
    assert_eq!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("upstream `fx` exited") && !text.contains("started"),
        "the cause, and no stderr: {text}"
    );

    // The next call starts it again.
    let second_pid = session.call_tool_text(json!(3), "fx__pid", json!({})).await;
    assert_ne!(first_pid, second_pid, "a new process");

    // Crashing by itself says so too.
    let crashed = session
        .call(
            json!(4),
            "tools/call",
            json!({ "name": "fx__crash", "arguments": {} }),
        )
        .await;
    let text = crashed["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("exited with status 3") && !text.contains("crashing on request"),
        "{crashed}"
    );
    assert_ne!(
        session.call_tool_text(json!(5), "fx__pid", json!({})).await,
        second_pid
    );
}

#[tokio::test]
async fn each_session_gets_its_own_upstream_process_and_state() {
    let server = serving_everything();
    let (a, b) = (
        server.client().connect().await,
        server.client().connect().await,
    );
    let toggle = |s: common::Session, id: i64| async move {
        s.call_tool_text(json!(id), "every__toggle-simulated-logging", json!({}))
            .await
    };
    assert!(toggle(a.clone(), 1).await.starts_with("Started"));
    // Had b shared a's process, this would stop a's logging.
    assert!(
        toggle(b.clone(), 2).await.starts_with("Started"),
        "b has its own state"
    );
    assert!(toggle(a.clone(), 3).await.starts_with("Stopped"));
}

#[tokio::test]
async fn no_upstream_process_outlives_its_session() {
    let marker = format!("gw-leak-{}", unique());
    let server = TestServer::with_config(&format!(
        "[sessions]\nidle_ttl = \"20s\"\n[gateway]\nshutdown_grace = \"1s\"\n{}",
        fixture_upstream("fx", &marker, "")
    ));
    let client = server.client();
    let started = (0..50).map(|i| {
        let client = client.clone();
        async move {
            let session = client.connect().await;
            session.call_tool_text(json!(i), "fx__pid", json!({})).await;
            session
        }
    });
    let sessions = futures_util::future::join_all(started).await;
    let running = processes_matching(&marker).len();
    assert!(running >= 50, "a process per session: {running}");
    for session in &sessions[..25] {
        assert!(session.delete().await.is_success());
    }
    // The other 25 end by the idle timeout.
    let gone = eventually(Duration::from_secs(45), || {
        processes_matching(&marker).is_empty()
    })
    .await;
    assert!(gone, "left: {:?}", processes_matching(&marker));
}

#[tokio::test]
async fn no_upstream_process_outlives_the_server_stopped_or_killed() {
    for signal in [
        nix::sys::signal::Signal::SIGTERM,
        nix::sys::signal::Signal::SIGKILL,
    ] {
        let marker = format!("gw-exit-{}", unique());
        let mut server = TestServer::with_config(&format!(
            "[gateway]\nshutdown_grace = \"1s\"\n{}",
            fixture_upstream("fx", &marker, "")
        ));
        for _ in 0..3 {
            let session = server.client().connect().await;
            session.call_tool_text(json!(1), "fx__pid", json!({})).await;
        }
        assert!(processes_matching(&marker).len() >= 3);
        server.signal(signal);
        assert!(
            server.wait_exit(WAIT).is_some(),
            "{signal:?}: the server exits"
        );
        let gone = eventually(Duration::from_secs(10), || {
            processes_matching(&marker).is_empty()
        })
        .await;
        assert!(gone, "{signal:?} left: {:?}", processes_matching(&marker));
    }
}

#[tokio::test]
async fn a_name_clash_is_a_configuration_error_at_the_upstreams_line() {
    let marker = format!("gw-clash-{}", unique());
    let dir = common::TempDir::new("gateway-clash");
    let config = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n\n[[tools]]\nbuiltin = \"echo\"\nname = \"pid\"\n\n{}",
        fixture_upstream("fx", &marker, "prefix = \"\"")
    );
    let path = dir.write("clash.toml", &config);
    let path = path.display().to_string();
    let (status, stderr) = run_binary(&["--config", &path], WAIT).expect("exits");
    assert!(!status.success());
    assert!(
        stderr.contains(&format!("{path}:11:")) && stderr.contains("upstreams[0].prefix"),
        "file:line and key: {stderr}"
    );
    assert!(
        processes_matching(&marker).is_empty(),
        "the catalog's process is gone"
    );
}

/// `mcp_sessions_ended_total{reason="delete"}` of a server, from its admin listener.
async fn sessions_deleted(server: &TestServer) -> f64 {
    let text = reqwest::get(format!("{}/metrics", server.admin_url))
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("metrics text");
    text.lines()
        .find(|l| l.starts_with("mcp_sessions_ended_total{") && l.contains("reason=\"delete\""))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0.0)
}

#[tokio::test]
async fn a_second_mcp_actor_over_http_is_served_through_its_own_session() {
    // The inner server forgets idle sessions after a second, so the gateway's must be
    // re-initialized on the way.
    let inner = TestServer::with_config(
        "[sessions]\nidle_ttl = \"1s\"\n[[tools]]\nbuiltin = \"echo\"\n[[tools]]\nbuiltin = \"sleep\"\n[[tools]]\nbuiltin = \"ask\"\n",
    );
    let server = TestServer::with_config(&format!(
        "[[upstreams]]\nname = \"inner\"\nurl = \"{}\"\n",
        inner.url
    ));
    let session = server.client().connect().await;
    let names = tool_names(&session).await;
    for expected in ["inner__echo", "inner__sleep", "inner__ask"] {
        assert!(
            names.contains(&expected.to_string()),
            "{expected} in {names:?}"
        );
    }
    assert_eq!(
        session
            .call_tool_text(json!(1), "inner__echo", json!({ "text": "over http" }))
            .await,
        "over http"
    );

    // Progress crosses both servers with the client's own token.
    let mut body = call(2, "inner__sleep", json!({ "ms": 400 }));
    body["params"]["_meta"] = json!({ "progressToken": 42 });
    let reply = session.post(&body).await;
    let progress: Vec<&Value> = reply
        .messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert!(!progress.is_empty(), "{reply:?}");
    assert!(
        progress.iter().all(|p| p["params"]["progressToken"] == 42),
        "{progress:?}"
    );

    // The inner server's elicitation reaches this client, and the answer goes back.
    let resp = session
        .post_value(&call(3, "inner__ask", json!({ "question": "Which one?" })))
        .await;
    let mut stream = SseReader::new(resp);
    let request = next_where(&mut stream, "elicitation/create", |m| {
        m["method"] == "elicitation/create"
    })
    .await;
    let answer = json!({ "action": "accept", "content": { "answer": "the second" } });
    assert_eq!(
        session.answer(&request["id"], answer).await,
        StatusCode::ACCEPTED
    );
    let response = next_where(&mut stream, "the call's response", |m| m["id"] == 3).await;
    assert!(
        response["result"].to_string().contains("the second"),
        "{response}"
    );

    // The inner session expires; the next call re-initializes it unseen.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(
        session
            .call_tool_text(json!(4), "inner__echo", json!({ "text": "still here" }))
            .await,
        "still here"
    );

    // Ending the client's session ends the inner one with DELETE.
    let before = sessions_deleted(&inner).await;
    assert!(session.delete().await.is_success());
    let mut after = before;
    for _ in 0..50 {
        after = sessions_deleted(&inner).await;
        if after > before {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(after, before + 1.0, "the gateway deleted its inner session");
}

#[tokio::test]
async fn upstream_resources_and_prompts_are_listed_and_forwarded() {
    let server = serving_everything();
    let session = server.client().connect().await;
    let listed = session.call(json!(1), "resources/list", json!({})).await;
    let resource = listed["resources"]
        .as_array()
        .and_then(|all| {
            all.iter()
                .find(|r| r["name"].as_str().is_some_and(|n| n.starts_with("every__")))
        })
        .unwrap_or_else(|| panic!("an upstream resource under its prefix: {listed}"))
        .clone();
    let uri = resource["uri"].as_str().expect("uri");
    let read = session
        .call(json!(2), "resources/read", json!({ "uri": uri }))
        .await;
    assert_eq!(read["contents"][0]["uri"], uri, "{read}");

    let templates = session
        .call(json!(3), "resources/templates/list", json!({}))
        .await;
    assert!(
        templates["resourceTemplates"]
            .as_array()
            .is_some_and(|all| all
                .iter()
                .any(|t| t["name"].as_str().is_some_and(|n| n.starts_with("every__")))),
        "{templates}"
    );

    let prompts = session.call(json!(4), "prompts/list", json!({})).await;
    let prompt = prompts["prompts"]
        .as_array()
        .and_then(|all| {
            all.iter().find(|p| {
                p["name"].as_str().is_some_and(|n| n.starts_with("every__"))
                    && !p["arguments"]
                        .as_array()
                        .is_some_and(|a| a.iter().any(|a| a["required"] == true))
            })
        })
        .unwrap_or_else(|| panic!("an upstream prompt without required arguments: {prompts}"))
        .clone();
    let got = session
        .call(
            json!(5),
            "prompts/get",
            json!({ "name": prompt["name"], "arguments": {} }),
        )
        .await;
    assert!(
        got["messages"].as_array().is_some_and(|m| !m.is_empty()),
        "{got}"
    );
}

#[tokio::test]
async fn an_upstreams_list_change_reaches_every_session() {
    let marker = format!("gw-grow-{}", unique());
    let dir = common::TempDir::new("gateway-grow");
    let state = dir.path().join("grown");
    let script = installed("tests/upstreams/fixture.py");
    let server = TestServer::with_config(&format!(
        "[[upstreams]]\nname = \"fx\"\ncommand = [\"python3\", \"{script}\", \"{marker}\", \"{}\"]\n",
        state.display()
    ));
    let (a, b) = (
        server.client().connect().await,
        server.client().connect().await,
    );
    assert!(!tool_names(&b).await.contains(&"fx__extra".to_string()));
    let mut stream = SseReader::new(b.get(None).await);
    assert_eq!(
        a.call_tool_text(json!(1), "fx__grow", json!({})).await,
        "grow"
    );
    // The other session is told.
    next_where(&mut stream, "tools/list_changed", |m| {
        m["method"] == "notifications/tools/list_changed"
    })
    .await;
    assert!(tool_names(&b).await.contains(&"fx__extra".to_string()));
    assert_eq!(
        b.call_tool_text(json!(2), "fx__extra", json!({})).await,
        "extra"
    );
}

#[tokio::test]
async fn a_shared_upstream_serves_every_session_on_one_connection_with_its_own_ids() {
    let marker = format!("gw-shared-{}", unique());
    let server = TestServer::with_config(&fixture_upstream("fx", &marker, "scope = \"shared\""));
    let (a, b) = (
        server.client().connect().await,
        server.client().connect().await,
    );
    let pid_a = a.call_tool_text(json!(1), "fx__pid", json!({})).await;
    let pid_b = b.call_tool_text(json!(1), "fx__pid", json!({})).await;
    assert_eq!(pid_a, pid_b, "one process for both sessions");

    // The same request id in both sessions, at once: each gets its own progress and answer.
    let waiting = |session: common::Session, token: &'static str| async move {
        let mut body = call(5, "fx__wait", json!({ "ms": 500 }));
        body["params"]["_meta"] = json!({ "progressToken": token });
        session.post(&body).await
    };
    let (reply_a, reply_b) =
        tokio::join!(waiting(a.clone(), "from-a"), waiting(b.clone(), "from-b"));
    for (reply, token) in [(&reply_a, "from-a"), (&reply_b, "from-b")] {
        let progress: Vec<&Value> = reply
            .messages
            .iter()
            .filter(|m| m["method"] == "notifications/progress")
            .collect();
        assert_eq!(progress.len(), 1, "{reply:?}");
        assert_eq!(progress[0]["params"]["progressToken"], token, "{reply:?}");
        let response = reply.response(&json!(5)).expect("the answer");
        assert_eq!(
            response["result"]["content"][0]["text"], "waited",
            "{response}"
        );
    }
    // Ending a session leaves the shared process to the others.
    assert!(a.delete().await.is_success());
    assert_eq!(
        b.call_tool_text(json!(6), "fx__pid", json!({})).await,
        pid_b
    );
}

#[tokio::test]
async fn a_subscription_to_an_upstream_resource_brings_its_updates() {
    let server = serving_everything();
    let session = server.client().connect().await;
    let listed = session.call(json!(1), "resources/list", json!({})).await;
    let uri = listed["resources"]
        .as_array()
        .and_then(|all| all.iter().find_map(|r| r["uri"].as_str()))
        .expect("a resource")
        .to_string();
    let mut stream = SseReader::new(session.get(None).await);
    session
        .call(json!(2), "resources/subscribe", json!({ "uri": uri }))
        .await;
    // The upstream sends updates for its subscriptions every 5 s once asked to.
    session
        .call_tool_text(json!(3), "every__toggle-subscriber-updates", json!({}))
        .await;
    let updated = next_where(&mut stream, "resources/updated", |m| {
        m["method"] == "notifications/resources/updated"
    })
    .await;
    assert_eq!(updated["params"]["uri"], uri.as_str(), "{updated}");
}

#[tokio::test]
async fn a_call_past_the_upstreams_call_timeout_is_an_error_and_cancelled_there() {
    let marker = format!("gw-timeout-{}", unique());
    let server =
        TestServer::with_config(&fixture_upstream("fx", &marker, "call_timeout = \"500ms\""));
    let session = server.client().connect().await;
    // The timeout covers the start as well: on a busy machine the first calls may end
    // while the upstream is still starting, which goes on for the next one.
    let mut started = false;
    for id in 10..20 {
        let pid = session
            .call(
                json!(id),
                "tools/call",
                json!({ "name": "fx__pid", "arguments": {} }),
            )
            .await;
        if pid["isError"] != true {
            started = true;
            break;
        }
    }
    assert!(started, "the upstream started");
    let result = session
        .call(
            json!(1),
            "tools/call",
            json!({ "name": "fx__wait", "arguments": { "ms": 5000 } }),
        )
        .await;
    assert_eq!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("500ms"), "{text}");
    let cancelled = session
        .call_tool_text(json!(2), "fx__cancelled", json!({}))
        .await;
    let ids: Vec<Value> = serde_json::from_str(&cancelled).expect("ids");
    assert_eq!(ids.len(), 1, "the upstream was told: {cancelled}");
}

#[tokio::test]
async fn upstream_processes_past_a_sessions_cap_are_refused_by_name() {
    let marker = format!("gw-cap-{}", unique());
    let server = TestServer::with_config(&format!(
        "[gateway]\nmax_children_per_session = 1\n{}{}",
        fixture_upstream("one", &marker, ""),
        fixture_upstream("two", &marker, "")
    ));
    let session = server.client().connect().await;
    session
        .call_tool_text(json!(1), "one__pid", json!({}))
        .await;
    let refused = session
        .call(
            json!(2),
            "tools/call",
            json!({ "name": "two__pid", "arguments": {} }),
        )
        .await;
    assert_eq!(refused["isError"], true, "{refused}");
    let text = refused["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("gateway.max_children_per_session"), "{text}");
    // Another session has its own share.
    let other = server.client().connect().await;
    other.call_tool_text(json!(3), "two__pid", json!({})).await;
}

#[tokio::test]
async fn an_upstream_that_never_initializes_leaves_the_server_serving_the_rest() {
    let server = TestServer::with_config(&format!(
        "[[upstreams]]\nname = \"mute\"\ncommand = [\"sleep\", \"60\"]\nstartup_timeout = \"1s\"\n\
         [[upstreams]]\nname = \"every\"\ncommand = [\"{}\"]\n",
        everything()
    ));
    let session = server.client().connect().await;
    let names = tool_names(&session).await;
    assert!(names.iter().any(|n| n.starts_with("every__")), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("mute__")), "{names:?}");
}
