//! Everything that touches the operating system beyond plain sockets: /proc counters,
//! CPU pinning and socket options. Parsers are pure functions of text; readers are thin.
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
pub(crate) mod socket;

use serde::Serialize;

/// System-wide counters at one instant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Snapshot {
    /// Aggregate `cpu` line of /proc/stat.
    pub cpu: cpu::CpuTimes,
    /// Total interrupts (first number of the `intr` line).
    pub interrupts: u64,
    /// NET_RX softirqs summed over CPUs (the closest Linux analogue of Windows DPCs).
    pub net_rx: u64,
    /// TCP MIB counters from /proc/net/snmp.
    pub tcp: net::TcpCounters,
    /// UDP MIB counters from /proc/net/snmp and /proc/net/snmp6.
    pub udp: net::UdpCounters,
    /// This process's CPU time (user + system), milliseconds.
    pub process_cpu_ms: u64,
    /// TcpExt retransmit counters of /proc/net/netstat.
    pub tcp_ext: net::TcpExt,
    /// Packet counters of every interface (/proc/net/dev).
    pub nics: Vec<net::NicPackets>,
    /// Every line of /proc/interrupts with its count.
    pub irqs: Vec<cpu::IrqLine>,
}

/// Counter deltas over the measurement window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub(crate) struct SysUsage {
    /// CPU tick deltas (USER_HZ) of the aggregate line.
    pub cpu: cpu::CpuTimes,
    /// Interrupts during the window.
    pub interrupts: u64,
    /// NET_RX softirqs during the window.
    pub net_rx: u64,
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
    /// Reads the counters; a file that cannot be read leaves its fields at zero (the
    /// report then shows 0 rather than failing a measurement that succeeded).
    pub(crate) fn now() -> Self {
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let softirqs = std::fs::read_to_string("/proc/softirqs").unwrap_or_default();
        let snmp = std::fs::read_to_string("/proc/net/snmp").unwrap_or_default();
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        Self {
            cpu: cpu::parse_cpu_line(&stat).unwrap_or_default(),
            interrupts: cpu::parse_intr_total(&stat).unwrap_or(0),
            net_rx: cpu::parse_net_rx(&softirqs).unwrap_or(0),
            tcp: net::parse_tcp(&snmp).unwrap_or_default(),
            udp: net::parse_udp(&snmp, &read("/proc/net/snmp6")),
            process_cpu_ms: host::process_cpu_ms(),
            tcp_ext: net::parse_tcp_ext(&read("/proc/net/netstat")).unwrap_or_default(),
            nics: net::parse_net_dev(&read("/proc/net/dev")),
            irqs: cpu::parse_interrupts(&read("/proc/interrupts")),
        }
    }

    /// Counter changes from `earlier` to `self` (wrapping counters saturate at zero).
    pub(crate) fn delta(&self, earlier: &Self) -> SysUsage {
        SysUsage {
            cpu: self.cpu.delta(&earlier.cpu),
            interrupts: self.interrupts.saturating_sub(earlier.interrupts),
            net_rx: self.net_rx.saturating_sub(earlier.net_rx),
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
