//! The NTttcp formulas (ntttcp-windows.md 1.8): pure functions from a `Report` to the
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
    /// TCP segments sent, system-wide.
    pub packets_sent: u64,
    /// TCP segments received, system-wide.
    pub packets_received: u64,
    /// TCP segments retransmitted, system-wide.
    pub retransmits: u64,
    /// Failed connection attempts (NTttcp's "Errors").
    pub errors: u64,
    /// System-wide busy CPU %.
    pub cpu_pct: f64,
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { 0.0 }
}

/// Per-thread figures.
pub fn thread(t: &ThreadResult) -> ThreadFigures {
    ThreadFigures {
        index: t.index,
        seconds: t.seconds,
        kb_per_s: ratio(t.bytes as f64, t.seconds) / KB,
        avg_bytes_per_compl: ratio(t.bytes as f64, t.ops as f64),
    }
}

/// The Totals figures.
pub fn totals(r: &Report) -> Totals {
    let bytes = r.total_bytes() as f64;
    let secs = r.realtime_s;
    let tcp = &r.sys.tcp;
    let segments = match r.side {
        Side::Sender => tcp.out_segs,
        Side::Receiver => tcp.in_segs,
    };
    let cpu_pct = r.sys.cpu.busy_fraction() * 100.0;
    let bytes_per_s = ratio(bytes, secs);
    let busy_hz = cpu_pct / 100.0 * r.cpu_count as f64 * r.cpu_mhz * 1e6;
    let buffers = ratio(bytes, r.buffer_len as f64);
    let received = tcp.in_segs as f64;
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
        packets_sent: tcp.out_segs,
        packets_received: tcp.in_segs,
        retransmits: tcp.retrans_segs,
        errors: tcp.attempt_fails,
        cpu_pct,
    }
}
