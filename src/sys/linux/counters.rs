//! The system counters of one instant, read from /proc.

use super::procfs;
use crate::sys::Snapshot;

/// The system's CPU time now (the aggregate line of /proc/stat).
pub(crate) fn cpu_times() -> crate::sys::cpu::CpuTimes {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    procfs::parse_cpu_line(&stat).unwrap_or_default()
}

/// Reads every counter file; one that cannot be read leaves its fields at zero.
pub(crate) fn snapshot() -> Snapshot {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let stat = read("/proc/stat");
    let snmp = read("/proc/net/snmp");
    Snapshot {
        cpu: procfs::parse_cpu_line(&stat).unwrap_or_default(),
        interrupts: procfs::parse_intr_total(&stat),
        net_rx: procfs::parse_net_rx(&read("/proc/softirqs")),
        tcp: procfs::parse_tcp(&snmp).unwrap_or_default(),
        udp: procfs::parse_udp(&snmp, &read("/proc/net/snmp6")),
        process_cpu_ms: super::host::process_cpu_ms(),
        tcp_ext: procfs::parse_tcp_ext(&read("/proc/net/netstat")).unwrap_or_default(),
        nics: procfs::parse_net_dev(&read("/proc/net/dev")),
        irqs: procfs::parse_interrupts(&read("/proc/interrupts")),
    }
}
