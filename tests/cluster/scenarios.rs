//! The cluster scenarios, each written once and run through both balancers by
//! `tests/cluster.rs`. Every scenario sends a bounded number of requests, and every exchange
//! is bounded by [`LIMIT`].

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use super::balancer::{Balancer, Kind};
use super::nodes::{
    ADMIN_LISTENER, Cluster, NODE_IDS, check_calls_served_by_minting_node, minting_node,
};
use super::scratch::Scratch;
use super::traffic::{Caller, LIMIT, Recoveries};
use crate::common::modern::{
    META_SERVER_INFO, Modern, accept, assert_no_session_header, expect_result, first_text,
    request_state, single_input_request,
};
use crate::common::{ACCEPT_BOTH, Client, LATEST, SseReader, raw_request};

/// The routing scenario's load: sessions, and `echo` calls on each.
const SESSIONS: usize = 50;
const CALLS_PER_SESSION: u64 = 40;

/// The rolling restart's load: sessions calling `sleep` back to back.
const LOADERS: usize = 6;
const SLEEP_MS: u64 = 500;
const MAX_CALLS_PER_LOADER: u64 = 200;
/// How long a drained node may take to exit: its longest call in flight, and margin.
const DRAIN_LIMIT: Duration = Duration::from_secs(30);
/// After a restarted node answers /readyz: HAProxy needs `rise 2` checks `inter 1s` apart to
/// send it new sessions again. nginx leaves it out until `fail_timeout` (5s) after its last
/// failure, but falls back to every node when all are left out, so it needs no wait.
const BACK_IN_ROTATION: Duration = Duration::from_secs(3);
/// Longer than HAProxy's `fall 2` checks `inter 1s` apart, so that its check has noticed a
/// dead node.
const CHECK_NOTICES: Duration = Duration::from_secs(3);

/// The balancer in front of three nodes. Fields drop in order: the balancer stops, then the
/// nodes, then the folder goes (showing the logs if the scenario failed).
struct Setup {
    lb: Balancer,
    cluster: Cluster,
    _scratch: Scratch,
}

impl Setup {
    async fn start(kind: Kind) -> Setup {
        let scratch = Scratch::new(kind.name());
        let cluster = Cluster::start(&scratch);
        if kind == Kind::Haproxy {
            for node in &cluster.nodes {
                let status = node.readiness().await;
                assert_eq!(
                    status,
                    Some(StatusCode::OK),
                    "node {} answers GET /readyz with {status:?}: the HAProxy recipe sends new \
                     sessions only to nodes whose /readyz answers 200",
                    node.id
                );
            }
        }
        let lb = Balancer::start(kind, &cluster, &scratch);
        Setup {
            lb,
            cluster,
            _scratch: scratch,
        }
    }
}

// ----- a. Routing -----

pub async fn sessions_stay_on_their_node(kind: Kind) {
    let setup = Setup::start(kind).await;
    let url = setup.lb.url();
    let tasks: Vec<_> = (0..SESSIONS)
        .map(|s| tokio::spawn(echo_on_one_session(url.clone(), s)))
        .collect();
    let mut minted = Vec::new();
    for task in tasks {
        let result = task.await.expect("a session's task");
        minted.push(result.unwrap_or_else(|e| panic!("through {}: {e}", kind.name())));
    }
    for node in &setup.cluster.nodes {
        let expected = minted
            .iter()
            .filter(|id| minting_node(id) == node.id)
            .count();
        assert!(
            expected > 0,
            "node {} minted none of {SESSIONS} sessions: initialize goes to every node",
            node.id
        );
        assert_eq!(
            node.sessions().await,
            expected as u64,
            "node {} holds exactly the sessions whose ids name it",
            node.id
        );
    }
    assert!(
        minted.iter().all(|id| NODE_IDS.contains(&minting_node(id))),
        "every session id names its node: {minted:?}"
    );
    if ADMIN_LISTENER {
        check_calls_served_by_minting_node(&setup.cluster, CALLS_PER_SESSION).await;
    }
    progress_is_streamed(&url).await;
    clients_host_reaches_the_nodes(&setup.lb).await;
    unknown_sessions_get_404(&url).await;
}

/// One session through the balancer and [`CALLS_PER_SESSION`] `echo` calls on it; every
/// call must succeed on that session without a 404. Returns the session id.
async fn echo_on_one_session(url: String, s: usize) -> Result<String, String> {
    let mut caller = Caller::new(&url);
    let minted = caller.session_id().await?;
    if caller.recoveries.reinitialized > 0 {
        return Err(format!(
            "a new session's notifications/initialized got 404: it reached a node other than \
             the one that minted the session (now {minted})"
        ));
    }
    for call in 0..CALLS_PER_SESSION {
        let served = caller
            .echo(call, &format!("session {s} call {call}"))
            .await?;
        if caller.recoveries.reinitialized > 0 || served != minted {
            return Err(format!(
                "call {call} of session {minted} got 404 and ran on session {served}: it \
                 reached a node other than the one that minted the session"
            ));
        }
    }
    Ok(minted)
}

/// A `sleep` call with a progress token answers with SSE; the first progress notification
/// reaches the client long before the result, so the balancer does not buffer the stream.
async fn progress_is_streamed(url: &str) {
    const MS: u64 = 2000;
    let session = Client::bounded(url, LIMIT).connect().await;
    let sent = Instant::now();
    let resp = session
        .post_value(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": "sleep", "arguments": { "ms": MS },
                        "_meta": { "progressToken": "streamed" } }
        }))
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    let mut reader = SseReader::new(resp);
    let (_, first) = reader
        .next_message(Duration::from_millis(MS))
        .await
        .expect("a notification before the result");
    let first_after = sent.elapsed();
    assert!(
        first.get("id").is_none() && first_after < Duration::from_millis(MS / 2),
        "the first message, a notification, arrives within {} ms, not with the result; got \
         {first} after {first_after:?}",
        MS / 2
    );
    loop {
        let (_, message) = reader
            .next_message(Duration::from_millis(2 * MS))
            .await
            .expect("the result of the sleep call");
        if message["id"] == json!(1) {
            assert!(message["result"].is_object(), "{message}");
            break;
        }
    }
}

/// The balancer passes the client's Host through: a name outside `http.allowed_hosts` is
/// refused by the node itself (its 403 names the setting).
async fn clients_host_reaches_the_nodes(lb: &Balancer) {
    let body = json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": { "protocolVersion": LATEST, "capabilities": {},
                    "clientInfo": { "name": "rebinding", "version": "1" } }
    })
    .to_string();
    let accept = format!("Accept: {ACCEPT_BOTH}");
    let reply = raw_request(
        &lb.addr,
        "POST /mcp HTTP/1.1",
        &[
            "Host: mcp.attacker.example",
            "Content-Type: application/json",
            &accept,
        ],
        body.as_bytes(),
        LIMIT,
    )
    .await;
    let message = reply
        .json()
        .and_then(|b| b["error"]["message"].as_str().map(str::to_string))
        .unwrap_or_default();
    assert!(
        reply.status == 403 && message.contains("allowed_hosts"),
        "the node refuses a Host it does not allow: {} {message:?}",
        reply.status
    );
}

/// An id that names no node, a dead session of a live node, and an id without a node
/// prefix all get 404 (never a balancer error), so the client starts a new session.
async fn unknown_sessions_get_404(url: &str) {
    let client = Client::bounded(url, LIMIT);
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" });
    for id in [
        "zz.00000000000000000000000000000000",
        "a.00000000000000000000000000000000",
        "00000000000000000000000000000000",
    ] {
        let status = client
            .post_raw(
                &body,
                &[("mcp-session-id", id), ("mcp-protocol-version", LATEST)],
            )
            .await
            .status();
        assert_eq!(status, StatusCode::NOT_FOUND, "session id {id:?}");
    }
}

// ----- b. A node killed -----

pub async fn killed_node_sessions_start_again(kind: Kind) {
    const VICTIM: &str = "b";
    let mut setup = Setup::start(kind).await;
    let url = setup.lb.url();
    let mut callers = Vec::new();
    let on_victim = |callers: &Vec<Caller>| {
        callers
            .iter()
            .filter(|c| c.current_session_id().map(minting_node) == Some(VICTIM))
            .count()
    };
    while callers.len() < 30 && (callers.len() < 9 || on_victim(&callers) < 2) {
        let mut caller = Caller::new(&url);
        caller
            .echo(0, "before")
            .await
            .expect("a call before the kill");
        callers.push(caller);
    }
    assert!(on_victim(&callers) >= 2, "node {VICTIM} minted 2 sessions");

    setup.cluster.node_mut(VICTIM).kill();
    let mut first_on_victim = true;
    for (n, caller) in callers.iter_mut().enumerate() {
        let before = caller.current_session_id().expect("a session").to_string();
        if minting_node(&before) != VICTIM {
            let served = caller
                .echo(1, "after")
                .await
                .expect("a call on a live node");
            assert_eq!(served, before, "a live node's session goes on");
            continue;
        }
        // The first one right away (the node's port refuses connections), the others once
        // HAProxy's check has marked it down.
        if !first_on_victim {
            tokio::time::sleep(CHECK_NOTICES).await;
        }
        first_on_victim = false;
        let params = json!({ "name": "echo", "arguments": { "text": "after" } });
        let (status, _) = caller
            .send_once(1, "tools/call", params)
            .await
            .expect("an answer");
        assert_eq!(
            status,
            StatusCode::NOT_FOUND,
            "caller {n}: a killed node's session gets 404 through {}, so the client starts \
             again",
            kind.name()
        );
        caller.drop_session();
        let served = caller
            .echo(2, "again")
            .await
            .expect("a call on a new session");
        assert_ne!(
            minting_node(&served),
            VICTIM,
            "the new session is on a live node"
        );
    }
    for n in 0..10 {
        let mut caller = Caller::new(&url);
        let served = caller
            .echo(0, "new")
            .await
            .unwrap_or_else(|e| panic!("new session {n}: {e}"));
        assert_ne!(
            minting_node(&served),
            VICTIM,
            "new sessions go to live nodes"
        );
    }
}

// ----- c. A rolling restart -----

#[derive(Debug, Default)]
struct LoadReport {
    completed: u64,
    lost: Vec<String>,
    recoveries: Recoveries,
}

/// Tasks aborted when dropped, so that a failed scenario leaves no load running.
struct Loaders(Vec<JoinHandle<LoadReport>>);

impl Drop for Loaders {
    fn drop(&mut self) {
        for loader in &self.0 {
            loader.abort();
        }
    }
}

pub async fn rolling_restart_loses_no_call(kind: Kind) {
    let mut setup = Setup::start(kind).await;
    let stop = Arc::new(AtomicBool::new(false));
    let mut loaders = Loaders(
        (0..LOADERS)
            .map(|n| tokio::spawn(keep_calling(setup.lb.url(), Arc::clone(&stop), n)))
            .collect(),
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut exits = Vec::new();
    let mut not_back = None;
    for id in NODE_IDS {
        let node = setup.cluster.node_mut(id);
        exits.push((id, node.terminate(DRAIN_LIMIT).await));
        node.start();
        if let Err(e) = node.wait_ready(Duration::from_secs(10)).await {
            not_back = Some(e);
            break;
        }
        tokio::time::sleep(BACK_IN_ROTATION).await;
    }
    stop.store(true, Ordering::Relaxed);
    let mut report = LoadReport::default();
    for loader in std::mem::take(&mut loaders.0) {
        let done = tokio::time::timeout(2 * LIMIT, loader)
            .await
            .expect("a loader stops after its call in flight");
        match done {
            Ok(one) => {
                report.completed += one.completed;
                report.lost.extend(one.lost);
                report.recoveries.reinitialized += one.recoveries.reinitialized;
                report.recoveries.initialize_refused += one.recoveries.initialize_refused;
            }
            Err(e) => report.lost.push(format!("a loader died: {e}")),
        }
    }
    assert!(
        report.lost.is_empty(),
        "{} calls lost during a rolling restart through {} ({} completed): {:#?}",
        report.lost.len(),
        kind.name(),
        report.completed,
        report.lost
    );
    for (id, status) in exits {
        assert!(
            status.success(),
            "node {id} exited with {status} after SIGTERM"
        );
    }
    if let Some(e) = not_back {
        panic!("a restarted node did not come back: {e}");
    }
    assert!(
        report.recoveries.reinitialized > 0,
        "the drained nodes' sessions ended and their clients started new ones: {report:?}"
    );
}

/// Calls `sleep` back to back on one session until `stop`, starting a new session on 404.
async fn keep_calling(url: String, stop: Arc<AtomicBool>, n: usize) -> LoadReport {
    let mut caller = Caller::new(&url);
    let mut report = LoadReport::default();
    let want = format!("slept {SLEEP_MS} ms");
    for call in 0..MAX_CALLS_PER_LOADER {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        match caller
            .call_tool(call, "sleep", json!({ "ms": SLEEP_MS }))
            .await
        {
            Ok((result, _)) if result["content"][0]["text"] == want => report.completed += 1,
            Ok((result, _)) => report
                .lost
                .push(format!("loader {n} call {call}: {result}")),
            Err(e) => report.lost.push(format!("loader {n} call {call}: {e}")),
        }
    }
    report.recoveries = caller.recoveries;
    report
}

// ----- d. 2026-07-28 -----

pub async fn stateless_requests_spread(kind: Kind) {
    const CALLS: u64 = 30;
    const ROUND_TRIPS: u64 = 6;
    let setup = Setup::start(kind).await;
    let client = Client::bounded(&setup.lb.url(), LIMIT);
    let mut served: BTreeMap<String, u64> = BTreeMap::new();
    for id in 0..CALLS {
        let text = format!("call {id}");
        let reply = Modern::call(id, "echo", json!({ "text": text }))
            .reply(&client)
            .await;
        assert_no_session_header(&reply);
        let result = expect_result(&reply, &json!(id));
        assert_eq!(first_text(&result), text);
        *served.entry(serving_node(&result)).or_default() += 1;
    }
    assert_eq!(
        served.len(),
        NODE_IDS.len(),
        "{CALLS} calls through {} reach every node: {served:?}",
        kind.name()
    );

    let mut crossed = 0;
    for round in 0..ROUND_TRIPS {
        let ask = Modern::call(100 + 2 * round, "ask", json!({ "question": "Your name?" }))
            .caps(json!({ "elicitation": {} }));
        let first = ask.result(&client).await;
        let (key, _) = single_input_request(&first);
        let answer = format!("answer {round}");
        let done = Modern {
            id: Some(json!(101 + 2 * round)),
            ..ask
        }
        .param("inputResponses", json!({ key: accept(&answer) }))
        .param("requestState", json!(request_state(&first)))
        .result(&client)
        .await;
        assert_eq!(done["resultType"], "complete", "{done}");
        assert_eq!(first_text(&done), answer);
        if serving_node(&done) != serving_node(&first) {
            crossed += 1;
        }
    }
    assert!(
        crossed > 0,
        "in {ROUND_TRIPS} round trips through {}, no retry landed on another node than its \
         question",
        kind.name()
    );
}

/// The node that served a 2026-07-28 result: the title every result carries.
fn serving_node(result: &Value) -> String {
    result["_meta"][META_SERVER_INFO]["title"]
        .as_str()
        .unwrap_or_else(|| panic!("serverInfo.title on every result: {result}"))
        .to_string()
}
