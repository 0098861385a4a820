//! File descriptors: the limit is raised to the hard limit at start, so tests with
//! thousands of connections work without `ulimit -n` first, and a sender counts what its
//! run will open before it opens anything.

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

/// What a run will hold open at its peak, on top of what is open now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Budget {
    /// Sockets: sync sessions, data connections (and their accepted ends in loopback
    /// mode), Windows sync tokens.
    pub sockets: u64,
    /// Worker threads that run a tokio runtime of their own.
    pub runtimes: u64,
}

impl Budget {
    /// Descriptors needed in all, given `open` now.
    pub(crate) fn need(&self, open: u64) -> u64 {
        open + self.sockets + self.runtimes * RUNTIME_FDS + TRANSIENT_FDS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raises_to_the_hard_limit() {
        let (soft, hard) = raise_nofile();
        assert!(soft > 0 && soft == hard, "{soft} {hard}");
    }

    #[test]
    fn the_need_adds_sockets_runtimes_and_the_transient_file() {
        let b = Budget {
            sockets: 10_001,
            runtimes: 3,
        };
        assert_eq!(b.need(7), 7 + 10_001 + 3 * RUNTIME_FDS + TRANSIENT_FDS);
        assert!(open_descriptors() >= 3, "stdio at least");
    }
}
