//! Every cross-flag rule: the parsed flags → a `Config`, or a one-line `UsageError` that
//! names the flag as typed.

use std::net::IpAddr;

use clap::ArgMatches;

mod workload;

use super::args::Cli;
use super::assemble::{data_opts, pid_file_of, role_of, show_of, streams_of, sync_of, timeout_of};
use super::values::{CpuSpec, strip_brackets};
use super::{dialect, typed_flag};
use crate::config::{
    self, Config, Dialect, IoMode, Phases, PortPlan, Protocol, Role, UsageError, loopback_host,
};

/// Every cross-flag rule lives here.
pub(super) fn to_config(
    cli: Cli,
    matches: &ArgMatches,
    normalized: &dialect::Normalized,
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
    let latency_default = latency_default(&cli);
    let threads_per_port = threads_per_port(&cli, latency_default);
    if latency_default {
        ports.truncate(1);
    }
    let base_port = cli.port.unwrap_or(config::DEFAULT_PORT);
    let sync = sync_of(&cli, dialect);
    check_port_range(
        &cli,
        base_port,
        ports.len(),
        dialect,
        &typed_flag("port", normalized),
    )?;
    check_role_flags(&cli, role, sync.is_on())?;
    check_source(&cli, role, ports.len() * threads_per_port as usize)?;
    let protocol = if cli.udp {
        Protocol::Udp
    } else {
        Protocol::Tcp
    };
    check_transport(&cli, role, protocol)?;
    check_start_at(&cli, role, sync)?;
    let rr = typed_flag("rr", normalized);
    workload::check_workload(&cli, role, protocol, sync, &rr)?;
    check_size(&cli, role, protocol, &typed_flag("buffer", normalized))?;
    let timeout = timeout_of(&cli);
    let pid_file = pid_file_of(&cli)?;
    check_hosts(role, &mut ports, cli.ipv6, &host_flag(&cli, normalized))?;
    let sender_conns =
        ports.len() * threads_per_port as usize * cli.connections.unwrap_or(1) as usize;
    Ok(Config {
        role,
        data: data_opts(&cli, dialect, protocol, sender_conns),
        streams: streams_of(&cli, ports, threads_per_port, base_port, latency_default),
        timeline: Phases {
            warmup: cli.warmup.unwrap_or(0),
            duration: cli.duration.unwrap_or(config::DEFAULT_DURATION),
            cooldown: cli.cooldown.unwrap_or(0),
        },
        sync,
        timeout,
        start_at: cli.start_at,
        repeat: cli.repeat.unwrap_or(1),
        sync_keepalive: keepalive_of(&cli),
        source: config::Source {
            addr: cli.source_address,
            device: None,
            port: cli.source_port,
            flag: typed_flag("source-address", normalized),
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
        show: show_of(&cli),
    })
}

/// Whether a latency test takes its one-connection layout: `--rr` without `-m`, `-P` or
/// `-n` (any of them keeps its meaning).
fn latency_default(cli: &Cli) -> bool {
    cli.workloads.rr.is_some()
        && cli.mapping.is_empty()
        && cli.ports.is_none()
        && cli.threads.is_none()
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
    if let Some(p) = cli.ports.filter(|_| p_after_m(matches)) {
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

/// Whether `-P` came after `-m` (the later of the two sets the port count).
fn p_after_m(matches: &ArgMatches) -> bool {
    match (matches.index_of("ports"), matches.index_of("mapping")) {
        (Some(_), None) => true,
        (Some(p), Some(m)) => p > m,
        _ => false,
    }
}

/// A `-P` that changes the port count a single `-m` asked for says so.
pub(super) fn ports_override(cli: &Cli, matches: &ArgMatches) -> Option<String> {
    let (p, [m]) = (cli.ports?, cli.mapping.as_slice()) else {
        return None;
    };
    (p_after_m(matches) && p != m.threads).then(|| {
        format!(
            "-P {p} after -m: {p} ports (and sender threads) instead of the mapping's {}",
            m.threads
        )
    })
}

/// A line read as Windows NTttcp's because of a Windows-only spelling, where that changed
/// a default the user did not set (the send size, the sync ports), says so once.
pub(super) fn dialect_changed(cli: &Cli, normalized: &dialect::Normalized) -> Option<String> {
    let token = normalized.chosen_by.as_ref()?;
    let (role, _) = role_of(cli);
    let sends = role != Role::Receiver || cli.workloads.reverse || cli.workloads.bidir;
    let mut changed = Vec::new();
    if sends && !cli.udp && cli.buffer.is_none() && cli.workloads.rr.is_none() {
        changed.push("NTttcp's 64 KiB send buffer instead of ntttcp-for-linux's 128 KiB");
    }
    if !cli.no_sync {
        changed.push(
            "NTttcp's sync (a port 1000 above each data port) instead of ntttcp-for-linux's \
             (the port below the base)",
        );
    }
    (!changed.is_empty()).then(|| {
        format!(
            "'{token}' made this a Windows NTttcp line: {}; --dialect linux reads it as \
             ntttcp-for-linux's",
            changed.join(", and ")
        )
    })
}

/// The sync port sits below the base port, Windows tokens 1000 above each data port, the
/// -sp hand-out port after them: all of it must fit in 1-65535.
fn check_port_range(
    cli: &Cli,
    base_port: u16,
    ports: usize,
    dialect: Dialect,
    flag: &str,
) -> Result<(), UsageError> {
    let err = |m: String| Err(UsageError(m));
    let sync = !cli.no_sync;
    if sync && dialect == Dialect::Linux && base_port < 2 {
        return err(format!(
            "invalid value '{base_port}' for '{flag}': the sync port is one below it, so the \
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
    if base_port == 0 {
        return err(format!(
            "invalid value '0' for '{flag}': a port is 1 to 65535"
        ));
    }
    let handout = usize::from(cli.sync_ports);
    let token_offset = if windows_sync { 1000 } else { 0 };
    let last = base_port as usize + ports - 1 + handout + token_offset;
    if last > u16::MAX as usize {
        return err(format!(
            "invalid value '{base_port}' for '{flag}': {ports} ports from {base_port} end at \
             {last}, above 65535"
        ));
    }
    Ok(())
}

/// Flags that belong to one role, or to the sync handshake.
fn check_role_flags(cli: &Cli, role: Role, sync: bool) -> Result<(), UsageError> {
    let err = |m: &str| Err(UsageError(m.into()));
    let only = |flag: &str, what: &str, on: Role| {
        let on = format!("{on:?}").to_lowercase();
        Err(UsageError(format!(
            "{flag} ({what}) is only for the {on} role"
        )))
    };
    match role {
        Role::Sender if cli.multi_client => return only("-M", "multi-client mode", Role::Receiver),
        Role::Sender if cli.hold => return only("-H", "hold mode", Role::Receiver),
        Role::Receiver if cli.last_client => return only("-L", "last client", Role::Sender),
        Role::Receiver if cli.repeat.is_some() => {
            return err("--repeat is the sender's: a receiver serves a series with -H");
        }
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

/// Rules of UDP and the zero-copy paths.
/// Sender threads per port: `-n`, one with a Windows mapping or a latency test's default
/// layout, else ntttcp-for-linux's default.
fn threads_per_port(cli: &Cli, latency_default: bool) -> u32 {
    match (cli.threads, cli.mapping.is_empty()) {
        (Some(n), _) => n,
        (None, false) => 1,
        (None, true) if latency_default => 1,
        (None, true) => config::DEFAULT_THREADS_PER_PORT,
    }
}

/// `--sync-keepalive`: its seconds, 0 for none, 30 by default.
fn keepalive_of(cli: &Cli) -> Option<std::time::Duration> {
    match cli.sync_keepalive {
        None => Some(config::DEFAULT_SYNC_KEEPALIVE),
        Some(0) => None,
        Some(s) => Some(std::time::Duration::from_secs(s.into())),
    }
}

/// `--start-at` is the sender's (its receiver follows through the handshake), with
/// ntttcp-for-linux's sync, whose handshake carries it, or none.
fn check_start_at(cli: &Cli, role: Role, sync: config::SyncMode) -> Result<(), UsageError> {
    if cli.start_at.is_none() {
        return Ok(());
    }
    if role == Role::Receiver {
        return Err(UsageError(
            "--start-at applies to the sender: its receiver learns the instant in the \
             handshake"
                .into(),
        ));
    }
    if matches!(sync, config::SyncMode::Windows { .. }) {
        return Err(UsageError(
            "--start-at needs ntttcp-for-linux's sync (a Linux-dialect line) or none (-N)".into(),
        ));
    }
    Ok(())
}

fn check_transport(cli: &Cli, role: Role, protocol: Protocol) -> Result<(), UsageError> {
    let err = |m: &str| Err(UsageError(m.into()));
    if cli.sendfile_always && !cli.sendfile {
        return err("--sendfile-always goes with -Z/--sendfile: add -Z or drop it");
    }
    if cli.sendfile && role == Role::Receiver {
        return err("-Z/--sendfile applies to the sender: drop it on the receiver");
    }
    if cli.notsent_lowat.is_some() && role == Role::Receiver {
        return err("--notsent-lowat applies to the sender: drop it on the receiver");
    }
    if cli.rcvlowat.is_some() && role == Role::Sender {
        return err("--rcvlowat applies to the receiver: drop it on the sender");
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
    if cli.notsent_lowat.is_some() {
        return err("--notsent-lowat (TCP_NOTSENT_LOWAT) is not applicable for UDP (-u)");
    }
    if cli.congestion.is_some() {
        return err("--congestion (TCP_CONGESTION) is not applicable for UDP (-u)");
    }
    if cli.rcvlowat.is_some() {
        return err("--rcvlowat (SO_RCVLOWAT of a TCP stream) is not applicable for UDP (-u)");
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
                "a size from 1 byte to 1G ({} bytes) per send or receive",
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

/// The flag the receiver addresses came from, as typed: -m where there is one, else -r.
fn host_flag(cli: &Cli, normalized: &dialect::Normalized) -> String {
    match cli.mapping.is_empty() {
        true => typed_flag("receiver", normalized),
        false => typed_flag("mapping", normalized),
    }
}

/// Role-specific address rules: a sender needs a receiver address for every port, a
/// receiver may only listen on a local address, loopback runs only on loopback (`flag`:
/// where the addresses came from, as typed).
fn check_hosts(
    role: Role,
    ports: &mut [PortPlan],
    ipv6: bool,
    flag: &str,
) -> Result<(), UsageError> {
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
                        "invalid receiver address '{h}' for '{flag}': give a local IP \
                         address to listen on"
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
