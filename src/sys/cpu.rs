//! CPU time as the counters give it: system-wide ticks by kind, and the interrupt
//! lines `--show-dev-interrupts` matches. Each OS module fills them.

use serde::Serialize;

/// System-wide CPU time by kind: the tick counters of a /proc/stat `cpu` line we use on
/// Linux (guest time is already part of user time, so it is not added again); 100 ns units
/// on Windows, which keeps no I/O wait or steal (None: unknown, never 0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub(crate) struct CpuTimes {
    /// Normal user time.
    pub user: u64,
    /// Niced user time.
    pub nice: u64,
    /// Kernel time.
    pub system: u64,
    /// Idle time.
    pub idle: u64,
    /// Waiting for I/O (idle from the CPU's point of view).
    pub iowait: Option<u64>,
    /// Hard interrupt time.
    pub irq: u64,
    /// Soft interrupt time (where loopback TCP does much of its work; Windows' DPC time).
    pub softirq: Option<u64>,
    /// Time stolen by the hypervisor.
    pub steal: Option<u64>,
}

impl CpuTimes {
    /// The system's CPU time now.
    pub(crate) fn now() -> Self {
        super::os::counters::cpu_times()
    }

    /// The busy percentage since `earlier` (None: no time passed that the system
    /// counted).
    pub(crate) fn busy_percent_since(&self, earlier: &Self) -> Option<f64> {
        let d = self.delta(earlier);
        (d.total() > 0).then(|| d.busy_fraction() * 100.0)
    }

    /// All ticks, the denominator of every percentage.
    pub(crate) fn total(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait.unwrap_or(0)
            + self.irq
            + self.softirq.unwrap_or(0)
            + self.steal.unwrap_or(0)
    }

    /// Busy fraction 0..=1: 1 − (idle + iowait) / total, as both originals compute it.
    pub(crate) fn busy_fraction(&self) -> f64 {
        let total = self.total();
        if total == 0 {
            return 0.0;
        }
        1.0 - (self.idle + self.iowait.unwrap_or(0)) as f64 / total as f64
    }

    /// Field-wise difference from `earlier`.
    pub(crate) fn delta(&self, earlier: &Self) -> Self {
        Self {
            user: self.user.saturating_sub(earlier.user),
            nice: self.nice.saturating_sub(earlier.nice),
            system: self.system.saturating_sub(earlier.system),
            idle: self.idle.saturating_sub(earlier.idle),
            iowait: super::since(self.iowait, earlier.iowait),
            irq: self.irq.saturating_sub(earlier.irq),
            softirq: super::since(self.softirq, earlier.softirq),
            steal: super::since(self.steal, earlier.steal),
        }
    }
}

/// One line of /proc/interrupts: its label (`25:`, `LOC:`), its text, and the sum of its
/// per-CPU counts (every purely numeric token, as ntttcp-for-linux sums them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IrqLine {
    /// First token, such as `25:` or `LOC:`.
    pub label: String,
    /// The whole line, for matching `--show-dev-interrupts` text.
    pub text: String,
    /// Sum of the numeric tokens.
    pub total: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_fraction_and_delta() {
        let a = CpuTimes {
            user: 10,
            idle: 100,
            iowait: Some(0),
            ..Default::default()
        };
        let b = CpuTimes {
            user: 40,
            system: 30,
            idle: 120,
            iowait: Some(10),
            ..Default::default()
        };
        let d = b.delta(&a);
        assert_eq!((d.user, d.system, d.idle, d.iowait), (30, 30, 20, Some(10)));
        assert!((d.busy_fraction() - 60.0 / 90.0).abs() < 1e-12);
        let unknown = CpuTimes { iowait: None, ..b };
        assert_eq!(
            unknown.delta(&a).iowait,
            None,
            "unknown at either end is unknown"
        );
        assert_eq!(CpuTimes::default().busy_fraction(), 0.0);
    }
}
