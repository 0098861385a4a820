//! The command line: one clap definition for both dialects, and the rules that turn it
//! into a `Config`. This is the only module that imports clap.
//!
//! Flow: `winstyle::normalize` (dialect + spelling) → clap (`Cli`) → `to_config` (every
//! cross-flag rule, in one place). Errors come back as one-line `UsageError`s.

pub(crate) mod host;
pub(crate) mod values;
pub(crate) mod winstyle;

use std::ffi::OsString;
use std::net::IpAddr;
use std::time::Duration;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser};

use crate::config::{
    self, Config, Dialect, IoMode, PortPlan, Protocol, Role, SyncMode, Timeline, UsageError,
    loopback_host,
};
use crate::report::{Format, OutputFile, Presentation};
use values::{ByteSize, CpuSpec, Mapping, Rate, SockBuf, strip_brackets};

const AFTER_HELP: &str = "\
Dialects: a line is read as Windows NTttcp when it contains a Windows-only spelling
(-ns, -wu, -cd, -sb, -rb, -ndl, -nic, -xml, -hpt, -to, -sp, ...; any letter case), and
as ntttcp-for-linux 1.4.3 otherwise; --dialect linux|windows forces it. Letters that
differ: -P is the port count on Linux but the base port (-p) on Windows; -l is
connections per thread on Linux but the buffer length on Windows; -N is no-sync on Linux
but a buffer count on Windows; -n is threads per port on Linux. Windows multi-letter
flags are written with one dash (-ns, -wu 2) and match whole words only.

Examples:
  receiver:  ntttcp -r -m 4,*,10.0.0.5 -t 300
  sender:    ntttcp -s -m 4,*,10.0.0.5 -t 300
  no sync:   ntttcp -r -m 4,*,10.0.0.5 -N -t 60   /   ntttcp -s -m 4,*,10.0.0.5 -ns -t 60
  one host:  ntttcp --loopback -t 5

Exit status: 0 test completed, 1 runtime failure or a test the peer ended early (results
measured so far are still printed), 2 usage error, 3 below --min-throughput, 130
interrupted by Ctrl+C, SIGTERM or SIGHUP (results printed).";

/// ntttcp: a network throughput benchmark compatible with Microsoft NTttcp and
/// ntttcp-for-linux.
#[derive(Debug, Parser)]
#[command(
    name = "ntttcp",
    version,
    disable_version_flag = true,
    args_override_self = true,
    after_help = AFTER_HELP,
    max_term_width = 100
)]
pub(crate) struct Cli {
    /// Receiver role (the default), optionally with the local address to listen on.
    #[arg(short = 'r', long = "receiver", value_name = "ADDR", num_args = 0..=1,
          conflicts_with = "sender")]
    pub receiver: Option<Option<String>>,

    /// Sender role, with the receiver's address (attached `-s10.0.0.5` or separate).
    #[arg(short = 's', long = "sender", value_name = "ADDR", num_args = 0..=1)]
    pub sender: Option<Option<String>>,

    /// Run both roles in this process over the loopback interface (no second host).
    #[arg(long, conflicts_with_all = ["receiver", "sender"])]
    pub loopback: bool,

    /// Mapping THREADS,CPU|*,HOST; several may follow one -m. THREADS receiver ports (one
    /// sender thread each), pinned to CPU or spread over all CPUs with `*`.
    #[arg(short = 'm', long = "mapping", value_name = "N,CPU,HOST", num_args = 1..,
          action = clap::ArgAction::Set)]
    pub mapping: Vec<Mapping>,

    /// Number of receiver ports [Linux; default 16]. The later of -P and -m sets it.
    #[arg(short = 'P', long = "ports", value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=512))]
    pub ports: Option<u32>,

    /// Sender threads per receiver port [Linux; default 4, 1 with -m].
    #[arg(short = 'n', long = "threads", value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=25600))]
    pub threads: Option<u32>,

    /// Connections per sender thread [Linux; default 1].
    #[arg(short = 'l', long = "connections", value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub connections: Option<u32>,

    /// Base data port; the sync port is one below it [default 5001].
    #[arg(short = 'p', long = "port", value_name = "PORT")]
    pub port: Option<u16>,

    /// Bytes per send()/recv() call, K/M/G = 1024-based [sender 128K, receiver 64K;
    /// UDP: the datagram size, default the largest that fits the path MTU].
    #[arg(short = 'b', long = "buffer", value_name = "SIZE")]
    pub buffer: Option<ByteSize>,

    /// UDP data (the sync channel stays TCP): the receiver reports loss, duplicates,
    /// reordering and jitter from each datagram's sequence number and timestamp.
    #[arg(short = 'u', long = "udp")]
    pub udp: bool,

    /// Sender: send from an in-memory file with sendfile() (zero-copy; changes what is
    /// measured, and every report says so).
    #[arg(short = 'Z', long = "sendfile")]
    pub sendfile: bool,

    /// Receiver: discard received data with MSG_TRUNC instead of copying it (changes
    /// what is measured, and every report says so).
    #[arg(long = "skip-rx-copy")]
    pub skip_rx_copy: bool,

    /// UDP: one datagram per system call, without the kernel's segmentation offload (GSO)
    /// on the sender and coalescing (GRO) on the receiver.
    #[arg(long = "no-udp-offload")]
    pub no_udp_offload: bool,

    /// Warm-up seconds: traffic flows but is not counted.
    #[arg(
        short = 'W',
        long = "warmup",
        visible_alias = "wu",
        value_name = "SECS"
    )]
    pub warmup: Option<u32>,

    /// Test duration in seconds; 0 = continuous until Ctrl+C [default 60].
    #[arg(short = 't', long = "duration", value_name = "SECS")]
    pub duration: Option<u32>,

    /// Cool-down seconds: traffic keeps flowing after counting stops.
    #[arg(
        short = 'C',
        long = "cooldown",
        visible_alias = "cd",
        value_name = "SECS"
    )]
    pub cooldown: Option<u32>,

    /// No sync handshake: each side times itself (needed against Windows NTttcp).
    #[arg(short = 'N', long = "no-sync", visible_alias = "ns")]
    pub no_sync: bool,

    /// Windows sync: the receiver hands out data ports over the base port (-sp).
    #[arg(long = "sync-ports", visible_alias = "sp")]
    pub sync_ports: bool,

    /// Use IPv6 defaults (bind `::`, loopback `::1`).
    #[arg(short = '6', long = "ipv6")]
    pub ipv6: bool,

    /// Receiver: use epoll (accepted for compatibility; the receiver always multiplexes
    /// with epoll).
    #[arg(short = 'e', long = "epoll")]
    pub epoll: bool,

    /// Quiet: no live progress lines.
    #[arg(short = 'Q', long = "quiet")]
    pub quiet: bool,

    /// Verbose: print the settings and progress notes (on stderr).
    #[arg(short = 'V', long = "verbose", short_alias = 'v')]
    pub verbose: bool,

    /// Omit the per-thread table.
    #[arg(long = "hide-per-thread", visible_alias = "hpt")]
    pub hide_per_thread: bool,

    /// Receiver: multi-client mode; the test starts when the sender with -L arrives.
    #[arg(short = 'M', long = "multi-client")]
    pub multi_client: bool,

    /// Sender: I am the last client of a multi-client test (receiver runs -M).
    #[arg(short = 'L', long = "last-client")]
    pub last_client: bool,

    /// Receiver: hold; serve one test after another until Ctrl+C or SIGTERM.
    #[arg(short = 'H', long = "hold")]
    pub hold: bool,

    /// Run in the background (the parent prints the PID and exits 0).
    #[arg(short = 'D', long = "daemon")]
    pub daemon: bool,

    /// With -D: write the daemon's PID to this file.
    #[arg(long = "pid-file", value_name = "PATH", requires = "daemon")]
    pub pid_file: Option<std::path::PathBuf>,

    /// Deadline in seconds for connecting, each handshake step and data silence during a
    /// test [default 10].
    #[arg(long = "timeout", value_name = "SECS",
          value_parser = clap::value_parser!(u32).range(1..=86400))]
    pub timeout: Option<u32>,

    /// The same deadline in milliseconds (Windows `-to`; 0 means one hour).
    #[arg(
        long = "timeout-ms",
        value_name = "MS",
        hide = true,
        conflicts_with = "timeout"
    )]
    pub timeout_ms: Option<u64>,

    /// Write the ntttcp-for-linux XML result file [default ntttcp-for-linux-log.xml].
    #[arg(short = 'x', long = "xml", value_name = "FILE", num_args = 0..=1,
          default_missing_value = "ntttcp-for-linux-log.xml")]
    pub xml: Option<std::path::PathBuf>,

    /// Write the ntttcp-for-linux JSON result file [default ntttcp-for-linux-log.json].
    #[arg(short = 'j', long = "json", value_name = "FILE", num_args = 0..=1,
          default_missing_value = "ntttcp-for-linux-log.json")]
    pub json: Option<std::path::PathBuf>,

    /// Copy the console output to a file [default ntttcp-for-linux-log.log].
    #[arg(short = 'O', long = "log", value_name = "FILE", num_args = 0..=1,
          default_missing_value = "ntttcp-for-linux-log.log")]
    pub log: Option<std::path::PathBuf>,

    /// Append the Windows NTttcp XML result (Windows -xml) [default xml.txt].
    #[arg(long = "xml-windows", value_name = "FILE", num_args = 0..=1,
          default_missing_value = "xml.txt")]
    pub xml_windows: Option<std::path::PathBuf>,

    /// Sender: bind every data and sync socket to this local address, and to the
    /// interface that owns it (Windows -nic).
    #[arg(short = 'a', long = "source-address", value_name = "ADDR")]
    pub source_address: Option<IpAddr>,

    /// Sender: pin source ports starting at PORT (bare -f: 25001); connection i of
    /// thread k uses PORT + k*l + i.
    #[arg(short = 'f', long = "source-port", value_name = "PORT", num_args = 0..=1,
          default_missing_value = "25001")]
    pub source_port: Option<u16>,

    /// TCP_NODELAY on the data connections (Windows -ndl).
    #[arg(long = "no-delay")]
    pub no_delay: bool,

    /// SO_SNDBUF of the data sockets, K/M/G = 1024 (Windows -sb; -1 = kernel default).
    #[arg(
        long = "send-buffer",
        value_name = "SIZE",
        allow_negative_numbers = true
    )]
    pub send_buffer: Option<SockBuf>,

    /// SO_RCVBUF of the data sockets, K/M/G = 1024 (Windows -rb; -1 = kernel default).
    #[arg(
        long = "recv-buffer",
        value_name = "SIZE",
        allow_negative_numbers = true
    )]
    pub recv_buffer: Option<SockBuf>,

    /// Sender: limit the total rate to RATE bits/s (K/M/G = 1000), all threads together.
    #[arg(short = 'B', long = "bandwidth", value_name = "RATE")]
    pub bandwidth: Option<Rate>,

    /// Sender: kernel pacing, RATE bits/s over all connections (SO_MAX_PACING_RATE).
    #[arg(
        long = "fq-rate-limit",
        value_name = "RATE",
        conflicts_with = "bandwidth"
    )]
    pub fq_rate_limit: Option<Rate>,

    /// Sender: limit each thread to this many KB/s (KB = 1024 bytes; Windows -thr).
    #[arg(long = "thread-throttle", value_name = "KBPS", hide = true)]
    pub thread_throttle: Option<f64>,

    /// Report the TCP retransmit counters of /proc/net/netstat (per second).
    #[arg(long = "show-tcp-retrans")]
    pub show_tcp_retrans: bool,

    /// Report the packets sent and received on interface IF.
    #[arg(long = "show-nic-packets", value_name = "IF")]
    pub show_nic_packets: Option<String>,

    /// Report the interrupts on /proc/interrupts lines containing STR.
    #[arg(long = "show-dev-interrupts", value_name = "STR")]
    pub show_dev_interrupts: Option<String>,

    /// Output: windows (NTttcp tables), linux (ntttcp-for-linux log lines), json (one
    /// document per test), jsonl (a line per interval and per result).
    #[arg(
        long = "format",
        value_name = "FORMAT",
        value_parser = PossibleValuesParser::new(["windows", "linux", "json", "jsonl"]).map(format_of)
    )]
    pub format: Option<Format>,

    /// Report throughput every SECS seconds during the measurement.
    #[arg(long = "interval", value_name = "SECS", value_parser = parse_interval)]
    pub interval: Option<Duration>,

    /// Draw throughput per interval (total and per thread) into an SVG file.
    #[arg(long = "plot", value_name = "FILE.svg")]
    pub plot: Option<std::path::PathBuf>,

    /// After printing, exit 3 if the throughput is below RATE (bits/s; 5G, 500M).
    #[arg(long = "min-throughput", value_name = "RATE")]
    pub min_throughput: Option<Rate>,

    /// After printing, exit 1 if no data moved for longer than SECS at any one time during
    /// the measurement (stalls are tracked every 0.1 s).
    #[arg(long = "max-stall", value_name = "SECS", value_parser = parse_interval)]
    pub max_stall: Option<Duration>,

    /// Data path of sender workers: auto (blocking for one connection per thread), blocking
    /// or async.
    #[arg(
        long = "io",
        value_name = "MODE",
        hide = true,
        value_parser = PossibleValuesParser::new(["auto", "blocking", "async"]).map(io_mode_of)
    )]
    pub io: Option<IoMode>,

    /// Print version information.
    #[arg(long = "version", action = clap::ArgAction::Version)]
    pub version: Option<bool>,
}

/// `--format`'s value (one of the possible values clap lists and checks).
fn format_of(s: String) -> Format {
    match s.as_str() {
        "linux" => Format::Linux,
        "json" => Format::Json,
        "jsonl" => Format::Jsonl,
        _ => Format::Windows,
    }
}

fn parse_interval(s: &str) -> Result<Duration, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.1..=3600.0).contains(&v) => Ok(Duration::from_secs_f64(v)),
        _ => Err(format!("'{s}' is not a number of seconds from 0.1 to 3600")),
    }
}

/// `--io`'s value (one of the possible values clap lists and checks).
fn io_mode_of(s: String) -> IoMode {
    match s.as_str() {
        "blocking" => IoMode::Blocking,
        "async" => IoMode::Async,
        _ => IoMode::Auto,
    }
}

/// What `parse` produced: a configuration to run, or text clap wants shown (help, version).
#[derive(Debug)]
pub(crate) enum Parsed {
    /// Run a test.
    Run(Box<Config>, Box<Presentation>),
    /// Print this text to stdout and exit 0.
    Info(String),
}

/// Parses a whole command line (program name first). `cpus` are the CPU numbers this
/// process may run on, for checking `-m` CPU fields.
pub(crate) fn parse(args: &[OsString], cpus: &[usize]) -> Result<Parsed, UsageError> {
    let command = Cli::command();
    let longs: Vec<String> = command
        .get_arguments()
        .flat_map(|a| a.get_long_and_visible_aliases().unwrap_or_default())
        .map(str::to_string)
        .collect();
    let normalized = winstyle::normalize(args, &longs).map_err(UsageError)?;
    let matches = match command.try_get_matches_from(&normalized.args) {
        Ok(m) => m,
        Err(e) => {
            use clap::error::ErrorKind;
            return match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    Ok(Parsed::Info(e.render().to_string()))
                }
                _ => Err(UsageError(as_typed(
                    &one_line(&e.render().to_string()),
                    &normalized,
                ))),
            };
        }
    };
    let cli = Cli::from_arg_matches(&matches).map_err(|e| UsageError(one_line(&e.to_string())))?;
    let file = |p: &Option<std::path::PathBuf>, long: &str| {
        let flag = typed_flag(long, &normalized);
        p.as_ref()
            .map(|p| match std::path::absolute(p) {
                Ok(path) => Ok(OutputFile { path, flag }),
                Err(e) => Err(UsageError(format!(
                    "invalid value '{}' for '{flag}': {e}",
                    p.display()
                ))),
            })
            .transpose()
    };
    let presentation = Presentation {
        hide_per_thread: cli.hide_per_thread,
        xml: file(&cli.xml, "xml")?,
        json: file(&cli.json, "json")?,
        log: file(&cli.log, "log")?,
        xml_windows: file(&cli.xml_windows, "xml-windows")?,
        plot: file(&cli.plot, "plot")?,
        min_throughput: cli.min_throughput.map(|r| r.0),
        max_stall: cli.max_stall,
        format: cli.format.unwrap_or_default(),
        interval: cli.interval,
        quiet: cli.quiet,
    };
    let config = to_config(cli, &matches, &normalized, cpus)?;
    Ok(Parsed::Run(Box::new(config), Box::new(presentation)))
}

/// clap's first line ("error: ...") without the usage and tip lines that follow it.
fn one_line(rendered: &str) -> String {
    let first = rendered.lines().next().unwrap_or("invalid command line");
    let first = first.trim_start_matches("error: ").trim();
    // A value outside a fixed list: clap lists the list on a line of its own.
    match rendered
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("[possible values:"))
    {
        Some(values) => format!("{first} {values}"),
        None => first.to_string(),
    }
}

/// The spelling the user typed for the flag whose long name is `long`: the Windows token
/// the normalizer rewrote, else the short letter if one was typed, else `--long`.
fn typed_flag(long: &str, normalized: &winstyle::Normalized) -> String {
    if let Some((_, t)) = normalized.spelled.iter().find(|(l, _)| l == long) {
        return t.clone();
    }
    let short = Cli::command()
        .get_arguments()
        .find(|a| a.get_long() == Some(long))
        .and_then(|a| a.get_short())
        .map(|c| format!("-{c}"));
    short
        .filter(|short| {
            normalized
                .args
                .iter()
                .any(|a| a.to_str().is_some_and(|a| a.starts_with(short.as_str())))
        })
        .unwrap_or_else(|| format!("--{long}"))
}

/// clap names a flag by its long form (`'--duration <SECS>'`); say it the way the user
/// typed it (`'-t'`, or the Windows spelling the normalizer rewrote).
fn as_typed(message: &str, normalized: &winstyle::Normalized) -> String {
    let mut out = message.to_string();
    for arg in Cli::command().get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        let typed = typed_flag(long, normalized);
        let v = arg
            .get_value_names()
            .and_then(|n| n.first().map(|v| v.to_string()))
            .unwrap_or_default();
        for form in [
            format!("'--{long} <{v}>'"),
            format!("'--{long} [<{v}>]'"),
            format!("'--{long} <{v}>...'"),
            format!("'--{long}'"),
        ] {
            out = out.replace(&form, &format!("'{typed}'"));
        }
    }
    out
}

/// Every cross-flag rule lives here.
fn to_config(
    cli: Cli,
    matches: &ArgMatches,
    normalized: &winstyle::Normalized,
    cpus: &[usize],
) -> Result<Config, UsageError> {
    let dialect = normalized.dialect;
    let (role, role_host) = role_of(&cli);
    if dialect == Dialect::Windows && cli.mapping.is_empty() {
        return Err(UsageError(
            "flag -m <mapping> is required in the Windows dialect".into(),
        ));
    }
    check_mapping_cpus(&cli, cpus)?;
    let mut ports = port_plans(&cli, matches, &role_host)?;
    let threads_per_port = match (cli.threads, cli.mapping.is_empty()) {
        (Some(n), _) => n,
        (None, false) => 1,
        (None, true) => config::DEFAULT_THREADS_PER_PORT,
    };
    let base_port = cli.port.unwrap_or(config::DEFAULT_PORT);
    let sync = sync_of(&cli, dialect);
    check_port_range(&cli, base_port, ports.len(), dialect)?;
    check_role_flags(&cli, role, sync.is_on())?;
    check_source(&cli, role, ports.len() * threads_per_port as usize)?;
    let protocol = if cli.udp {
        Protocol::Udp
    } else {
        Protocol::Tcp
    };
    check_transport(&cli, role, protocol)?;
    check_size(&cli, role, protocol, &typed_flag("buffer", normalized))?;
    let timeout = timeout_of(&cli);
    let pid_file = pid_file_of(&cli)?;
    check_hosts(role, &mut ports, cli.ipv6)?;
    let sender_conns =
        ports.len() * threads_per_port as usize * cli.connections.unwrap_or(1) as usize;
    Ok(Config {
        role,
        streams: config::Streams {
            ports,
            threads_per_port,
            conns_per_thread: cli.connections.unwrap_or(1),
            base_port,
            ipv6: cli.ipv6,
        },
        data: data_opts(&cli, dialect, sender_conns),
        timeline: Timeline {
            warmup: cli.warmup.unwrap_or(0),
            duration: cli.duration.unwrap_or(config::DEFAULT_DURATION),
            cooldown: cli.cooldown.unwrap_or(0),
        },
        sync,
        timeout,
        source: config::Source {
            addr: cli.source_address,
            device: None,
            port: cli.source_port,
        },
        roles: config::RoleOpts {
            hold: cli.hold,
            epoll: cli.epoll,
            multi_client: cli.multi_client,
            last_client: cli.last_client,
        },
        background: config::Background {
            daemon: cli.daemon,
            pid_file,
        },
        show: config::Show {
            quiet: cli.quiet,
            verbose: cli.verbose,
            tcp_retrans: cli.show_tcp_retrans,
            nic: cli.show_nic_packets,
            interrupts: cli.show_dev_interrupts,
            interval: None,
        },
    })
}

/// What the data connections carry: sizes (NTttcp's buffers are 64 KiB, ntttcp-for-linux
/// sends 128 KiB), offloads, zero-copy, socket options and rate limits.
fn data_opts(cli: &Cli, dialect: Dialect, sender_conns: usize) -> config::DataOpts {
    let size = cli.buffer.map(|b| b.0 as usize);
    config::DataOpts {
        protocol: if cli.udp {
            Protocol::Udp
        } else {
            Protocol::Tcp
        },
        send_size: size.unwrap_or(match dialect {
            Dialect::Windows => config::NTTTCP_BUFFER,
            Dialect::Linux => config::DEFAULT_SEND_SIZE,
        }),
        recv_size: size.unwrap_or(config::DEFAULT_RECV_SIZE),
        fit_datagrams: cli.udp && size.is_none(),
        udp_offload: !cli.no_udp_offload,
        zero_copy: config::ZeroCopy {
            sendfile: cli.sendfile,
            skip_rx_copy: cli.skip_rx_copy,
        },
        io_mode: cli.io.unwrap_or(IoMode::Auto),
        sockopts: config::SockOpts {
            no_delay: cli.no_delay,
            pacing_rate: cli
                .fq_rate_limit
                .filter(|r| r.0 > 0.0)
                .map(|r| (r.0 / 8.0 / sender_conns as f64).max(1.0) as u64),
            send_buffer: cli.send_buffer.and_then(|b| b.0),
            recv_buffer: cli.recv_buffer.and_then(|b| b.0),
        },
        rate_limit: cli.bandwidth.map(|r| r.0).filter(|r| *r > 0.0),
        thread_rate: cli.thread_throttle.filter(|k| *k > 0.0).map(|k| k * 1024.0),
    }
}

/// How the sides synchronize: a Windows-dialect line uses NTttcp's tokens.
fn sync_of(cli: &Cli, dialect: Dialect) -> SyncMode {
    match (cli.no_sync, dialect) {
        (true, _) => SyncMode::Off,
        (false, Dialect::Linux) => SyncMode::Linux,
        (false, Dialect::Windows) => SyncMode::Windows {
            port_handout: cli.sync_ports,
        },
    }
}

/// `--pid-file`, made absolute (a daemon changes its directory).
fn pid_file_of(cli: &Cli) -> Result<Option<std::path::PathBuf>, UsageError> {
    let Some(p) = &cli.pid_file else {
        return Ok(None);
    };
    std::path::absolute(p).map(Some).map_err(|e| {
        UsageError(format!(
            "invalid value '{}' for '--pid-file': {e}",
            p.display()
        ))
    })
}

/// The role and the host named with it (`-r HOST`, `-s HOST`).
fn role_of(cli: &Cli) -> (Role, Option<String>) {
    let (role, host) = match (&cli.receiver, &cli.sender, cli.loopback) {
        (_, _, true) => (Role::Loopback, None),
        (_, Some(addr), _) => (Role::Sender, addr.clone()),
        (Some(addr), None, _) => (Role::Receiver, addr.clone()),
        (None, None, _) => (Role::Receiver, None),
    };
    (role, host.map(|h| strip_brackets(&h).to_string()))
}

/// A mapping's CPU must be one this process may run on.
fn check_mapping_cpus(cli: &Cli, cpus: &[usize]) -> Result<(), UsageError> {
    for m in &cli.mapping {
        if let CpuSpec::Cpu(c) = m.cpu
            && !cpus.contains(&c)
        {
            return Err(UsageError(format!(
                "invalid value '{},{},{}' for '-m': CPU {c} is not available (this process \
                 may use CPUs {})",
                m.threads,
                m.cpu,
                m.host.as_deref().unwrap_or(""),
                cpu_list(cpus)
            )));
        }
    }
    Ok(())
}

/// The data ports: -m lists them; -P (Linux) sets the count, the later of the two wins as
/// in ntttcp-for-linux. A mapping sets one sender thread per port unless -n is given.
fn port_plans(
    cli: &Cli,
    matches: &ArgMatches,
    role_host: &Option<String>,
) -> Result<Vec<PortPlan>, UsageError> {
    let mut ports: Vec<PortPlan> = cli
        .mapping
        .iter()
        .flat_map(|m| {
            let host = m.host.clone().or_else(|| role_host.clone());
            (0..m.threads).map(move |_| PortPlan {
                host: host.clone(),
                cpu: m.cpu,
            })
        })
        .collect();
    let p_after_m = match (matches.index_of("ports"), matches.index_of("mapping")) {
        (Some(_), None) => true,
        (Some(p), Some(m)) => p > m,
        _ => false,
    };
    if let Some(p) = cli.ports.filter(|_| p_after_m) {
        if cli.mapping.len() > 1 {
            return Err(UsageError(format!(
                "-P {p} cannot resize {} mappings; give each mapping its thread count",
                cli.mapping.len()
            )));
        }
        let template = ports.first().cloned().unwrap_or(PortPlan {
            host: role_host.clone(),
            cpu: CpuSpec::Any,
        });
        ports = vec![template; p as usize];
    }
    if ports.is_empty() {
        ports = vec![
            PortPlan {
                host: role_host.clone(),
                cpu: CpuSpec::Any,
            };
            config::DEFAULT_PORTS as usize
        ];
    }
    Ok(ports)
}

/// The sync port sits below the base port, Windows tokens 1000 above each data port, the
/// -sp hand-out port after them: all of it must fit in 1-65535.
fn check_port_range(
    cli: &Cli,
    base_port: u16,
    ports: usize,
    dialect: Dialect,
) -> Result<(), UsageError> {
    let err = |m: String| Err(UsageError(m));
    let sync = !cli.no_sync;
    if sync && dialect == Dialect::Linux && base_port < 2 {
        return err(format!(
            "invalid value '{base_port}' for '-p': the sync port is one below it, so the \
             base port must be at least 2 (or use -N)"
        ));
    }
    let windows_sync = sync && dialect == Dialect::Windows;
    if cli.sync_ports && !windows_sync {
        return err(
            "-sp (port hand-out) is part of Windows NTttcp's sync: use it on a \
                    Windows-dialect line without -ns"
                .into(),
        );
    }
    if windows_sync && ports >= 1000 {
        return err(format!(
            "{ports} threads: Windows sync uses data port + 1000 per thread, so fewer than \
             1000 threads (or -ns)"
        ));
    }
    let handout = usize::from(cli.sync_ports);
    let token_offset = if windows_sync { 1000 } else { 0 };
    let last = base_port as usize + ports - 1 + handout + token_offset;
    if base_port == 0 || last > u16::MAX as usize {
        return err(format!(
            "invalid value '{base_port}' for '-p': {ports} ports from {base_port} end at \
             {last}, above 65535"
        ));
    }
    Ok(())
}

/// Flags that belong to one role, or to the sync handshake.
fn check_role_flags(cli: &Cli, role: Role, sync: bool) -> Result<(), UsageError> {
    let err = |m: &str| Err(UsageError(m.into()));
    let only = |flag: &str, what: &str, on: Role| {
        Err(UsageError(
            format!("{flag} ({what}) is only for the {on:?} role").to_lowercase(),
        ))
    };
    match role {
        Role::Sender if cli.multi_client => return only("-M", "multi-client mode", Role::Receiver),
        Role::Sender if cli.hold => return only("-H", "hold mode", Role::Receiver),
        Role::Receiver if cli.last_client => return only("-L", "last client", Role::Sender),
        Role::Loopback if cli.multi_client || cli.last_client || cli.hold || cli.daemon => {
            return err("--loopback runs one test in the foreground: drop -M, -L, -H and -D");
        }
        _ => {}
    }
    if !sync && (cli.multi_client || cli.last_client) {
        return err("multi-client tests (-M, -L) need the sync handshake: drop -N");
    }
    if role == Role::Receiver
        && (cli.bandwidth.is_some() || cli.thread_throttle.is_some() || cli.fq_rate_limit.is_some())
    {
        return err(
            "rate limits (-B, --fq-rate-limit, -thr) apply to the sender: drop them on the \
             receiver",
        );
    }
    Ok(())
}

/// -a and -f are the sender's; -f's pinned ports must fit, one per connection
/// (`threads` sender threads in all).
fn check_source(cli: &Cli, role: Role, threads: usize) -> Result<(), UsageError> {
    let err = |m: String| Err(UsageError(m));
    if role == Role::Receiver && (cli.source_address.is_some() || cli.source_port.is_some()) {
        return err("source address and ports (-a, -nic, -f) apply to the sender".into());
    }
    if let Some(f) = cli.source_port {
        let conns = threads * cli.connections.unwrap_or(1) as usize;
        let last = usize::from(f) + conns - 1;
        if f <= 1024 || last > usize::from(u16::MAX) {
            return err(format!(
                "invalid value '{f}' for '-f': {conns} pinned source ports from {f} must lie \
                 within 1025-65535 (they would end at {last})"
            ));
        }
    }
    Ok(())
}

/// --timeout (seconds) or Windows -to (milliseconds; 0 = an hour, at least 100 ms).
fn timeout_of(cli: &Cli) -> Duration {
    match (cli.timeout, cli.timeout_ms) {
        (Some(s), _) => Duration::from_secs(s.into()),
        (None, Some(0)) => Duration::from_secs(3600),
        (None, Some(ms)) => Duration::from_millis(ms.max(100)),
        (None, None) => config::DEFAULT_TIMEOUT,
    }
}

/// Rules of UDP and the zero-copy paths.
fn check_transport(cli: &Cli, role: Role, protocol: Protocol) -> Result<(), UsageError> {
    let err = |m: &str| Err(UsageError(m.into()));
    if cli.sendfile && role == Role::Receiver {
        return err("-Z/--sendfile applies to the sender: drop it on the receiver");
    }
    if cli.skip_rx_copy && role == Role::Sender {
        return err("--skip-rx-copy applies to the receiver: drop it on the sender");
    }
    if protocol == Protocol::Tcp {
        return Ok(());
    }
    if cli.no_delay {
        return err("--no-delay (TCP_NODELAY) is not applicable for UDP (-u)");
    }
    if cli.sendfile {
        return err(
            "-Z/--sendfile cannot stamp datagrams with sequence numbers: it is for TCP, not \
             UDP (-u)",
        );
    }
    if cli.io == Some(IoMode::Async) {
        return err("--io async is for TCP: UDP (-u) senders use blocking sends");
    }
    Ok(())
}

/// The bounds of `-b` (typed as `flag`): at most `config::MAX_BUFFER` bytes per call over
/// TCP; over UDP at most what one datagram carries (65507 bytes over IPv4, 65527 over
/// IPv6) and, on a sender, at least the stamp.
fn check_size(cli: &Cli, role: Role, protocol: Protocol, flag: &str) -> Result<(), UsageError> {
    let Some(b) = cli.buffer else { return Ok(()) };
    let bytes = b.0;
    let bad = |why: String| {
        Err(UsageError(format!(
            "invalid value '{bytes}' for '{flag}': {why}"
        )))
    };
    if protocol == Protocol::Tcp {
        if bytes > config::MAX_BUFFER as u64 {
            return bad(format!(
                "at most {} bytes (1G) per send or receive",
                config::MAX_BUFFER
            ));
        }
        return Ok(());
    }
    let v6 = cli.ipv6
        || cli
            .sender
            .iter()
            .flatten()
            .chain(cli.receiver.iter().flatten())
            .any(|h| strip_brackets(h).parse::<std::net::Ipv6Addr>().is_ok())
        || cli.mapping.iter().any(|m| {
            m.host
                .as_deref()
                .is_some_and(|h| h.parse::<std::net::Ipv6Addr>().is_ok())
        });
    let (max, family) = if v6 {
        (crate::data::udp::MAX_PAYLOAD_V6, "IPv6")
    } else {
        (crate::data::udp::MAX_PAYLOAD_V4, "IPv4")
    };
    if bytes > max as u64 {
        return bad(format!(
            "a UDP datagram carries at most {max} bytes over {family} (-u)"
        ));
    }
    if role != Role::Receiver && (bytes as usize) < crate::data::udp::STAMP_LEN {
        return bad(format!(
            "UDP datagrams carry a {}-byte sequence and time stamp, so they are at least {} \
             bytes",
            crate::data::udp::STAMP_LEN,
            crate::data::udp::STAMP_LEN
        ));
    }
    Ok(())
}

/// Role-specific address rules: a sender needs a receiver address for every port, a
/// receiver may only listen on a local address, loopback runs only on loopback.
fn check_hosts(role: Role, ports: &mut [PortPlan], ipv6: bool) -> Result<(), UsageError> {
    for plan in ports.iter_mut() {
        match (role, &plan.host) {
            (Role::Sender, None) => {
                return Err(UsageError(
                    "the sender needs the receiver's address: -s ADDR or -m N,CPU,ADDR".into(),
                ));
            }
            (Role::Sender, Some(_)) => {}
            (Role::Loopback, None) => plan.host = Some(loopback_host(ipv6).into()),
            (Role::Loopback, Some(h)) => match h.parse::<IpAddr>() {
                Ok(ip) if ip.is_loopback() => {}
                _ => {
                    return Err(UsageError(format!(
                        "--loopback runs on the loopback interface; '{h}' is not a loopback \
                         address"
                    )));
                }
            },
            (Role::Receiver, None) => {}
            (Role::Receiver, Some(h)) => {
                if h.parse::<IpAddr>().is_err() {
                    return Err(UsageError(format!(
                        "invalid receiver address '{h}': give a local IP address to listen on"
                    )));
                }
            }
        }
    }
    Ok(())
}

/// `0-1` or `0,2,5` for messages.
fn cpu_list(cpus: &[usize]) -> String {
    match (cpus.first(), cpus.last()) {
        (Some(a), Some(b)) if b - a + 1 == cpus.len() => format!("{a}-{b}"),
        _ => cpus
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(","),
    }
}

/// A default sender configuration for tests elsewhere in the crate.
#[cfg(test)]
pub(crate) fn test_config() -> Config {
    let args: Vec<OsString> = ["ntttcp", "-s", "127.0.0.1"].map(OsString::from).to_vec();
    match parse(&args, &[0]) {
        Ok(Parsed::Run(c, _)) => *c,
        other => panic!("{other:?}"),
    }
}

#[cfg(test)]
mod tests;
