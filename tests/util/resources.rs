//! What a test's processes hold: resident memory, peak descriptors, and this process's
//! own descriptor limit.

use std::process::Command;
use std::time::Duration;
/// Resident memory of a process in KiB (/proc/PID/status VmRSS).
pub(crate) fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("VmRSS of the receiver")
}

/// Samples a process's open descriptors (/proc/PID/fd) every 10 ms on a thread of its
/// own until `peak` is called: the most it held at one sample.
pub(crate) struct FdPeak {
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
    sampler: std::thread::JoinHandle<usize>,
}

impl FdPeak {
    pub(crate) fn watch(pid: u32) -> Self {
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stop = done.clone();
        let sampler = std::thread::spawn(move || {
            let mut peak = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let n = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count);
                peak = peak.max(n);
                std::thread::sleep(Duration::from_millis(10));
            }
            peak
        });
        Self { done, sampler }
    }

    /// Stops sampling; the peak.
    pub(crate) fn peak(self) -> usize {
        self.done.store(true, std::sync::atomic::Ordering::Relaxed);
        self.sampler.join().expect("fd sampler")
    }
}

/// Raises this test process's own soft RLIMIT_NOFILE to at least `n` with prlimit(1),
/// for tests that hold many sockets themselves (the hard limit, which children inherit,
/// is left alone).
pub(crate) fn raise_own_nofile(n: u64) {
    let status = Command::new("prlimit")
        .args([
            "--pid",
            &std::process::id().to_string(),
            &format!("--nofile={n}:"),
        ])
        .status()
        .expect("run prlimit");
    assert!(
        status.success(),
        "prlimit --nofile={n}: (the hard limit may be lower)"
    );
}

/// The open-file flags (octal in /proc/PID/fdinfo) of process `pid`'s established TCP
/// connection towards `remote_port` on 127.0.0.1, once it has one (None after `limit`):
/// /proc/net/tcp gives the connection's inode, /proc/PID/fd the descriptor holding it.
pub(crate) fn socket_flags_towards(pid: u32, remote_port: u16, limit: Duration) -> Option<u32> {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        if let Some(flags) = established_inodes(remote_port)
            .into_iter()
            .find_map(|inode| fd_flags(pid, &format!("socket:[{inode}]")))
        {
            return Some(flags);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// Inodes of this host's established IPv4 connections towards `remote_port`.
fn established_inodes(remote_port: u16) -> Vec<String> {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    let rem = format!(":{remote_port:04X}");
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() > 9 && f[2].ends_with(&rem) && f[3] == "01").then(|| f[9].to_string())
        })
        .collect()
}

/// The flags of `pid`'s descriptor whose link reads `target`.
fn fd_flags(pid: u32, target: &str) -> Option<u32> {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    let fd = fds
        .flatten()
        .find(|e| std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy() == target))?;
    let info = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{}", fd.file_name().display()));
    let line = info
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("flags:").map(str::to_owned))?;
    u32::from_str_radix(line.trim(), 8).ok()
}
