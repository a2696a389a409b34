//! The guards the metrics hand out: a request's timer and a gauge's unit.

use std::sync::Arc;
use std::time::Instant;

use prometheus_client::metrics::gauge::Gauge;

use super::{MethodLabel, Metrics, Revision};

/// A request being timed. [`finish`](Self::finish) records its outcome; dropped unfinished
/// (the request was cancelled, or its task aborted) it counts as an error, since no
/// answer went out; [`discard`](Self::discard) records nothing (a limit refused it, and
/// the refusal is counted as such).
#[derive(Debug)]
pub struct RequestTimer {
    metrics: Arc<Metrics>,
    method: MethodLabel,
    era: Revision,
    started: Instant,
    recorded: bool,
}

impl RequestTimer {
    pub(super) fn start(metrics: Arc<Metrics>, method: MethodLabel, era: Revision) -> Self {
        RequestTimer {
            metrics,
            method,
            era,
            started: Instant::now(),
            recorded: false,
        }
    }

    /// The metrics it records into.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    pub fn finish(mut self, ok: bool) {
        self.record(ok);
    }

    pub fn discard(mut self) {
        self.recorded = true;
    }

    fn record(&mut self, ok: bool) {
        if !std::mem::replace(&mut self.recorded, true) {
            let elapsed = self.started.elapsed();
            self.metrics
                .record_request(self.method, self.era, ok, elapsed);
        }
    }
}

impl Drop for RequestTimer {
    fn drop(&mut self) {
        self.record(false);
    }
}

/// One unit of a gauge, given back when dropped.
#[derive(Debug)]
pub struct Running(Gauge);

impl Running {
    pub(super) fn start(gauge: &Gauge) -> Self {
        gauge.inc();
        Running(gauge.clone())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.dec();
    }
}
