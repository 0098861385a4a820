//! The figures only the tables and files show: Windows NTttcp's Totals (binary units:
//! KB = 1024 B, MB = 2^20 B) and ntttcp-for-linux's log (decimal units, idle-only CPU).

use super::ratio;
use crate::config::Protocol;
use crate::report::{Report, Thread};

const KB: f64 = 1024.0;
const MB: f64 = 1024.0 * 1024.0;

/// One rate in the units the files print: bytes per second, KiB/s, MiB/s and decimal
/// Mbit/s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rate {
    /// Bytes per second.
    pub bytes_per_s: f64,
    /// Bytes / 1024 per second.
    pub kib_per_s: f64,
    /// Bytes / 2^20 per second.
    pub mib_per_s: f64,
    /// Bits / 10^6 per second.
    pub mbps: f64,
}

/// The rate of `bytes` over `secs`.
pub(crate) fn rate(bytes: u64, secs: f64) -> Rate {
    let b = ratio(bytes as f64, secs);
    Rate {
        bytes_per_s: b,
        kib_per_s: b / KB,
        mib_per_s: b / MB,
        mbps: b * 8.0 / 1e6,
    }
}

/// `--show-nic-packets` with `--show-dev-interrupts`: the interface's packets (both
/// ways) per interrupt.
pub(crate) fn packets_per_interrupt(r: &Report) -> Option<f64> {
    let (n, d) = (r.nic.as_ref()?, r.device_interrupts.as_ref()?);
    Some(ratio((n.tx_packets + n.rx_packets) as f64, d.total as f64))
}

/// Figures of one row of the per-thread table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ThreadFigures {
    /// Thread index.
    pub index: usize,
    /// Measured seconds.
    pub seconds: f64,
    /// Bytes / seconds / 1024.
    pub kb_per_s: f64,
    /// Bytes / completed calls.
    pub avg_bytes_per_compl: f64,
}

/// Per-thread figures of the Windows tables.
pub(crate) fn windows_thread(t: &Thread) -> ThreadFigures {
    ThreadFigures {
        index: t.index,
        seconds: t.seconds,
        kb_per_s: ratio(t.bytes as f64, t.seconds) / KB,
        avg_bytes_per_compl: ratio(t.call_bytes() as f64, t.calls as f64),
    }
}

/// Figures of the four Windows Totals tables.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct WindowsTotals {
    /// Total bytes / 2^20.
    pub meg: f64,
    /// Measurement window in seconds.
    pub realtime: f64,
    /// Bytes / TCP segments sent (sender) or received (receiver).
    pub avg_frame_size: f64,
    /// Bytes / realtime / 2^20.
    pub mb_per_s: f64,
    /// Buffers / realtime.
    pub buffers_per_s: f64,
    /// Busy cycles of all CPUs per byte moved.
    pub cycles_per_byte: f64,
    /// Bytes / buffer length.
    pub buffers: f64,
    /// DPCs per second (on Linux NET_RX softirqs, its stand-in); None when unknown.
    pub dpcs_per_s: Option<f64>,
    /// Segments received per DPC (NET_RX softirq); None when unknown.
    pub pkts_per_dpc: Option<f64>,
    /// Interrupts per second; None when unknown.
    pub intr_per_s: Option<f64>,
    /// Segments received per interrupt; None when unknown.
    pub pkts_per_intr: Option<f64>,
    /// TCP segments (UDP: datagrams) sent, system-wide.
    pub packets_sent: u64,
    /// TCP segments (UDP: datagrams) received, system-wide.
    pub packets_received: u64,
    /// TCP segments retransmitted, system-wide (UDP: 0).
    pub retransmits: u64,
    /// Failed connection attempts (UDP: datagrams not delivered), NTttcp's "Errors".
    pub errors: u64,
    /// System-wide busy CPU %.
    pub cpu_pct: f64,
}

/// The Windows Totals figures of a report.
pub(crate) fn windows(r: &Report) -> WindowsTotals {
    let secs = r.duration_s;
    let n = &r.network;
    // NTttcp's packet columns: TCP segments, or for UDP datagrams.
    let (sent, received, retransmits, errors) = if r.params.protocol == Protocol::Udp {
        (n.udp.out_datagrams, n.udp.in_datagrams, 0, n.udp.in_errors)
    } else {
        let failed = n.failed_attempts;
        (n.segments_sent, n.segments_received, n.retransmits, failed)
    };
    let received_f = received as f64;
    WindowsTotals {
        meg: r.totals.bytes as f64 / MB,
        realtime: secs,
        avg_frame_size: r.totals.avg_frame_size,
        mb_per_s: r.totals.mebibytes_per_second,
        buffers_per_s: r.totals.buffers_per_second,
        cycles_per_byte: r.cpu.cycles_per_byte,
        buffers: whole_on_a_sender(r),
        dpcs_per_s: n.net_rx_softirqs.map(|d| ratio(d as f64, secs)),
        pkts_per_dpc: n.net_rx_softirqs.map(|d| ratio(received_f, d as f64)),
        intr_per_s: n.interrupts.map(|i| ratio(i as f64, secs)),
        pkts_per_intr: n.interrupts.map(|i| ratio(received_f, i as f64)),
        packets_sent: sent,
        packets_received: received,
        retransmits,
        errors,
        cpu_pct: r.cpu.busy_percent,
    }
}

/// The mean of the threads' own bytes per completion (NTttcp's per-thread average).
pub(crate) fn threads_avg_compl(r: &Report) -> f64 {
    let per: Vec<f64> = r
        .threads
        .iter()
        .map(|t| windows_thread(t).avg_bytes_per_compl)
        .collect();
    ratio(per.iter().sum(), per.len() as f64)
}

/// Interrupts over the window, and per second: the `--show-dev-interrupts` lines when
/// given, else all of them; None when the system does not count them.
pub(crate) fn dev_or_system_interrupts(r: &Report) -> Option<(u64, f64)> {
    let total = r
        .device_interrupts
        .as_ref()
        .map_or(r.network.interrupts, |d| Some(d.total))?;
    Some((total, ratio(total as f64, r.duration_s)))
}

/// The seven `--show-tcp-retrans` rates, named as ntttcp-for-linux's files name them.
pub(crate) fn retrans_rates(r: &Report) -> Vec<(&'static str, f64)> {
    let x = r.tcp_retransmits.unwrap_or_default();
    let rate = |v: u64| ratio(v as f64, r.duration_s);
    vec![
        ("retrans_segments_per_sec", rate(r.network.retransmits)),
        ("lost_retrans_per_sec", rate(x.lost_retrans)),
        ("syn_retrans_per_sec", rate(x.syn_retrans)),
        ("fast_retrans_per_sec", rate(x.fast_retrans)),
        ("forward_retrans_per_sec", rate(x.forward_retrans)),
        ("slowStart_retrans_per_sec", rate(x.slow_start_retrans)),
        ("retrans_fail_per_sec", rate(x.retrans_fail)),
    ]
}

/// The ntttcp-for-linux figures (as its log prints them): decimal units, idle-only CPU busy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LinuxFigures {
    /// Bytes / 10^6.
    pub mb: f64,
    /// Bytes / 10^6 / seconds.
    pub mb_per_s: f64,
    /// Bits / 10^6 / seconds.
    pub mbps: f64,
    /// Bytes / seconds.
    pub bytes_per_s: f64,
    /// MHz·10^6 · seconds · cores · (1 − idle fraction) / bytes.
    pub cycles_per_byte: f64,
}

/// ntttcp-for-linux's per-thread (KB/s, MB/s, mbps), decimal, over the report's time.
pub(crate) fn linux_thread(r: &Report, t: &Thread) -> (f64, f64, f64) {
    let bps = ratio(t.bytes as f64, r.duration_s);
    (bps / 1e3, bps / 1e6, bps * 8.0 / 1e6)
}

/// NTttcp's Buffers: bytes over the buffer length, which the sending side completes
/// whole (a write cut short by the end of the window is no buffer), a reader in any share.
fn whole_on_a_sender(r: &Report) -> f64 {
    match r.direction {
        crate::report::Direction::Send => r.totals.buffers.floor(),
        crate::report::Direction::Receive => r.totals.buffers,
    }
}

/// The ntttcp-for-linux totals.
pub(crate) fn linux(r: &Report) -> LinuxFigures {
    let bytes = r.totals.bytes as f64;
    let secs = r.duration_s;
    let c = &r.cpu;
    let bytes_per_s = ratio(bytes, secs);
    // No ticks at all (an unreadable /proc/stat) reads as 0, not as fully busy.
    let busy = if c.busy_percent + c.idle_percent + c.iowait_percent.unwrap_or(0.0) > 0.0 {
        1.0 - c.idle_percent / 100.0
    } else {
        0.0
    };
    LinuxFigures {
        mb: bytes / 1e6,
        mb_per_s: bytes_per_s / 1e6,
        mbps: bytes_per_s * 8.0 / 1e6,
        bytes_per_s,
        cycles_per_byte: ratio(c.mhz * 1e6 * secs * c.cores as f64 * busy, bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::seed_report;
    use super::*;

    #[test]
    fn windows_totals_of_the_seed() {
        let t = windows(&seed_report());
        assert!((t.meg - 34243.0).abs() < 1e-9);
        assert!((t.buffers - 547_888.0).abs() < 1e-9);
        assert!((t.cpu_pct - 15.075).abs() < 1e-9);
        assert_eq!((t.packets_sent, t.retransmits), (25_324_915, 60_412));
    }

    #[test]
    fn the_sending_side_counts_whole_buffers_a_reader_any_share() {
        let mut r = seed_report();
        r.totals.buffers = 231_759.999;
        r.direction = crate::report::Direction::Send;
        assert_eq!(
            windows(&r).buffers,
            231_759.0,
            "a write cut short is no buffer"
        );
        r.direction = crate::report::Direction::Receive;
        assert_eq!(windows(&r).buffers, 231_759.999);
    }

    #[test]
    fn linux_figures_are_decimal_and_idle_based() {
        let r = seed_report();
        let l = linux(&r);
        let bytes = 34243.0 * 1048576.0;
        assert!((l.mb - bytes / 1e6).abs() < 1e-6);
        assert!((l.mbps - bytes * 8.0 / 1e6 / 300.00515).abs() < 1e-6);
        assert!((r.cpu.user_percent - 5.0).abs() < 1e-9);
        assert!((r.cpu.idle_percent - 84.925).abs() < 1e-9);
        let want = 2793.0e6 * 300.00515 * 2.0 * (1.0 - 0.84925) / bytes;
        assert!((l.cycles_per_byte - want).abs() < 1e-9);
        assert!((r.cpu.process_percent - 120.0 * 100.0 / 300.00515).abs() < 1e-9);
        let (kb, mb, mbps) = linux_thread(&r, &r.threads[0]);
        assert!((kb / 1e3 - mb).abs() < 1e-9 && (mb * 8.0 - mbps).abs() < 1e-9);
    }
}
