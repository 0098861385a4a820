//! The arithmetic of `ntttcp merge`: reports of one side from runs that ran side by side
//! (each its own pair of hosts) folded into one report of the same shape.
//!
//! Counts add up (bytes, calls, connections, segments, datagrams), and so do rates: the
//! runs moved their bytes at the same time, so the fleet's throughput is the sum of
//! theirs. The window runs from the earliest first edge to the latest last one, and its
//! length is the inputs' mean. CPU figures are weighted by each host's CPUs. Percentiles
//! do not add: merged latency and round-trip figures are null, the transactions and
//! connections they came with are summed.

use crate::report::merge::{Merge, Pair, Spread};
use crate::report::{ConnectResult, Cpu, EndKind, Network, Report, RrResult, Side, UdpResult};

/// One report for `reports` (all of one side and direction; at least one).
pub(crate) fn fold(reports: &[Report]) -> Report {
    let mut m = reports[0].clone();
    if reports.len() == 1 {
        return m;
    }
    let sum_u = |f: fn(&Report) -> u64| reports.iter().map(f).sum::<u64>();
    let sum_f = |f: fn(&Report) -> f64| reports.iter().map(f).sum::<f64>();
    m.host = hosts(reports);
    if reports.iter().any(|r| r.os != m.os) {
        m.os = "several".into();
    }
    m.end = reports
        .iter()
        .find(|r| r.end.kind != EndKind::Completed)
        .map_or(m.end, |r| r.end.clone());
    m.duration_s = sum_f(|r| r.duration_s) / reports.len() as f64;
    m.window_start_unix_s = reports
        .iter()
        .map(|r| r.window_start_unix_s)
        .fold(f64::INFINITY, f64::min);
    m.window_end_unix_s = reports
        .iter()
        .map(|r| r.window_end_unix_s)
        .fold(0.0, f64::max);
    m.longest_stall_s = reports
        .iter()
        .map(|r| r.longest_stall_s)
        .fold(0.0, f64::max);
    m.window_overrun_s = reports
        .iter()
        .filter_map(|r| r.window_overrun_s)
        .reduce(f64::max);
    m.connections = reports.iter().map(|r| r.connections).sum();
    m.network = network(reports);
    m.totals.bytes = sum_u(|r| r.totals.bytes);
    m.totals.bytes_written = reports.iter().map(|r| r.totals.bytes_written).sum();
    m.totals.bits_per_second = sum_f(|r| r.totals.bits_per_second);
    m.totals.mebibytes_per_second = sum_f(|r| r.totals.mebibytes_per_second);
    m.totals.calls = sum_u(|r| r.totals.calls);
    let call_bytes = sum_f(|r| r.totals.bytes_per_call * r.totals.calls as f64);
    m.totals.bytes_per_call = super::ratio(call_bytes, m.totals.calls as f64);
    m.totals.buffers = sum_f(|r| r.totals.buffers);
    m.totals.buffers_per_second = sum_f(|r| r.totals.buffers_per_second);
    let segments = match m.side {
        Side::Sender => m.network.segments_sent,
        Side::Receiver => m.network.segments_received,
    };
    m.totals.avg_frame_size = super::ratio(m.totals.bytes as f64, segments as f64);
    m.cpu = cpu(reports, m.totals.bits_per_second);
    m.threads = reports.iter().flat_map(|r| r.threads.clone()).collect();
    for (i, t) in m.threads.iter_mut().enumerate() {
        t.index = i;
    }
    m.peers = reports.iter().flat_map(|r| r.peers.clone()).collect();
    m.tcp_connections = reports
        .iter()
        .flat_map(|r| r.tcp_connections.clone())
        .collect();
    m.udp = udp(reports);
    m.rr = rr(reports);
    m.connect = connect(reports);
    (m.rtt_us, m.tcp_retransmits, m.nic, m.device_interrupts) = (None, None, None, None);
    m
}

/// The hosts of `reports`, each once, in order.
fn hosts(reports: &[Report]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for r in reports {
        if !seen.contains(&r.host.as_str()) {
            seen.push(&r.host);
        }
    }
    seen.join(", ")
}

/// The summed system counters (a count some input does not know stays unknown).
fn network(reports: &[Report]) -> Network {
    let mut n = reports[0].network;
    let rest = &reports[1..];
    for r in rest {
        let o = r.network;
        n.segments_sent += o.segments_sent;
        n.segments_received += o.segments_received;
        n.retransmits += o.retransmits;
        n.failed_attempts += o.failed_attempts;
        n.interrupts = n.interrupts.zip(o.interrupts).map(|(a, b)| a + b);
        n.net_rx_softirqs = n.net_rx_softirqs.zip(o.net_rx_softirqs).map(|(a, b)| a + b);
        n.udp = n.udp + o.udp;
    }
    n
}

/// The CPUs of every host together: percentages weighted by each host's CPUs, this
/// process's share summed, and the busy cycles of all of them per byte moved.
fn cpu(reports: &[Report], bits_per_second: f64) -> Cpu {
    let cores: usize = reports.iter().map(|r| r.cpu.cores).sum();
    let weight = |r: &Report| r.cpu.cores as f64 / cores.max(1) as f64;
    let mean = |f: fn(&Cpu) -> f64| reports.iter().map(|r| f(&r.cpu) * weight(r)).sum();
    let known = |f: fn(&Cpu) -> Option<f64>| {
        let all: Option<Vec<f64>> = reports
            .iter()
            .map(|r| f(&r.cpu).map(|v| v * weight(r)))
            .collect();
        all.map(|v| v.iter().sum())
    };
    let busy_hz: f64 = reports
        .iter()
        .map(|r| r.cpu.busy_percent / 100.0 * r.cpu.cores as f64 * r.cpu.mhz * 1e6)
        .sum();
    Cpu {
        cores,
        mhz: mean(|c| c.mhz),
        busy_percent: mean(|c| c.busy_percent),
        user_percent: mean(|c| c.user_percent),
        system_percent: mean(|c| c.system_percent),
        idle_percent: mean(|c| c.idle_percent),
        iowait_percent: known(|c| c.iowait_percent),
        softirq_percent: known(|c| c.softirq_percent),
        steal_percent: known(|c| c.steal_percent),
        process_percent: reports.iter().map(|r| r.cpu.process_percent).sum(),
        cycles_per_byte: super::ratio(busy_hz, bits_per_second / 8.0),
    }
}

/// The summed UDP accounting (loss recomputed; jitter the mean of those known).
fn udp(reports: &[Report]) -> Option<UdpResult> {
    let all: Vec<&UdpResult> = reports.iter().filter_map(|r| r.udp.as_ref()).collect();
    let first = **all.first()?;
    let add = |a: Option<u64>, b: Option<u64>| a.zip(b).map(|(a, b)| a + b);
    let mut u = all[1..].iter().fold(first, |mut u, o| {
        u.datagrams += o.datagrams;
        u.expected += o.expected;
        u.unstamped += o.unstamped;
        u.lost = add(u.lost, o.lost);
        u.duplicates = add(u.duplicates, o.duplicates);
        u.out_of_order = add(u.out_of_order, o.out_of_order);
        u
    });
    u.loss_percent = u
        .lost
        .filter(|_| u.expected > 0)
        .map(|l| l as f64 * 100.0 / u.expected as f64);
    let jitters: Vec<f64> = all.iter().filter_map(|o| o.jitter_ms).collect();
    u.jitter_ms = (!jitters.is_empty()).then(|| jitters.iter().sum::<f64>() / jitters.len() as f64);
    Some(u)
}

/// Summed request/response transactions (latency percentiles do not add: null).
fn rr(reports: &[Report]) -> Option<RrResult> {
    let all: Vec<&RrResult> = reports.iter().filter_map(|r| r.rr.as_ref()).collect();
    let first = **all.first()?;
    Some(RrResult {
        transactions: all.iter().map(|x| x.transactions).sum(),
        transactions_per_second: all.iter().map(|x| x.transactions_per_second).sum(),
        latency_us: None,
        ..first
    })
}

/// Summed connections of a connection-rate test (connect-time percentiles: null).
fn connect(reports: &[Report]) -> Option<ConnectResult> {
    let all: Vec<&ConnectResult> = reports.iter().filter_map(|r| r.connect.as_ref()).collect();
    all.first()?;
    Some(ConnectResult {
        connections: all.iter().map(|x| x.connections).sum(),
        connections_per_second: all.iter().map(|x| x.connections_per_second).sum(),
        latency_us: None,
        timed: all.iter().map(|x| x.timed).sum(),
    })
}

/// How the inputs compare: `pairs` are (file, the report that gives its throughput).
pub(crate) fn compare(pairs: &[(String, &Report)]) -> Merge {
    let rows: Vec<Pair> = pairs
        .iter()
        .map(|(file, r)| Pair {
            file: file.clone(),
            host: r.host.clone(),
            bits_per_second: r.totals.bits_per_second,
            window_start_unix_s: r.window_start_unix_s,
            window_end_unix_s: r.window_end_unix_s,
        })
        .collect();
    let rates: Vec<f64> = rows.iter().map(|p| p.bits_per_second).collect();
    let start = rows
        .iter()
        .map(|p| p.window_start_unix_s)
        .fold(f64::MIN, f64::max);
    let end = rows
        .iter()
        .map(|p| p.window_end_unix_s)
        .fold(f64::MAX, f64::min);
    let overlap_s = (end - start).max(0.0);
    let longest = rows
        .iter()
        .map(|p| p.window_end_unix_s - p.window_start_unix_s)
        .fold(0.0, f64::max);
    Merge {
        bits_per_second: Spread::of(&rates),
        overlap_s,
        overlap_fraction: super::ratio(overlap_s, longest).min(1.0),
        pairs: rows,
    }
}

/// Each two inputs whose windows share no instant: (file, later file), in input order.
pub(crate) fn apart(merge: &Merge) -> Vec<(String, String)> {
    let p = &merge.pairs;
    let disjoint = |a: &Pair, b: &Pair| {
        a.window_end_unix_s < b.window_start_unix_s || b.window_end_unix_s < a.window_start_unix_s
    };
    let mut found = Vec::new();
    for (i, a) in p.iter().enumerate() {
        for b in p[i + 1..].iter().filter(|b| disjoint(a, b)) {
            found.push((a.file.clone(), b.file.clone()));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::fixture::{seed_report, seed_with};

    #[test]
    fn counts_and_rates_add_up_and_cpus_weigh_by_their_count() {
        let a = seed_report();
        let b = seed_with(|m| {
            m.host.name = "other".into();
            m.host.cpu_count = 6;
        });
        let m = fold(&[a.clone(), b.clone()]);
        assert_eq!(m.totals.bytes, a.totals.bytes + b.totals.bytes);
        assert_eq!(m.totals.calls, a.totals.calls + b.totals.calls);
        let rate = a.totals.bits_per_second + b.totals.bits_per_second;
        assert!((m.totals.bits_per_second - rate).abs() < 1e-6);
        assert_eq!(m.connections, a.connections + b.connections);
        assert_eq!(m.host, "vm<&>, other");
        assert_eq!(m.cpu.cores, 8);
        // Same busy share on both hosts: the weighted mean is that share.
        assert!((m.cpu.busy_percent - a.cpu.busy_percent).abs() < 1e-9);
        let indexes: Vec<usize> = m.threads.iter().map(|t| t.index).collect();
        assert_eq!(indexes, (0..8).collect::<Vec<_>>());
        assert_eq!(m.network.segments_sent, 2 * a.network.segments_sent);
        assert_eq!(fold(std::slice::from_ref(&a)), a, "one input is itself");
    }

    #[test]
    fn the_spread_and_the_overlap_of_the_inputs() {
        assert_eq!(
            Spread::of(&[3.0, 1.0, 2.0]),
            Spread {
                min: 1.0,
                median: 2.0,
                max: 3.0
            }
        );
        assert_eq!(Spread::of(&[4.0, 1.0]).median, 2.5);
        let r = |start: f64, end: f64| seed_with(|m| m.window_unix_s = (start, end));
        let (a, b, c) = (r(100.0, 110.0), r(102.0, 111.0), r(200.0, 210.0));
        let m = compare(&[("a".into(), &a), ("b".into(), &b)]);
        assert!((m.overlap_s - 8.0).abs() < 1e-9);
        assert!((m.overlap_fraction - 0.8).abs() < 1e-9);
        assert!(apart(&m).is_empty());
        let m = compare(&[("a".into(), &a), ("b".into(), &b), ("c".into(), &c)]);
        assert_eq!(m.overlap_s, 0.0);
        assert_eq!(
            apart(&m),
            [("a".into(), "c".into()), ("b".into(), "c".into())]
        );
    }
}
