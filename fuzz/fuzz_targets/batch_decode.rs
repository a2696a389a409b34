//! `jsonrpc::decode_body_within` under the server's default caps: whatever the body, what
//! decoding it allocates is bounded by its length (`PER_BYTE` times it, plus `FIXED`), and a
//! body is refused past `max_batch` messages or `max_values` values, never built past them.
//!
//! A counting global allocator records the peak of live bytes during each decode. A body
//! such as `[{},{},...]` or `{"params":[0,0,...]}` costs a few bytes per value on the wire
//! and tens once decoded; the caps are what keep that factor from applying to the whole
//! 4 MiB a POST may carry.

#![no_main]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use libfuzzer_sys::fuzz_target;
use mcp_actor::fuzzing::{Body, DecodeCap, DecodeError, DecodeLimits, decode_body_within};

/// Live bytes, and the most seen since the last reset.
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

struct Counting;

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, layout, new_size) };
        if !q.is_null() {
            // Counted as both blocks at once: a moving realloc holds both for an instant.
            grew(new_size);
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        q
    }
}

fn grew(size: usize) {
    let live = LIVE.fetch_add(size, Ordering::Relaxed) + size;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The server's defaults (`http.max_batch_size`, `http.max_json_values`).
const LIMITS: DecodeLimits = DecodeLimits {
    max_batch: 100,
    max_values: 10_000,
};

/// Bytes a decode may allocate per input byte: a one-member object (`{"":0}`, 7 bytes) is
/// a B-tree leaf of some 600 bytes, the densest case serde_json's map has.
const PER_BYTE: usize = 160;
/// The error's message and the first allocations of an empty decode.
const FIXED: usize = 64 * 1024;

fuzz_target!(|data: &[u8]| {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let decoded = decode_body_within(data, LIMITS);
    let peak = PEAK.load(Ordering::Relaxed) - before;
    assert!(
        peak <= PER_BYTE * data.len() + FIXED,
        "decoding {} bytes allocated {peak} bytes at the peak",
        data.len()
    );
    match decoded {
        Ok(Body::Batch(messages)) => assert!(messages.len() <= LIMITS.max_batch),
        Ok(Body::Single(_)) => {}
        Err(DecodeError::OverCap(DecodeCap::BatchSize, e))
        | Err(DecodeError::OverCap(DecodeCap::Values, e)) => assert_eq!(e.code, -32600),
        Err(DecodeError::Malformed(e)) => assert!(e.code == -32700 || e.code == -32600),
    }
});
