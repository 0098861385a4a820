//! Descriptors: the limit is raised to the hard limit at start, so tests with thousands
//! of connections work without `ulimit -n` first, and a sender counts what its run will
//! open before it opens anything. Windows has no such limit: there it reads as unlimited.

pub(crate) use super::os::limits::{RUNTIME_FDS, TRANSIENT_FDS, open_descriptors, raise_nofile};

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
}
