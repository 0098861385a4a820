//! CPU counters: /proc/stat (ticks, interrupts, CPU count), /proc/softirqs (NET_RX) and
//! /proc/cpuinfo (clock). Pure parsers over `&str` plus one-line readers.

use serde::Serialize;

/// The ten tick counters of a /proc/stat `cpu` line we use (guest time is already part of
/// user time, so it is not added again).
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
    pub iowait: u64,
    /// Hard interrupt time.
    pub irq: u64,
    /// Soft interrupt time (where loopback TCP does much of its work).
    pub softirq: u64,
    /// Time stolen by the hypervisor.
    pub steal: u64,
}

impl CpuTimes {
    /// All ticks, the denominator of every percentage.
    pub(crate) fn total(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }

    /// Busy fraction 0..=1: 1 − (idle + iowait) / total, as both originals compute it.
    pub(crate) fn busy_fraction(&self) -> f64 {
        let total = self.total();
        if total == 0 {
            return 0.0;
        }
        1.0 - (self.idle + self.iowait) as f64 / total as f64
    }

    /// Field-wise difference from `earlier`.
    pub(crate) fn delta(&self, earlier: &Self) -> Self {
        Self {
            user: self.user.saturating_sub(earlier.user),
            nice: self.nice.saturating_sub(earlier.nice),
            system: self.system.saturating_sub(earlier.system),
            idle: self.idle.saturating_sub(earlier.idle),
            iowait: self.iowait.saturating_sub(earlier.iowait),
            irq: self.irq.saturating_sub(earlier.irq),
            softirq: self.softirq.saturating_sub(earlier.softirq),
            steal: self.steal.saturating_sub(earlier.steal),
        }
    }
}

/// The aggregate `cpu ` line of /proc/stat.
pub(crate) fn parse_cpu_line(stat: &str) -> Option<CpuTimes> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    let get = |i: usize| v.get(i).copied().unwrap_or(0);
    if v.len() < 4 {
        return None;
    }
    Some(CpuTimes {
        user: get(0),
        nice: get(1),
        system: get(2),
        idle: get(3),
        iowait: get(4),
        irq: get(5),
        softirq: get(6),
        steal: get(7),
    })
}

/// The total interrupt count: first number of the `intr` line.
pub(crate) fn parse_intr_total(stat: &str) -> Option<u64> {
    stat.lines()
        .find_map(|l| l.strip_prefix("intr "))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// NET_RX softirqs summed over all CPUs.
pub(crate) fn parse_net_rx(softirqs: &str) -> Option<u64> {
    let line = softirqs
        .lines()
        .find(|l| l.trim_start().starts_with("NET_RX:"))?;
    Some(
        line.split_whitespace()
            .skip(1)
            .filter_map(|f| f.parse::<u64>().ok())
            .sum(),
    )
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

/// Every line of /proc/interrupts after the CPU header.
pub(crate) fn parse_interrupts(text: &str) -> Vec<IrqLine> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let label = l.split_whitespace().next()?.to_string();
            let total = l
                .split_whitespace()
                .skip(1)
                .filter_map(|t| t.parse::<u64>().ok())
                .sum();
            Some(IrqLine {
                label,
                text: l.to_string(),
                total,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "\
cpu  12354 0 144325 338974 611 0 58105 94 0 0
cpu0 6000 0 72000 169000 300 0 29000 47 0 0
cpu1 6354 0 72325 169974 311 0 29105 47 0 0
intr 123411 0 0 0 0 0 0 0 0 0 1 1 15
ctxt 5061234
btime 1764480000
softirq 73355 0 8638 4 3006 28901 0 91 17097 0 15618
";

    #[test]
    fn parses_the_aggregate_cpu_line() {
        let c = parse_cpu_line(STAT).unwrap();
        assert_eq!(
            c,
            CpuTimes {
                user: 12354,
                nice: 0,
                system: 144325,
                idle: 338974,
                iowait: 611,
                irq: 0,
                softirq: 58105,
                steal: 94
            }
        );
        assert_eq!(c.total(), 12354 + 144325 + 338974 + 611 + 58105 + 94);
        assert!(parse_cpu_line("cpu0 1 2 3 4\n").is_none());
        assert!(parse_cpu_line("cpu  1 x 3 4\n").is_none());
    }

    #[test]
    fn busy_fraction_and_delta() {
        let a = CpuTimes {
            user: 10,
            idle: 100,
            ..Default::default()
        };
        let b = CpuTimes {
            user: 40,
            system: 30,
            idle: 120,
            iowait: 10,
            ..Default::default()
        };
        let d = b.delta(&a);
        assert_eq!((d.user, d.system, d.idle, d.iowait), (30, 30, 20, 10));
        assert!((d.busy_fraction() - 60.0 / 90.0).abs() < 1e-12);
        assert_eq!(CpuTimes::default().busy_fraction(), 0.0);
    }

    #[test]
    fn interrupt_lines_sum_their_counts() {
        let text = "           CPU0       CPU1\n\
                     25:        100         50   PCI-MSI 49152-edge      virtio3-rx\n\
                    LOC:   32980308   21351370   Local timer interrupts\n\
                    ERR:          0\n";
        let lines = parse_interrupts(text);
        assert_eq!(lines.len(), 3);
        // "49152-edge" is not purely numeric, so it is not counted.
        assert_eq!((lines[0].label.as_str(), lines[0].total), ("25:", 150));
        assert_eq!(lines[1].total, 32980308 + 21351370);
        assert!(lines[1].text.contains("Local timer"));
    }

    #[test]
    fn interrupts_and_softirqs() {
        assert_eq!(parse_intr_total(STAT), Some(123411));
        let softirqs = "                    CPU0       CPU1       \n\
                        HI:          0          0\n\
                        NET_TX:          4       3006\n\
                        NET_RX:       1323       1683\n";
        assert_eq!(parse_net_rx(softirqs), Some(3006));
        assert_eq!(parse_net_rx("HI: 1 2\n"), None);
    }
}
