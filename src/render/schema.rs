//! Our own structured output (`--format json` and `--format jsonl`): numbers as numbers,
//! every figure of the report, stable names. The JSON Schema is `schema/ntttcp-report.json`
//! and the tests validate real output against it; each field is documented there and here.

use serde::Serialize;

use crate::report::{Params, Report, Side};
use crate::stats;
use crate::timeline::{End, IntervalSample};

/// Identifies the document format; bumped on incompatible changes.
pub(crate) const SCHEMA: &str = "ntttcp-report/1";

/// A `--format json` document: every side of one test (two for `--loopback`).
#[derive(Debug, Serialize)]
pub(crate) struct Document<'a> {
    /// Always `SCHEMA`.
    pub schema: &'static str,
    /// The ntttcp version that wrote it.
    pub version: &'static str,
    /// One entry per side.
    pub reports: Vec<SideReport<'a>>,
}

impl<'a> Document<'a> {
    /// The document for `reports`.
    pub(crate) fn new(reports: &'a [Report]) -> Self {
        Self {
            schema: SCHEMA,
            version: env!("CARGO_PKG_VERSION"),
            reports: reports.iter().map(SideReport::new).collect(),
        }
    }
}

/// One side's results.
#[derive(Debug, Serialize)]
pub(crate) struct SideReport<'a> {
    /// "sender" or "receiver".
    pub side: Side,
    /// Host name.
    pub host: &'a str,
    /// `uname -a` line.
    pub os: &'a str,
    /// How the measurement ended, and whether it fell short of its plan.
    pub end: EndView,
    /// What the run was asked to do.
    pub params: &'a Params,
    /// Negotiated cycle in seconds (ntttcp-for-linux sync only; 0 = continuous).
    pub negotiated_cycle_s: Option<u32>,
    /// Length of the measurement window, seconds.
    pub duration_s: f64,
    /// The longest span of the window in which no byte moved, seconds (100 ms steps).
    pub longest_stall_s: f64,
    /// When that span began, seconds into the window.
    pub longest_stall_from_s: f64,
    /// Seconds the window ran past its plan when more than 1 % (a stopped or starved
    /// side); null otherwise.
    pub window_overrun_s: Option<f64>,
    /// Data connections of this side.
    pub connections: usize,
    /// Bytes per send()/recv() call.
    pub buffer_len: usize,
    /// Totals over all threads.
    pub totals: Totals,
    /// CPU figures over the window.
    pub cpu: Cpu,
    /// System-wide network counters over the window (the whole host or namespace).
    pub network: Network,
    /// One entry per worker thread.
    pub threads: Vec<Thread<'a>>,
    /// `--show-tcp-retrans`: TcpExt retransmit counters over the window, else null.
    pub tcp_retransmits: Option<crate::sys::net::TcpExt>,
    /// `--show-nic-packets`: that interface's packets over the window, else null.
    pub nic: Option<&'a crate::sys::net::NicPackets>,
    /// `--show-dev-interrupts`: the pattern and its interrupts, else null.
    pub device_interrupts: Option<&'a crate::report::DevInterrupts>,
    /// Sender: TCP_INFO of every data connection at the end of the test (empty on a
    /// receiver).
    pub tcp_connections: &'a [crate::sys::socket::ConnInfo],
    /// Socket options asked for and as the kernel applied them.
    pub socket: &'a crate::report::SocketReport,
    /// Receiver: `ip:port` of every data connection accepted for this test (UDP: of
    /// every flow seen).
    pub peers: &'a [String],
    /// UDP receiver: loss, duplicates, reordering and jitter over all threads; else null.
    pub udp: Option<crate::report::UdpResult>,
}

/// Totals over all threads.
#[derive(Debug, Serialize)]
pub(crate) struct Totals {
    /// Bytes in the window: on a TCP sender those its connections delivered (the receiver
    /// acknowledged them, TCP_INFO `tcpi_bytes_acked`), on a receiver those read.
    pub bytes: u64,
    /// TCP sender: bytes written into the send buffers in the window (ntttcp-for-linux's
    /// figure; it exceeds what was delivered by what sat queued at the window's edges);
    /// null elsewhere.
    pub bytes_written: Option<u64>,
    /// Bits per second (decimal: 1 Gbit/s = 10^9).
    pub bits_per_second: f64,
    /// Bytes / 2^20 / second (NTttcp's MB/s).
    pub mebibytes_per_second: f64,
    /// Completed send()/recv() calls.
    pub calls: u64,
    /// Bytes per completed call.
    pub bytes_per_call: f64,
    /// Bytes / buffer length (NTttcp's "Buffers").
    pub buffers: f64,
    /// Buffers per second.
    pub buffers_per_second: f64,
    /// Bytes per TCP segment sent (sender) or received (receiver), system-wide.
    pub avg_frame_size: f64,
}

/// CPU figures.
#[derive(Debug, Serialize)]
pub(crate) struct Cpu {
    /// CPUs of the host.
    pub cores: usize,
    /// Clock of the first CPU, MHz.
    pub mhz: f64,
    /// System-wide busy %: 100 × (1 − (idle + iowait) / total) (NTttcp's Avg. CPU %).
    pub busy_percent: f64,
    /// System-wide user % of all ticks.
    pub user_percent: f64,
    /// System-wide kernel %.
    pub system_percent: f64,
    /// System-wide idle %.
    pub idle_percent: f64,
    /// System-wide I/O wait %.
    pub iowait_percent: f64,
    /// System-wide soft-interrupt %.
    pub softirq_percent: f64,
    /// This process's CPU time / wall time × 100 (may exceed 100 on several CPUs).
    pub process_percent: f64,
    /// Busy cycles of all CPUs per byte moved (system-wide busy, as NTttcp).
    pub cycles_per_byte: f64,
}

/// System-wide network counters.
#[derive(Debug, Serialize)]
pub(crate) struct Network {
    /// TCP segments sent (`OutSegs`).
    pub segments_sent: u64,
    /// TCP segments received (`InSegs`).
    pub segments_received: u64,
    /// TCP segments retransmitted (`RetransSegs`).
    pub retransmits: u64,
    /// Failed connection attempts (`AttemptFails`, NTttcp's "Errors").
    pub failed_attempts: u64,
    /// Interrupts (/proc/stat `intr`).
    pub interrupts: u64,
    /// NET_RX soft interrupts (/proc/softirqs; NTttcp's DPCs).
    pub net_rx_softirqs: u64,
    /// UDP datagrams sent, received and not delivered, IPv4 and IPv6 together.
    pub udp: crate::sys::net::UdpCounters,
}

/// One worker thread.
#[derive(Debug, Serialize)]
pub(crate) struct Thread<'a> {
    /// Thread index (sender) or port index (receiver).
    pub index: usize,
    /// Its data port.
    pub port: u16,
    /// Seconds measured.
    pub seconds: f64,
    /// Bytes in the window (TCP sender: delivered, from TCP_INFO).
    pub bytes: u64,
    /// TCP sender: bytes written into the send buffers; null elsewhere.
    pub bytes_written: Option<u64>,
    /// Completed calls.
    pub calls: u64,
    /// Bits per second.
    pub bits_per_second: f64,
    /// UDP receiver: this thread's loss, duplicates, reordering and jitter; else null.
    pub udp: Option<&'a crate::report::UdpResult>,
}

/// How a measurement ended: `kind` (completed, interrupted, peer_ended, fault), the
/// fault's `reason`, and, when it fell short of its plan, `early` with who ended it.
#[derive(Debug, Serialize)]
pub(crate) struct EndView {
    /// completed | interrupted | peer_ended | fault.
    pub kind: &'static str,
    /// Faults: what was lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Seconds measured.
    pub measured_s: f64,
    /// Seconds planned; null in continuous mode.
    pub planned_s: Option<f64>,
    /// Set when the test ran shorter than planned: by whom and why; null otherwise.
    pub early: Option<crate::report::EarlyEnd>,
}

impl EndView {
    /// The end of `r`.
    pub(crate) fn of(r: &Report) -> Self {
        let (kind, reason) = match &r.end {
            End::Completed => ("completed", None),
            End::Interrupted => ("interrupted", None),
            End::PeerEnded => ("peer_ended", None),
            End::Fault(why) => ("fault", Some(why.clone())),
        };
        Self {
            kind,
            reason,
            measured_s: r.realtime_s,
            planned_s: r.planned_s,
            early: r.ended_early(),
        }
    }
}

impl<'a> SideReport<'a> {
    /// The structured form of `r`.
    pub(crate) fn new(r: &'a Report) -> Self {
        let w = stats::totals(r);
        let l = stats::linux(r);
        let calls: u64 = r.threads.iter().map(|t| t.ops).sum();
        let bytes = r.total_bytes();
        Self {
            side: r.side,
            host: &r.host,
            os: &r.os,
            end: EndView::of(r),
            params: &r.params,
            negotiated_cycle_s: r.negotiated_cycle_s,
            duration_s: r.realtime_s,
            longest_stall_s: r.longest_stall.seconds,
            longest_stall_from_s: r.longest_stall.from_s,
            window_overrun_s: r.window_overrun_s(),
            connections: r.connections,
            buffer_len: r.buffer_len,
            totals: Totals {
                bytes,
                bytes_written: r.threads.iter().map(|t| t.bytes_written).sum(),
                bits_per_second: stats::bits_per_second(r),
                mebibytes_per_second: w.mb_per_s,
                calls,
                bytes_per_call: if calls > 0 {
                    r.threads.iter().map(|t| t.call_bytes()).sum::<u64>() as f64 / calls as f64
                } else {
                    0.0
                },
                buffers: w.buffers,
                buffers_per_second: w.buffers_per_s,
                avg_frame_size: w.avg_frame_size,
            },
            cpu: Cpu {
                cores: r.cpu_count,
                mhz: r.cpu_mhz,
                busy_percent: w.cpu_pct,
                user_percent: l.user,
                system_percent: l.system,
                idle_percent: l.idle,
                iowait_percent: l.iowait,
                softirq_percent: l.softirq,
                process_percent: l.cpu_busy_all,
                cycles_per_byte: w.cycles_per_byte,
            },
            network: Network {
                segments_sent: r.sys.tcp.out_segs,
                segments_received: r.sys.tcp.in_segs,
                retransmits: r.sys.tcp.retrans_segs,
                failed_attempts: r.sys.tcp.attempt_fails,
                interrupts: r.sys.interrupts,
                net_rx_softirqs: r.sys.net_rx,
                udp: r.sys.udp,
            },
            threads: r
                .threads
                .iter()
                .map(|t| Thread {
                    index: t.index,
                    port: t.port,
                    seconds: t.seconds,
                    bytes: t.bytes,
                    bytes_written: t.bytes_written,
                    calls: t.ops,
                    bits_per_second: if t.seconds > 0.0 {
                        t.bytes as f64 * 8.0 / t.seconds
                    } else {
                        0.0
                    },
                    udp: t.udp.as_ref(),
                })
                .collect(),
            tcp_retransmits: r.tcp_retrans,
            nic: r.nic.as_ref(),
            device_interrupts: r.dev_interrupts.as_ref(),
            tcp_connections: &r.tcp_connections,
            socket: &r.socket,
            peers: &r.peers,
            udp: r.udp_total(),
        }
    }
}

/// One `--format jsonl` line.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Line<'a> {
    /// An interval of the measurement on one side.
    Interval {
        /// "sender" or "receiver".
        side: Side,
        /// Interval start, seconds since counting started.
        start_s: f64,
        /// Interval end.
        end_s: f64,
        /// Bits per second over the interval.
        bits_per_second: f64,
        /// Bytes per thread during the interval.
        thread_bytes: &'a [u64],
        /// UDP receiver: datagrams expected and lost in the interval; else null.
        udp_loss: Option<crate::timeline::IntervalLoss>,
    },
    /// A side's final results (the same object as in `--format json`).
    Summary {
        /// The schema of the report object.
        schema: &'static str,
        /// The results.
        report: Box<SideReport<'a>>,
    },
}

impl<'a> Line<'a> {
    /// The line for an interval sample.
    pub(crate) fn interval(side: Side, s: &'a IntervalSample) -> Self {
        Self::Interval {
            side,
            start_s: s.start_s,
            end_s: s.end_s,
            bits_per_second: s.bits_per_second(),
            thread_bytes: &s.thread_bytes,
            udp_loss: s.udp_loss,
        }
    }

    /// The summary line for a report.
    pub(crate) fn summary(r: &'a Report) -> Self {
        Self::Summary {
            schema: SCHEMA,
            report: Box::new(SideReport::new(r)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture::seed_report;

    #[test]
    fn seed_document_matches_the_golden_copy() {
        let mut r = seed_report();
        r.tcp_connections = vec![crate::report::fixture::conn_info()];
        let reports = [r];
        let got = serde_json::to_string_pretty(&Document::new(&reports)).unwrap() + "\n";
        if std::env::var_os("NTTTCP_BLESS").is_some() {
            std::fs::write("tests/fixtures/seed-report.json", &got).unwrap();
        }
        let want = include_str!("../../tests/fixtures/seed-report.json");
        for (i, (g, w)) in got.lines().zip(want.lines()).enumerate() {
            assert_eq!(g, w, "line {}", i + 1);
        }
        assert_eq!(got, want);
    }

    #[test]
    fn numbers_are_numbers_and_match_the_tables() {
        let r = seed_report();
        let reports = [r];
        let v = serde_json::to_value(Document::new(&reports)).unwrap();
        assert_eq!(v["schema"], SCHEMA);
        let s = &v["reports"][0];
        assert_eq!(s["side"], "sender");
        assert_eq!(s["end"]["kind"], "completed");
        assert_eq!(s["totals"]["bytes"], 34243u64 * 1048576);
        let mibps = s["totals"]["mebibytes_per_second"].as_f64().unwrap();
        assert!((mibps - 114.141).abs() < 0.001);
        assert!((s["cpu"]["busy_percent"].as_f64().unwrap() - 15.075).abs() < 1e-9);
        assert_eq!(s["network"]["retransmits"], 60412);
        assert_eq!(s["threads"].as_array().unwrap().len(), 4);
        assert_eq!(s["params"]["timeline"]["duration"], 300);
    }
}
