//! Windows sets no per-process limit on sockets like RLIMIT_NOFILE (memory is the
//! limit), so the limit reads as unlimited and the budget never refuses a run.

/// (soft, hard): unlimited.
pub(crate) fn raise_nofile() -> (u64, u64) {
    (u64::MAX, u64::MAX)
}

/// Handles a worker's current-thread tokio runtime holds: its I/O completion port and
/// the waker's event (tokio 1.x on Windows).
pub(crate) const RUNTIME_FDS: u64 = 2;

/// Handles the control thread opens for a moment: none (the counters are calls, not
/// files).
pub(crate) const TRANSIENT_FDS: u64 = 0;

/// Handles this process has open now (GetProcessHandleCount); 0 when unknown.
#[allow(unsafe_code)]
pub(crate) fn open_descriptors() -> u64 {
    use windows_sys::Win32::System::Threading::{GetCurrentProcess, GetProcessHandleCount};
    let mut n: u32 = 0;
    // SAFETY: a pseudo-handle for this process, and a u32 we own for the count.
    let ok = unsafe { GetProcessHandleCount(GetCurrentProcess(), &mut n) };
    if ok == 0 { 0 } else { u64::from(n) }
}
