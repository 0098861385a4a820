//! What the program runs with, after every flag has been parsed and cross-checked.
//!
//! `Config` is plain data: `cli` builds it (the only place that knows about flags and
//! dialects) and nothing changes it after; each role resolves what the host and path
//! decide into a `plan::RunPlan` beside it. Derived counts (ports, threads, connections)
//! follow ntttcp-for-linux: P receiver ports, P x n sender threads, P x n x l connections.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

mod workload;

pub(crate) use workload::{Direction, MAX_RR_SIZE, Workload};

/// Which side of the test this process plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Role {
    /// Listens on P ports and drains whatever arrives (`-r`, the default).
    Receiver,
    /// Connects to a receiver and sends (`-s`).
    Sender,
    /// Both roles in one process over the loopback interface (`--loopback`).
    Loopback,
}

/// Which command-line dialect a line was read in (see `cli::dialect`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Dialect {
    /// ntttcp-for-linux 1.4.3: case-sensitive single letters (`-P` ports, `-l` connections).
    Linux,
    /// Windows NTttcp: case-insensitive names (`-P` = `-p`, `-l` buffer length).
    Windows,
}

/// How a sender worker drives its sockets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum IoMode {
    /// Non-blocking writes round-robin over the worker's connections (one or several),
    /// poll() when every one is full (no descriptor beyond the connections themselves).
    Auto,
    /// Always blocking writes, round-robin over the worker's connections.
    Blocking,
    /// Always a current-thread tokio runtime per worker (a task per connection; the
    /// runtime holds a few descriptors of its own).
    Async,
}

/// Where `*` puts the workers unless `--placement` says otherwise: round-robin where a
/// stream's two ends are on this host, else nowhere in particular, as in both originals
/// (docs/benchmarks.md has the tables).
pub(crate) const DEFAULT_PLACEMENT: Placement = Placement::Auto;

/// Where the worker threads of a `*` mapping run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Placement {
    /// Round-robin for a TCP stream whose peer is on this host (a sender whose target is
    /// one of this host's addresses, a receiver worker whose first connection comes from
    /// one), so that its two ends share a core; no affinity otherwise, for UDP and for
    /// connection-rate tests.
    Auto,
    /// No affinity: the scheduler places them (what `*` means in both originals).
    None,
    /// Worker k on the k-th allowed CPU, round-robin, on each side (on one host a TCP
    /// stream's two ends share a core; a UDP receiver sits half the CPU list away).
    RoundRobin,
    /// Round-robin, every receiver worker half the CPU list away from the sender worker
    /// of the same number.
    Opposite,
}

/// Transport of the data connections (the sync channel is always TCP).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Protocol {
    /// TCP streams (the default).
    #[default]
    Tcp,
    /// UDP datagrams (`-u`), stamped for loss accounting.
    Udp,
}

/// Opt-in copy-avoiding data paths; they change what is measured, so every report says
/// which were on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ZeroCopy {
    /// Sender: `sendfile()` from an in-memory file instead of `send()` (`-Z`, `--sendfile`).
    pub sendfile: bool,
    /// Receiver: discard with `recv(MSG_TRUNC)` instead of copying (`--skip-rx-copy`).
    pub skip_rx_copy: bool,
}

/// One receiver port: where it listens (or where the sender finds it) and which CPU its
/// threads run on. Port j of the run is `base_port + j`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PortPlan {
    /// Receiver address: the bind address on a receiver, the target on a sender.
    pub host: Option<String>,
    /// CPU placement of the threads serving this port.
    pub cpu: CpuSpec,
}

/// Warm-up, measurement and cool-down lengths in whole seconds (the sync protocol
/// exchanges whole seconds). A duration of 0 means "continuous until interrupted".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Phases {
    /// Seconds of traffic before counting starts (`-W`, `-wu`).
    pub warmup: u32,
    /// Seconds counted (`-t`); 0 = continuous.
    pub duration: u32,
    /// Seconds of traffic after counting stops (`-C`, `-cd`).
    pub cooldown: u32,
}

impl Phases {
    /// The whole cycle this side proposes: warm-up + duration + cool-down (0 if continuous).
    pub(crate) fn cycle(&self) -> u32 {
        if self.duration == 0 {
            0
        } else {
            self.warmup
                .saturating_add(self.duration)
                .saturating_add(self.cooldown)
        }
    }
}

/// How the two sides synchronize their start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SyncMode {
    /// No sync (`-N` / `-ns`): each side times itself from its first byte.
    Off,
    /// ntttcp-for-linux's handshake on the port below the data ports.
    Linux,
    /// A Windows-dialect line: Windows NTttcp's per-thread tokens on data port + 1000;
    /// each side times itself. `port_handout` is `-sp`: the receiver hands out data ports
    /// base+1… over the base port.
    Windows { port_handout: bool },
}

impl SyncMode {
    /// Whether the sides synchronize at all.
    pub(crate) fn is_on(self) -> bool {
        self != Self::Off
    }
}

/// Everything a run needs, in groups: who talks to whom (`streams`), what the data
/// connections carry (`data`), when (`timeline`, `sync`, `timeout`), the sender's source
/// (`source`), role switches (`roles`), `-D` (`background`) and what is shown (`show`).
#[derive(Debug, Clone)]
pub(crate) struct Config {
    /// Sender, receiver or both.
    pub role: Role,
    /// Ports, threads and connections.
    pub streams: Streams,
    /// What the data connections carry, and how.
    pub data: DataOpts,
    /// Warm-up, duration, cool-down.
    pub timeline: Phases,
    /// How the two sides synchronize their start.
    pub sync: SyncMode,
    /// The I/O and wait deadline (`--timeout`, Windows `-to`): connecting (sync and
    /// data), each handshake reply, and data silence during a test.
    pub timeout: Duration,
    /// Sender or loopback: the same test this many times back to back (`--repeat`; 1:
    /// once).
    pub repeat: u32,
    /// Sender: the instant the measured window begins on each host's clock
    /// (`--start-at`); the receiver learns it in the handshake.
    pub start_at: Option<std::time::SystemTime>,
    /// TCP keepalive probes on an idle sync connection this often (`--sync-keepalive`;
    /// None: off), so that NAT and firewall idle timeouts keep it.
    pub sync_keepalive: Option<Duration>,
    /// The sender's source address and ports.
    pub source: Source,
    /// Switches of one role.
    pub roles: RoleOpts,
    /// Running in the background (`-D`).
    pub background: Background,
    /// What is shown and counted besides the results.
    pub show: Show,
}

/// Who talks to whom: receiver ports, sender threads per port, connections per thread.
#[derive(Debug, Clone)]
pub(crate) struct Streams {
    /// One entry per receiver port, in port order.
    pub ports: Vec<PortPlan>,
    /// Sender threads per receiver port (`-n` in the Linux dialect).
    pub threads_per_port: u32,
    /// Connections per sender thread (`-l` in the Linux dialect).
    pub conns_per_thread: u32,
    /// First data port; the sync port is one below it.
    pub base_port: u16,
    /// Use IPv6 wildcard/loopback defaults.
    pub ipv6: bool,
    /// Where `*` mappings' workers run.
    pub placement: Placement,
    /// A latency test (`--rr`) given no `-m`, `-P` or `-n`: one port and one thread,
    /// one connection unless `-l` asks for more, as netperf, neper and sockperf default
    /// to one flow (the throughput layout's 64 connections would queue on the CPUs).
    pub latency_default: bool,
}

/// What the data connections carry, and how.
#[derive(Debug, Clone)]
pub(crate) struct DataOpts {
    /// TCP or UDP data connections.
    pub protocol: Protocol,
    /// Bytes per `send()` call (UDP: per datagram).
    pub send_size: usize,
    /// Bytes per `recv()` call (without `-b` on TCP, the most one read takes where the
    /// path's segments are large; see `recv_by_path`).
    pub recv_size: usize,
    /// TCP without `-b`: each connection's read size follows its path (`ReadSize::ByPath`).
    pub recv_by_path: bool,
    /// UDP without `-b`: the sender sizes datagrams to the path MTU instead.
    pub fit_datagrams: bool,
    /// UDP: use the kernel's segmentation (GSO) and coalescing (GRO) offloads.
    pub udp_offload: bool,
    /// Zero-copy paths asked for.
    pub zero_copy: ZeroCopy,
    /// `--sendfile-always`: `-Z` sends with sendfile() also towards this host's own
    /// addresses.
    pub sendfile_always: bool,
    /// What the connections carry (sender; a receiver learns it per connection).
    pub workload: Workload,
    /// Data-path style for sender workers.
    pub io_mode: IoMode,
    /// Socket options of the data connections.
    pub sockopts: SockOpts,
    /// `-B`: one rate limit for all sender workers, bits per second.
    pub rate_limit: Option<f64>,
    /// Windows `-thr`: a rate limit per sender thread, bytes per second.
    pub thread_rate: Option<f64>,
}

/// The sender's source address and ports.
#[derive(Debug, Clone, Default)]
pub(crate) struct Source {
    /// Bind every data and sync socket to this address (`-a`, Windows `-nic`).
    pub addr: Option<std::net::IpAddr>,
    /// The interface owning `addr` (SO_BINDTODEVICE), if found (filled in by the host
    /// checks after parsing).
    pub device: Option<String>,
    /// Pin source ports from here (`-f`): connection i of thread k uses `port + k·l + i`.
    pub port: Option<u16>,
    /// How the address flag was typed (`-a`, `-nic`), for messages.
    pub flag: String,
}

/// Switches of one role.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RoleOpts {
    /// Receiver: serve tests one after another until interrupted (`-H`).
    pub hold: bool,
    /// Receiver: `-e` was given (shown in the settings; the receiver always uses epoll).
    pub epoll: bool,
    /// Receiver: multi-client mode, start when the last client arrives (`-M`).
    pub multi_client: bool,
    /// Sender: this is the last client of a multi-client test (`-L`).
    pub last_client: bool,
}

/// Running in the background.
#[derive(Debug, Clone, Default)]
pub(crate) struct Background {
    /// Run in the background (`-D`).
    pub daemon: bool,
    /// Where a daemon writes its PID (`--pid-file`), absolute.
    pub pid_file: Option<std::path::PathBuf>,
}

/// What is shown and counted besides the results.
#[derive(Debug, Clone, Default)]
pub(crate) struct Show {
    /// `-Q`: no live lines.
    pub quiet: bool,
    /// `-V` / `-v`: settings and progress lines.
    pub verbose: bool,
    /// `--show-tcp-retrans`: report TcpExt retransmit rates.
    pub tcp_retrans: bool,
    /// `--show-nic-packets IF`: report that interface's packet counts.
    pub nic: Option<String>,
    /// `--show-dev-interrupts STR`: report interrupts on /proc/interrupts lines with STR.
    pub interrupts: Option<String>,
    /// Sample the counters this often during the measurement (`--interval`, or 1 s for
    /// the live status line on a terminal).
    pub interval: Option<Duration>,
}

/// Largest `-b` over TCP, bytes: one call moves at most this much (Linux moves at most
/// about 2 GiB per call anyway), and a side allocates its buffer once, up front.
pub(crate) const MAX_BUFFER: usize = 1 << 30;
/// The sender's default I/O size (ntttcp-for-linux: 128 KiB per `send()`).
pub(crate) const DEFAULT_SEND_SIZE: usize = 128 * 1024;
/// Windows NTttcp's buffer length (`-l`), its default for sends on a Windows-dialect line.
pub(crate) const NTTTCP_BUFFER: usize = 64 * 1024;
/// The receiver's default I/O size (64 KiB per `recv()`, as ntttcp-for-linux).
pub(crate) const DEFAULT_RECV_SIZE: usize = 64 * 1024;
/// Default base data port (the sync port is 5000).
pub(crate) const DEFAULT_PORT: u16 = 5001;
/// Default number of receiver ports.
pub(crate) const DEFAULT_PORTS: u32 = 16;
/// Default sender threads per port.
pub(crate) const DEFAULT_THREADS_PER_PORT: u32 = 4;
/// Default test duration in seconds.
pub(crate) const DEFAULT_DURATION: u32 = 60;
/// Default interval of the sync connection's keepalive probes: well inside the idle
/// timeouts of cloud NAT gateways and load balancers (Azure's 4 minutes is the shortest).
pub(crate) const DEFAULT_SYNC_KEEPALIVE: Duration = Duration::from_secs(30);
/// Default I/O and wait deadline: connecting, each handshake step, data silence.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Most clients that may wait for the last one in multi-client mode (ntttcp-for-linux's
/// limit; one more is rejected with 'E').
pub(crate) const MAX_WAITING_CLIENTS: usize = 7;

/// Socket options for data connections (both roles).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SockOpts {
    /// TCP_NODELAY (`--no-delay`, Windows `-ndl`).
    pub no_delay: bool,
    /// SO_MAX_PACING_RATE per connection, bytes/s (`--fq-rate-limit` split evenly).
    pub pacing_rate: Option<u64>,
    /// SO_SNDBUF to ask for (Windows `-sb`); None keeps the kernel's autotuning.
    pub send_buffer: Option<usize>,
    /// SO_RCVBUF to ask for (Windows `-rb`); None keeps the kernel's autotuning.
    pub recv_buffer: Option<usize>,
    /// TCP_CONGESTION of every TCP data socket (`--congestion`); null: the kernel's
    /// default.
    pub congestion: Option<Congestion>,
    /// IP_TOS (IPv6: IPV6_TCLASS) of every data socket (`--tos`); null: the kernel's.
    pub tos: Option<u8>,
    /// TCP_NOTSENT_LOWAT of a sender's connections (`--notsent-lowat`): how much
    /// unsent data a connection's send queue holds before a write waits.
    pub notsent_lowat: Lowat,
    /// SO_RCVLOWAT of a receiver's TCP connections (`--rcvlowat`): how many unread bytes
    /// wake its reader.
    pub rcvlowat: Lowat,
}

/// A TCP congestion control algorithm as the kernel names it (`cubic`, `bbr`, `reno`):
/// at most 15 bytes of letters, digits, `_` and `-` (the kernel's limit is 16 with the
/// terminating NUL). Plain bytes, so that socket options stay `Copy`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Congestion {
    len: u8,
    name: [u8; Self::MAX],
}

impl Congestion {
    /// The longest name the kernel takes.
    pub(crate) const MAX: usize = 15;

    /// `name` if it can name an algorithm.
    pub(crate) fn new(name: &str) -> Option<Self> {
        let ok = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
        if name.is_empty() || name.len() > Self::MAX || !name.bytes().all(ok) {
            return None;
        }
        let mut c = Self {
            len: name.len() as u8,
            name: [0; Self::MAX],
        };
        c.name[..name.len()].copy_from_slice(name.as_bytes());
        Some(c)
    }

    /// The name.
    pub(crate) fn as_str(&self) -> &str {
        // Only ASCII letters, digits, '_' and '-' are ever stored.
        std::str::from_utf8(&self.name[..usize::from(self.len)]).unwrap_or("")
    }
}

impl fmt::Debug for Congestion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl fmt::Display for Congestion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for Congestion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Congestion {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Self::new(&name).ok_or_else(|| {
            serde::de::Error::custom(format!("'{name}' is not a congestion control name"))
        })
    }
}

impl schemars::JsonSchema for Congestion {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Congestion".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(g)
    }
}

/// A low-water mark of a TCP connection's queue: TCP_NOTSENT_LOWAT on a sender's (a
/// writer that waits once a little is queued unsent wakes while the data it wrote is
/// still in cache where the reader copies it), SO_RCVLOWAT on a receiver's (a reader
/// woken for more bytes at a time wakes less often); docs/benchmarks.md.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Lowat {
    /// The default of the side that sets it. Sender: 64 KiB where a connection's
    /// segments are large (TCP_MAXSEG over 16 KiB just after connect: loopback, 64 KiB
    /// MTUs), else 128 KiB. Receiver: 192 KiB where segments are NIC-sized (under 32
    /// KiB), else the kernel's.
    ByPath,
    /// `--notsent-lowat SIZE`, `--rcvlowat SIZE`: this many bytes on every connection.
    Fixed(usize),
    /// The kernel's (TCP_NOTSENT_LOWAT: net.ipv4.tcp_notsent_lowat, no limit unless set;
    /// SO_RCVLOWAT: one byte): `-1`, and every socket the option is not for.
    #[default]
    Kernel,
}

impl Lowat {
    /// The bytes to set on a connection (None: leave the kernel's), given what its path
    /// asks for by default (`by_path`, None: the kernel's).
    pub(crate) fn bytes(self, by_path: Option<usize>) -> Option<usize> {
        match self {
            Self::Kernel => None,
            Self::Fixed(n) => Some(n),
            Self::ByPath => by_path,
        }
    }
}

/// One sender worker thread: which port it targets and where it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SenderThread {
    /// Global thread index k.
    pub index: usize,
    /// Index j of the receiver port it targets (`k / n`).
    pub port_index: usize,
}

impl Config {
    /// The sync (control) port: one below the first data port.
    pub(crate) fn sync_port(&self) -> u16 {
        self.streams.base_port - 1
    }

    /// Data port number of port index j (one higher with the `-sp` hand-out, which
    /// uses the base port itself).
    pub(crate) fn port(&self, j: usize) -> u16 {
        self.streams.base_port + j as u16 + u16::from(self.port_handout())
    }

    /// Whether the ntttcp-for-linux sync channel is used.
    pub(crate) fn linux_sync(&self) -> bool {
        self.sync == SyncMode::Linux
    }

    /// Whether Windows NTttcp's per-thread tokens synchronize the start.
    pub(crate) fn windows_sync(&self) -> bool {
        matches!(self.sync, SyncMode::Windows { .. })
    }

    /// Windows `-sp`: the receiver hands out data ports base+1… over the base port.
    pub(crate) fn port_handout(&self) -> bool {
        self.sync == SyncMode::Windows { port_handout: true }
    }

    /// Sender threads in index order: thread k targets port `k / n`.
    pub(crate) fn sender_threads(&self) -> Vec<SenderThread> {
        let n = self.streams.threads_per_port as usize;
        (0..self.streams.ports.len() * n)
            .map(|index| SenderThread {
                index,
                port_index: index / n,
            })
            .collect()
    }

    /// Total data connections a sender opens.
    pub(crate) fn sender_connections(&self) -> usize {
        self.streams.ports.len()
            * self.streams.threads_per_port as usize
            * self.streams.conns_per_thread as usize
    }

    /// How long senders wait for the last client of a multi-client test.
    pub(crate) fn last_client_wait(&self) -> Duration {
        self.timeout * 6
    }

    /// The host a port listens on / is reached at, with the role's default.
    pub(crate) fn host_of(&self, j: usize) -> String {
        match &self.streams.ports[j].host {
            Some(h) => h.clone(),
            None if self.role == Role::Loopback => loopback_host(self.streams.ipv6).into(),
            None if self.streams.ipv6 => "::".into(),
            None => "0.0.0.0".into(),
        }
    }
}

/// The loopback address of the chosen family.
pub(crate) fn loopback_host(ipv6: bool) -> &'static str {
    if ipv6 { "::1" } else { "127.0.0.1" }
}

/// `ntttcp merge`: which documents to fold, and how to show the result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MergeJob {
    /// The documents' files, in order (`-`: stdin).
    pub files: Vec<String>,
    /// One JSON document instead of the Windows tables.
    pub json: bool,
}

/// A command-line or configuration mistake: printed as one line, exit status 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Where a mapping's threads run: one CPU (`0`), or spread over the allowed CPUs (`*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum CpuSpec {
    /// `*`: worker k runs on the k-th allowed CPU, round-robin.
    Any,
    /// A CPU number: every worker of the mapping is pinned to it.
    Cpu(usize),
}

impl FromStr for CpuSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "*" => Ok(Self::Any),
            t => t
                .parse()
                .map(Self::Cpu)
                .map_err(|_| format!("cpu '{t}' is neither '*' nor a CPU number")),
        }
    }
}

impl fmt::Display for CpuSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Any => f.write_str("*"),
            Self::Cpu(c) => write!(f, "{c}"),
        }
    }
}

#[cfg(test)]
mod tests;
