//! The one result model every renderer reads. Measurement code builds a `Report`;
//! `console` turns it into the NTttcp tables; `settings` renders the `-V` settings block. Field docs are the schema of any
//! structured output built from it.

mod note;
mod presentation;

pub(crate) use note::{Note, Notes};
pub(crate) use presentation::{OutputFile, Presentation};

use serde::Serialize;

use crate::sys::SysUsage;
use crate::timeline::{End, Window};

/// How results are shown on stdout.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Format {
    /// Windows NTttcp's tables (the default).
    #[default]
    Windows,
    /// ntttcp-for-linux's log lines and Totals block.
    Linux,
    /// One JSON document per test (`schema::Document`).
    Json,
    /// One JSON object per line: intervals and results (`schema::Line`).
    Jsonl,
}

impl Format {
    /// Formats meant for people (tables, log lines) rather than programs.
    pub(crate) fn is_human(self) -> bool {
        matches!(self, Self::Windows | Self::Linux)
    }
}

/// Which side produced a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Side {
    /// The sending side.
    Sender,
    /// The receiving side.
    Receiver,
}

/// One worker thread's result over the measurement window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ThreadResult {
    /// Global thread index (sender) or port index (receiver).
    pub index: usize,
    /// Data port the thread sends to or listens on.
    pub port: u16,
    /// Seconds this thread was measured.
    pub seconds: f64,
    /// Bytes in the window: on a TCP sender those delivered (acknowledged by the
    /// receiver, from TCP_INFO), on a receiver those read.
    pub bytes: u64,
    /// TCP sender: bytes written into the send buffers in the window (more than were
    /// delivered by what was queued at the window's edges); None elsewhere.
    pub bytes_written: Option<u64>,
    /// Completed send or recv calls in the window (UDP: datagrams).
    pub ops: u64,
    /// UDP receiver: what the datagrams' stamps tell about the window; null otherwise.
    pub udp: Option<UdpResult>,
}

impl ThreadResult {
    /// The bytes the completed calls moved (a sender's written bytes, not its delivered
    /// ones): the numerator of NTttcp's bytes per completion.
    pub(crate) fn call_bytes(&self) -> u64 {
        self.bytes_written.unwrap_or(self.bytes)
    }
}

/// A UDP receiver's accounting over the measurement window, from the sequence numbers
/// and send times our sender stamps into each datagram.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub(crate) struct UdpResult {
    /// Datagrams received, duplicates included (= calls).
    pub datagrams: u64,
    /// Stamped datagrams the sequence numbers say were sent in the window.
    pub expected: u64,
    /// Of those, datagrams that never arrived; null (unknown) when only unstamped
    /// datagrams came, whose loss no sequence number tells.
    pub lost: Option<u64>,
    /// lost / expected × 100; null when nothing stamped was expected.
    pub loss_percent: Option<f64>,
    /// Datagrams received more than once; null (unknown) as `lost`.
    pub duplicates: Option<u64>,
    /// Datagrams that arrived after a higher sequence number; null (unknown) as `lost`.
    pub out_of_order: Option<u64>,
    /// Datagrams without our stamp (sent by another tool): their loss is unknown.
    pub unstamped: u64,
    /// RFC 3550 interarrival jitter at the end of the window, mean over the flows,
    /// milliseconds; null without stamped datagrams.
    pub jitter_ms: Option<f64>,
}

impl UdpResult {
    /// What the stamps say between two samples of a worker (`ops` = datagrams).
    pub(crate) fn between(a: &crate::data::Sample, b: &crate::data::Sample) -> Self {
        let (x, y) = (&a.udp, &b.udp);
        let expected = y.expected.saturating_sub(x.expected);
        let received = y.received.saturating_sub(x.received);
        let unstamped = y.unstamped.saturating_sub(x.unstamped);
        // Only unstamped datagrams: nothing says what was lost, doubled or reordered.
        let known = |v: u64| (expected > 0 || unstamped == 0).then_some(v);
        let lost = expected.saturating_sub(received);
        Self {
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

    /// The sum of several threads' results: a figure unknown on any thread is unknown in
    /// total; jitter is the mean of the threads that have one.
    pub(crate) fn sum<'a>(all: impl IntoIterator<Item = &'a Self>) -> Self {
        let mut t = Self {
            lost: Some(0),
            duplicates: Some(0),
            out_of_order: Some(0),
            ..Self::default()
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
}

fn percent(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 * 100.0 / whole as f64)
}

/// What the run was asked to do, as the structured outputs report it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Params {
    /// Bytes per send() call.
    pub send_size: usize,
    /// Bytes per recv() call.
    pub recv_size: usize,
    /// First data port.
    pub port: u16,
    /// Receiver ports (= threads in a Windows mapping).
    pub ports: usize,
    /// Sender threads per port.
    pub threads_per_port: u32,
    /// Connections per sender thread.
    pub conns_per_thread: u32,
    /// Whether the sides synchronized their start.
    pub sync: bool,
    /// Warm-up, duration (0 = continuous) and cool-down in seconds, as given locally.
    pub timeline: crate::config::Timeline,
    /// IPv6 defaults were asked for.
    pub ipv6: bool,
    /// `-V` was given.
    pub verbose: bool,
    /// The I/O and wait deadline in milliseconds.
    pub timeout_ms: u64,
    /// "tcp" or "udp".
    pub protocol: crate::config::Protocol,
    /// UDP: the kernel's segmentation (GSO) and coalescing (GRO) offloads were allowed.
    pub udp_offload: bool,
    /// Zero-copy paths in use (they change what is measured).
    pub zero_copy: crate::config::ZeroCopy,
}

impl Params {
    /// The parameters of `cfg`.
    pub(crate) fn of(cfg: &crate::config::Config) -> Self {
        Self {
            send_size: cfg.send_size,
            recv_size: cfg.recv_size,
            port: cfg.base_port,
            ports: cfg.ports.len(),
            threads_per_port: cfg.threads_per_port,
            conns_per_thread: cfg.conns_per_thread,
            sync: cfg.sync,
            timeline: cfg.timeline,
            ipv6: cfg.ipv6,
            verbose: cfg.verbose,
            timeout_ms: cfg.timeout.as_millis() as u64,
            protocol: cfg.protocol,
            udp_offload: cfg.udp_offload,
            zero_copy: cfg.zero_copy,
        }
    }
}

/// A whole side's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Report {
    /// Sender or receiver.
    pub side: Side,
    /// Host name of this side.
    pub host: String,
    /// Operating system line (`uname -a`).
    pub os: String,
    /// What the run was asked to do.
    pub params: Params,
    /// Bytes per send()/recv() call (NTttcp's buffer length, the unit of "Buffers").
    pub buffer_len: usize,
    /// Length of the measurement window in seconds.
    pub realtime_s: f64,
    /// The length the window was planned to have, seconds; None in continuous mode.
    pub planned_s: Option<f64>,
    /// The longest span of the window in which no byte moved (100 ms resolution).
    pub longest_stall: crate::timeline::Stall,
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
    /// `--show-tcp-retrans`: TcpExt retransmit counters over the window.
    pub tcp_retrans: Option<crate::sys::net::TcpExt>,
    /// `--show-nic-packets`: that interface's packets over the window.
    pub nic: Option<crate::sys::net::NicPackets>,
    /// `--show-dev-interrupts`: interrupts on the matching /proc/interrupts lines.
    pub dev_interrupts: Option<DevInterrupts>,
    /// Sender: TCP_INFO of every data connection at the end of the test.
    pub tcp_connections: Vec<crate::sys::socket::ConnInfo>,
    /// Socket options asked for and as the kernel set them on a data socket.
    pub socket: SocketReport,
    /// Receiver: the address of every data connection accepted for this test.
    pub peers: Vec<String>,
}

/// Socket options: what was asked for and what the kernel applied (Linux doubles buffer
/// sizes and clamps them to `net.core.rmem_max` / `wmem_max`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub(crate) struct SocketReport {
    /// `--no-delay` / `-ndl`, `-sb`, `-rb` as given.
    pub requested: crate::config::SockOpts,
    /// Read back from a data socket (the receiver's listener, whose settings its
    /// connections inherit); null if no socket was read.
    pub applied: Option<crate::data::Applied>,
}

/// Interrupts on the /proc/interrupts lines containing a pattern.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct DevInterrupts {
    /// The text looked for.
    pub pattern: String,
    /// Interrupts during the window.
    pub total: u64,
}

/// A measurement that did not run to its timer: who or what ended it, why, and how
/// long it ran against its plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct EarlyEnd {
    /// `user` (Ctrl+C or a signal on this side), `sender` / `receiver` (the peer said it
    /// stopped early), or `fault` (a lost peer, connection or path).
    pub by: &'static str,
    /// What happened, for people.
    pub reason: String,
    /// Seconds measured.
    pub measured_s: f64,
    /// Seconds planned; None in continuous mode.
    pub planned_s: Option<f64>,
}

impl EarlyEnd {
    /// One line: the reason (which names who ended the test) and the seconds measured
    /// against the plan.
    pub(crate) fn line(&self) -> String {
        let of = self
            .planned_s
            .map_or(String::new(), |p| format!(" of {p:.2} planned"));
        format!("{}; measured {:.2}{of} s", self.reason, self.measured_s)
    }
}

/// A window that ran more than this fraction past its plan says by how much.
pub(crate) const OVERRUN_NOTED: f64 = 0.01;

/// A stall at least this long is worth a warning (TCP's own recovery takes 0.2 s).
pub(crate) const STALL_NOTED_S: f64 = 0.5;

impl Report {
    /// Seconds the window ran past its plan, when more than `OVERRUN_NOTED` of it (a side
    /// that was itself stopped or starved stretches its window).
    pub(crate) fn window_overrun_s(&self) -> Option<f64> {
        let planned = self.planned_s?;
        let over = self.realtime_s - planned;
        (over > planned * OVERRUN_NOTED).then_some(over)
    }

    /// One line about the longest stall and any overrun, when there is something to say.
    pub(crate) fn disturbance(&self) -> Option<String> {
        let s = self.longest_stall;
        let stall = (s.seconds >= STALL_NOTED_S).then(|| {
            format!(
                "no data moved for {:.1} s from {:.1} s",
                s.seconds, s.from_s
            )
        });
        let over = self.window_overrun_s().map(|o| {
            format!(
                "the window ran {o:.2} s past its planned {:.2} s",
                self.planned_s.unwrap_or(0.0)
            )
        });
        match (stall, over) {
            (None, None) => None,
            (a, b) => Some(a.into_iter().chain(b).collect::<Vec<_>>().join("; ")),
        }
    }

    /// How the measurement fell short of its plan, if it did. A continuous test
    /// (no plan) ends normally when the user or the peer stops it.
    pub(crate) fn ended_early(&self) -> Option<EarlyEnd> {
        let peer = match self.side {
            Side::Sender => "receiver",
            Side::Receiver => "sender",
        };
        let (by, reason) = match &self.end {
            End::Completed => return None,
            End::Interrupted | End::PeerEnded if self.planned_s.is_none() => return None,
            End::Interrupted => (
                "user",
                "interrupted on this side (Ctrl+C or a signal)".into(),
            ),
            End::PeerEnded => (
                peer,
                format!(
                    "the {peer} stopped its test early and said so ('E'): it was interrupted \
                     or its own test failed"
                ),
            ),
            End::Fault(r) => ("fault", r.clone()),
        };
        Some(EarlyEnd {
            by,
            reason,
            measured_s: self.realtime_s,
            planned_s: self.planned_s,
        })
    }

    /// Builds a report from a measured window. `ports[i]` is worker i's data port.
    pub(crate) fn from_window(
        side: Side,
        cfg: &crate::config::Config,
        ports: &[u16],
        connections: usize,
        negotiated_cycle_s: Option<u32>,
        w: &Window,
    ) -> Self {
        let buffer_len = match side {
            Side::Sender => cfg.send_size,
            Side::Receiver => cfg.recv_size,
        };
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
                bytes: b.bytes.saturating_sub(a.bytes),
                bytes_written: a.written.zip(b.written).map(|(x, y)| y.saturating_sub(x)),
                ops: b.ops.saturating_sub(a.ops),
                udp: (side == Side::Receiver && cfg.protocol == crate::config::Protocol::Udp)
                    .then(|| UdpResult::between(a, b)),
            })
            .collect();
        Self {
            side,
            host: crate::sys::host::hostname(),
            os: crate::sys::host::os_line(),
            params: Params::of(cfg),
            buffer_len,
            realtime_s: w.seconds,
            planned_s: w.planned,
            longest_stall: w.stall,
            threads,
            connections,
            cpu_count,
            cpu_mhz,
            sys: w.sys_end.delta(&w.sys_start),
            negotiated_cycle_s,
            end: w.ended.clone(),
            tcp_retrans: cfg
                .show_tcp_retrans
                .then(|| w.sys_end.delta(&w.sys_start).tcp_ext),
            nic: cfg
                .show_nic
                .as_deref()
                .and_then(|n| w.sys_end.nic_delta(&w.sys_start, n)),
            dev_interrupts: cfg.show_interrupts.as_ref().map(|p| DevInterrupts {
                pattern: p.clone(),
                total: w.sys_end.irq_delta(&w.sys_start, p),
            }),
            tcp_connections: Vec::new(),
            socket: SocketReport {
                requested: cfg.sockopts,
                applied: None,
            },
            peers: Vec::new(),
        }
    }

    /// ntttcp-for-linux's "tcpi rtt": the average over threads of each thread's average
    /// connection RTT, microseconds (None without TCP_INFO rows).
    pub(crate) fn average_rtt_us(&self) -> Option<u64> {
        let mut per_thread: std::collections::BTreeMap<usize, (u64, u64)> = Default::default();
        for c in &self.tcp_connections {
            let e = per_thread.entry(c.thread).or_default();
            *e = (e.0 + u64::from(c.rtt_us), e.1 + 1);
        }
        let n = per_thread.len() as u64;
        (n > 0).then(|| per_thread.values().map(|(sum, k)| sum / k).sum::<u64>() / n)
    }

    /// Total bytes over all threads.
    pub(crate) fn total_bytes(&self) -> u64 {
        self.threads.iter().map(|t| t.bytes).sum()
    }

    /// UDP receiver: the accounting over all threads; None otherwise.
    pub(crate) fn udp_total(&self) -> Option<UdpResult> {
        self.threads
            .iter()
            .any(|t| t.udp.is_some())
            .then(|| UdpResult::sum(self.threads.iter().filter_map(|t| t.udp.as_ref())))
    }

    /// Whether the data connections were UDP.
    pub(crate) fn is_udp(&self) -> bool {
        self.params.protocol == crate::config::Protocol::Udp
    }
}

/// Hand-built reports for renderer tests.
#[cfg(test)]
pub(crate) mod fixture {
    use super::*;
    use crate::config::Timeline;
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
    pub(crate) fn seed_report() -> Report {
        let buffers = [138_834u64, 137_194, 135_841, 136_019];
        Report {
            side: Side::Sender,
            host: "vm<&>".into(),
            os: "Linux vm 6.18.44 #1 SMP PREEMPT_DYNAMIC @0 x86_64 GNU/Linux".into(),
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
                protocol: crate::config::Protocol::Tcp,
                udp_offload: true,
                zero_copy: Default::default(),
            },
            buffer_len: 65536,
            realtime_s: 300.00515,
            planned_s: Some(300.0),
            longest_stall: Default::default(),
            threads: buffers
                .iter()
                .enumerate()
                .map(|(index, b)| ThreadResult {
                    index,
                    port: 5001 + index as u16,
                    seconds: 300.006,
                    bytes: b * 65536,
                    bytes_written: None,
                    ops: *b,
                    udp: None,
                })
                .collect(),
            connections: 4,
            cpu_count: 2,
            cpu_mhz: 2793.0,
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
            tcp_connections: Vec::new(),
            socket: SocketReport::default(),
            peers: Vec::new(),
        }
    }

    /// A receiver's 2 s report of a test that ended as `end`, planned to last `planned_s`.
    pub(crate) fn cut_short(end: End, planned_s: Option<f64>) -> Report {
        Report {
            side: Side::Receiver,
            end,
            planned_s,
            realtime_s: 2.0,
            ..seed_report()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixture::cut_short;
    use super::*;

    #[test]
    fn a_completed_or_continuous_test_did_not_end_early() {
        assert_eq!(cut_short(End::Completed, Some(6.0)).ended_early(), None);
        // Continuous mode ends when someone stops it; only a fault is early there.
        assert_eq!(cut_short(End::PeerEnded, None).ended_early(), None);
        assert_eq!(cut_short(End::Interrupted, None).ended_early(), None);
        let f = cut_short(End::Fault("sender 1.2.3.4 closed".into()), None);
        assert_eq!(f.ended_early().map(|e| e.by), Some("fault"));
    }
}
