//! RLIMIT_NOFILE and the descriptors this process holds (/proc/self/fd).

/// (soft, hard) RLIMIT_NOFILE after raising the soft limit as far as allowed (no limit
/// reads as `u64::MAX`).
pub(crate) fn raise_nofile() -> (u64, u64) {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut r = getrlimit(Resource::Nofile);
    if r.current < r.maximum {
        let raised = rustix::process::Rlimit {
            current: r.maximum,
            maximum: r.maximum,
        };
        if setrlimit(Resource::Nofile, raised).is_ok() {
            r = raised;
        }
    }
    (r.current.unwrap_or(u64::MAX), r.maximum.unwrap_or(u64::MAX))
}

/// Descriptors each worker's current-thread tokio runtime holds: two epoll instances, its
/// waker's eventfd and its copy of tokio's signal pipe (tokio 1.x on Linux; the
/// `--io async` case of the descriptor test checks it end to end).
pub(crate) const RUNTIME_FDS: u64 = 4;

/// Descriptors the control thread opens for a moment while connections are up: the /proc
/// file a counter snapshot is reading.
pub(crate) const TRANSIENT_FDS: u64 = 1;

/// Descriptors this process has open now.
pub(crate) fn open_descriptors() -> u64 {
    // The directory being read is one of them.
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count().saturating_sub(1) as u64)
}
