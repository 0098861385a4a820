//! The clap definition: every flag of both dialects (the Windows spellings arrive already
//! rewritten by `dialect`), with its help text and value parser.

use std::net::IpAddr;
use std::time::Duration;

use clap::Parser;
use clap::builder::{PossibleValuesParser, TypedValueParser};

use super::help::{
    AFTER_SHORT_HELP, GENERATE, after_long_help, format_of, io_mode_of, parse_buffer,
    parse_congestion, parse_interval, parse_ms, parse_port, parse_secs, parse_start_at, parse_tos,
    placement_of,
};
use super::values::{ByteSize, Mapping, Rate, SockBuf};
use crate::config::{IoMode, Placement};
use crate::report::Format;

/// ntttcp: a network throughput benchmark compatible with Microsoft NTttcp and
/// ntttcp-for-linux.
#[derive(Debug, Parser)]
#[command(
    name = "ntttcp",
    version,
    disable_version_flag = true,
    args_override_self = true,
    after_help = AFTER_SHORT_HELP,
    after_long_help = after_long_help(),
    max_term_width = 100
)]
pub(crate) struct Cli {
    /// Receiver role (the default), optionally with the local address to listen on.
    #[arg(short = 'r', long = "receiver", value_name = "ADDR", num_args = 0..=1,
          conflicts_with = "sender", help_heading = "Roles and hosts")]
    pub receiver: Option<Option<String>>,

    /// Sender role, with the receiver's address (attached `-s10.0.0.5` or separate).
    #[arg(short = 's', long = "sender", value_name = "ADDR", num_args = 0..=1, help_heading = "Roles and hosts")]
    pub sender: Option<Option<String>>,

    /// Run both roles in this process over the loopback interface (no second host).
    #[arg(long, conflicts_with_all = ["receiver", "sender"], help_heading = "Roles and hosts")]
    pub loopback: bool,

    /// Mapping THREADS,CPU|*,HOST; several may follow one -m. THREADS receiver ports (one
    /// sender thread each), pinned to CPU or spread over all CPUs with `*`.
    #[arg(short = 'm', long = "mapping", value_name = "N,CPU,HOST", num_args = 1..,
          action = clap::ArgAction::Set, help_heading = "Roles and hosts")]
    pub mapping: Vec<Mapping>,

    /// Number of receiver ports [Linux only (Windows: -m); default 16]. The later of -P and
    /// -m sets it.
    #[arg(short = 'P', long = "ports", value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=512), help_heading = "Streams")]
    pub ports: Option<u32>,

    /// Sender threads per receiver port [Linux only (Windows: -m); default 4, 1 with -m].
    #[arg(short = 'n', long = "threads", value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=25600), help_heading = "Streams")]
    pub threads: Option<u32>,

    /// Connections per sender thread [Linux only; default 1].
    #[arg(short = 'l', long = "connections", value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=1000), help_heading = "Streams")]
    pub connections: Option<u32>,

    /// Where the workers of a `*` mapping run: auto (the default: round-robin for TCP
    /// streams whose peer is on this host, so a stream's two ends share a core; else
    /// none), none (no affinity, the scheduler places them, as in both originals),
    /// round-robin (worker k on the k-th CPU, on each side) or opposite (round-robin, each
    /// receiver worker half the CPU list away from its sender).
    #[arg(long = "placement", value_name = "HOW", help_heading = "Streams", hide_short_help = true,
          value_parser = PossibleValuesParser::new(["auto", "none", "round-robin", "opposite"]).map(placement_of))]
    pub placement: Option<Placement>,

    /// Base data port; the sync port is one below it [Windows: -p or -P; default 5001].
    #[arg(
        short = 'p',
        long = "port",
        value_name = "PORT",
        value_parser = parse_port,
        help_heading = "Streams"
    )]
    pub port: Option<u16>,

    /// Bytes per send()/recv() call, K/M/G = 1024-based [Windows: -l; sender 128K (64K on a
    /// Windows line), receiver 64K;
    /// UDP: the datagram size, default the largest that fits the path MTU].
    #[arg(
        short = 'b',
        long = "buffer",
        value_name = "SIZE",
        value_parser = parse_buffer,
        help_heading = "Streams"
    )]
    pub buffer: Option<ByteSize>,

    /// UDP data (the sync channel stays TCP): the receiver reports loss, duplicates,
    /// reordering and jitter from each datagram's sequence number and timestamp.
    #[arg(short = 'u', long = "udp", help_heading = "UDP")]
    pub udp: bool,

    /// Sender: send from an in-memory file with sendfile() (zero-copy; changes what is
    /// measured, and every report says so). Towards this host's own addresses, where
    /// sendfile() costs more than it saves, the sender copies and says so.
    #[arg(
        short = 'Z',
        long = "sendfile",
        help_heading = "Socket options",
        hide_short_help = true
    )]
    pub sendfile: bool,

    /// With -Z: sendfile() also towards this host's own addresses, where it measures
    /// slower than copying (without this flag the sender copies there).
    #[arg(
        long = "sendfile-always",
        help_heading = "Socket options",
        hide_short_help = true
    )]
    pub sendfile_always: bool,

    /// Receiver: discard received data with MSG_TRUNC instead of copying it (changes
    /// what is measured, and every report says so).
    #[arg(
        long = "skip-rx-copy",
        help_heading = "Socket options",
        hide_short_help = true
    )]
    pub skip_rx_copy: bool,

    /// What neither NTTTCP has: the other direction, both at once, latency, connection
    /// rate.
    #[command(flatten)]
    pub workloads: super::workloads::Workloads,

    /// UDP: one datagram per system call, without the kernel's segmentation offload (GSO)
    /// on the sender and coalescing (GRO) on the receiver.
    #[arg(long = "no-udp-offload", help_heading = "UDP", hide_short_help = true)]
    pub no_udp_offload: bool,

    /// Sender: the measured window begins at TIME on each host's clock (Unix seconds, or
    /// RFC 3339 such as 2026-12-07T20:00:00Z); pairs started with one TIME measure the
    /// same seconds. The receiver follows through the handshake (this ntttcp; -N: the
    /// sender starts then). At most a day ahead.
    #[arg(
        long = "start-at",
        value_name = "TIME",
        value_parser = parse_start_at,
        help_heading = "Timing",
        hide_short_help = true
    )]
    pub start_at: Option<std::time::SystemTime>,

    /// Sender or --loopback: run the same test N times back to back (a -H receiver serves
    /// them) and sum up their throughput: min, median, max, mean, standard deviation and
    /// a 95 % confidence interval. A failed run ends the series.
    #[arg(
        long = "repeat",
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..=10_000),
        help_heading = "Timing",
        hide_short_help = true
    )]
    pub repeat: Option<u32>,

    /// Warm-up seconds: traffic flows but is not counted.
    #[arg(
        short = 'W',
        long = "warmup",
        visible_alias = "wu",
        value_name = "SECS",
        help_heading = "Timing",
        hide_short_help = true, allow_negative_numbers = true, value_parser = parse_secs)]
    pub warmup: Option<u32>,

    /// Test duration in seconds; 0 = continuous until Ctrl+C [Windows: -t; default 60].
    #[arg(
        short = 't',
        long = "duration",
        value_name = "SECS",
        help_heading = "Timing", allow_negative_numbers = true, value_parser = parse_secs)]
    pub duration: Option<u32>,

    /// Cool-down seconds: traffic keeps flowing after counting stops.
    #[arg(
        short = 'C',
        long = "cooldown",
        visible_alias = "cd",
        value_name = "SECS",
        help_heading = "Timing",
        hide_short_help = true, allow_negative_numbers = true, value_parser = parse_secs)]
    pub cooldown: Option<u32>,

    /// No sync handshake: each side times itself (needed against Windows NTttcp) [Windows:
    /// -ns].
    #[arg(
        short = 'N',
        long = "no-sync",
        visible_alias = "ns",
        help_heading = "Sync and serving"
    )]
    pub no_sync: bool,

    /// Windows sync: the receiver hands out data ports over the base port (-sp).
    #[arg(
        long = "sync-ports",
        visible_alias = "sp",
        help_heading = "Sync and serving",
        hide_short_help = true
    )]
    pub sync_ports: bool,

    /// Use IPv6 defaults (bind `::`, loopback `::1`).
    #[arg(
        short = '6',
        long = "ipv6",
        help_heading = "Roles and hosts",
        hide_short_help = true
    )]
    pub ipv6: bool,

    /// Receiver: use epoll (accepted for compatibility; the receiver always multiplexes
    /// with epoll).
    #[arg(
        short = 'e',
        long = "epoll",
        help_heading = "Sync and serving",
        hide_short_help = true
    )]
    pub epoll: bool,

    /// Quiet: no live progress lines.
    #[arg(
        short = 'Q',
        long = "quiet",
        help_heading = "Output",
        hide_short_help = true
    )]
    pub quiet: bool,

    /// Verbose: print the settings and progress notes (on stderr).
    #[arg(
        short = 'V',
        long = "verbose",
        short_alias = 'v',
        help_heading = "Output",
        hide_short_help = true
    )]
    pub verbose: bool,

    /// Omit the per-thread table.
    #[arg(
        long = "hide-per-thread",
        visible_alias = "hpt",
        help_heading = "Output",
        hide_short_help = true
    )]
    pub hide_per_thread: bool,

    /// Receiver: multi-client mode; the test starts when the sender with -L arrives.
    #[arg(
        short = 'M',
        long = "multi-client",
        help_heading = "Sync and serving",
        hide_short_help = true
    )]
    pub multi_client: bool,

    /// Sender: I am the last client of a multi-client test (receiver runs -M).
    #[arg(
        short = 'L',
        long = "last-client",
        help_heading = "Sync and serving",
        hide_short_help = true
    )]
    pub last_client: bool,

    /// Receiver: hold; serve one test after another until Ctrl+C or SIGTERM.
    #[arg(
        short = 'H',
        long = "hold",
        help_heading = "Sync and serving",
        hide_short_help = true
    )]
    pub hold: bool,

    /// Run in the background (the parent prints the PID and exits 0).
    #[arg(
        short = 'D',
        long = "daemon",
        help_heading = "Sync and serving",
        hide_short_help = true
    )]
    pub daemon: bool,

    /// With -D: write the daemon's PID to this file.
    #[arg(
        long = "pid-file",
        value_name = "PATH",
        requires = "daemon",
        help_heading = "Sync and serving",
        hide_short_help = true
    )]
    pub pid_file: Option<std::path::PathBuf>,

    /// Deadline in seconds for connecting, each handshake step and data silence during a
    /// test [Windows: -to MS; default 10].
    #[arg(long = "timeout", value_name = "SECS",
          value_parser = clap::value_parser!(u32).range(1..=86400), help_heading = "Timing")]
    pub timeout: Option<u32>,

    /// Probe an idle sync connection every SECS, so that NAT and firewall idle timeouts
    /// keep it for a test of any length; 0 turns the probes off [default 30].
    #[arg(long = "sync-keepalive", value_name = "SECS",
          value_parser = clap::value_parser!(u32).range(0..=7200), help_heading = "Timing",
          hide_short_help = true)]
    pub sync_keepalive: Option<u32>,

    /// The same deadline in milliseconds (Windows `-to`; 0 means one hour).
    #[arg(
        long = "timeout-ms",
        value_name = "MS",
        hide = true,
        allow_negative_numbers = true,
        value_parser = parse_ms,
        conflicts_with = "timeout",
        help_heading = "Timing",
        hide_short_help = true
    )]
    pub timeout_ms: Option<u64>,

    /// Write the ntttcp-for-linux XML result file [default ntttcp-for-linux-log.xml].
    #[arg(short = 'x', long = "xml", value_name = "FILE", num_args = 0..=1,
          default_missing_value = "ntttcp-for-linux-log.xml", help_heading = "Output", hide_short_help = true)]
    pub xml: Option<std::path::PathBuf>,

    /// Write the ntttcp-for-linux JSON result file [default ntttcp-for-linux-log.json].
    #[arg(short = 'j', long = "json", value_name = "FILE", num_args = 0..=1,
          default_missing_value = "ntttcp-for-linux-log.json", help_heading = "Output", hide_short_help = true)]
    pub json: Option<std::path::PathBuf>,

    /// Copy the console output to a file [default ntttcp-for-linux-log.log].
    #[arg(short = 'O', long = "log", value_name = "FILE", num_args = 0..=1,
          default_missing_value = "ntttcp-for-linux-log.log", help_heading = "Output", hide_short_help = true)]
    pub log: Option<std::path::PathBuf>,

    /// Append the Windows NTttcp XML result (Windows -xml) [default xml.txt].
    #[arg(long = "xml-windows", value_name = "FILE", num_args = 0..=1,
          default_missing_value = "xml.txt", help_heading = "Output", hide_short_help = true)]
    pub xml_windows: Option<std::path::PathBuf>,

    /// Sender: bind every data and sync socket to this local address, and to the
    /// interface that owns it (Windows -nic).
    #[arg(
        short = 'a',
        long = "source-address",
        value_name = "ADDR",
        help_heading = "Roles and hosts",
        hide_short_help = true
    )]
    pub source_address: Option<IpAddr>,

    /// Sender: pin source ports starting at PORT (bare -f: 25001); connection i of
    /// thread k uses PORT + k*l + i.
    #[arg(short = 'f', long = "source-port", value_name = "PORT", num_args = 0..=1,
          default_missing_value = "25001", help_heading = "Roles and hosts", hide_short_help = true)]
    pub source_port: Option<u16>,

    /// TCP_NODELAY on the data connections (Windows -ndl).
    #[arg(
        long = "no-delay",
        help_heading = "Socket options",
        hide_short_help = true
    )]
    pub no_delay: bool,

    /// SO_SNDBUF of the data sockets, K/M/G = 1024 (Windows -sb; -1 = kernel default).
    #[arg(
        long = "send-buffer",
        value_name = "SIZE",
        allow_negative_numbers = true,
        help_heading = "Socket options",
        hide_short_help = true
    )]
    pub send_buffer: Option<SockBuf>,

    /// Sender: TCP_NOTSENT_LOWAT, the unsent bytes a connection queues before a write
    /// waits, K/M/G = 1024 (default by path: 64K where segments are over 16K, as on
    /// loopback, else 128K; the kernel's with -Z sending by sendfile; -1, or 0 as in
    /// the kernel, = the kernel's net.ipv4.tcp_notsent_lowat).
    #[arg(
        long = "notsent-lowat",
        value_name = "SIZE",
        allow_negative_numbers = true,
        help_heading = "Socket options",
        hide_short_help = true
    )]
    pub notsent_lowat: Option<SockBuf>,

    /// Receiver: SO_RCVLOWAT, the unread bytes of a TCP stream that wake its reader,
    /// K/M/G = 1024 (default by path: 192K where segments are NIC-sized, under 32K; else
    /// the kernel's; -1 = the kernel's, one byte).
    #[arg(
        long = "rcvlowat",
        value_name = "SIZE",
        allow_negative_numbers = true,
        help_heading = "Socket options",
        hide_short_help = true
    )]
    pub rcvlowat: Option<SockBuf>,

    /// TCP congestion control of every data connection, as the kernel names it (cubic,
    /// bbr, reno; its list: /proc/sys/net/ipv4/tcp_available_congestion_control)
    /// [default: the kernel's].
    #[arg(
        long = "congestion",
        value_name = "ALGO",
        value_parser = parse_congestion,
        help_heading = "Socket options",
        hide_short_help = true
    )]
    pub congestion: Option<crate::config::Congestion>,

    /// Type of service (IPv6: traffic class) of every data packet, decimal or 0x hex;
    /// DSCP is its top six bits (EF, 46, is 0xb8) [default: 0].
    #[arg(
        long = "tos",
        value_name = "VALUE",
        value_parser = parse_tos,
        help_heading = "Socket options",
        hide_short_help = true
    )]
    pub tos: Option<u8>,

    /// SO_RCVBUF of the data sockets, K/M/G = 1024 (Windows -rb; -1 = kernel default).
    #[arg(
        long = "recv-buffer",
        value_name = "SIZE",
        allow_negative_numbers = true,
        help_heading = "Socket options",
        hide_short_help = true
    )]
    pub recv_buffer: Option<SockBuf>,

    /// Sender: limit the total rate to RATE bits/s (K/M/G = 1000), all threads together
    /// [Linux only; Windows NTttcp limits each thread: -thr KBPS].
    #[arg(
        short = 'B',
        long = "bandwidth",
        value_name = "RATE",
        help_heading = "Rate limits"
    )]
    pub bandwidth: Option<Rate>,

    /// Sender: kernel pacing, RATE bits/s over all connections (SO_MAX_PACING_RATE).
    #[arg(
        long = "fq-rate-limit",
        value_name = "RATE",
        conflicts_with = "bandwidth",
        help_heading = "Rate limits",
        hide_short_help = true
    )]
    pub fq_rate_limit: Option<Rate>,

    /// Sender: limit each thread to this many KB/s (KB = 1024 bytes; Windows -thr).
    #[arg(
        long = "thread-throttle",
        value_name = "KBPS",
        hide = true,
        help_heading = "Rate limits",
        hide_short_help = true
    )]
    pub thread_throttle: Option<f64>,

    /// Report the TCP retransmit counters of /proc/net/netstat (per second).
    #[arg(
        long = "show-tcp-retrans",
        help_heading = "Output",
        hide_short_help = true
    )]
    pub show_tcp_retrans: bool,

    /// Report the packets sent and received on interface IF.
    #[arg(
        long = "show-nic-packets",
        value_name = "IF",
        help_heading = "Output",
        hide_short_help = true
    )]
    pub show_nic_packets: Option<String>,

    /// Report the interrupts on /proc/interrupts lines containing STR.
    #[arg(
        long = "show-dev-interrupts",
        value_name = "STR",
        help_heading = "Output",
        hide_short_help = true
    )]
    pub show_dev_interrupts: Option<String>,

    /// Output: windows (NTttcp tables), linux (ntttcp-for-linux log lines), json (one
    /// document per test), jsonl (a line per interval and per result).
    #[arg(
        long = "format",
        value_name = "FORMAT",
        value_parser = PossibleValuesParser::new(["windows", "linux", "json", "jsonl"]).map(format_of), help_heading = "Output")]
    pub format: Option<Format>,

    /// Report throughput every SECS seconds during the measurement.
    #[arg(long = "interval", value_name = "SECS", value_parser = parse_interval, help_heading = "Output", hide_short_help = true)]
    pub interval: Option<Duration>,

    /// Draw throughput per interval (total and per thread) into an SVG file.
    #[arg(
        long = "plot",
        value_name = "FILE.svg",
        help_heading = "Output",
        hide_short_help = true
    )]
    pub plot: Option<std::path::PathBuf>,

    #[command(flatten)]
    pub thresholds: super::thresholds::Thresholds,

    /// Data path of sender workers: auto (non-blocking writes and poll()), blocking or
    /// async.
    #[arg(
        long = "io",
        value_name = "MODE",
        hide = true,
        value_parser = PossibleValuesParser::new(["auto", "blocking", "async"]).map(io_mode_of)
    )]
    pub io: Option<IoMode>,

    /// Read the line as this dialect instead of detecting it: linux (ntttcp-for-linux
    /// 1.4.3) or windows (Windows NTttcp).
    #[arg(long = "dialect", value_name = "DIALECT",
          value_parser = PossibleValuesParser::new(["linux", "windows"]), help_heading = "Roles and hosts", hide_short_help = true)]
    pub dialect: Option<String>,

    /// Print version information.
    #[arg(long = "version", action = clap::ArgAction::Version, help_heading = "Output", hide_short_help = true)]
    pub version: Option<bool>,

    /// Print the man page (man) or a shell completion script (complete-bash,
    /// complete-zsh, complete-fish, complete-powershell) and exit.
    #[arg(
        long = "generate",
        value_name = "KIND",
        value_parser = PossibleValuesParser::new(GENERATE), help_heading = "Output", hide_short_help = true)]
    pub generate: Option<String>,
}
