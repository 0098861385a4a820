//! The one result model every renderer reads. Measurement code builds a `Report`;
//! `console` turns it into the NTttcp tables; `settings` renders the `-V` settings block. Field docs are the schema of any
//! structured output built from it.

pub mod console;
pub mod settings;
pub mod terminal;

use serde::Serialize;

use crate::sys::SysUsage;
use crate::timeline::{End, Window};

/// Which side produced a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The sending side.
    Sender,
    /// The receiving side.
    Receiver,
}

/// One worker thread's result over the measurement window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadResult {
    /// Global thread index (sender) or port index (receiver).
    pub index: usize,
    /// Data port the thread sends to or listens on.
    pub port: u16,
    /// Seconds this thread was measured.
    pub seconds: f64,
    /// Bytes sent or received in the window.
    pub bytes: u64,
    /// Completed send or recv calls in the window.
    pub ops: u64,
}

/// A whole side's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Sender or receiver.
    pub side: Side,
    /// Bytes per send()/recv() call (NTttcp's buffer length, the unit of "Buffers").
    pub buffer_len: usize,
    /// Length of the measurement window in seconds.
    pub realtime_s: f64,
    /// Per-thread results, by index.
    pub threads: Vec<ThreadResult>,
    /// Data connections this side had.
    pub connections: usize,
    /// CPUs of this host (for cycles/byte).
    pub cpu_count: usize,
    /// Clock of the first CPU in MHz (/proc/cpuinfo), for cycles/byte.
    pub cpu_mhz: f64,
    /// System counter deltas over the window.
    pub sys: SysUsage,
    /// Negotiated test cycle in seconds (sync mode), 0 = continuous.
    pub negotiated_cycle_s: Option<u32>,
    /// How the measurement ended.
    pub end: End,
}

impl Report {
    /// Builds a report from a measured window. `ports[i]` is worker i's data port.
    pub fn from_window(
        side: Side,
        buffer_len: usize,
        ports: &[u16],
        connections: usize,
        negotiated_cycle_s: Option<u32>,
        w: &Window,
    ) -> Self {
        let (cpu_count, cpu_mhz) = crate::sys::cpu::host_cpu();
        let threads = w
            .start
            .iter()
            .zip(&w.end)
            .enumerate()
            .map(|(index, (a, b))| ThreadResult {
                index,
                port: ports.get(index).copied().unwrap_or(0),
                seconds: w.seconds,
                bytes: b.0.saturating_sub(a.0),
                ops: b.1.saturating_sub(a.1),
            })
            .collect();
        Self {
            side,
            buffer_len,
            realtime_s: w.seconds,
            threads,
            connections,
            cpu_count,
            cpu_mhz,
            sys: w.sys_end.delta(&w.sys_start),
            negotiated_cycle_s,
            end: w.ended.clone(),
        }
    }

    /// Total bytes over all threads.
    pub fn total_bytes(&self) -> u64 {
        self.threads.iter().map(|t| t.bytes).sum()
    }
}
