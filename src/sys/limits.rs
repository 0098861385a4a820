//! File-descriptor limit: raised to the hard limit at start, so tests with thousands of
//! connections work without `ulimit -n` first.

/// (soft, hard) RLIMIT_NOFILE after raising the soft limit as far as allowed.
#[allow(unsafe_code)]
pub fn raise_nofile() -> (u64, u64) {
    // SAFETY: getrlimit/setrlimit only read and write the struct we own.
    unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return (0, 0);
        }
        if r.rlim_cur < r.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: r.rlim_max,
                rlim_max: r.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                r = raised;
            }
        }
        (r.rlim_cur as u64, r.rlim_max as u64)
    }
}

/// Descriptors a sender with `connections` data connections and `sessions` sync
/// connections needs, with room for the runtime's own (epoll, eventfd, stdio, /proc).
pub fn needed_by_sender(connections: usize, sessions: usize) -> u64 {
    (connections + sessions) as u64 + 64
}

#[cfg(test)]
mod tests {
    #[test]
    fn raises_to_the_hard_limit() {
        let (soft, hard) = super::raise_nofile();
        assert!(soft > 0 && soft == hard, "{soft} {hard}");
        assert_eq!(super::needed_by_sender(10_000, 1), 10_065);
    }
}
