//! Many open streams at once — handshake-era GET streams (one session each) or 2026-07-28
//! `subscriptions/listen` POSTs — each on its own HTTP/1.1 connection: the server's RSS
//! per open stream, then the time from a tools/list_changed trigger until every stream
//! has received `notifications/tools/list_changed`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use hdrhistogram::Histogram;
use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, Semaphore};

use crate::mcp::{self, kind, Kind, Link, Reply, Session, Target};
use crate::procfs::{self, Snapshot};
use crate::stats::{ms, report};
use crate::{Era, Outcome};

#[derive(Args)]
#[command(group(clap::ArgGroup::new("trigger").required(true).args(["trigger_url", "trigger_cmd"])))]
pub struct StreamsArgs {
    /// The MCP endpoint, e.g. http://127.0.0.1:8080/mcp
    #[arg(long)]
    url: String,
    #[arg(long, value_enum)]
    era: Era,
    /// Streams to open (each its own connection; legacy: each its own session).
    #[arg(long, default_value_t = 10000)]
    count: usize,
    /// POSTed (empty body) to make the server's tool list change.
    #[arg(long)]
    trigger_url: Option<String>,
    /// Run with `sh -c` to make the server's tool list change.
    #[arg(long)]
    trigger_cmd: Option<String>,
    /// PID of the server process (RSS and CPU).
    #[arg(long)]
    pid: Option<u32>,
    /// Triggers, one after another.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Streams being opened at once.
    #[arg(long, default_value_t = 200)]
    parallel: usize,
    /// Seconds a stream may take to receive list_changed after a trigger before it counts as failed.
    #[arg(long, default_value_t = 30.0)]
    wait: f64,
    /// Seconds to wait after the last stream opened before reading RSS.
    #[arg(long, default_value_t = 1.0)]
    settle: f64,
    /// Write the figures as one JSON object to this file.
    #[arg(long = "json")]
    json: Option<String>,
}

/// What a stream's task tells the main task.
enum Up {
    Opened(usize, Option<Session>),
    OpenFailed(usize, String),
    Changed(usize, Instant),
    /// A message that breaks the stream's contract (counted as mismatched).
    Bad(usize, String),
    Closed(usize, String),
}

const LIST_CHANGED: &str = "notifications/tools/list_changed";

async fn open_stream(era: Era, link: &mut Link, idx: usize, meta: &Value) -> Result<(Reply, Option<Session>), String> {
    match era {
        Era::Legacy => {
            let s = mcp::open_session(link, json!({})).await?;
            let req = mcp::build(&link.target, hyper::Method::GET, mcp::ACCEPT_SSE, &s.headers, None);
            let r = link.send(req).await?;
            if r.status != 200 || !r.is_sse() {
                let (st, ct) = (r.status, r.content_type.clone());
                return Err(format!("GET stream: HTTP {st} {ct}: {}", r.text().await));
            }
            Ok((r, Some(s)))
        }
        Era::Modern => {
            let body = json!({"jsonrpc": "2.0", "id": idx, "method": "subscriptions/listen",
                "params": {"notifications": {"toolsListChanged": true}, "_meta": meta}});
            let headers = mcp::modern_headers("subscriptions/listen", None);
            let mut r = link.send(mcp::post(&link.target, &headers, &body)).await?;
            if r.status != 200 || !r.is_sse() {
                let (st, ct) = (r.status, r.content_type.clone());
                return Err(format!("subscriptions/listen: HTTP {st} {ct}: {}", r.text().await));
            }
            let ev = r.next().await?.ok_or("subscriptions/listen: the stream ended before the acknowledgement")?;
            let m = &ev.msg;
            if m.get("method").and_then(Value::as_str) != Some("notifications/subscriptions/acknowledged") {
                return Err(format!("subscriptions/listen: first message is not the acknowledgement: {m}"));
            }
            let sub = m.pointer("/params/_meta/io.modelcontextprotocol~1subscriptionId");
            if sub.and_then(Value::as_u64) != Some(idx as u64) {
                return Err(format!("subscriptions/listen: acknowledgement with subscriptionId {sub:?}, wanted {idx}: {m}"));
            }
            if m.pointer("/params/notifications/toolsListChanged") != Some(&json!(true)) {
                return Err(format!("subscriptions/listen: toolsListChanged not honoured: {m}"));
            }
            Ok((r, None))
        }
    }
}

async fn stream_task(era: Era, target: Target, idx: usize, meta: Arc<Value>, sem: Arc<Semaphore>, tx: mpsc::UnboundedSender<Up>) {
    let permit = sem.acquire_owned().await.expect("semaphore");
    let mut link = Link::new(target);
    let opened = tokio::time::timeout(Duration::from_secs(30), open_stream(era, &mut link, idx, &meta)).await;
    drop(permit);
    let mut r = match opened {
        Ok(Ok((r, s))) => {
            let _ = tx.send(Up::Opened(idx, s));
            r
        }
        Ok(Err(e)) => {
            let _ = tx.send(Up::OpenFailed(idx, e));
            return;
        }
        Err(_) => {
            let _ = tx.send(Up::OpenFailed(idx, "opening took over 30 s".into()));
            return;
        }
    };
    loop {
        match r.next().await {
            Ok(Some(ev)) => match kind(&ev.msg) {
                Kind::Notification { method: LIST_CHANGED } => {
                    let at = Instant::now();
                    if era == Era::Modern {
                        let sub = ev.msg.pointer("/params/_meta/io.modelcontextprotocol~1subscriptionId");
                        if sub.and_then(Value::as_u64) != Some(idx as u64) {
                            let _ = tx.send(Up::Bad(idx, format!("list_changed with subscriptionId {sub:?}, wanted {idx}: {}", ev.msg)));
                            continue;
                        }
                    }
                    let _ = tx.send(Up::Changed(idx, at));
                }
                Kind::Response { .. } => {
                    let _ = tx.send(Up::Closed(idx, format!("the server ended the stream with {}", ev.msg)));
                    return;
                }
                _ => {}
            },
            Ok(None) => {
                let _ = tx.send(Up::Closed(idx, "the server ended the stream".into()));
                return;
            }
            Err(e) => {
                let _ = tx.send(Up::Closed(idx, e));
                return;
            }
        }
    }
}

async fn trigger(a: &StreamsArgs) -> Result<(), String> {
    if let Some(u) = &a.trigger_url {
        let t = Target::parse(u).await?;
        let mut link = Link::new(t);
        let req = mcp::build(&link.target, hyper::Method::POST, mcp::ACCEPT_BOTH, &vec![], Some(Vec::new()));
        let r = link.send(req).await.map_err(|e| format!("trigger {u}: {e}"))?;
        if !(200..300).contains(&r.status) {
            let st = r.status;
            return Err(format!("trigger {u}: HTTP {st}: {}", r.text().await));
        }
    } else if let Some(c) = &a.trigger_cmd {
        let st = tokio::process::Command::new("sh").arg("-c").arg(c).status().await.map_err(|e| format!("trigger command: {e}"))?;
        if !st.success() {
            return Err(format!("trigger command {c:?} failed: {st}"));
        }
    }
    Ok(())
}

fn q(h: &Histogram<u64>, p: f64) -> Value {
    if h.is_empty() { Value::Null } else { json!(ms(h.value_at_quantile(p))) }
}

pub async fn run(a: StreamsArgs) -> Result<Outcome, String> {
    let nofile = procfs::raise_nofile();
    if (nofile as usize) < a.count + 64 {
        eprintln!("warning: open-file limit {nofile} is below --count {} + 64", a.count);
    }
    let target = Target::parse(&a.url).await?;
    let before = Snapshot::take(a.pid);
    let meta = Arc::new(Value::Object(mcp::modern_meta(&json!({}))));
    let sem = Arc::new(Semaphore::new(a.parallel.max(1)));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let t_open = Instant::now();
    let mut tasks = Vec::with_capacity(a.count);
    for idx in 0..a.count {
        tasks.push(tokio::spawn(stream_task(a.era, target.clone(), idx, meta.clone(), sem.clone(), tx.clone())));
    }
    drop(tx);

    let mut samples: Vec<String> = Vec::new();
    let sample = |s: String, samples: &mut Vec<String>| {
        if samples.len() < 5 {
            samples.push(s)
        }
    };
    let mut alive = vec![false; a.count];
    let mut sessions = Vec::new();
    let (mut opened, mut open_failed, mut mismatched, mut closed) = (0usize, 0usize, 0u64, 0u64);
    let mut pending_changed = Vec::new();
    while opened + open_failed < a.count {
        match tokio::time::timeout(Duration::from_secs(120), rx.recv()).await {
            Ok(Some(Up::Opened(i, s))) => {
                opened += 1;
                alive[i] = true;
                sessions.extend(s);
            }
            Ok(Some(Up::OpenFailed(i, e))) => {
                open_failed += 1;
                sample(format!("failed: stream {i} did not open: {e}"), &mut samples);
            }
            Ok(Some(Up::Bad(i, e))) => {
                mismatched += 1;
                sample(format!("mismatched: stream {i}: {e}"), &mut samples);
            }
            Ok(Some(Up::Closed(i, e))) => {
                closed += 1;
                alive[i] = false;
                sample(format!("failed: stream {i} closed: {e}"), &mut samples);
            }
            Ok(Some(Up::Changed(i, at))) => pending_changed.push((i, at)),
            Ok(None) | Err(_) => break,
        }
    }
    let open_s = t_open.elapsed().as_secs_f64();
    eprintln!("{opened} streams open ({open_failed} failed) in {open_s:.1} s");
    tokio::time::sleep(Duration::from_secs_f64(a.settle)).await;
    let all_open = Snapshot::take(a.pid);
    let rss_per_stream = match (before.server_rss_kib, all_open.server_rss_kib) {
        (Some(b), Some(o)) if opened > 0 => Some(((o as f64 - b as f64) / opened as f64 * 100.0).round() / 100.0),
        _ => None,
    };
    let mut extra = pending_changed.len() as u64;

    let mut all = Histogram::<u64>::new_with_bounds(1, 600_000_000, 3).expect("histogram");
    let mut rounds = Vec::new();
    let (mut received_total, mut missing_total) = (0u64, 0u64);
    let cpu_start = Snapshot::take(a.pid);
    for round in 1..=a.rounds {
        // Messages that arrived between rounds are not attributed to this trigger.
        while let Ok(m) = rx.try_recv() {
            match m {
                Up::Changed(..) => extra += 1,
                Up::Closed(i, e) => {
                    closed += 1;
                    alive[i] = false;
                    sample(format!("failed: stream {i} closed: {e}"), &mut samples);
                }
                Up::Bad(i, e) => {
                    mismatched += 1;
                    sample(format!("mismatched: stream {i}: {e}"), &mut samples);
                }
                _ => {}
            }
        }
        let want = alive.iter().filter(|x| **x).count();
        let mut got: Vec<Option<Duration>> = vec![None; a.count];
        let mut h = Histogram::<u64>::new_with_bounds(1, 600_000_000, 3).expect("histogram");
        let s0 = Snapshot::take(a.pid);
        let t0 = Instant::now();
        trigger(&a).await?;
        let trigger_ms = t0.elapsed().as_secs_f64() * 1000.0;
        let deadline = t0 + Duration::from_secs_f64(a.wait);
        let mut received = 0usize;
        let mut round_extra = 0u64;
        while received < want {
            match tokio::time::timeout_at(deadline.into(), rx.recv()).await {
                Ok(Some(Up::Changed(i, at))) => {
                    if alive[i] && got[i].is_none() {
                        let d = at.saturating_duration_since(t0);
                        got[i] = Some(d);
                        let _ = h.record((d.as_micros() as u64).max(1));
                        received += 1;
                    } else {
                        round_extra += 1;
                    }
                }
                Ok(Some(Up::Closed(i, e))) => {
                    closed += 1;
                    if alive[i] && got[i].is_none() {
                        sample(format!("failed: stream {i} closed before list_changed of round {round}: {e}"), &mut samples);
                    }
                    alive[i] = false;
                }
                Ok(Some(Up::Bad(i, e))) => {
                    mismatched += 1;
                    sample(format!("mismatched: stream {i}: {e}"), &mut samples);
                }
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
        let s1 = Snapshot::take(a.pid);
        let missing = want - received;
        if missing > 0 {
            sample(format!("failed: round {round}: {missing} of {want} streams got no list_changed within {} s", a.wait), &mut samples);
        }
        received_total += received as u64;
        missing_total += missing as u64;
        extra += round_extra;
        let _ = all.add(&h);
        let cpu_ms = match (s0.server_cpu, s1.server_cpu) {
            (Some(x), Some(y)) => json!(((y - x).as_secs_f64() * 1e5).round() / 100.0),
            _ => Value::Null,
        };
        let r = json!({
            "round": round, "streams": want, "received": received, "missing": missing,
            "trigger_ms": (trigger_ms * 1000.0).round() / 1000.0,
            "latency_p50_ms": q(&h, 0.5), "latency_p99_ms": q(&h, 0.99),
            "latency_max_ms": if h.is_empty() { Value::Null } else { json!(ms(h.max())) },
            "server_cpu_ms": cpu_ms,
        });
        eprintln!("round {round}: {r}");
        rounds.push(r);
        if round < a.rounds {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
    let cpu_end = Snapshot::take(a.pid);

    let delete_failed = crate::load::close_sessions(&target, &sessions).await;
    for t in &tasks {
        t.abort();
    }

    let wall = cpu_end.at.duration_since(cpu_start.at).as_secs_f64();
    let mut j = Map::new();
    j.insert("scenario".into(), json!("streams"));
    j.insert("era".into(), json!(a.era.name()));
    j.insert("url".into(), json!(a.url));
    j.insert("count".into(), json!(a.count));
    j.insert("opened".into(), json!(opened));
    j.insert("open_failed".into(), json!(open_failed));
    j.insert("open_time_s".into(), json!((open_s * 1000.0).round() / 1000.0));
    j.insert("rounds".into(), json!(a.rounds));
    j.insert("duration_s".into(), json!((wall * 1000.0).round() / 1000.0));
    j.insert("ok".into(), json!(received_total));
    j.insert("failed".into(), json!(missing_total + open_failed as u64));
    j.insert("mismatched".into(), json!(mismatched));
    j.insert("extra_notifications".into(), json!(extra));
    j.insert("streams_closed".into(), json!(closed));
    j.insert("latency_p50_ms".into(), q(&all, 0.5));
    j.insert("latency_p99_ms".into(), q(&all, 0.99));
    j.insert("latency_max_ms".into(), if all.is_empty() { Value::Null } else { json!(ms(all.max())) });
    let cpu_per = match (cpu_start.server_cpu, cpu_end.server_cpu) {
        (Some(x), Some(y)) if received_total > 0 => json!(((y - x).as_secs_f64() * 1e6 / received_total as f64 * 100.0).round() / 100.0),
        _ => Value::Null,
    };
    j.insert("server_cpu_us_per_op".into(), cpu_per);
    let client_pct = match (cpu_start.self_cpu, cpu_end.self_cpu) {
        (Some(x), Some(y)) => json!(((y - x).as_secs_f64() / wall * 1000.0).round() / 10.0),
        _ => Value::Null,
    };
    j.insert("client_cpu_pct".into(), client_pct);
    j.insert("rss_kib_before".into(), json!(before.server_rss_kib));
    j.insert("rss_kib_after".into(), json!(all_open.server_rss_kib));
    j.insert("rss_per_stream_kib".into(), json!(rss_per_stream));
    j.insert("rss_kib_end".into(), json!(cpu_end.server_rss_kib));
    j.insert("delete_failed".into(), json!(delete_failed));
    j.insert("nofile_limit".into(), json!(nofile));
    j.insert("per_round".into(), Value::Array(rounds));
    report(&j, &samples, a.json.as_deref())?;
    let bad = missing_total > 0 || open_failed > 0 || mismatched > 0 || opened == 0 || received_total == 0;
    Ok(if bad { Outcome::Errors } else { Outcome::Clean })
}
