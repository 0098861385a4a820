//! Every formula: a side's measured counters → the figures of its `Report` (`report`),
//! and the figures only the tables show (Windows NTttcp 5.39's Totals, ntttcp-for-linux's
//! log). Renderers format these; they compute nothing. NTttcp's units are binary (KB =
//! 1024 B, MB = 2^20 B), ntttcp-for-linux's decimal.

use crate::config::{Config, Protocol};
use crate::data::Sample;
use crate::report::{
    Cpu, DevInterrupts, EarlyEnd, Ending, Host, Measured, Network, Params, Report, Side,
    SocketReport, Thread, ThreadCounts, Totals, UdpResult,
};
use crate::timeline::{End, Window};

const KB: f64 = 1024.0;
const MB: f64 = 1024.0 * 1024.0;

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { 0.0 }
}

/// `v` per second over `secs` (0 for an empty window).
pub(crate) fn per_second(v: f64, secs: f64) -> f64 {
    ratio(v, secs)
}

/// Bits per second of `bytes` over `secs`.
pub(crate) fn bits_per_second(bytes: u64, secs: f64) -> f64 {
    ratio(bytes as f64 * 8.0, secs)
}

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

/// The report of a measured window: every figure computed once, here.
pub(crate) fn report(mut m: Measured) -> Report {
    let threads: Vec<Thread> = std::mem::take(&mut m.threads)
        .into_iter()
        .map(thread)
        .collect();
    let udp = threads
        .iter()
        .any(|t| t.udp.is_some())
        .then(|| udp_sum(threads.iter().filter_map(|t| t.udp.as_ref())));
    let totals = totals(&m, &threads);
    let cpu = cpu(&m, totals.bytes);
    let end = ending(m.side, m.end, m.seconds, m.planned_s);
    Report {
        side: m.side,
        host: m.host.name,
        os: m.host.os,
        end,
        params: m.params,
        negotiated_cycle_s: m.negotiated_cycle_s,
        duration_s: m.seconds,
        longest_stall_s: m.stall.seconds,
        longest_stall_from_s: m.stall.from_s,
        window_overrun_s: overrun(m.seconds, m.planned_s),
        connections: m.connections,
        buffer_len: m.buffer_len,
        totals,
        cpu,
        network: Network {
            segments_sent: m.sys.tcp.out_segs,
            segments_received: m.sys.tcp.in_segs,
            retransmits: m.sys.tcp.retrans_segs,
            failed_attempts: m.sys.tcp.attempt_fails,
            interrupts: m.sys.interrupts,
            net_rx_softirqs: m.sys.net_rx,
            udp: m.sys.udp,
        },
        threads,
        tcp_retransmits: m.tcp_retrans,
        nic: m.nic,
        device_interrupts: m.dev_interrupts,
        tcp_connections: Vec::new(),
        socket: m.socket,
        peers: Vec::new(),
        udp,
    }
}

/// The report of a side's measured window. `ports[i]` is worker i's data port.
pub(crate) fn from_window(
    side: Side,
    cfg: &Config,
    host: Host,
    ports: &[u16],
    connections: usize,
    negotiated_cycle_s: Option<u32>,
    w: &Window,
) -> Report {
    let udp_receiver = side == Side::Receiver && cfg.protocol == Protocol::Udp;
    let threads = w
        .start
        .iter()
        .zip(&w.end)
        .enumerate()
        .map(|(index, (a, b))| ThreadCounts {
            index,
            port: ports.get(index).copied().unwrap_or(0),
            seconds: w.seconds,
            bytes: b.bytes.saturating_sub(a.bytes),
            bytes_written: a.written.zip(b.written).map(|(x, y)| y.saturating_sub(x)),
            calls: b.ops.saturating_sub(a.ops),
            udp: udp_receiver.then(|| udp_between(a, b)),
        })
        .collect();
    let sys = w.sys_end.delta(&w.sys_start);
    report(Measured {
        side,
        host,
        params: Params::of(cfg),
        buffer_len: match side {
            Side::Sender => cfg.send_size,
            Side::Receiver => cfg.recv_size,
        },
        seconds: w.seconds,
        planned_s: w.planned,
        stall: w.stall,
        threads,
        connections,
        sys,
        negotiated_cycle_s,
        end: w.ended.clone(),
        tcp_retrans: cfg.show_tcp_retrans.then_some(sys.tcp_ext),
        nic: cfg
            .show_nic
            .as_deref()
            .and_then(|n| w.sys_end.nic_delta(&w.sys_start, n)),
        dev_interrupts: cfg.show_interrupts.as_ref().map(|p| DevInterrupts {
            pattern: p.clone(),
            total: w.sys_end.irq_delta(&w.sys_start, p),
        }),
        socket: SocketReport {
            requested: cfg.sockopts,
            applied: None,
        },
    })
}

/// What the stamps say between two samples of a UDP receiver's worker (`ops` =
/// datagrams).
pub(crate) fn udp_between(a: &Sample, b: &Sample) -> UdpResult {
    let (x, y) = (&a.udp, &b.udp);
    let expected = y.expected.saturating_sub(x.expected);
    let received = y.received.saturating_sub(x.received);
    let unstamped = y.unstamped.saturating_sub(x.unstamped);
    // Only unstamped datagrams: nothing says what was lost, doubled or reordered.
    let known = |v: u64| (expected > 0 || unstamped == 0).then_some(v);
    let lost = expected.saturating_sub(received);
    UdpResult {
        datagrams: b.ops.saturating_sub(a.ops),
        expected,
        lost: known(lost),
        loss_percent: percent(lost, expected),
        duplicates: known(y.duplicates.saturating_sub(x.duplicates)),
        out_of_order: known(y.out_of_order.saturating_sub(x.out_of_order)),
        unstamped,
        jitter_ms: y.jitter_ms(),
    }
}

/// The sum of several threads' UDP results: a figure unknown on any thread is unknown
/// in total; jitter is the mean of the threads that have one.
pub(crate) fn udp_sum<'a>(all: impl IntoIterator<Item = &'a UdpResult>) -> UdpResult {
    let mut t = UdpResult {
        lost: Some(0),
        duplicates: Some(0),
        out_of_order: Some(0),
        ..UdpResult::default()
    };
    let add = |a: Option<u64>, b: Option<u64>| a.zip(b).map(|(a, b)| a + b);
    let (mut jitter, mut n) = (0.0, 0);
    for u in all {
        t.datagrams += u.datagrams;
        t.expected += u.expected;
        t.lost = add(t.lost, u.lost);
        t.duplicates = add(t.duplicates, u.duplicates);
        t.out_of_order = add(t.out_of_order, u.out_of_order);
        t.unstamped += u.unstamped;
        if let Some(j) = u.jitter_ms {
            jitter += j;
            n += 1;
        }
    }
    t.jitter_ms = (n > 0).then(|| jitter / f64::from(n));
    t.loss_percent = t.lost.and_then(|l| percent(l, t.expected));
    t
}

fn percent(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 * 100.0 / whole as f64)
}

/// ntttcp-for-linux's "tcpi rtt": the average over threads of each thread's average
/// connection RTT, microseconds (None without TCP_INFO rows).
pub(crate) fn average_rtt_us(r: &Report) -> Option<u64> {
    let mut per_thread: std::collections::BTreeMap<usize, (u64, u64)> = Default::default();
    for c in &r.tcp_connections {
        let e = per_thread.entry(c.thread).or_default();
        *e = (e.0 + u64::from(c.rtt_us), e.1 + 1);
    }
    let n = per_thread.len() as u64;
    (n > 0).then(|| per_thread.values().map(|(sum, k)| sum / k).sum::<u64>() / n)
}

/// A window that ran more than this fraction past its plan says by how much.
pub(crate) const OVERRUN_NOTED: f64 = 0.01;

/// Seconds the window ran past its plan, when more than `OVERRUN_NOTED` of it (a side
/// that was itself stopped or starved stretches its window).
fn overrun(seconds: f64, planned: Option<f64>) -> Option<f64> {
    let planned = planned?;
    let over = seconds - planned;
    (over > planned * OVERRUN_NOTED).then_some(over)
}

/// How a side's measurement ended, and whether it fell short of its plan.
pub(crate) fn ending(side: Side, end: End, measured_s: f64, planned_s: Option<f64>) -> Ending {
    let early = EarlyEnd::of(side, &end, measured_s, planned_s);
    Ending::new(end, measured_s, planned_s, early)
}

fn thread(t: ThreadCounts) -> Thread {
    Thread {
        bits_per_second: ratio(t.bytes as f64 * 8.0, t.seconds),
        index: t.index,
        port: t.port,
        seconds: t.seconds,
        bytes: t.bytes,
        bytes_written: t.bytes_written,
        calls: t.calls,
        udp: t.udp,
    }
}

fn totals(m: &Measured, threads: &[Thread]) -> Totals {
    let bytes: u64 = threads.iter().map(|t| t.bytes).sum();
    let calls: u64 = threads.iter().map(|t| t.calls).sum();
    let call_bytes: u64 = threads.iter().map(Thread::call_bytes).sum();
    let segments = match m.side {
        Side::Sender => m.sys.tcp.out_segs,
        Side::Receiver => m.sys.tcp.in_segs,
    };
    let b = bytes as f64;
    let buffers = ratio(b, m.buffer_len as f64);
    Totals {
        bytes,
        bytes_written: threads.iter().map(|t| t.bytes_written).sum(),
        bits_per_second: ratio(b * 8.0, m.seconds),
        mebibytes_per_second: ratio(b, m.seconds) / MB,
        calls,
        bytes_per_call: ratio(call_bytes as f64, calls as f64),
        buffers,
        buffers_per_second: ratio(buffers, m.seconds),
        avg_frame_size: ratio(b, segments as f64),
    }
}

fn cpu(m: &Measured, bytes: u64) -> Cpu {
    let c = &m.sys.cpu;
    let total = c.total() as f64;
    let pct = |v: u64| ratio(v as f64 * 100.0, total);
    let busy_percent = c.busy_fraction() * 100.0;
    let busy_hz = busy_percent / 100.0 * m.host.cpu_count as f64 * m.host.cpu_mhz * 1e6;
    Cpu {
        cores: m.host.cpu_count,
        mhz: m.host.cpu_mhz,
        busy_percent,
        user_percent: pct(c.user),
        system_percent: pct(c.system),
        idle_percent: pct(c.idle),
        iowait_percent: pct(c.iowait),
        softirq_percent: pct(c.softirq),
        process_percent: ratio(m.sys.process_cpu_s * 100.0, m.seconds),
        cycles_per_byte: ratio(busy_hz, ratio(bytes as f64, m.seconds)),
    }
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
        buffers: r.totals.buffers,
        dpcs_per_s: ratio(n.net_rx_softirqs as f64, secs),
        pkts_per_dpc: ratio(received_f, n.net_rx_softirqs as f64),
        intr_per_s: ratio(n.interrupts as f64, secs),
        pkts_per_intr: ratio(received_f, n.interrupts as f64),
        packets_sent: sent,
        packets_received: received,
        retransmits,
        errors,
        cpu_pct: r.cpu.busy_percent,
    }
}

/// The average bytes per completion of NTttcp's totals: bytes the calls moved over all
/// calls.
pub(crate) fn avg_compl(r: &Report) -> f64 {
    r.totals.bytes_per_call
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
/// given, else all of them.
pub(crate) fn dev_or_system_interrupts(r: &Report) -> (u64, f64) {
    let total = r
        .device_interrupts
        .as_ref()
        .map_or(r.network.interrupts, |d| d.total);
    (total, ratio(total as f64, r.duration_s))
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

/// The ntttcp-for-linux totals.
pub(crate) fn linux(r: &Report) -> LinuxFigures {
    let bytes = r.totals.bytes as f64;
    let secs = r.duration_s;
    let c = &r.cpu;
    let bytes_per_s = ratio(bytes, secs);
    // No ticks at all (an unreadable /proc/stat) reads as 0, not as fully busy.
    let busy = if c.busy_percent + c.idle_percent + c.iowait_percent > 0.0 {
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

/// Hand-built reports for renderer tests.
#[cfg(test)]
pub(crate) mod fixture {
    use super::*;
    use crate::config::Timeline;
    use crate::report::{Host, Params, SocketReport};
    use crate::sys::SysUsage;
    use crate::sys::cpu::CpuTimes;
    use crate::sys::net::TcpCounters;

    /// One sender connection's TCP_INFO, for the -V renderings.
    pub(crate) fn conn_info() -> crate::sys::socket::ConnInfo {
        crate::sys::socket::ConnInfo {
            thread: 0,
            local_port: 49699,
            rtt_us: 409,
            rttvar_us: 100,
            cwnd: 10,
            retransmits: 2,
            mss: 65483,
        }
    }

    /// The raw counters behind NTttcp 5.39's sample output: 4 threads of
    /// 64 KiB buffers over 300.006 s, 34243 MiB in 300.00515 s, 15.075 % busy on 2 CPUs
    /// at 2793 MHz. Everything the renderers print is derived from these.
    pub(crate) fn seed_measured() -> Measured {
        let buffers = [138_834u64, 137_194, 135_841, 136_019];
        Measured {
            side: Side::Sender,
            host: Host {
                name: "vm<&>".into(),
                os: "Linux vm 6.18.44 #1 SMP PREEMPT_DYNAMIC @0 x86_64 GNU/Linux".into(),
                cpu_count: 2,
                cpu_mhz: 2793.0,
            },
            params: Params {
                send_size: 65536,
                recv_size: 65536,
                port: 5001,
                ports: 4,
                threads_per_port: 1,
                conns_per_thread: 1,
                sync: true,
                timeline: Timeline {
                    warmup: 0,
                    duration: 300,
                    cooldown: 0,
                },
                ipv6: false,
                verbose: false,
                timeout_ms: 10_000,
                protocol: Protocol::Tcp,
                udp_offload: true,
                zero_copy: Default::default(),
            },
            buffer_len: 65536,
            seconds: 300.00515,
            planned_s: Some(300.0),
            stall: Default::default(),
            threads: buffers
                .iter()
                .enumerate()
                .map(|(index, b)| ThreadCounts {
                    index,
                    port: 5001 + index as u16,
                    seconds: 300.006,
                    bytes: b * 65536,
                    bytes_written: None,
                    calls: *b,
                    udp: None,
                })
                .collect(),
            connections: 4,
            sys: SysUsage {
                cpu: CpuTimes {
                    user: 5_000,
                    system: 10_075,
                    idle: 84_925,
                    ..Default::default()
                },
                interrupts: 1_816_762,
                net_rx: 1_265_645,
                tcp: TcpCounters {
                    out_segs: 25_324_915,
                    in_segs: 2_161_992,
                    retrans_segs: 60_412,
                    attempt_fails: 0,
                },
                process_cpu_s: 120.0,
                tcp_ext: Default::default(),
                udp: Default::default(),
            },
            negotiated_cycle_s: Some(300),
            end: End::Completed,
            tcp_retrans: None,
            nic: None,
            dev_interrupts: None,
            socket: SocketReport::default(),
        }
    }

    /// The seed's report.
    pub(crate) fn seed_report() -> Report {
        report(seed_measured())
    }

    /// The report of the seed's counters as `change` leaves them.
    pub(crate) fn seed_with(change: impl FnOnce(&mut Measured)) -> Report {
        let mut m = seed_measured();
        change(&mut m);
        report(m)
    }

    /// A receiver's 2 s report of a test that ended as `end`, planned to last `planned_s`.
    pub(crate) fn cut_short(end: End, planned_s: Option<f64>) -> Report {
        report(Measured {
            side: Side::Receiver,
            end,
            planned_s,
            seconds: 2.0,
            ..seed_measured()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::fixture::{cut_short, seed_report};
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

    #[test]
    fn a_completed_or_continuous_test_did_not_end_early() {
        assert_eq!(cut_short(End::Completed, Some(6.0)).end.early, None);
        // Continuous mode ends when someone stops it; only a fault is early there.
        assert_eq!(cut_short(End::PeerEnded, None).end.early, None);
        assert_eq!(cut_short(End::Interrupted, None).end.early, None);
        let f = cut_short(End::Fault("sender 1.2.3.4 closed".into()), None);
        assert_eq!(f.end.early.map(|e| e.by), Some("fault"));
    }

    #[test]
    fn an_overrun_is_noted_past_one_percent_of_the_plan() {
        assert_eq!(overrun(10.09, Some(10.0)), None);
        assert!(overrun(11.96, Some(10.0)).is_some_and(|o| (o - 1.96).abs() < 1e-9));
        assert_eq!(overrun(50.0, None), None);
    }
}
