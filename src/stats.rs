//! The NTttcp formulas (as Windows NTttcp 5.39 computes its tables): pure functions from a `Report` to the
//! figures the tables show. Units are binary as in NTttcp: KB = 1024 B, MB = 2^20 B.

use crate::report::{Report, Side, ThreadResult};

const KB: f64 = 1024.0;
const MB: f64 = 1024.0 * 1024.0;

/// Figures of one row of the per-thread table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThreadFigures {
    /// Thread index.
    pub index: usize,
    /// Measured seconds.
    pub seconds: f64,
    /// Bytes / seconds / 1024.
    pub kb_per_s: f64,
    /// Bytes / completed calls.
    pub avg_bytes_per_compl: f64,
}

/// Figures of the four Totals tables.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Totals {
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
    /// NET_RX softirqs per second (the Linux stand-in for DPCs).
    pub dpcs_per_s: f64,
    /// Segments received per NET_RX softirq.
    pub pkts_per_dpc: f64,
    /// Interrupts per second.
    pub intr_per_s: f64,
    /// Segments received per interrupt.
    pub pkts_per_intr: f64,
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

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { 0.0 }
}

/// Total bits per second of a report.
pub fn bits_per_second(r: &Report) -> f64 {
    ratio(r.total_bytes() as f64 * 8.0, r.realtime_s)
}

/// Per-thread figures.
pub fn thread(t: &ThreadResult) -> ThreadFigures {
    ThreadFigures {
        index: t.index,
        seconds: t.seconds,
        kb_per_s: ratio(t.bytes as f64, t.seconds) / KB,
        avg_bytes_per_compl: ratio(t.call_bytes() as f64, t.ops as f64),
    }
}

/// The Totals figures.
pub fn totals(r: &Report) -> Totals {
    let bytes = r.total_bytes() as f64;
    let secs = r.realtime_s;
    // NTttcp's packet columns: TCP segments, or for UDP datagrams.
    let (sent, received, retransmits, errors) = if r.is_udp() {
        let u = &r.sys.udp;
        (u.out_datagrams, u.in_datagrams, 0, u.in_errors)
    } else {
        let t = &r.sys.tcp;
        (t.out_segs, t.in_segs, t.retrans_segs, t.attempt_fails)
    };
    let segments = match r.side {
        Side::Sender => sent,
        Side::Receiver => received,
    };
    let cpu_pct = r.sys.cpu.busy_fraction() * 100.0;
    let bytes_per_s = ratio(bytes, secs);
    let busy_hz = cpu_pct / 100.0 * r.cpu_count as f64 * r.cpu_mhz * 1e6;
    let buffers = ratio(bytes, r.buffer_len as f64);
    let received = received as f64;
    Totals {
        meg: bytes / MB,
        realtime: secs,
        avg_frame_size: ratio(bytes, segments as f64),
        mb_per_s: bytes_per_s / MB,
        buffers_per_s: ratio(buffers, secs),
        cycles_per_byte: ratio(busy_hz, bytes_per_s),
        buffers,
        dpcs_per_s: ratio(r.sys.net_rx as f64, secs),
        pkts_per_dpc: ratio(received, r.sys.net_rx as f64),
        intr_per_s: ratio(r.sys.interrupts as f64, secs),
        pkts_per_intr: ratio(received, r.sys.interrupts as f64),
        packets_sent: sent,
        packets_received: received as u64,
        retransmits,
        errors,
        cpu_pct,
    }
}

/// The ntttcp-for-linux figures (as its log prints them): decimal units, idle-only CPU busy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinuxFigures {
    /// Bytes / 10^6.
    pub mb: f64,
    /// Bytes / 10^6 / seconds.
    pub mb_per_s: f64,
    /// Bits / 10^6 / seconds.
    pub mbps: f64,
    /// Bytes / seconds.
    pub bytes_per_s: f64,
    /// Percent of all CPU ticks in each state.
    pub user: f64,
    /// System (kernel) %.
    pub system: f64,
    /// Idle %.
    pub idle: f64,
    /// I/O wait %.
    pub iowait: f64,
    /// Soft-interrupt %.
    pub softirq: f64,
    /// MHz·10^6 · seconds · cores · (1 − idle fraction) / bytes.
    pub cycles_per_byte: f64,
    /// This process's CPU time / wall time × 100 (can exceed 100 %).
    pub cpu_busy_all: f64,
}

/// ntttcp-for-linux's per-thread (KB/s, MB/s, mbps), decimal, over the report's time.
pub fn linux_thread(r: &Report, t: &ThreadResult) -> (f64, f64, f64) {
    let bps = ratio(t.bytes as f64, r.realtime_s);
    (bps / 1e3, bps / 1e6, bps * 8.0 / 1e6)
}

/// The ntttcp-for-linux totals.
pub fn linux(r: &Report) -> LinuxFigures {
    let bytes = r.total_bytes() as f64;
    let secs = r.realtime_s;
    let c = &r.sys.cpu;
    let total = c.total() as f64;
    let pct = |v: u64| ratio(v as f64 * 100.0, total);
    let busy = 1.0 - ratio(c.idle as f64, total);
    let bytes_per_s = ratio(bytes, secs);
    LinuxFigures {
        mb: bytes / 1e6,
        mb_per_s: bytes_per_s / 1e6,
        mbps: bytes_per_s * 8.0 / 1e6,
        bytes_per_s,
        user: pct(c.user),
        system: pct(c.system),
        idle: pct(c.idle),
        iowait: pct(c.iowait),
        softirq: pct(c.softirq),
        cycles_per_byte: if total > 0.0 {
            ratio(r.cpu_mhz * 1e6 * secs * r.cpu_count as f64 * busy, bytes)
        } else {
            0.0
        },
        cpu_busy_all: ratio(r.sys.process_cpu_s * 100.0, secs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture::seed_report;

    #[test]
    fn windows_totals_of_the_seed() {
        let t = totals(&seed_report());
        assert!((t.meg - 34243.0).abs() < 1e-9);
        assert!((t.buffers - 547_888.0).abs() < 1e-9);
        assert!((t.cpu_pct - 15.075).abs() < 1e-9);
        assert_eq!((t.packets_sent, t.retransmits), (25_324_915, 60_412));
    }

    #[test]
    fn linux_figures_are_decimal_and_idle_based() {
        let r = seed_report();
        let l = linux(&r);
        let bytes = 34243.0 * 1048576.0;
        assert!((l.mb - bytes / 1e6).abs() < 1e-6);
        assert!((l.mbps - bytes * 8.0 / 1e6 / 300.00515).abs() < 1e-6);
        assert!((l.user - 5.0).abs() < 1e-9 && (l.idle - 84.925).abs() < 1e-9);
        let want = 2793.0e6 * 300.00515 * 2.0 * (1.0 - 0.84925) / bytes;
        assert!((l.cycles_per_byte - want).abs() < 1e-9);
        assert!((l.cpu_busy_all - 120.0 * 100.0 / 300.00515).abs() < 1e-9);
        let (kb, mb, mbps) = linux_thread(&r, &r.threads[0]);
        assert!((kb / 1e3 - mb).abs() < 1e-9 && (mb * 8.0 - mbps).abs() < 1e-9);
    }
}
