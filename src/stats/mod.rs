//! Every formula: a side's measured counters → the figures of its `Report` (`report`),
//! and the figures only the tables show (Windows NTttcp 5.39's Totals, ntttcp-for-linux's
//! log). Renderers format these; they compute nothing. NTttcp's units are binary (KB =
//! 1024 B, MB = 2^20 B), ntttcp-for-linux's decimal.

#[cfg(any(test, feature = "fuzzing"))]
pub(crate) mod fixture;
pub(crate) mod merge;
pub(crate) mod rr;
pub(crate) mod series;
mod tables;
mod udp;

pub(crate) use tables::{
    WindowsTotals, dev_or_system_interrupts, linux, linux_thread, packets_per_interrupt, rate,
    retrans_rates, threads_avg_compl, windows, windows_thread,
};
pub(crate) use udp::{udp_between, udp_sum};

use crate::config::{Protocol, Workload};
use crate::data::Sample;
use crate::plan::RunPlan;
use crate::report::{
    Cpu, DevInterrupts, Direction, EarlyEnd, EndKind, Ending, Measured, Network, Params, Report,
    Side, SideFacts, SocketReport, Thread, ThreadCounts, Totals,
};
use crate::timeline::{End, IntervalLoss, IntervalSample, Window};

const MB: f64 = 1024.0 * 1024.0;

pub(crate) fn ratio(a: f64, b: f64) -> f64 {
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

/// Total bits per second over an interval.
pub(crate) fn interval_bits_per_second(iv: &IntervalSample) -> f64 {
    bits_per_second(iv.thread_bytes.iter().sum(), iv.end_s - iv.start_s)
}

/// An interval's loss: lost / expected × 100.
pub(crate) fn interval_loss_percent(l: &IntervalLoss) -> f64 {
    ratio(l.lost as f64 * 100.0, l.expected as f64)
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
    let end = ending(m.side, m.end.clone(), m.seconds, m.planned_s);
    let mut r = Report {
        side: m.side,
        direction: m.direction.unwrap_or(Direction::usual(m.side)),
        host: std::mem::take(&mut m.host.name),
        os: std::mem::take(&mut m.host.os),
        end,
        params: m.params.clone(),
        negotiated_cycle_s: m.negotiated_cycle_s,
        duration_s: m.seconds,
        window_start_unix_s: m.window_unix_s.0,
        window_end_unix_s: m.window_unix_s.1,
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
        device_interrupts: std::mem::take(&mut m.dev_interrupts),
        tcp_connections: std::mem::take(&mut m.tcp_connections),
        socket: m.socket,
        peers: std::mem::take(&mut m.peers),
        udp,
        rr: None,
        connect: None,
        rtt_us: m.rtt,
    };
    exchanges(&mut r, &m.round_trips);
    if r.side == Side::Receiver && r.end.kind == EndKind::Completed && r.connections == 0 {
        // A whole test without a single data connection (or datagram) measured nothing.
        r.fail("no data connection (or datagram) arrived during the test");
    }
    r
}

/// A request/response or connection-rate test's figures (`round_trips[i]`: thread i's
/// times); a connection-rate test's connections are those it opened.
fn exchanges(r: &mut Report, round_trips: &[Option<hdrhistogram::Histogram<u64>>]) {
    match r.params.workload {
        Workload::RequestResponse { size } => rr::attach(r, size, round_trips),
        Workload::ConnectRate => {
            rr::attach_connect(r, round_trips);
            r.connections = r.connect.map_or(0, |c| c.connections as usize);
        }
        Workload::Stream | Workload::Reverse | Workload::Bidir => {}
    }
}

/// The report of one way of a side's measured window (`Window::split`), from the run's
/// plan and what the side knows of its test: the one place a `Report` is assembled.
pub(crate) fn from_window(plan: &RunPlan<'_>, facts: SideFacts, w: &Window) -> Report {
    let cfg = plan.cfg;
    let side = facts.side;
    let udp_receiver = side == Side::Receiver && cfg.data.protocol == Protocol::Udp;
    let way = w.ways.first();
    let threads = w
        .start
        .iter()
        .zip(&w.end)
        .enumerate()
        .map(|(index, (a, b))| ThreadCounts {
            index,
            port: facts.ports.get(index).copied().unwrap_or(0),
            seconds: w.seconds,
            bytes: b.bytes.saturating_sub(at_start(a, b).0),
            bytes_written: b.written.map(|y| y.saturating_sub(at_start(a, b).1)),
            calls: b.ops.saturating_sub(a.ops),
            udp: udp_receiver.then(|| udp_between(a, b)),
            cpu: b.cpu,
        })
        .collect();
    let sys = w.sys_end.delta(&w.sys_start);
    let params = Params::of(plan, side, facts.workload, facts.read_len);
    report(Measured {
        side,
        host: facts.host,
        buffer_len: match side {
            Side::Sender => params.send_size,
            Side::Receiver => params.recv_size,
        },
        params,
        seconds: w.seconds,
        window_unix_s: (unix_s(w.wall.0), unix_s(w.wall.1)),
        planned_s: w.planned,
        stall: way.map(|w| w.stall).unwrap_or_default(),
        threads,
        connections: facts.connections,
        sys,
        negotiated_cycle_s: facts.negotiated_cycle_s,
        end: w.ended.clone(),
        tcp_retrans: cfg.show.tcp_retrans.then_some(sys.tcp_ext),
        nic: cfg
            .show
            .nic
            .as_deref()
            .and_then(|n| w.sys_end.nic_delta(&w.sys_start, n)),
        dev_interrupts: cfg.show.interrupts.as_ref().map(|p| DevInterrupts {
            pattern: p.clone(),
            total: w.sys_end.irq_delta(&w.sys_start, p),
        }),
        socket: SocketReport {
            requested: plan.sockopts(),
            applied: facts.applied,
        },
        direction: way.map(|w| w.direction),
        rtt: way.and_then(|w| w.rtt.as_ref()).map(rr::rtt),
        tcp_connections: facts.tcp_connections,
        peers: facts.peers,
        round_trips: facts.round_trips,
    })
}

/// A worker's (bytes, written) at the window's start, to subtract from its end: its
/// start sample's, except for a worker that sends at the end but did not at the start (a
/// receiver's worker that read its reverse connections' headers after that sample: it
/// sends only once it has read one, so nothing of it came before).
fn at_start(a: &Sample, b: &Sample) -> (u64, u64) {
    match (a.written, b.written) {
        (None, Some(_)) => (0, 0),
        (w, _) => (a.bytes, w.unwrap_or(0)),
    }
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
        rr: None,
        connect: None,
        cpu: t.cpu,
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

/// Seconds since the Unix epoch, to the microsecond (0 for a clock set before it).
fn unix_s(t: std::time::SystemTime) -> f64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_micros() as f64 / 1e6)
}

fn cpu(m: &Measured, bytes: u64) -> Cpu {
    let c = &m.sys.cpu;
    let total = c.total() as f64;
    let pct = |v: u64| ratio(v as f64 * 100.0, total);
    let known = |v: Option<u64>| v.map(pct);
    let busy_percent = c.busy_fraction() * 100.0;
    let busy_hz = busy_percent / 100.0 * m.host.cpu_count as f64 * m.host.cpu_mhz * 1e6;
    Cpu {
        cores: m.host.cpu_count,
        mhz: m.host.cpu_mhz,
        busy_percent,
        user_percent: pct(c.user),
        system_percent: pct(c.system),
        idle_percent: pct(c.idle),
        iowait_percent: known(c.iowait),
        softirq_percent: known(c.softirq),
        steal_percent: known(c.steal),
        process_percent: ratio(m.sys.process_cpu_s * 100.0, m.seconds),
        cycles_per_byte: ratio(busy_hz, ratio(bytes as f64, m.seconds)),
    }
}

#[cfg(test)]
mod tests {
    use super::fixture::cut_short;
    use super::*;

    #[test]
    fn a_worker_that_began_sending_after_the_start_counts_from_zero() {
        let s = |bytes, written| Sample {
            bytes,
            written,
            ..Default::default()
        };
        // A sender (or a receiver already sending): its start sample is subtracted.
        assert_eq!(at_start(&s(100, Some(150)), &s(900, Some(990))), (100, 150));
        // A receiver whose start sample still saw a reading connection (its 12 header
        // bytes unread) and which sent afterwards: nothing of it came before.
        assert_eq!(at_start(&s(12, None), &s(900, Some(990))), (0, 0));
        // A reader: bytes only.
        assert_eq!(at_start(&s(40, None), &s(90, None)), (40, 0));
    }

    #[test]
    fn a_completed_or_continuous_test_did_not_end_early() {
        assert_eq!(cut_short(End::Completed, Some(6.0)).end.early, None);
        // Continuous mode ends when someone stops it; only a fault is early there.
        assert_eq!(cut_short(End::PeerEnded, None).end.early, None);
        assert_eq!(cut_short(End::Interrupted, None).end.early, None);
        let f = cut_short(End::Fault("sender 1.2.3.4 closed".into()), None);
        assert_eq!(f.end.early.map(|e| e.by).as_deref(), Some("fault"));
    }

    #[test]
    fn interval_rates_and_loss() {
        let iv = IntervalSample {
            start_s: 1.0,
            end_s: 1.5,
            direction: crate::config::Direction::Send,
            thread_bytes: vec![1_000_000, 3_000_000],
            planned_s: None,
            udp_loss: None,
            rr: None,
            connect: None,
            cpu_busy_percent: None,
        };
        assert!((interval_bits_per_second(&iv) - 64e6).abs() < 1e-6);
        let l = IntervalLoss {
            expected: 250,
            lost: 10,
        };
        assert!((interval_loss_percent(&l) - 4.0).abs() < 1e-9);
    }

    #[test]
    fn an_overrun_is_noted_past_one_percent_of_the_plan() {
        assert_eq!(overrun(10.09, Some(10.0)), None);
        assert!(overrun(11.96, Some(10.0)).is_some_and(|o| (o - 1.96).abs() < 1e-9));
        assert_eq!(overrun(50.0, None), None);
    }
}
