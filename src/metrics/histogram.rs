//! [`DurationHistogram`]: a Prometheus histogram of durations made of atomics only.
//!
//! `prometheus-client`'s own histogram takes a mutex on every observation. A request's
//! duration is observed on every request, so this one keeps one atomic per bucket and one
//! for the sum: an observation is a scan of a few integer bounds and two relaxed adds, and
//! no thread ever waits for another. The count is not stored but summed from the buckets
//! at scrape time, so a scrape never sees a count that disagrees with its buckets.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::{MetricType, TypedMetric};

/// Upper bounds of the buckets, in nanoseconds: 0.1 ms to 60 s, roughly ×2.5 apart, which
/// covers a `ping` answered by the actor and a command tool near its timeout alike.
const BOUNDS_NANOS: [u64; 18] = [
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
    30_000_000_000,
    60_000_000_000,
];

/// The finite buckets, then the one above the last bound (`le="+Inf"`).
const BUCKETS: usize = BOUNDS_NANOS.len() + 1;

#[derive(Debug, Default)]
struct Cells {
    /// Observations per bucket (not cumulative; the encoder accumulates).
    buckets: [AtomicU64; BUCKETS],
    sum_nanos: AtomicU64,
}

/// A histogram of durations in seconds. Clones share their cells, as the
/// `prometheus-client` metrics do, so a handle kept for the hot path and the one in the
/// registry are the same series.
#[derive(Debug, Clone, Default)]
pub struct DurationHistogram(Arc<Cells>);

impl DurationHistogram {
    pub fn observe(&self, elapsed: Duration) {
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        let bucket = BOUNDS_NANOS
            .iter()
            .position(|bound| nanos <= *bound)
            .unwrap_or(BOUNDS_NANOS.len());
        self.0.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        self.0.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }
}

impl TypedMetric for DurationHistogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for DurationHistogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let mut buckets = [(f64::INFINITY, 0u64); BUCKETS];
        for (i, (bound, count)) in buckets.iter_mut().enumerate() {
            if let Some(nanos) = BOUNDS_NANOS.get(i) {
                *bound = *nanos as f64 / 1e9;
            }
            *count = self.0.buckets[i].load(Ordering::Relaxed);
        }
        let count = buckets.iter().map(|(_, n)| n).sum();
        let sum = self.0.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9;
        encoder.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_observation_lands_in_the_first_bucket_whose_bound_covers_it() {
        let h = DurationHistogram::default();
        h.observe(Duration::from_micros(500));
        h.observe(Duration::from_millis(3));
        h.observe(Duration::from_secs(3600));
        let counts: Vec<u64> =
            h.0.buckets
                .iter()
                .map(|b| b.load(Ordering::Relaxed))
                .collect();
        assert_eq!(counts[2], 1, "0.5 ms is within le=0.0005");
        assert_eq!(counts[5], 1, "3 ms is within le=0.005");
        assert_eq!(counts[BUCKETS - 1], 1, "an hour is only within +Inf");
        assert_eq!(counts.iter().sum::<u64>(), 3);
    }
}
