//! Many idle handshake-era sessions: open K of them, `--parallel` at a time over reused
//! keep-alive connections (so an idle session holds no socket), read the server's RSS per
//! idle session, check a sample spread over the whole set with one echo call each, then
//! DELETE them all and read the RSS again.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use serde_json::{json, Map, Value};

use crate::load::{call, call_body, check_text, unique_text};
use crate::mcp::{self, Link, Session, Target};
use crate::procfs::Snapshot;
use crate::stats::{report, Fail};
use crate::{Era, Outcome};

#[derive(Args)]
pub struct SessionsArgs {
    /// The MCP endpoint, e.g. http://127.0.0.1:8080/mcp
    #[arg(long)]
    url: String,
    /// Sessions to open.
    #[arg(short = 'k', long = "count", default_value_t = 10000)]
    count: usize,
    /// Sessions being opened (and verified, and DELETEd) at once, one keep-alive connection each.
    #[arg(long, default_value_t = 16)]
    parallel: usize,
    /// Seconds to wait after the last session opened, and after the last DELETE, before reading RSS.
    #[arg(long, default_value_t = 2.0)]
    settle: f64,
    /// Sessions checked alive with one `tools/call echo` each, spread evenly over all that opened.
    #[arg(long, default_value_t = 100)]
    verify: usize,
    /// Leave the sessions open: no DELETE, no RSS after.
    #[arg(long)]
    no_delete: bool,
    /// PID of the server process (RSS from /proc/PID/status, CPU from /proc/PID/stat).
    #[arg(long)]
    pid: Option<u32>,
    /// Write the figures as one JSON object to this file.
    #[arg(long = "json")]
    json: Option<String>,
    /// Seconds one operation (an open: initialize + notifications/initialized; a call; a
    /// DELETE) may take before it counts as failed.
    #[arg(long, default_value_t = 30.0)]
    timeout: f64,
}

/// Runs `op` on the items 0..n with `parallel` workers, each on one keep-alive link that
/// `op` takes and hands back; returns every item's result with its index, in index order.
async fn pool<R, F, Fut>(target: &Target, n: usize, parallel: usize, op: F) -> Result<Vec<(usize, R)>, String>
where
    R: Send + 'static,
    F: Fn(Link, usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = (Link, R)> + Send + 'static,
{
    let next = Arc::new(AtomicUsize::new(0));
    let op = Arc::new(op);
    let mut handles = Vec::new();
    for _ in 0..parallel.max(1).min(n) {
        let (next, op, t) = (next.clone(), op.clone(), target.clone());
        handles.push(tokio::spawn(async move {
            let mut link = Link::new(t);
            let mut out = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return out;
                }
                let (l, r) = op(link, i).await;
                link = l;
                out.push((i, r));
            }
        }));
    }
    let mut all = Vec::with_capacity(n);
    for h in handles {
        all.extend(h.await.map_err(|e| format!("worker task ended abnormally: {e}"))?);
    }
    all.sort_unstable_by_key(|(i, _)| *i);
    Ok(all)
}

/// initialize + notifications/initialized within `to`; the session's id.
async fn open(link: &mut Link, to: Duration) -> Result<Box<str>, String> {
    match tokio::time::timeout(to, mcp::open_session(link, json!({}))).await {
        Ok(Ok(s)) => Ok(s.id().into()),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(format!("no session within {to:?}")),
    }
}

/// One `tools/call echo` in session `sid` within `to`, its text checked.
async fn check_alive(link: &mut Link, sid: &str, id: u64, to: Duration) -> Result<(), Fail> {
    let text = unique_text(id as usize, 0, 32);
    let body = call_body(id, "echo", &format!("{{\"text\":\"{text}\"}}"), None, "", "");
    let headers = Session::legacy(sid).headers;
    let verified = async {
        let result = call(link, &headers, body, id, |_, _| Ok(())).await?;
        check_text(Era::Legacy, id, &result, &text)?;
        Ok::<(), Fail>(())
    };
    match tokio::time::timeout(to, verified).await {
        Ok(r) => r,
        Err(_) => Err(Fail::Failed(format!("id {id}: no verified reply within {to:?}"))),
    }
}

fn rate(n: usize, secs: f64) -> f64 {
    if secs > 0.0 {
        (n as f64 / secs * 10.0).round() / 10.0
    } else {
        0.0
    }
}

fn rounded(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

pub async fn run(a: SessionsArgs) -> Result<Outcome, String> {
    let target = Target::parse(&a.url).await?;
    let to = Duration::from_secs_f64(a.timeout);
    let settle = Duration::from_secs_f64(a.settle);
    let mut samples: Vec<String> = Vec::new();
    let sample = |s: String, samples: &mut Vec<String>| {
        if samples.len() < 5 {
            samples.push(s)
        }
    };

    // ---- open: the first session alone (a server that refuses it is a setup error) ----
    let before = Snapshot::take(a.pid);
    let t_open = Instant::now();
    let mut ids: Vec<Box<str>> = Vec::with_capacity(a.count);
    let mut open_errors = 0usize;
    if a.count > 0 {
        let mut link = Link::new(target.clone());
        ids.push(open(&mut link, to).await.map_err(|e| format!("the first session did not open: {e}"))?);
        let opened = pool(&target, a.count - 1, a.parallel, move |mut link, _| async move {
            let r = open(&mut link, to).await;
            if r.is_err() {
                link.drop_conn();
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            (link, r)
        })
        .await?;
        for (i, r) in opened {
            match r {
                Ok(id) => ids.push(id),
                Err(e) => {
                    open_errors += 1;
                    sample(format!("failed: session {} did not open: {e}", i + 1), &mut samples);
                }
            }
        }
    }
    let open_s = t_open.elapsed().as_secs_f64();
    let opened_at = Snapshot::take(a.pid);
    let n = ids.len();
    eprintln!("{n} sessions open ({open_errors} failed) in {open_s:.1} s");

    // ---- idle: settle, read RSS ----
    tokio::time::sleep(settle).await;
    let idle = Snapshot::take(a.pid);
    let rss_per_session = match (before.server_rss_kib, idle.server_rss_kib) {
        (Some(b), Some(i)) if n > 0 => Some(((i as f64 - b as f64) * 1024.0 / n as f64).round()),
        _ => None,
    };

    // ---- verify: one echo in each of `verify` sessions spread over the whole set ----
    let ids = Arc::new(ids);
    let v = a.verify.min(n);
    let (mut alive, mut verify_failed, mut verify_mismatched) = (0usize, 0usize, 0usize);
    let ids2 = ids.clone();
    let checked = pool(&target, v, a.parallel, move |mut link, j| {
        let ids = ids2.clone();
        async move {
            let idx = j * n / v;
            let r = check_alive(&mut link, &ids[idx], j as u64 + 1, to).await;
            if r.is_err() {
                link.drop_conn();
            }
            (link, (idx, r))
        }
    })
    .await?;
    for (_, (idx, r)) in checked {
        match r {
            Ok(()) => alive += 1,
            Err(Fail::Mismatched(e)) => {
                verify_mismatched += 1;
                sample(format!("mismatched: session {idx}: {e}"), &mut samples);
            }
            Err(Fail::Failed(e) | Fail::Unsupported(e)) => {
                verify_failed += 1;
                sample(format!("failed: session {idx}: {e}"), &mut samples);
            }
        }
    }
    eprintln!("{alive} of {v} sessions checked alive");

    // ---- DELETE every session, settle, read RSS ----
    let mut delete_errors = 0usize;
    let mut delete_s = None;
    let mut after = None;
    if !a.no_delete {
        let t_del = Instant::now();
        let ids2 = ids.clone();
        let deleted = pool(&target, n, a.parallel, move |mut link, i| {
            let ids = ids2.clone();
            async move {
                let r = mcp::close_session(&mut link, &Session::legacy(&ids[i]), to).await;
                (link, r)
            }
        })
        .await?;
        for (i, r) in deleted {
            if let Err(e) = r {
                delete_errors += 1;
                sample(format!("failed: session {i}: {e}"), &mut samples);
            }
        }
        let secs = t_del.elapsed().as_secs_f64();
        eprintln!("{} sessions deleted ({delete_errors} failed) in {secs:.1} s", n - delete_errors);
        delete_s = Some(secs);
        tokio::time::sleep(settle).await;
        after = Some(Snapshot::take(a.pid));
    }

    let cpu_us_per_open = match (before.server_cpu, opened_at.server_cpu) {
        (Some(x), Some(y)) if n > 0 => json!(rounded((y - x).as_secs_f64() * 1e6 / n as f64, 2)),
        _ => Value::Null,
    };
    let mut j = Map::new();
    j.insert("scenario".into(), json!("sessions"));
    j.insert("era".into(), json!(Era::Legacy.name()));
    j.insert("url".into(), json!(a.url));
    j.insert("parallel".into(), json!(a.parallel.max(1)));
    j.insert("sessions_requested".into(), json!(a.count));
    j.insert("sessions_opened".into(), json!(n));
    j.insert("open_errors".into(), json!(open_errors));
    j.insert("open_time_s".into(), json!(rounded(open_s, 3)));
    j.insert("sessions_per_s".into(), json!(rate(n, open_s)));
    j.insert("server_cpu_us_per_open".into(), cpu_us_per_open);
    j.insert("settle_s".into(), json!(a.settle));
    j.insert("server_rss_before_kib".into(), json!(before.server_rss_kib));
    j.insert("server_rss_idle_kib".into(), json!(idle.server_rss_kib));
    j.insert("rss_per_session_bytes".into(), json!(rss_per_session));
    j.insert("verified".into(), json!(v));
    j.insert("verified_alive".into(), json!(alive));
    j.insert("verify_failed".into(), json!(verify_failed));
    j.insert("verify_mismatched".into(), json!(verify_mismatched));
    j.insert("deleted".into(), json!(!a.no_delete));
    j.insert("delete_errors".into(), json!(delete_errors));
    j.insert("delete_time_s".into(), json!(delete_s.map(|s| rounded(s, 3))));
    j.insert("deletes_per_s".into(), json!(delete_s.map(|s| rate(n, s))));
    j.insert("server_rss_after_delete_kib".into(), json!(after.and_then(|s| s.server_rss_kib)));
    j.insert("failed".into(), json!(open_errors + verify_failed + delete_errors));
    j.insert("mismatched".into(), json!(verify_mismatched));
    report(&j, &samples, a.json.as_deref())?;
    let bad = n == 0 || open_errors > 0 || alive < v || delete_errors > 0;
    Ok(if bad { Outcome::Errors } else { Outcome::Clean })
}
