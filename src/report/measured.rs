//! What a side measured over its window, before the formulas turn it into a `Report`
//! (`stats::report`).

use super::{DevInterrupts, Params, Side, SocketReport, UdpResult};
use crate::sys::SysUsage;
use crate::timeline::{End, Stall};

/// One worker thread's counters over the measurement window, before the formulas.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ThreadCounts {
    /// Global thread index (sender) or port index (receiver).
    pub index: usize,
    /// Data port the thread sends to or listens on.
    pub port: u16,
    /// Seconds this thread was measured.
    pub seconds: f64,
    /// Bytes in the window (see `Thread::bytes`).
    pub bytes: u64,
    /// TCP sender: bytes written into the send buffers in the window.
    pub bytes_written: Option<u64>,
    /// Completed send or recv calls in the window.
    pub calls: u64,
    /// UDP receiver: what the datagrams' stamps tell about the window.
    pub udp: Option<UdpResult>,
    /// The CPU the worker was pinned to at the window's end, if it was.
    pub cpu: Option<usize>,
}

/// The host a side ran on (the cycles-per-byte figures need its CPUs).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Host {
    /// Host name.
    pub name: String,
    /// Operating system line (`uname -a`).
    pub os: String,
    /// CPUs of the host.
    pub cpu_count: usize,
    /// Clock of the first CPU in MHz.
    pub cpu_mhz: f64,
}

/// What a side measured over its window, before the formulas (`stats::report`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Measured {
    /// Sender or receiver.
    pub side: Side,
    /// The host it ran on.
    pub host: Host,
    /// What the run was asked to do.
    pub params: Params,
    /// Bytes per send()/recv() call.
    pub buffer_len: usize,
    /// Length of the measurement window in seconds.
    pub seconds: f64,
    /// Wall-clock time of the window's first and last edge, seconds since the Unix epoch.
    pub window_unix_s: (f64, f64),
    /// The length the window was planned to have; None in continuous mode.
    pub planned_s: Option<f64>,
    /// The longest span of the window in which no byte moved.
    pub stall: Stall,
    /// Per-thread counters, by index.
    pub threads: Vec<ThreadCounts>,
    /// Data connections this side had.
    pub connections: usize,
    /// System counter deltas over the window.
    pub sys: SysUsage,
    /// Negotiated test cycle in seconds (sync mode), 0 = continuous.
    pub negotiated_cycle_s: Option<u32>,
    /// How the measurement ended.
    pub end: End,
    /// `--show-tcp-retrans`: TcpExt retransmit counters over the window.
    pub tcp_retrans: Option<crate::sys::net::TcpExt>,
    /// `--show-nic-packets`: that interface's packets over the window.
    pub nic: Option<crate::sys::net::NicPackets>,
    /// `--show-dev-interrupts`: interrupts on the matching /proc/interrupts lines.
    pub dev_interrupts: Option<DevInterrupts>,
    /// Socket options asked for (and, once read back, applied).
    pub socket: SocketReport,
}
