//! Rate-limited log lines for events a client can trigger at will.
//!
//! A refused request, an unknown response or a full connection table is worth a line in the
//! log, but a hostile client can cause millions of them. Each call site owns a static
//! [`LogLimiter`]: it lets a few lines through per window and counts the rest, and the next
//! line that gets through carries that count as `suppressed`, so nothing is hidden and
//! nothing floods.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Lines let through per window and call site.
const LINES_PER_WINDOW: u32 = 5;
const WINDOW: Duration = Duration::from_secs(10);

pub(crate) struct LogLimiter {
    /// Start of the current window, in milliseconds since the first use of any limiter.
    window_start_ms: AtomicU64,
    lines_in_window: AtomicU32,
    suppressed: AtomicU64,
}

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

impl LogLimiter {
    pub const fn new() -> Self {
        LogLimiter {
            window_start_ms: AtomicU64::new(0),
            lines_in_window: AtomicU32::new(0),
            suppressed: AtomicU64::new(0),
        }
    }

    /// `Some(n)` when this line may be logged, `n` being the lines suppressed since the last
    /// one that was; `None` when it must be dropped (and is counted).
    pub fn admit(&self) -> Option<u64> {
        let now = epoch().elapsed().as_millis() as u64;
        let start = self.window_start_ms.load(Ordering::Relaxed);
        if now.saturating_sub(start) >= WINDOW.as_millis() as u64
            && self
                .window_start_ms
                .compare_exchange(start, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.lines_in_window.store(0, Ordering::Relaxed);
        }
        if self.lines_in_window.fetch_add(1, Ordering::Relaxed) < LINES_PER_WINDOW {
            Some(self.suppressed.swap(0, Ordering::Relaxed))
        } else {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            None
        }
    }
}

/// `tracing::warn!` through a [`LogLimiter`] of the call site's own; the lines that get
/// through carry `suppressed`, the count of those dropped before them.
macro_rules! warn_limited {
    ($($arg:tt)+) => {{
        static LIMITER: $crate::log_limit::LogLimiter = $crate::log_limit::LogLimiter::new();
        if let Some(suppressed) = LIMITER.admit() {
            tracing::warn!(suppressed, $($arg)+);
        }
    }};
}
pub(crate) use warn_limited;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_cut_to_a_few_lines_and_the_rest_is_counted() {
        let limiter = LogLimiter::new();
        let admitted = (0..10_000).filter_map(|_| limiter.admit()).count();
        assert_eq!(admitted, LINES_PER_WINDOW as usize);
        assert_eq!(
            limiter.suppressed.load(Ordering::Relaxed),
            10_000 - u64::from(LINES_PER_WINDOW)
        );
    }
}
