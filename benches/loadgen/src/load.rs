//! The measured load scenarios: every worker owns one HTTP/1.1 keep-alive connection and
//! loops one operation until the window ends (or, `echo -n`, until the window's budget of
//! operations is used up); each operation is verified in full.

use std::time::Duration;

use clap::Args;
use serde_json::{json, Map, Value};
use tokio::task::JoinHandle;

use crate::mcp::{self, kind, Headers, Kind, Link, Session, Target};
use crate::procfs::Snapshot;
use crate::stats::{report, Fail, Measured, Stats, Window};
use crate::{Common, Era, Outcome};

// ----- the driver shared by every load scenario -----

/// Runs the async block `$op` (which uses `$link` and the sequence number `$seq`) in a
/// loop until the window ends or its budget is used up, recording each outcome; evaluates
/// to the worker's Stats.
macro_rules! worker_loop {
    ($w:expr, $timeout:expr, $link:ident, $seq:ident => $op:expr) => {{
        let (w, timeout): (Window, Duration) = ($w, $timeout);
        let mut st = Stats::default();
        let mut $seq = 0u64;
        while st.unsupported.is_none() {
            let Some(start) = w.next_op() else { break };
            $seq += 1;
            let out: Result<u64, Fail> = match tokio::time::timeout(timeout, async { $op }).await {
                Ok(r) => r,
                Err(_) => Err(Fail::Failed(format!("no verified reply within {timeout:?}"))),
            };
            let bad = out.is_err();
            if bad {
                // Whatever was in flight on the connection is abandoned with it.
                $link.drop_conn();
            }
            if let Err(Fail::Unsupported(reason)) = &out {
                st.unsupported = Some(reason.clone());
            }
            st.record(&w, start, out);
            if bad {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        st
    }};
}

/// Reads the counters at the window's start and at its end (its `end`, or in a counted
/// window the moment the last worker stopped), and collects the workers' Stats.
async fn measure(w: Window, pid: Option<u32>, handles: Vec<JoinHandle<Stats>>) -> ((Snapshot, Snapshot), Stats) {
    tokio::time::sleep_until(w.start.into()).await;
    let a = Snapshot::take(pid);
    if w.budget.is_some() {
        let stats = join(handles).await;
        return ((a, Snapshot::take(pid)), stats);
    }
    tokio::time::sleep_until(w.end.into()).await;
    let b = Snapshot::take(pid);
    ((a, b), join(handles).await)
}

async fn join(handles: Vec<JoinHandle<Stats>>) -> Stats {
    let mut all = Stats::default();
    for h in handles {
        match h.await {
            Ok(s) => all.merge(s),
            Err(e) => {
                all.failed += 1;
                all.sample(format!("failed: worker task ended abnormally: {e}"));
            }
        }
    }
    all
}

/// Request ids: worker w's n-th request is w * 2^32 + n, unique across the run.
fn rid(worker: usize, seq: u64, sub: u64) -> u64 {
    ((worker as u64) << 32) | (seq * 4 + sub)
}

/// POSTs `body` and reads the reply up to the response carrying `id`. Notifications before
/// it go to `on_note`; a server request or a response with another id is a mismatch.
/// Returns the `result` of a successful response; the rest of the stream is drained so
/// the connection can be reused (or dropped if it stays open).
pub(crate) async fn call(
    link: &mut Link,
    headers: &Headers,
    body: Vec<u8>,
    id: u64,
    mut on_note: impl FnMut(&str, &Value) -> Result<(), Fail>,
) -> Result<Value, Fail> {
    let req = mcp::build(&link.target, hyper::Method::POST, mcp::ACCEPT_BOTH, headers, Some(body));
    let mut r = link.send(req).await?;
    if r.status != 200 {
        let st = r.status;
        return Err(Fail::Failed(format!("id {id}: HTTP {st}: {}", r.text().await)));
    }
    loop {
        let ev = r
            .next()
            .await?
            .ok_or_else(|| Fail::Failed(format!("id {id}: the reply ended without a response")))?;
        match kind(&ev.msg) {
            Kind::Response { id: got } => {
                if got.as_u64() != Some(id) {
                    return Err(Fail::Mismatched(format!("wanted id {id}, got response {}", ev.msg)));
                }
                let mut msg = ev.msg;
                if let Some(e) = msg.get("error") {
                    return Err(Fail::Failed(format!("id {id}: JSON-RPC error {e}")));
                }
                if r.is_sse() && !r.drain(Duration::from_secs(2)).await {
                    link.drop_conn();
                }
                return Ok(msg["result"].take());
            }
            Kind::Notification { method } => on_note(method, &ev.msg)?,
            Kind::Request { method, .. } => {
                return Err(Fail::Mismatched(format!("id {id}: unexpected server request {method}: {}", ev.msg)))
            }
            Kind::Other => return Err(Fail::Mismatched(format!("id {id}: not a JSON-RPC message: {}", ev.msg))),
        }
    }
}

/// Checks a tools/call result: not an error, (modern) `resultType: complete`, and
/// content[0] the text `want`.
pub(crate) fn check_text(era: Era, id: u64, result: &Value, want: &str) -> Result<(), Fail> {
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return Err(Fail::Failed(format!("id {id}: tool error: {result}")));
    }
    if era == Era::Modern && result.get("resultType").and_then(Value::as_str) != Some("complete") {
        return Err(Fail::Mismatched(format!("id {id}: resultType is not \"complete\": {result}")));
    }
    match mcp::first_text(result) {
        Some(t) if t == want => Ok(()),
        _ => Err(Fail::Mismatched(format!("id {id}: wanted text {want:?}, got {result}"))),
    }
}

/// A tools/call body with the arguments as JSON text and, for the modern era, the
/// pre-serialized `_meta` envelope (`meta`), plus any extra `_meta` keys in `meta_extra`
/// (JSON members without braces, e.g. `"progressToken":"p1"`).
pub(crate) fn call_body(id: u64, tool: &str, args: &str, meta: Option<&str>, meta_extra: &str, extra_params: &str) -> Vec<u8> {
    let meta = match (meta, meta_extra.is_empty()) {
        (Some(m), true) => format!(",\"_meta\":{m}"),
        (Some(m), false) => format!(",\"_meta\":{{{meta_extra},{}", &m[1..]),
        (None, true) => String::new(),
        (None, false) => format!(",\"_meta\":{{{meta_extra}}}"),
    };
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"{tool}\",\"arguments\":{args}{extra_params}{meta}}}}}"
    )
    .into_bytes()
}

/// A unique ASCII text of `len` bytes (at least the unique prefix).
pub(crate) fn unique_text(worker: usize, seq: u64, len: usize) -> String {
    let mut s = format!("w{worker}-{seq}-");
    while s.len() < len {
        s.push((b'a' + (s.len() % 26) as u8) as char);
    }
    s
}

/// Opens the sessions of a legacy run, `parallel` at a time; returns one link (the one that
/// opened it) per session.
async fn open_sessions(target: &Target, n: usize, caps: Value) -> Result<Vec<(Link, Session)>, String> {
    let mut out = Vec::with_capacity(n);
    let mut pending = Vec::new();
    for chunk in (0..n).collect::<Vec<_>>().chunks(64) {
        for _ in chunk {
            let t = target.clone();
            let caps = caps.clone();
            pending.push(tokio::spawn(async move {
                let mut link = Link::new(t);
                let s = mcp::open_session(&mut link, caps).await?;
                Ok::<_, String>((link, s))
            }));
        }
        for h in pending.drain(..) {
            out.push(h.await.map_err(|e| e.to_string())??);
        }
    }
    Ok(out)
}

pub(crate) async fn close_sessions(target: &Target, sessions: &[Session]) -> u64 {
    let mut failed = 0;
    for chunk in sessions.chunks(64) {
        let hs: Vec<_> = chunk
            .iter()
            .map(|s| {
                let (t, s) = (target.clone(), s.clone());
                tokio::spawn(async move { mcp::close_session(&mut Link::new(t), &s, Duration::from_secs(5)).await })
            })
            .collect();
        for h in hs {
            if !matches!(h.await, Ok(Ok(()))) {
                failed += 1;
            }
        }
    }
    failed
}

/// Where each worker's requests go and what they carry.
struct Plan {
    era: Era,
    /// Per worker: its link, its session (legacy) and its index.
    workers: Vec<(Link, Option<Session>)>,
    sessions: Vec<Session>,
}

/// Opens S sessions with C workers each (legacy) or S*C stateless workers (modern).
async fn plan(era: Era, target: &Target, s: usize, c: usize, caps: Value) -> Result<Plan, String> {
    let mut workers = Vec::new();
    let mut sessions = Vec::new();
    match era {
        Era::Legacy => {
            for (link, sess) in open_sessions(target, s, caps).await? {
                workers.push((link, Some(sess.clone())));
                for _ in 1..c {
                    workers.push((Link::new(target.clone()), Some(sess.clone())));
                }
                sessions.push(sess);
            }
        }
        Era::Modern => {
            for _ in 0..s * c {
                workers.push((Link::new(target.clone()), None));
            }
        }
    }
    Ok(Plan { era, workers, sessions })
}

/// Everything a finished run reports; prints it and picks the exit outcome.
#[allow(clippy::too_many_arguments)]
async fn finish(
    common: &Common,
    scenario: &str,
    era: Era,
    before: Snapshot,
    (start, end): (Snapshot, Snapshot),
    stats: Stats,
    per_op: impl Fn(&Stats) -> u64,
    extra: impl FnOnce(&mut Map<String, Value>, &Stats, f64),
) -> Result<Outcome, String> {
    let m = Measured {
        scenario,
        era: era.name(),
        url: &common.url,
        warmup_s: common.warmup,
        before_setup: before,
        start,
        end,
        stats: &stats,
    };
    let mut j = m.json(per_op(&stats));
    let wall = end.at.duration_since(start.at).as_secs_f64();
    extra(&mut j, &stats, wall);
    report(&j, &stats.samples, common.json.as_deref())?;
    if let Some(u) = &stats.unsupported {
        return Ok(Outcome::Unsupported(u.clone()));
    }
    Ok(if stats.errors() > 0 || stats.ok == 0 { Outcome::Errors } else { Outcome::Clean })
}

fn op_timeout(c: &Common) -> Duration {
    Duration::from_secs_f64(c.timeout)
}

// ----- echo -----

#[derive(Args)]
pub struct EchoArgs {
    #[command(flatten)]
    common: Common,
    #[arg(long, value_enum)]
    era: Era,
    /// Sessions (legacy); modern runs S*C stateless workers.
    #[arg(short = 's', long = "sessions", default_value_t = 1)]
    sessions: usize,
    /// Requests in flight per session (one connection each).
    #[arg(short = 'c', long = "concurrency", default_value_t = 1)]
    concurrency: usize,
    /// Length of each request's unique echo text.
    #[arg(long, default_value_t = 64)]
    text_bytes: usize,
    /// The tool to call: gateways that put their upstreams' tools under a namespace serve
    /// the same echo as `up/echo`, `up__echo`, ... (sent as params.name and, 2026-07-28, as
    /// Mcp-Name; the reply is verified as for `echo`).
    #[arg(long, default_value = "echo", value_parser = tool_name)]
    tool: String,
    /// Instead of a -d window: N requests after the warm-up (each ends verified or counted as
    /// failed), then stop; the window closes when the last of them ends.
    #[arg(short = 'n', long = "requests", conflicts_with = "duration", value_parser = clap::value_parser!(u64).range(1..))]
    requests: Option<u64>,
}

/// A tool name for `--tool`: it travels in the `Mcp-Name` header too, so it must be a valid
/// header value (printable ASCII); anything else is refused before the run starts.
fn tool_name(s: &str) -> Result<String, String> {
    if s.is_empty() {
        return Err("the tool name is empty".into());
    }
    match s.bytes().find(|b| !(b' '..=b'~').contains(b)) {
        Some(b) => Err(format!("byte 0x{b:02x} cannot travel in the Mcp-Name header: use printable ASCII")),
        None => Ok(s.to_owned()),
    }
}

/// `s` as it stands between the quotes of a JSON string.
fn json_string_body(s: &str) -> String {
    let quoted = Value::String(s.to_owned()).to_string();
    quoted[1..quoted.len() - 1].to_owned()
}

pub async fn echo(a: EchoArgs) -> Result<Outcome, String> {
    let c = &a.common;
    let target = Target::parse(&c.url).await?;
    let before = Snapshot::take(c.pid);
    let p = plan(a.era, &target, a.sessions, a.concurrency, json!({})).await?;
    let w = match a.requests {
        Some(n) => Window::counted(c.warmup, n),
        None => Window::after(c.warmup, c.duration),
    };
    let meta = serde_json::to_string(&mcp::modern_meta(&json!({}))).expect("json");
    let mut handles = Vec::new();
    for (i, (mut link, sess)) in p.workers.into_iter().enumerate() {
        let (era, to, tb, meta) = (p.era, op_timeout(c), a.text_bytes, meta.clone());
        let headers = match &sess {
            Some(s) => s.headers.clone(),
            None => mcp::modern_headers("tools/call", Some(&a.tool)),
        };
        let meta = (era == Era::Modern).then_some(meta);
        let tool = json_string_body(&a.tool);
        handles.push(tokio::spawn(async move {
            worker_loop!(w, to, link, seq => {
                let id = rid(i, seq, 0);
                let text = unique_text(i, seq, tb);
                let body = call_body(id, &tool, &format!("{{\"text\":\"{text}\"}}"), meta.as_deref(), "", "");
                let result = call(&mut link, &headers, body, id, |_, _| Ok(())).await?;
                check_text(era, id, &result, &text)?;
                Ok(0)
            })
        }));
    }
    let (snaps, stats) = measure(w, c.pid, handles).await;
    let delete_failed = close_sessions(&target, &p.sessions).await;
    let (s, cc) = (a.sessions, a.concurrency);
    finish(c, "echo", a.era, before, snaps, stats, |s| s.window_ops, |j, _, _| {
        j.insert("sessions".into(), json!(if a.era == Era::Legacy { s } else { 0 }));
        j.insert("workers".into(), json!(s * cc));
        j.insert("text_bytes".into(), json!(a.text_bytes));
        j.insert("tool".into(), json!(a.tool));
        j.insert("requests".into(), json!(a.requests));
        j.insert("delete_failed".into(), json!(delete_failed));
    })
    .await
}

// ----- input-required (2026-07-28 MRTR) -----

#[derive(Args)]
pub struct InputRequiredArgs {
    #[command(flatten)]
    common: Common,
    /// Groups of workers (as in `echo --era modern`: S*C stateless workers in all).
    #[arg(short = 's', long = "sessions", default_value_t = 1)]
    sessions: usize,
    /// Round trips in flight per group (one connection each).
    #[arg(short = 'c', long = "concurrency", default_value_t = 1)]
    concurrency: usize,
    /// Instead of a -d window: N round trips after the warm-up, then stop (as `echo -n`).
    #[arg(short = 'n', long = "requests", conflicts_with = "duration", value_parser = clap::value_parser!(u64).range(1..))]
    requests: Option<u64>,
}

/// The client capabilities the Python SDK 2.x client declares when it handles elicitation.
fn elicitation_caps_modern() -> Value {
    json!({"elicitation": {"form": {}, "url": {}}})
}

/// Checks an elicitation/create request's params: a form with a string property `answer`.
fn check_elicit_params(id: u64, params: &Value) -> Result<(), Fail> {
    if let Some(mode) = params.get("mode").and_then(Value::as_str) {
        if mode != "form" {
            return Err(Fail::Mismatched(format!("id {id}: elicitation mode {mode:?}, wanted form: {params}")));
        }
    }
    let t = params.pointer("/requestedSchema/properties/answer/type").and_then(Value::as_str);
    if t != Some("string") {
        return Err(Fail::Mismatched(format!("id {id}: no string property `answer` in requestedSchema: {params}")));
    }
    Ok(())
}

pub async fn input_required(a: InputRequiredArgs) -> Result<Outcome, String> {
    let c = &a.common;
    let target = Target::parse(&c.url).await?;
    let before = Snapshot::take(c.pid);
    let p = plan(Era::Modern, &target, a.sessions, a.concurrency, json!({})).await?;
    let w = match a.requests {
        Some(n) => Window::counted(c.warmup, n),
        None => Window::after(c.warmup, c.duration),
    };
    let meta = serde_json::to_string(&mcp::modern_meta(&elicitation_caps_modern())).expect("json");
    let mut handles = Vec::new();
    for (i, (mut link, _)) in p.workers.into_iter().enumerate() {
        let (to, meta) = (op_timeout(c), meta.clone());
        let headers = mcp::modern_headers("tools/call", Some("ask"));
        handles.push(tokio::spawn(async move {
            worker_loop!(w, to, link, seq => {
                let id1 = rid(i, seq, 0);
                let answer = unique_text(i, seq, 24);
                let args = format!("{{\"question\":\"q{seq}\"}}");
                let body = call_body(id1, "ask", &args, Some(&meta), "", "");
                let r1 = call(&mut link, &headers, body, id1, |_, _| Ok(())).await?;
                if r1.get("resultType").and_then(Value::as_str) != Some("input_required") {
                    return Err(Fail::Mismatched(format!("id {id1}: wanted resultType input_required, got {r1}")));
                }
                let reqs = r1.get("inputRequests").and_then(Value::as_object);
                let Some((key, req)) = reqs.filter(|m| m.len() == 1).and_then(|m| m.iter().next()) else {
                    return Err(Fail::Mismatched(format!("id {id1}: wanted exactly one input request: {r1}")));
                };
                if req.get("method").and_then(Value::as_str) != Some("elicitation/create") {
                    return Err(Fail::Mismatched(format!("id {id1}: input request is not elicitation/create: {req}")));
                }
                check_elicit_params(id1, &req["params"])?;
                let mut extra = format!(
                    ",\"inputResponses\":{{{}:{{\"action\":\"accept\",\"content\":{{\"answer\":\"{answer}\"}}}}}}",
                    Value::String(key.clone())
                );
                match r1.get("requestState") {
                    Some(Value::String(st)) => {
                        extra.push_str(",\"requestState\":");
                        extra.push_str(&Value::String(st.clone()).to_string());
                    }
                    None => {}
                    Some(other) => return Err(Fail::Mismatched(format!("id {id1}: requestState is not a string: {other}"))),
                }
                let id2 = rid(i, seq, 1);
                let body = call_body(id2, "ask", &args, Some(&meta), "", &extra);
                let r2 = call(&mut link, &headers, body, id2, |_, _| Ok(())).await?;
                check_text(Era::Modern, id2, &r2, &answer)?;
                Ok(0)
            })
        }));
    }
    let (snaps, stats) = measure(w, c.pid, handles).await;
    let (s, cc) = (a.sessions, a.concurrency);
    finish(c, "input-required", Era::Modern, before, snaps, stats, |s| s.window_ops, |j, _, _| {
        j.insert("op".into(), json!("round trip: tools/call ask -> input_required -> retry with inputResponses"));
        j.insert("workers".into(), json!(s * cc));
        j.insert("requests".into(), json!(a.requests));
    })
    .await
}

// ----- elicit (handshake era) -----

#[derive(Args)]
pub struct ElicitArgs {
    #[command(flatten)]
    common: Common,
    /// Only `legacy`: the 2026-07-28 equivalent is the `input-required` subcommand.
    #[arg(long, value_enum, default_value = "legacy")]
    era: Era,
    #[arg(short = 's', long = "sessions", default_value_t = 1)]
    sessions: usize,
    /// Round trips in flight per session (two connections each: the call's stream and the answers).
    #[arg(short = 'c', long = "concurrency", default_value_t = 1)]
    concurrency: usize,
}

pub async fn elicit(a: ElicitArgs) -> Result<Outcome, String> {
    if a.era != Era::Legacy {
        return Err("elicit measures the handshake era; use `input-required` for 2026-07-28".into());
    }
    let c = &a.common;
    let target = Target::parse(&c.url).await?;
    let before = Snapshot::take(c.pid);
    let p = plan(Era::Legacy, &target, a.sessions, a.concurrency, json!({"elicitation": {}})).await?;
    let w = Window::after(c.warmup, c.duration);
    let mut handles = Vec::new();
    for (i, (mut link, sess)) in p.workers.into_iter().enumerate() {
        let to = op_timeout(c);
        let headers = sess.expect("legacy session").headers;
        let mut answers = Link::new(target.clone());
        handles.push(tokio::spawn(async move {
            worker_loop!(w, to, link, seq => {
                let id = rid(i, seq, 0);
                let answer = unique_text(i, seq, 24);
                let body = call_body(id, "ask", &format!("{{\"question\":\"q{seq}\"}}"), None, "", "");
                let req = mcp::build(&link.target, hyper::Method::POST, mcp::ACCEPT_BOTH, &headers, Some(body));
                let mut r = link.send(req).await?;
                if r.status != 200 {
                    let st = r.status;
                    return Err(Fail::Failed(format!("id {id}: HTTP {st}: {}", r.text().await)));
                }
                let mut asked = 0;
                loop {
                    let ev = r.next().await?.ok_or_else(|| Fail::Failed(format!("id {id}: the reply ended without a response")))?;
                    match kind(&ev.msg) {
                        Kind::Request { id: eid, method: "elicitation/create" } => {
                            asked += 1;
                            if asked > 1 {
                                return Err(Fail::Mismatched(format!("id {id}: a second elicitation/create: {}", ev.msg)));
                            }
                            check_elicit_params(id, &ev.msg["params"])?;
                            let resp = json!({"jsonrpc": "2.0", "id": eid,
                                "result": {"action": "accept", "content": {"answer": answer}}});
                            let mut ar = answers.send(mcp::post(&answers.target, &headers, &resp)).await?;
                            let st = ar.status;
                            if st != 202 {
                                answers.drop_conn();
                                return Err(Fail::Failed(format!("id {id}: POST of the elicitation answer: HTTP {st} (wanted 202): {}", ar.text().await)));
                            }
                            if !ar.drain(Duration::from_secs(2)).await {
                                answers.drop_conn();
                            }
                        }
                        Kind::Request { method, .. } => {
                            return Err(Fail::Mismatched(format!("id {id}: unexpected server request {method}: {}", ev.msg)));
                        }
                        Kind::Response { id: got } => {
                            if got.as_u64() != Some(id) {
                                return Err(Fail::Mismatched(format!("wanted id {id}, got response {}", ev.msg)));
                            }
                            if let Some(e) = ev.msg.get("error") {
                                return Err(Fail::Failed(format!("id {id}: JSON-RPC error {e}")));
                            }
                            if asked == 0 {
                                return Err(Fail::Mismatched(format!("id {id}: result without an elicitation: {}", ev.msg)));
                            }
                            check_text(Era::Legacy, id, &ev.msg["result"], &answer)?;
                            if r.is_sse() && !r.drain(Duration::from_secs(2)).await {
                                link.drop_conn();
                            }
                            break;
                        }
                        Kind::Notification { .. } => {}
                        Kind::Other => return Err(Fail::Mismatched(format!("id {id}: not a JSON-RPC message: {}", ev.msg))),
                    }
                }
                Ok(0)
            })
        }));
    }
    let (snaps, stats) = measure(w, c.pid, handles).await;
    let delete_failed = close_sessions(&target, &p.sessions).await;
    let (s, cc) = (a.sessions, a.concurrency);
    finish(c, "elicit", Era::Legacy, before, snaps, stats, |s| s.window_ops, |j, _, _| {
        j.insert("op".into(), json!("round trip: tools/call ask -> elicitation/create on its stream -> POST answer -> result"));
        j.insert("sessions".into(), json!(s));
        j.insert("workers".into(), json!(s * cc));
        j.insert("delete_failed".into(), json!(delete_failed));
    })
    .await
}

// ----- progress -----

#[derive(Args)]
pub struct ProgressArgs {
    #[command(flatten)]
    common: Common,
    #[arg(long, value_enum)]
    era: Era,
    #[arg(short = 's', long = "sessions", default_value_t = 1)]
    sessions: usize,
    #[arg(short = 'c', long = "concurrency", default_value_t = 1)]
    concurrency: usize,
    /// Progress notifications per call (`progress {"count": N}`).
    #[arg(long, default_value_t = 10)]
    count: u64,
}

/// Checks one notification on a progress call's stream: notifications/progress with
/// `token`, progress above `last`. Other notifications (logs) are allowed.
fn check_progress(id: u64, token: &str, method: &str, msg: &Value, last: &mut f64) -> Result<bool, Fail> {
    if method != "notifications/progress" {
        return Ok(false);
    }
    let p = &msg["params"];
    if p.get("progressToken").and_then(Value::as_str) != Some(token) {
        return Err(Fail::Mismatched(format!("id {id}: progress for another token (wanted {token:?}): {msg}")));
    }
    let v = p.get("progress").and_then(Value::as_f64).ok_or_else(|| Fail::Mismatched(format!("id {id}: progress without a number: {msg}")))?;
    if v <= *last {
        return Err(Fail::Mismatched(format!("id {id}: progress {v} after {last}: not increasing")));
    }
    *last = v;
    Ok(true)
}

pub async fn progress(a: ProgressArgs) -> Result<Outcome, String> {
    let c = &a.common;
    let target = Target::parse(&c.url).await?;
    let before = Snapshot::take(c.pid);
    let p = plan(a.era, &target, a.sessions, a.concurrency, json!({})).await?;
    let w = Window::after(c.warmup, c.duration);
    let meta = serde_json::to_string(&mcp::modern_meta(&json!({}))).expect("json");
    let n = a.count;
    let mut handles = Vec::new();
    for (i, (mut link, sess)) in p.workers.into_iter().enumerate() {
        let (era, to) = (p.era, op_timeout(c));
        let headers = match &sess {
            Some(s) => s.headers.clone(),
            None => mcp::modern_headers("tools/call", Some("progress")),
        };
        let meta = (era == Era::Modern).then(|| meta.clone());
        handles.push(tokio::spawn(async move {
            worker_loop!(w, to, link, seq => {
                let id = rid(i, seq, 0);
                let token = format!("p{i}-{seq}");
                let extra = format!("\"progressToken\":\"{token}\"");
                let body = call_body(id, "progress", &format!("{{\"count\":{n}}}"), meta.as_deref(), &extra, "");
                let (mut seen, mut last) = (0u64, f64::NEG_INFINITY);
                let result = call(&mut link, &headers, body, id, |method, msg| {
                    if check_progress(id, &token, method, msg, &mut last)? {
                        seen += 1;
                    }
                    Ok(())
                })
                .await?;
                if seen != n {
                    return Err(Fail::Mismatched(format!("id {id}: {seen} progress notifications, wanted {n}")));
                }
                check_text(era, id, &result, &n.to_string())?;
                Ok(n)
            })
        }));
    }
    let (snaps, stats) = measure(w, c.pid, handles).await;
    let delete_failed = close_sessions(&target, &p.sessions).await;
    let (s, cc) = (a.sessions, a.concurrency);
    finish(c, "progress", a.era, before, snaps, stats, |s| s.window_items, |j, st, wall| {
        j.insert("op".into(), json!("event: one notifications/progress received (server_cpu_us_per_op is per event)"));
        j.insert("count_per_call".into(), json!(n));
        j.insert("calls_per_s".into(), json!((st.window_ops as f64 / wall * 10.0).round() / 10.0));
        j.insert("events_in_window".into(), json!(st.window_items));
        j.insert("rate_per_s".into(), json!((st.window_items as f64 / wall * 10.0).round() / 10.0));
        j.insert("sessions".into(), json!(if a.era == Era::Legacy { s } else { 0 }));
        j.insert("workers".into(), json!(s * cc));
        j.insert("delete_failed".into(), json!(delete_failed));
    })
    .await
}

// ----- resume (handshake era) -----

#[derive(Args)]
pub struct ResumeArgs {
    #[command(flatten)]
    common: Common,
    /// Sessions, one worker each.
    #[arg(short = 's', long = "sessions", default_value_t = 1)]
    sessions: usize,
    /// Progress notifications per call (`progress {"count": N}`).
    #[arg(long, default_value_t = 100)]
    events: u64,
    /// Events read per connection before it is dropped and the stream resumed.
    #[arg(long, default_value_t = 10)]
    every: u64,
}

pub async fn resume(a: ResumeArgs) -> Result<Outcome, String> {
    let c = &a.common;
    let target = Target::parse(&c.url).await?;
    let before = Snapshot::take(c.pid);
    let p = plan(Era::Legacy, &target, a.sessions, 1, json!({})).await?;
    let w = Window::after(c.warmup, c.duration);
    let (n, every) = (a.events, a.every.max(1));
    let mut handles = Vec::new();
    for (i, (mut link, sess)) in p.workers.into_iter().enumerate() {
        let to = op_timeout(c);
        let headers = sess.expect("legacy session").headers;
        handles.push(tokio::spawn(async move {
            worker_loop!(w, to, link, seq => {
                let id = rid(i, seq, 0);
                let token = format!("r{i}-{seq}");
                let extra = format!("\"progressToken\":\"{token}\"");
                let body = call_body(id, "progress", &format!("{{\"count\":{n}}}"), None, &extra, "");
                // A connection of its own: it is dropped mid-stream.
                link.drop_conn();
                let req = mcp::build(&link.target, hyper::Method::POST, mcp::ACCEPT_BOTH, &headers, Some(body));
                let mut r = link.send(req).await?;
                if r.status != 200 {
                    let st = r.status;
                    return Err(Fail::Failed(format!("id {id}: HTTP {st}: {}", r.text().await)));
                }
                if !r.is_sse() {
                    // A JSON reply: an error is a failure; a result means no stream to resume.
                    if let Ok(Some(ev)) = r.next().await {
                        if let Some(e) = ev.msg.get("error") {
                            return Err(Fail::Failed(format!("id {id}: JSON-RPC error {e}")));
                        }
                    }
                    return Err(Fail::Unsupported(format!(
                        "the reply to tools/call progress is {:?}, not an event stream: nothing to resume", r.content_type)));
                }
                let (mut seen, mut last, mut resumes, mut in_segment) = (0u64, f64::NEG_INFINITY, 0u64, 0u64);
                // The Last-Event-ID the current reply resumes from (None: the POST's own
                // stream), and how many messages that reply has carried so far.
                let (mut resumed_from, mut in_reply): (Option<String>, u64) = (None, 0);
                loop {
                    let ended = match r.next().await? {
                        None => true,
                        Some(ev) => {
                            in_reply += 1;
                            match kind(&ev.msg) {
                                Kind::Notification { method } => {
                                    if check_progress(id, &token, method, &ev.msg, &mut last)? {
                                        seen += 1;
                                        in_segment += 1;
                                    }
                                }
                                Kind::Response { id: got } => {
                                    if got.as_u64() != Some(id) {
                                        return Err(Fail::Mismatched(format!("wanted id {id}, got response {}", ev.msg)));
                                    }
                                    if let Some(e) = ev.msg.get("error") {
                                        return Err(Fail::Failed(format!("id {id}: JSON-RPC error {e}")));
                                    }
                                    if seen != n {
                                        return Err(Fail::Mismatched(format!(
                                            "id {id}: {seen} progress notifications over {resumes} resumptions, wanted {n}")));
                                    }
                                    check_text(Era::Legacy, id, &ev.msg["result"], &n.to_string())?;
                                    link.drop_conn();
                                    return Ok(resumes);
                                }
                                Kind::Request { method, .. } => {
                                    return Err(Fail::Mismatched(format!("id {id}: unexpected server request {method}")));
                                }
                                Kind::Other => return Err(Fail::Mismatched(format!("id {id}: not a JSON-RPC message: {}", ev.msg))),
                            }
                            false
                        }
                    };
                    // Drop the connection every `every` events (or when the server closed
                    // the stream before the response) and resume from the last event id.
                    if ended || in_segment >= every {
                        if let (true, Some(from), 0) = (ended, &resumed_from, in_reply) {
                            // A 200 event stream that ends at once: nothing was replayed (and
                            // resuming again from the same id would loop).
                            let ids = match &r.last_event_id {
                                None => String::new(),
                                Some(id) => format!(" (only an event id, {id})"),
                            };
                            return Err(Fail::Unsupported(format!(
                                "the resumption GET (Last-Event-ID: {from}) answered 200 but its stream \
                                 ended with no event{ids}: the server did not replay")));
                        }
                        let Some(last_id) = r.last_event_id.clone() else {
                            return Err(Fail::Unsupported(match &resumed_from {
                                None => "the POST's SSE events carry no id: nothing to resume from".into(),
                                Some(from) => format!(
                                    "the events replayed by the resumption GET (Last-Event-ID: {from}) \
                                     carry no id: nothing to resume from"),
                            }));
                        };
                        drop(r);
                        link.drop_conn();
                        let mut h = headers.clone();
                        h.push((mcp::H_LAST_EVENT_ID.clone(), mcp::hv(&last_id)));
                        let req = mcp::build(&link.target, hyper::Method::GET, mcp::ACCEPT_SSE, &h, None);
                        r = link.send(req).await?;
                        if r.status != 200 || !r.is_sse() {
                            let (st, ct) = (r.status, r.content_type.clone());
                            return Err(Fail::Unsupported(format!(
                                "GET with Last-Event-ID {last_id} answered HTTP {st} {ct}: {}", r.text().await)));
                        }
                        resumes += 1;
                        in_segment = 0;
                        in_reply = 0;
                        resumed_from = Some(last_id);
                    }
                }
            })
        }));
    }
    let (snaps, stats) = measure(w, c.pid, handles).await;
    let delete_failed = close_sessions(&target, &p.sessions).await;
    finish(c, "resume", Era::Legacy, before, snaps, stats, |s| s.window_items, |j, st, wall| {
        j.insert("op".into(), json!("resume: one GET + Last-Event-ID continuing a dropped stream (server_cpu_us_per_op is per resumed stream)"));
        j.insert("events_per_call".into(), json!(n));
        j.insert("events_per_connection".into(), json!(every));
        j.insert("calls_per_s".into(), json!((st.window_ops as f64 / wall * 10.0).round() / 10.0));
        j.insert("resumes_in_window".into(), json!(st.window_items));
        j.insert("rate_per_s".into(), json!((st.window_items as f64 / wall * 10.0).round() / 10.0));
        j.insert("sessions".into(), json!(a.sessions));
        j.insert("delete_failed".into(), json!(delete_failed));
        if let Some(u) = &st.unsupported {
            j.insert("not_supported".into(), json!(u));
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_namespaced_tool_name_travels_in_the_body_and_the_header() {
        assert_eq!(super::tool_name("up/echo").as_deref(), Ok("up/echo"));
        let body = super::call_body(7, &super::json_string_body("up/\"e\\cho"), "{}", None, "", "");
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["params"]["name"], "up/\"e\\cho");
        assert!(super::tool_name("").is_err());
        assert!(super::tool_name("up\necho").is_err());
        assert!(super::tool_name("ü").is_err());
    }
}
