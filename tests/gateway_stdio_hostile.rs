//! The gateway's stdio upstreams against a hostile one (`tests/upstreams/hostile_stdio.py`):
//! a huge stderr line, a stderr byte that is not UTF-8, descendants that fork and `setsid`,
//! a SIGTERM handler, a crash that prints a path, a start slower than `call_timeout`, a
//! start that fails, and one shared process serving two clients.
//!
//! What is checked: the server's memory stays flat and the upstream keeps working whatever
//! its stderr holds; no zombie and no descendant outlives a session or the server; a stop
//! reaches the upstream's SIGTERM handler; `call_timeout` bounds a call that waits for a
//! start; a client never sees an upstream's stderr, and so never another client's data.

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{TestServer, eventually, processes_matching, rss_kib, unique, zombie_children};
use serde_json::{Value, json};

fn script() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/upstreams/hostile_stdio.py")
        .display()
        .to_string()
}

/// The whole `[gateway]` table (a table given to the test server replaces the default's).
fn gateway(grace: &str) -> String {
    format!(
        "[gateway]\nmax_children = 64\nmax_children_per_session = 4\nshutdown_grace = \"{grace}\"\n\
         restart_backoff = \"200ms\"\nrestart_backoff_max = \"1s\"\nprincipal_idle_ttl = \"5m\"\n\
         stderr_lines = 20\nmax_message_bytes = 16777216\n"
    )
}

/// One upstream `h` running the hostile server in `mode`, with `extra` keys.
fn hostile(mode: &str, marker: &str, file: &str, extra: &str) -> String {
    format!(
        "[[upstreams]]\nname = \"h\"\ncommand = [\"python3\", \"{}\", \"{mode}\", \"{marker}\", \"{file}\"]\n{extra}\n",
        script()
    )
}

async fn call(session: &common::Session, id: u64, name: &str, arguments: Value) -> Value {
    session
        .call(
            json!(id),
            "tools/call",
            json!({ "name": format!("h__{name}"), "arguments": arguments }),
        )
        .await
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn a_512_mib_stderr_line_leaves_the_servers_memory_flat() {
    let marker = format!("big-{}", unique());
    let server = TestServer::with_config(&hostile("bigline", &marker, "-", ""));
    let session = server.client().connect().await;
    assert_eq!(
        text_of(&call(&session, 1, "echo", json!({ "text": "hi" })).await),
        "hi"
    );
    let pid = server.pid();
    let start = rss_kib(pid);
    let sampling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler = {
        let sampling = std::sync::Arc::clone(&sampling);
        std::thread::spawn(move || {
            let mut peak = 0;
            while sampling.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(rss_kib(pid));
                std::thread::sleep(Duration::from_millis(10));
            }
            peak
        })
    };
    let spewed = call(&session, 2, "spew", json!({})).await;
    sampling.store(false, std::sync::atomic::Ordering::Relaxed);
    let peak = sampler.join().expect("sampler");
    eprintln!(
        "RSS start {} MiB, peak {} MiB during the 512 MiB line",
        start / 1024,
        peak / 1024
    );
    assert_eq!(text_of(&spewed), "spewed", "{spewed}");
    assert!(
        peak < start + 64 * 1024,
        "RSS grew from {start} KiB to {peak} KiB"
    );
    assert_eq!(
        text_of(&call(&session, 3, "echo", json!({ "text": "after" })).await),
        "after"
    );
}

#[tokio::test]
async fn a_stderr_byte_that_is_not_utf8_keeps_the_upstream_alive() {
    let marker = format!("badbyte-{}", unique());
    let server = TestServer::with_config(&hostile("badbyte", &marker, "-", ""));
    let session = server.client().connect().await;
    let pid = text_of(&call(&session, 1, "pid", json!({})).await);
    assert_eq!(
        text_of(&call(&session, 2, "badbyte", json!({})).await),
        "sent"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut worked = 0;
    for i in 0..3 {
        let echoed = call(&session, 10 + i, "echo", json!({ "text": format!("n{i}") })).await;
        if text_of(&echoed) == format!("n{i}") {
            worked += 1;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let pid_after = text_of(&call(&session, 20, "pid", json!({})).await);
    eprintln!("calls that worked after the byte: {worked} of 3; pid {pid} -> {pid_after}");
    assert_eq!(worked, 3);
    assert_eq!(pid, pid_after, "the same process");
}

#[tokio::test]
async fn stopped_sessions_leave_no_zombie_and_no_setsid_descendant() {
    let marker = format!("forks-{}", unique());
    let server = TestServer::with_config(&hostile("forks", &marker, "-", &gateway("500ms")));
    // The catalog probe's descendants count too: they are the server's as well.
    for i in 0..3 {
        let session = server.client().connect().await;
        call(&session, 1, "pid", json!({})).await;
        assert!(
            eventually(Duration::from_secs(5), || processes_matching(&marker).len()
                >= 3)
            .await,
            "session {i}: the upstream and its two descendants run"
        );
        session.delete().await;
    }
    let gone = eventually(Duration::from_secs(5), || {
        processes_matching(&marker).is_empty()
    })
    .await;
    let zombies_gone = eventually(Duration::from_secs(3), || {
        zombie_children(server.pid()).is_empty()
    })
    .await;
    eprintln!(
        "after 3 DELETEs: {} live processes of the upstream, {} zombies under the server",
        processes_matching(&marker).len(),
        zombie_children(server.pid()).len()
    );
    assert!(gone, "descendants left: {:?}", processes_matching(&marker));
    assert!(zombies_gone, "zombies: {:?}", zombie_children(server.pid()));
}

#[tokio::test]
async fn a_setsid_descendant_does_not_survive_the_servers_sigterm() {
    let marker = format!("forks-term-{}", unique());
    let mut server = TestServer::with_config(&hostile("forks", &marker, "-", &gateway("500ms")));
    let session = server.client().connect().await;
    call(&session, 1, "pid", json!({})).await;
    assert!(
        eventually(Duration::from_secs(5), || processes_matching(&marker).len()
            >= 3)
        .await,
        "the upstream and its descendants run"
    );
    assert!(
        server.terminate(Duration::from_secs(15)).is_some(),
        "exited"
    );
    let gone = eventually(Duration::from_secs(3), || {
        processes_matching(&marker).is_empty()
    })
    .await;
    let left = processes_matching(&marker);
    for pid in &left {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    eprintln!("after the server's SIGTERM: {} processes left", left.len());
    assert!(gone, "left after shutdown: {left:?}");
}

#[tokio::test]
async fn a_stopping_upstream_gets_sigterm_and_exits_within_the_grace_period() {
    let marker = format!("trap-{}", unique());
    let dir = common::TempDir::new("trap");
    let file = dir.path().join("term");
    let server = TestServer::with_config(&hostile(
        "trap",
        &marker,
        &file.display().to_string(),
        &gateway("1s"),
    ));
    let session = server.client().connect().await;
    let pid = text_of(&call(&session, 1, "pid", json!({})).await);
    // Each process records its own SIGTERM: the catalog probe's is stopped meanwhile.
    let file = PathBuf::from(format!("{}.{pid}", file.display()));
    let deleted = Instant::now();
    session.delete().await;
    let trapped = eventually(Duration::from_secs(4), || file.exists()).await;
    let took = deleted.elapsed();
    assert!(
        eventually(Duration::from_secs(4), || processes_matching(&marker)
            .is_empty())
        .await,
        "the upstream is gone"
    );
    eprintln!(
        "SIGTERM handler ran: {trapped}; {took:?} after DELETE (grace 1s; the upstream is gone)"
    );
    assert!(trapped, "the upstream never saw SIGTERM");
    assert!(took < Duration::from_millis(1900), "{took:?}");
}

#[tokio::test]
async fn one_client_never_sees_another_clients_data_through_a_shared_upstream() {
    let marker = format!("shared-{}", unique());
    let server = TestServer::with_config(&hostile("shared", &marker, "-", "scope = \"shared\""));
    let alice = server.client().connect().await;
    let bob = server.client().connect().await;
    bob.request(json!(0), "logging/setLevel", json!({ "level": "debug" }))
        .await;
    call(&alice, 1, "echo", json!({ "text": "alice-secret-4711" })).await;

    let leak = bob
        .request(
            json!(2),
            "tools/call",
            json!({ "name": "h__leak", "arguments": {} }),
        )
        .await;
    let logged = leak
        .messages
        .iter()
        .any(|m| m.to_string().contains("alice-secret-4711"));
    let crashed = call(&bob, 3, "crash", json!({})).await;
    let error = text_of(&crashed);
    eprintln!("bob's log carried alice's text: {logged}; bob's crash error: {error:?}");
    assert!(!logged, "{:?}", leak.messages);
    assert!(!error.contains("alice-secret-4711"), "{error}");
}

#[tokio::test]
async fn a_shared_upstreams_elicitation_is_refused_not_relayed_to_a_caller() {
    let marker = format!("shared-ask-{}", unique());
    let server = TestServer::with_config(&hostile("shared", &marker, "-", "scope = \"shared\""));
    let bob = server.client().connect().await;
    // Relayed, the request would wait on bob's stream for an answer this client never gives.
    let asked = tokio::time::timeout(
        Duration::from_secs(10),
        bob.request(
            json!(1),
            "tools/call",
            json!({ "name": "h__ask", "arguments": {} }),
        ),
    )
    .await
    .expect("the call ends: the request was refused, not relayed");
    let relayed = asked
        .messages
        .iter()
        .any(|m| m["method"] == "elicitation/create");
    let result = asked.response(&json!(1)).expect("a response");
    let answer = text_of(&result["result"]);
    eprintln!("relayed to bob: {relayed}; the upstream heard: {answer}");
    assert!(!relayed, "{:?}", asked.messages);
    assert!(answer.contains("-32600"), "{answer}");
}

#[tokio::test]
async fn a_crash_error_names_the_upstream_and_its_status_and_keeps_stderr_in_the_log() {
    let marker = format!("crash-{}", unique());
    let dir = common::TempDir::new("crash-log");
    let log = dir.path().join("server.log");
    let server = TestServer::with_config_logging_to(&hostile("crash", &marker, "-", ""), &log);
    let session = server.client().connect().await;
    let crashed = call(&session, 1, "crash", json!({})).await;
    let error = text_of(&crashed);
    eprintln!("the client's crash error: {error:?}");
    assert_eq!(crashed["isError"], true, "{crashed}");
    assert!(!error.contains("/home/alice"), "{error}");
    assert!(
        error.contains("exited with status 1") && error.contains("server log"),
        "{error}"
    );
    assert!(
        eventually(Duration::from_secs(3), || {
            std::fs::read_to_string(&log).is_ok_and(|l| l.contains("/home/alice/.config"))
        })
        .await,
        "the stderr line is in the log"
    );
}

#[tokio::test]
async fn an_upstream_that_exits_before_initializing_always_logs_its_stderr() {
    // Each server starts the upstream once, to read its catalog.
    let starts = 5;
    let mut logged = 0;
    for i in 0..starts {
        let marker = format!("early-{}", unique());
        let dir = common::TempDir::new("early-log");
        let log = dir.path().join("server.log");
        let server = TestServer::with_config_logging_to(&hostile("early", &marker, "-", ""), &log);
        let found = eventually(Duration::from_secs(2), || {
            std::fs::read_to_string(&log).is_ok_and(|l| l.contains("missing HOSTILE_TOKEN"))
        })
        .await;
        if found {
            logged += 1;
        } else {
            eprintln!(
                "start {i}: {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        drop(server);
    }
    eprintln!("the stderr line was logged in {logged} of {starts} starts");
    assert_eq!(logged, starts);
}

#[tokio::test]
async fn call_timeout_bounds_a_call_waiting_for_a_slow_start() {
    let marker = format!("slow-{}", unique());
    let server = TestServer::with_config(&hostile(
        "slowstart",
        &marker,
        "-",
        "call_timeout = \"2s\"\nstartup_timeout = \"10s\"",
    ));
    let session = server.client().connect().await;
    let started = Instant::now();
    let calls = (0..4).map(|i| {
        let session = session.clone();
        tokio::spawn(async move {
            let result = call(&session, 100 + i, "echo", json!({ "text": "q" })).await;
            (started.elapsed(), result)
        })
    });
    let answered = futures_util::future::join_all(calls).await;
    let times: Vec<Duration> = answered
        .iter()
        .map(|a| a.as_ref().map(|(t, _)| *t).unwrap_or(Duration::MAX))
        .collect();
    eprintln!("queued calls answered after {times:?} (call_timeout 2s, start 3s)");
    for answer in &answered {
        let (took, result) = answer.as_ref().expect("task");
        assert!(*took < Duration::from_millis(2600), "{took:?}: {result}");
    }
    // The start was not abandoned: once it is done, a call is served by it.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let quick = Instant::now();
    let served = call(&session, 200, "echo", json!({ "text": "ready" })).await;
    assert_eq!(text_of(&served), "ready", "{served}");
    assert!(
        quick.elapsed() < Duration::from_secs(1),
        "{:?}",
        quick.elapsed()
    );
}
