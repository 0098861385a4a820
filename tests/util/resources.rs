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
    flags_of(pid, Column::Remote, remote_port, limit)
        .first()
        .copied()
}

/// The same for each of `pid`'s established connections whose local port is
/// `local_port` (a receiver's data port), once it has one (none after `limit`).
pub(crate) fn socket_flags_at(pid: u32, local_port: u16, limit: Duration) -> Vec<u32> {
    flags_of(pid, Column::Local, local_port, limit)
}

/// Which address of a /proc/net/tcp line a port is looked for in.
#[derive(Clone, Copy)]
enum Column {
    Local = 1,
    Remote = 2,
}

fn flags_of(pid: u32, column: Column, port: u16, limit: Duration) -> Vec<u32> {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        let flags: Vec<u32> = established_inodes(column, port)
            .into_iter()
            .filter_map(|inode| fd_flags(pid, &format!("socket:[{inode}]")))
            .collect();
        if !flags.is_empty() {
            return flags;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Vec::new()
}

/// Inodes of this host's established IPv4 connections with `port` in `column`.
fn established_inodes(column: Column, port: u16) -> Vec<String> {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    let at = format!(":{port:04X}");
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() > 9 && f[column as usize].ends_with(&at) && f[3] == "01")
                .then(|| f[9].to_string())
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
