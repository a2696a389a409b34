//! What a stored result costs under `tasks.max_bytes`: its JSON length, charged to the
//! server-wide total while the result is held and credited when it is dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Serialize;

/// A stored result's share of `tasks.max_bytes`, given back on drop.
pub(super) struct ResultCharge {
    pub bytes: usize,
    pub total: Arc<AtomicUsize>,
}

impl Drop for ResultCharge {
    fn drop(&mut self) {
        self.total.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

/// The length of `value` as JSON, without building the text.
pub(super) fn json_len(value: &impl Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}
