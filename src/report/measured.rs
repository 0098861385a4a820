//! What a side measured over its window, before the formulas turn it into a `Report`
//! (`stats::report`).

use hdrhistogram::Histogram;

use super::{DevInterrupts, Direction, Params, Rtt, Side, SocketReport, UdpResult};
use crate::config::Workload;
use crate::sys::SysUsage;
use crate::sys::socket::ConnInfo;
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
    /// Which way the window's bytes went; None: the side's usual way (a sender sends).
    pub direction: Option<Direction>,
    /// Round trips sampled from the connections' TCP_INFO during the window.
    pub rtt: Option<Rtt>,
    /// Sender: TCP_INFO of every data connection at the end of the test.
    pub tcp_connections: Vec<ConnInfo>,
    /// Receiver: `ip:port` of every data connection (UDP: flow) of the test.
    pub peers: Vec<String>,
    /// Thread i's request/response round trips or connect times (sender; empty on a
    /// receiver, which times nothing).
    pub round_trips: Vec<Option<Histogram<u64>>>,
}

/// What a side knows of its test besides its window's counters; with the run's plan and
/// the window, all a `Report` is made of (`stats::from_window`).
#[derive(Debug, Clone)]
pub(crate) struct SideFacts {
    /// Sender or receiver.
    pub side: Side,
    /// The host it ran on.
    pub host: Host,
    /// Worker i's data port.
    pub ports: Vec<u16>,
    /// Data connections of the test (UDP: flows).
    pub connections: usize,
    /// Negotiated cycle in seconds (ntttcp-for-linux sync only).
    pub negotiated_cycle_s: Option<u32>,
    /// What the connections carried as this side saw it (a receiver learns it from its
    /// senders' headers).
    pub workload: Workload,
    /// The most one read took (a receiver without `-b`: its path decided).
    pub read_len: Option<usize>,
    /// Socket options as a data socket read them back.
    pub applied: Option<crate::data::Applied>,
    /// Sender: TCP_INFO of every data connection at the end of the test.
    pub tcp_connections: Vec<ConnInfo>,
    /// Receiver: `ip:port` of every data connection (UDP: flow) of the test.
    pub peers: Vec<String>,
    /// Thread i's round trips or connect times (sender; empty on a receiver).
    pub round_trips: Vec<Option<Histogram<u64>>>,
}
