//! What every ntttcp fuzz target shares: an allocator that counts, so that each case
//! can be held to memory in proportion to its input (a length field read from the peer
//! must never make the code allocate what the peer did not send).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// Bytes a case may hold at once whatever its input: a runtime, clap's command, a
/// report and its tables.
const BASE: usize = 8 << 20;
/// Bytes a case may hold per byte of input on top of `BASE`.
const PER_BYTE: usize = 64;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, counting the bytes live and their peak.
pub struct Counting;

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Relaxed) + by;
    PEAK.fetch_max(now, Relaxed);
}

// SAFETY: every call goes to the system allocator with the caller's arguments; only the
// counts are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is the system allocator's.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        // SAFETY: `p` came from this allocator, that is from the system one.
        unsafe { System.dealloc(p, layout) };
        LIVE.fetch_sub(layout.size(), Relaxed);
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        // SAFETY: as `alloc` and `dealloc`.
        let q = unsafe { System.realloc(p, layout, size) };
        if !q.is_null() {
            LIVE.fetch_sub(layout.size(), Relaxed);
            grew(size);
        }
        q
    }
}

/// Runs `target` on one case and checks the most it held at once beyond what was live
/// before: `BASE` plus `PER_BYTE` per byte of input.
pub fn bounded(data: &[u8], target: fn(&[u8])) {
    let before = LIVE.load(Relaxed);
    PEAK.store(before, Relaxed);
    target(data);
    let held = PEAK.load(Relaxed).saturating_sub(before);
    let limit = BASE + PER_BYTE * data.len();
    assert!(
        held <= limit,
        "held {held} bytes for a {}-byte input",
        data.len()
    );
}

/// A fuzz target: the counting allocator, and `ntttcp::fuzz::$name` on every case.
#[macro_export]
macro_rules! target {
    ($name:ident) => {
        #[global_allocator]
        static ALLOC: $crate::Counting = $crate::Counting;
        libfuzzer_sys::fuzz_target!(|data: &[u8]| $crate::bounded(data, ntttcp::fuzz::$name));
    };
}
