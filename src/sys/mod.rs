//! The one seam for the operating system: everything that touches it beyond plain
//! sockets (system counters, CPU pinning and priority, socket options, signals, limits,
//! the background mode) is reached through this module, and nothing above it carries a
//! `cfg` for an OS.
//!
//! Each OS has one module behind the same functions: `linux/` (also any other Unix the
//! crate is built on) reads /proc and calls libc; `windows/` calls Win32 through
//! `windows-sys`. The files directly in `sys/` hold what both share: the counter types,
//! CPU placement, and the parts of each concern that need no OS call. `unsafe` lives only
//! in the OS modules, each block with its reason.
//!
//! `Snapshot::now()` is taken at the start and end of the measurement window and
//! `Snapshot::delta` gives what the report needs.

pub(crate) mod affinity;
pub(crate) mod cpu;
pub(crate) mod daemon;
pub(crate) mod host;
pub(crate) mod limits;
pub(crate) mod net;
pub(crate) mod sched;
pub(crate) mod signals;
pub(crate) mod socket;

#[cfg(not(windows))]
#[path = "linux/mod.rs"]
mod os;
#[cfg(windows)]
#[path = "windows/mod.rs"]
mod os;

/// The operating system's handle of a socket: a file descriptor on Linux, a SOCKET on
/// Windows. Only `sys` turns it back into a socket, and only while its owner keeps it open.
pub(crate) type RawSock = os::RawSock;

pub(crate) use os::is_closed_handle;
/// The kernel's text files' parsers, for the fuzz targets.
#[cfg(all(feature = "fuzzing", not(windows)))]
pub(crate) use os::procfs;
/// What unit tests elsewhere need of the OS (links, devices, a thread's state).
#[cfg(test)]
pub(crate) use os::test_support;

/// The name of the OS this ntttcp was built for, as messages say it: "Linux" (the
/// build for any Unix) or "Windows".
pub(crate) const OS: &str = os::NAME;

/// A socket whose OS handle `sys` may use for the length of one call.
pub(crate) trait AsSock {
    /// The socket's OS handle; valid as long as `self` is borrowed.
    fn raw_sock(&self) -> RawSock;
}

use serde::Serialize;

/// System-wide counters at one instant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Snapshot {
    /// System-wide CPU time (Linux: the aggregate `cpu` line of /proc/stat; Windows:
    /// GetSystemTimes).
    pub cpu: cpu::CpuTimes,
    /// Interrupts since boot (Linux: the first number of /proc/stat's `intr` line;
    /// Windows: the processors' interrupt counts); None where the system does not say.
    pub interrupts: Option<u64>,
    /// Deferred network work since boot: NET_RX softirqs summed over CPUs on Linux (the
    /// closest analogue of DPCs), the processors' DPC counts on Windows; None where the
    /// system does not say.
    pub net_rx: Option<u64>,
    /// TCP MIB counters (Linux: /proc/net/snmp; Windows: the IP Helper statistics).
    pub tcp: net::TcpCounters,
    /// UDP MIB counters of IPv4 and IPv6 (as the TCP ones).
    pub udp: net::UdpCounters,
    /// This process's CPU time (user + system), milliseconds.
    pub process_cpu_ms: u64,
    /// TcpExt retransmit counters of /proc/net/netstat (Linux only).
    pub tcp_ext: net::TcpExt,
    /// Packet counters of every interface (/proc/net/dev; Linux only).
    pub nics: Vec<net::NicPackets>,
    /// Every line of /proc/interrupts with its count (Linux only).
    pub irqs: Vec<cpu::IrqLine>,
}

/// Counter deltas over the measurement window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub(crate) struct SysUsage {
    /// CPU tick deltas (USER_HZ) of the aggregate line.
    pub cpu: cpu::CpuTimes,
    /// Interrupts during the window; None when unknown.
    pub interrupts: Option<u64>,
    /// NET_RX softirqs (Windows: DPCs) during the window; None when unknown.
    pub net_rx: Option<u64>,
    /// TCP segments and errors during the window.
    pub tcp: net::TcpCounters,
    /// UDP datagrams and errors during the window.
    pub udp: net::UdpCounters,
    /// CPU seconds this process used during the window (all threads).
    pub process_cpu_s: f64,
    /// TcpExt retransmit counters during the window.
    pub tcp_ext: net::TcpExt,
}

impl Snapshot {
    /// Reads the counters; a source that cannot be read leaves its fields at zero (the
    /// report then shows 0 rather than failing a measurement that succeeded), or at
    /// `None` where the field says unknown.
    pub(crate) fn now() -> Self {
        os::counters::snapshot()
    }

    /// Counter changes from `earlier` to `self` (wrapping counters saturate at zero).
    pub(crate) fn delta(&self, earlier: &Self) -> SysUsage {
        SysUsage {
            cpu: self.cpu.delta(&earlier.cpu),
            interrupts: since(self.interrupts, earlier.interrupts),
            net_rx: since(self.net_rx, earlier.net_rx),
            tcp: self.tcp.delta(&earlier.tcp),
            udp: self.udp.delta(&earlier.udp),
            process_cpu_s: self.process_cpu_ms.saturating_sub(earlier.process_cpu_ms) as f64
                / 1000.0,
            tcp_ext: self.tcp_ext.delta(&earlier.tcp_ext),
        }
    }

    /// Packets of interface `name` from `earlier` to `self`, if it exists in both.
    pub(crate) fn nic_delta(&self, earlier: &Self, name: &str) -> Option<net::NicPackets> {
        let find = |s: &Self| s.nics.iter().find(|n| n.name == name).cloned();
        let (a, b) = (find(earlier)?, find(self)?);
        Some(net::NicPackets {
            name: name.to_string(),
            rx_packets: b.rx_packets.saturating_sub(a.rx_packets),
            tx_packets: b.tx_packets.saturating_sub(a.tx_packets),
        })
    }

    /// Interrupts on every /proc/interrupts line containing `pattern`, from `earlier` to
    /// `self` (lines matched by their label).
    pub(crate) fn irq_delta(&self, earlier: &Self, pattern: &str) -> u64 {
        self.irqs
            .iter()
            .filter(|l| l.text.contains(pattern))
            .map(|l| {
                let before = earlier.irqs.iter().find(|e| e.label == l.label);
                l.total.saturating_sub(before.map_or(0, |e| e.total))
            })
            .sum()
    }
}

/// A counter's change from `earlier` to `now`, known only when both readings are.
pub(crate) fn since(now: Option<u64>, earlier: Option<u64>) -> Option<u64> {
    Some(now?.saturating_sub(earlier?))
}
