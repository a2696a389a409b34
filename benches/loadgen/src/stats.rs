//! Counting, the measured window, and the report (human summary + one JSON object).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde_json::{json, Map, Value};

use crate::procfs::Snapshot;

/// How many failure samples each worker keeps, and the report prints.
const SAMPLES: usize = 5;

/// The measured window: warm-up before it, nothing counted after it.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    pub start: Instant,
    /// The end of a timed window (a counted window has none: it is `start`, unused).
    pub end: Instant,
    /// A counted window's budget: operations still to start after the warm-up, shared by
    /// every worker; the window ends when the last of them ends.
    pub budget: Option<&'static AtomicU64>,
}

impl Window {
    /// A window of `duration` seconds after `warmup` seconds.
    pub fn after(warmup: f64, duration: f64) -> Window {
        let start = Instant::now() + Duration::from_secs_f64(warmup);
        Window { start, end: start + Duration::from_secs_f64(duration), budget: None }
    }

    /// A window of `ops` operations started after `warmup` seconds.
    pub fn counted(warmup: f64, ops: u64) -> Window {
        let start = Instant::now() + Duration::from_secs_f64(warmup);
        // One counter per run, for the life of the process (Window stays Copy).
        let budget: &'static AtomicU64 = Box::leak(Box::new(AtomicU64::new(ops)));
        Window { start, end: start, budget: Some(budget) }
    }

    pub fn contains(&self, t: Instant) -> bool {
        t >= self.start && t <= self.end
    }

    /// The start (now) of a worker's next operation, or None if it should stop. After a
    /// counted window's warm-up, each operation takes one from the budget.
    pub fn next_op(&self) -> Option<Instant> {
        let now = Instant::now();
        let go = match self.budget {
            None => now < self.end,
            Some(b) => now < self.start || b.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1)).is_ok(),
        };
        go.then_some(now)
    }

    /// Whether an operation that ran from `start` to `end` counts in the window: it ended
    /// inside a timed window, or took from a counted window's budget.
    pub fn counts(&self, start: Instant, end: Instant) -> bool {
        match self.budget {
            None => self.contains(end),
            Some(_) => start >= self.start,
        }
    }
}

/// One worker's counts; merged at the end.
pub struct Stats {
    /// Operations that ended verified (all, warm-up included).
    pub ok: u64,
    /// Operations that ended with a transport/HTTP/JSON-RPC error or a timeout.
    pub failed: u64,
    /// Operations answered, but with another id, a wrong result or wrong notifications.
    pub mismatched: u64,
    /// Verified operations that ended inside the window.
    pub window_ops: u64,
    /// Scenario-specific items (progress events, resumes) counted inside the window.
    pub window_items: u64,
    /// Latency (µs) of operations that ended inside the window.
    pub hist: Histogram<u64>,
    pub samples: Vec<String>,
    /// Set when the server does not support what the scenario measures (one-line reason).
    pub unsupported: Option<String>,
}

/// How an operation went wrong.
pub enum Fail {
    Failed(String),
    Mismatched(String),
    /// The server does not offer what the scenario measures (reported, exit code 3).
    Unsupported(String),
}

impl From<String> for Fail {
    fn from(s: String) -> Fail {
        Fail::Failed(s)
    }
}

impl Default for Stats {
    fn default() -> Stats {
        Stats {
            ok: 0,
            failed: 0,
            mismatched: 0,
            window_ops: 0,
            window_items: 0,
            hist: Histogram::new_with_bounds(1, 120_000_000, 3).expect("histogram"),
            samples: Vec::new(),
            unsupported: None,
        }
    }
}

impl Stats {
    /// Records one operation that started at `start` and just ended; `items` counts
    /// scenario-specific items it delivered (if verified).
    pub fn record(&mut self, w: &Window, start: Instant, outcome: Result<u64, Fail>) {
        let end = Instant::now();
        match outcome {
            Ok(items) => {
                self.ok += 1;
                if w.counts(start, end) {
                    self.window_ops += 1;
                    self.window_items += items;
                    let us = end.duration_since(start).as_micros().max(1) as u64;
                    let _ = self.hist.record(us.min(120_000_000));
                }
            }
            Err(Fail::Failed(s)) => {
                self.failed += 1;
                self.sample(format!("failed: {s}"));
            }
            Err(Fail::Mismatched(s)) => {
                self.mismatched += 1;
                self.sample(format!("mismatched: {s}"));
            }
            Err(Fail::Unsupported(s)) => self.sample(format!("not supported: {s}")),
        }
    }

    pub fn sample(&mut self, s: String) {
        if self.samples.len() < SAMPLES {
            self.samples.push(s);
        }
    }

    pub fn merge(&mut self, o: Stats) {
        self.ok += o.ok;
        self.failed += o.failed;
        self.mismatched += o.mismatched;
        self.window_ops += o.window_ops;
        self.window_items += o.window_items;
        let _ = self.hist.add(&o.hist);
        if self.unsupported.is_none() {
            self.unsupported = o.unsupported;
        }
        for s in o.samples {
            self.sample(s);
        }
    }

    pub fn errors(&self) -> u64 {
        self.failed + self.mismatched
    }
}

pub fn ms(us: u64) -> f64 {
    (us as f64 / 1000.0 * 1000.0).round() / 1000.0
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// The common figures of a measured run. `op` names the operation ("request",
/// "round_trip", "event", "resume") and `items` what `window_items` counts.
pub struct Measured<'a> {
    pub scenario: &'a str,
    pub era: &'a str,
    pub url: &'a str,
    pub warmup_s: f64,
    pub before_setup: Snapshot,
    pub start: Snapshot,
    pub end: Snapshot,
    pub stats: &'a Stats,
}

impl Measured<'_> {
    /// The JSON object of common figures; `per_op_count` is what CPU per op is divided by.
    pub fn json(&self, per_op_count: u64) -> Map<String, Value> {
        let wall = self.end.at.duration_since(self.start.at).as_secs_f64();
        let s = self.stats;
        // None when the reading went down: with --tree, a process of the tree exited in the
        // window and took its CPU time with it, so the difference would mean nothing.
        let spent = match (self.start.server_cpu, self.end.server_cpu) {
            (Some(a), Some(b)) => b.checked_sub(a),
            _ => None,
        };
        let cpu_us_per_op = spent.filter(|_| per_op_count > 0).map(|d| round(d.as_secs_f64() * 1e6 / per_op_count as f64, 2));
        let server_cpu_pct = spent.map(|d| round(d.as_secs_f64() / wall * 100.0, 1));
        let client_cpu_pct = match (self.start.self_cpu, self.end.self_cpu) {
            (Some(a), Some(b)) => Some(round((b - a).as_secs_f64() / wall * 100.0, 1)),
            _ => None,
        };
        let q = |p: f64| if s.hist.is_empty() { Value::Null } else { json!(ms(s.hist.value_at_quantile(p))) };
        let mut m = Map::new();
        m.insert("scenario".into(), json!(self.scenario));
        m.insert("era".into(), json!(self.era));
        m.insert("url".into(), json!(self.url));
        m.insert("warmup_s".into(), json!(self.warmup_s));
        m.insert("duration_s".into(), json!(round(wall, 3)));
        m.insert("ok".into(), json!(s.ok));
        m.insert("failed".into(), json!(s.failed));
        m.insert("mismatched".into(), json!(s.mismatched));
        m.insert("ops_in_window".into(), json!(s.window_ops));
        m.insert("rate_per_s".into(), json!(round(s.window_ops as f64 / wall, 1)));
        m.insert("latency_p50_ms".into(), q(0.50));
        m.insert("latency_p99_ms".into(), q(0.99));
        m.insert("latency_max_ms".into(), if s.hist.is_empty() { Value::Null } else { json!(ms(s.hist.max())) });
        m.insert("server_cpu_us_per_op".into(), json!(cpu_us_per_op));
        m.insert("server_cpu_pct".into(), json!(server_cpu_pct));
        m.insert("client_cpu_pct".into(), json!(client_cpu_pct));
        m.insert("rss_kib_before".into(), json!(self.before_setup.server_rss_kib));
        m.insert("rss_kib_after".into(), json!(self.end.server_rss_kib));
        if let (Some(a), Some(b)) = (self.start.tree, self.end.tree) {
            // --tree: the figures above are the gateway's part of the tree (CPU) and the
            // whole tree (RSS); these are its children's.
            let child_us = b
                .child_cpu
                .checked_sub(a.child_cpu)
                .filter(|_| per_op_count > 0)
                .map(|d| round(d.as_secs_f64() * 1e6 / per_op_count as f64, 2));
            m.insert("child_cpu_us_per_op".into(), json!(child_us));
            m.insert("child_rss_kib_before".into(), json!(self.before_setup.tree.map(|t| t.child_rss_kib)));
            m.insert("child_rss_kib_after".into(), json!(b.child_rss_kib));
            m.insert("tree_processes_after".into(), json!(b.processes));
            m.insert("child_processes_after".into(), json!(b.children));
        }
        m
    }
}

/// Prints the figures as `key  value` lines, then the failure samples; writes the JSON
/// object to `out` if given.
pub fn report(m: &Map<String, Value>, samples: &[String], out: Option<&str>) -> Result<(), String> {
    let width = m.keys().map(String::len).max().unwrap_or(0);
    for (k, v) in m {
        let v = match v {
            Value::String(s) => s.clone(),
            Value::Null => "-".into(),
            other => other.to_string(),
        };
        println!("{k:<width$}  {v}");
    }
    for s in samples {
        println!("sample {s}");
    }
    if let Some(path) = out {
        let text = serde_json::to_string_pretty(&Value::Object(m.clone())).expect("json");
        std::fs::write(path, text + "\n").map_err(|e| format!("writing {path}: {e}"))?;
    }
    Ok(())
}
