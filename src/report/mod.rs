//! The one result model: `Report` is what every renderer reads and what `--format json`
//! serializes as is; the JSON Schema is generated from these types (`schemars`), so the
//! field docs here are the schema's descriptions. The roles gather a `Measured` window;
//! `stats::report` turns it into a `Report` by the formulas.

mod ending;
mod latency;
mod measured;
pub(crate) mod merge;
mod note;
mod presentation;
pub(crate) mod series;

pub(crate) use ending::{EarlyEnd, EndKind, Ending};
pub(crate) use latency::{ConnectResult, Latency, RrResult, Rtt};
pub(crate) use measured::{Host, Measured, SideFacts, ThreadCounts};
pub(crate) use note::{Note, Notes};
pub(crate) use presentation::{OutputFile, Presentation};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::timeline::End;

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Side {
    /// The sending side.
    Sender,
    /// The receiving side.
    Receiver,
}

pub(crate) use crate::config::Direction;

impl Direction {
    /// The way a side's bytes go in a plain test.
    pub(crate) fn usual(side: Side) -> Self {
        match side {
            Side::Sender => Self::Send,
            Side::Receiver => Self::Receive,
        }
    }
}

/// One worker thread's result over the measurement window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Thread {
    /// Thread index (sender) or port index (receiver).
    pub index: usize,
    /// Its data port.
    pub port: u16,
    /// Seconds measured.
    pub seconds: f64,
    /// Bytes in the window: on a TCP sender those delivered (acknowledged by the
    /// receiver, from TCP_INFO; where the OS does not say, as under Wine, those written,
    /// and `bytes_written` is null), on a receiver those read.
    pub bytes: u64,
    /// TCP sender: bytes written into the send buffers in the window (more than were
    /// delivered by what was queued at the window's edges); null elsewhere.
    pub bytes_written: Option<u64>,
    /// Completed send or recv calls in the window (UDP: datagrams).
    pub calls: u64,
    /// Bits per second over the thread's seconds.
    pub bits_per_second: f64,
    /// UDP receiver: this thread's loss, duplicates, reordering and jitter; else null.
    pub udp: Option<UdpResult>,
    /// Request/response test (`--rr`): this thread's transactions and latency; else null.
    pub rr: Option<RrResult>,
    /// Connection-rate test (`--connect-rate`): this thread's connections and connect
    /// times; else null.
    pub connect: Option<ConnectResult>,
    /// The CPU this worker ran pinned to (a mapping's CPU, or the one `--placement`
    /// chose); null: not pinned, the scheduler placed it.
    pub cpu: Option<usize>,
}

impl Thread {
    /// The bytes the completed calls moved (a sender's written bytes, not its delivered
    /// ones): the numerator of NTttcp's bytes per completion.
    pub(crate) fn call_bytes(&self) -> u64 {
        self.bytes_written.unwrap_or(self.bytes)
    }
}

/// A UDP receiver's accounting over the measurement window, from the sequence numbers
/// and send times our sender stamps into each datagram.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
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

/// What the run was asked to do, as the structured outputs report it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
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
    pub timeline: crate::config::Phases,
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
    /// Zero-copy paths in use (they change what is measured); sendfile only on the side
    /// that sent with it.
    pub zero_copy: crate::config::ZeroCopy,
    /// Where the workers of `*` mappings ran (`--placement`).
    pub placement: crate::config::Placement,
    /// What the connections carried (a receiver: "stream" unless a sender asked it to
    /// echo).
    pub workload: crate::config::Workload,
    /// A request/response test given no `-m`, `-P` or `-n` ran its default layout: one
    /// port, one thread (one connection unless `-l` gave more), as latency tools do.
    pub latency_default: bool,
}

impl Params {
    /// The parameters `side` ran with: its plan's, with the workload it saw and the
    /// read size its streams used (`read_len`, a receiver without `-b`).
    pub(crate) fn of(
        plan: &crate::plan::RunPlan<'_>,
        side: Side,
        workload: crate::config::Workload,
        read_len: Option<usize>,
    ) -> Self {
        let cfg = plan.cfg;
        let zero_copy = crate::config::ZeroCopy {
            sendfile: plan.sendfile() && side == Side::Sender,
            ..cfg.data.zero_copy
        };
        Self {
            send_size: plan.send_size(),
            recv_size: read_len.unwrap_or(cfg.data.recv_size),
            port: cfg.streams.base_port,
            ports: cfg.streams.ports.len(),
            threads_per_port: cfg.streams.threads_per_port,
            conns_per_thread: cfg.streams.conns_per_thread,
            sync: cfg.sync.is_on(),
            timeline: cfg.timeline,
            ipv6: cfg.streams.ipv6,
            verbose: cfg.show.verbose,
            timeout_ms: cfg.timeout.as_millis() as u64,
            protocol: cfg.data.protocol,
            udp_offload: cfg.data.udp_offload,
            zero_copy,
            placement: cfg.streams.placement,
            workload,
            latency_default: cfg.streams.latency_default,
        }
    }
}

/// A whole side's result: one entry of a `--format json` document's `reports`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Report {
    /// "sender" or "receiver".
    pub side: Side,
    /// Which way this side's bytes went: "send" or "receive" (a reverse test, `-R`,
    /// turns both sides around).
    pub direction: Direction,
    /// Host name.
    pub host: String,
    /// `uname -a` line.
    pub os: String,
    /// How the measurement ended, and whether it fell short of its plan.
    pub end: Ending,
    /// What the run was asked to do.
    pub params: Params,
    /// Negotiated cycle in seconds (ntttcp-for-linux sync only; 0 = continuous).
    pub negotiated_cycle_s: Option<u32>,
    /// Length of the measurement window, seconds.
    pub duration_s: f64,
    /// Wall-clock time of the window's first edge, seconds since the Unix epoch
    /// (microsecond resolution): where the peer's clock is synchronized with this one
    /// (the same host, PTP, chrony), the two windows can be laid side by side.
    pub window_start_unix_s: f64,
    /// Wall-clock time of the window's last edge, as above.
    pub window_end_unix_s: f64,
    /// The longest span of the window in which no byte moved, seconds (100 ms steps).
    pub longest_stall_s: f64,
    /// When that span began, seconds into the window.
    pub longest_stall_from_s: f64,
    /// Seconds the window ran past its plan when more than 1 % (a stopped or starved
    /// side); null otherwise.
    pub window_overrun_s: Option<f64>,
    /// Data connections of this side.
    pub connections: usize,
    /// Bytes per send()/recv() call (NTttcp's buffer length, the unit of "Buffers").
    pub buffer_len: usize,
    /// Totals over all threads.
    pub totals: Totals,
    /// CPU figures over the window.
    pub cpu: Cpu,
    /// System-wide network counters over the window (the whole host or namespace).
    pub network: Network,
    /// One entry per worker thread.
    pub threads: Vec<Thread>,
    /// `--show-tcp-retrans`: TcpExt retransmit counters over the window, else null.
    pub tcp_retransmits: Option<crate::sys::net::TcpExt>,
    /// `--show-nic-packets`: that interface's packets over the window, else null.
    pub nic: Option<crate::sys::net::NicPackets>,
    /// `--show-dev-interrupts`: the pattern and its interrupts, else null.
    pub device_interrupts: Option<DevInterrupts>,
    /// Sender: TCP_INFO of every data connection at the end of the test (empty on a
    /// receiver).
    pub tcp_connections: Vec<crate::sys::socket::ConnInfo>,
    /// Socket options asked for and as the kernel applied them.
    pub socket: SocketReport,
    /// Receiver: `ip:port` of every data connection accepted for this test (UDP: of
    /// every flow seen).
    pub peers: Vec<String>,
    /// UDP receiver: loss, duplicates, reordering and jitter over all threads; else null.
    pub udp: Option<UdpResult>,
    /// Request/response test (`--rr`): transactions and latency over all threads; else
    /// null.
    pub rr: Option<RrResult>,
    /// Connection-rate test (`--connect-rate`): connections and connect times over all
    /// threads; else null.
    pub connect: Option<ConnectResult>,
    /// TCP: the connections' round-trip times over the window, from TCP_INFO read every
    /// second (a sender's smoothed RTT, a receiver's own estimate); null without samples.
    pub rtt_us: Option<Rtt>,
}

/// Totals over all threads.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Totals {
    /// Bytes in the window: on a TCP sender those its connections delivered (the receiver
    /// acknowledged them: TCP_INFO `tcpi_bytes_acked`, Windows' SIO_TCP_INFO; where the OS
    /// does not say, as under Wine, those written, and `bytes_written` is null), on a
    /// receiver those read.
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
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
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
    /// System-wide I/O wait %; null where the OS keeps none (Windows).
    pub iowait_percent: Option<f64>,
    /// System-wide soft-interrupt % (Windows: DPC time); null where the OS does not say.
    pub softirq_percent: Option<f64>,
    /// System-wide steal %: time a virtual machine's CPUs wanted to run and the
    /// hypervisor ran something else (counted as busy above, as both originals do); null
    /// where the OS does not say (Windows).
    pub steal_percent: Option<f64>,
    /// This process's CPU time / wall time × 100 (may exceed 100 on several CPUs).
    pub process_percent: f64,
    /// Busy cycles of all CPUs per byte moved (system-wide busy, as NTttcp).
    pub cycles_per_byte: f64,
}

/// System-wide network counters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Network {
    /// TCP segments sent (`OutSegs`).
    pub segments_sent: u64,
    /// TCP segments received (`InSegs`).
    pub segments_received: u64,
    /// TCP segments retransmitted (`RetransSegs`).
    pub retransmits: u64,
    /// Failed connection attempts (`AttemptFails`, NTttcp's "Errors").
    pub failed_attempts: u64,
    /// Interrupts (Linux: /proc/stat `intr`; Windows: the processors' interrupt
    /// counts); null where the system does not say.
    pub interrupts: Option<u64>,
    /// NET_RX soft interrupts (/proc/softirqs) on Linux, DPCs on Windows (NTttcp's DPCs);
    /// null where the system does not say.
    pub net_rx_softirqs: Option<u64>,
    /// UDP datagrams sent, received and not delivered, IPv4 and IPv6 together.
    pub udp: crate::sys::net::UdpCounters,
}

/// Socket options: what was asked for and what the kernel applied (Linux doubles buffer
/// sizes and clamps them to `net.core.rmem_max` / `wmem_max`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SocketReport {
    /// `--no-delay` / `-ndl`, `-sb`, `-rb` as given.
    pub requested: crate::config::SockOpts,
    /// Read back from a data socket (the receiver's listener, whose settings its
    /// connections inherit, and SO_RCVLOWAT from its streams); null if no socket was
    /// read.
    pub applied: Option<crate::data::Applied>,
}

/// Interrupts on the /proc/interrupts lines containing a pattern.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DevInterrupts {
    /// The text looked for.
    pub pattern: String,
    /// Interrupts during the window.
    pub total: u64,
}

/// A stall at least this long is worth a warning (TCP's own recovery takes 0.2 s).
pub(crate) const STALL_NOTED_S: f64 = 0.5;

/// Steal at least this share of the CPUs' time is worth a warning: the hypervisor
/// held the test back, and the edges and figures with it.
pub(crate) const STEAL_NOTED_PERCENT: f64 = 5.0;

impl Report {
    /// Whether the longest stall is long enough to warn of.
    pub(crate) fn stall_noted(&self) -> bool {
        self.longest_stall_s >= STALL_NOTED_S
    }

    /// One line about the longest stall, any overrun and much steal, when there is
    /// something to say.
    pub(crate) fn disturbance(&self) -> Option<String> {
        let stall = self.stall_noted().then(|| {
            format!(
                "no data moved for {:.1} s from {:.1} s",
                self.longest_stall_s, self.longest_stall_from_s
            )
        });
        let over = self.window_overrun_s.map(|o| {
            format!(
                "the window ran {o:.2} s past its planned {:.2} s",
                self.end.planned_s.unwrap_or(0.0)
            )
        });
        let steal = self
            .cpu
            .steal_percent
            .filter(|s| *s >= STEAL_NOTED_PERCENT)
            .map(|s| format!("the hypervisor withheld {s:.0} % of the CPUs' time (steal)"));
        let said: Vec<String> = [stall, over, steal].into_iter().flatten().collect();
        (!said.is_empty()).then(|| said.join("; "))
    }

    /// The heading of a report whose bytes went the other way (`-R`) or of either way
    /// of a both-ways test (`--bidir`), for both layouts; None in a plain test.
    pub(crate) fn turned(&self) -> Option<&'static str> {
        let both = self.params.workload == crate::config::Workload::Bidir;
        match (self.side, self.direction, both) {
            (Side::Sender, Direction::Send, true) => {
                Some("Direction: send (both ways at once, --bidir: this host sent to the receiver)")
            }
            (Side::Sender, Direction::Receive, true) => Some(
                "Direction: receive (both ways at once, --bidir: the receiver sent to this host)",
            ),
            (Side::Receiver, Direction::Send, true) => {
                Some("Direction: send (both ways at once, --bidir: this host sent to the sender)")
            }
            (Side::Receiver, Direction::Receive, true) => Some(
                "Direction: receive (both ways at once, --bidir: the sender sent to this host)",
            ),
            (Side::Sender, Direction::Receive, false) => {
                Some("Direction: receive (reverse test, -R: the receiver sent to this host)")
            }
            (Side::Receiver, Direction::Send, false) => {
                Some("Direction: send (reverse test, -R: this host sent to the sender)")
            }
            _ => None,
        }
    }

    /// A side that measured the whole window, without faults, finds out afterwards that
    /// it failed (no data connection came): the end becomes that fault.
    pub(crate) fn fail(&mut self, reason: &str) {
        let (measured, planned) = (self.end.measured_s, self.end.planned_s);
        let end = End::Fault(reason.into());
        let early = EarlyEnd::of(self.side, &end, measured, planned);
        self.end = Ending::new(end, measured, planned, early);
    }

    /// Whether the data connections were UDP.
    pub(crate) fn is_udp(&self) -> bool {
        self.params.protocol == crate::config::Protocol::Udp
    }
}
