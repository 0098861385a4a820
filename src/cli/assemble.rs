//! The parsed flags' values as the parts of a `Config` (the rules that check them first
//! are in `rules`).

use std::time::Duration;

use super::args::Cli;
use super::values::{SockBuf, strip_brackets};
use crate::config::{self, Dialect, IoMode, Protocol, Role, SyncMode, UsageError};

/// The connection layout: ports, threads per port, connections per thread, placement
/// (`latency_default`: the ports and threads are a latency test's one).
pub(super) fn streams_of(
    cli: &Cli,
    ports: Vec<config::PortPlan>,
    threads_per_port: u32,
    base_port: u16,
    latency_default: bool,
) -> config::Streams {
    config::Streams {
        ports,
        threads_per_port,
        conns_per_thread: cli.connections.unwrap_or(1),
        base_port,
        ipv6: cli.ipv6,
        placement: cli.placement.unwrap_or(config::DEFAULT_PLACEMENT),
        latency_default,
    }
}

/// What is shown besides the report (display only).
pub(super) fn show_of(cli: &Cli) -> config::Show {
    config::Show {
        quiet: cli.quiet,
        verbose: cli.verbose,
        tcp_retrans: cli.show_tcp_retrans,
        nic: cli.show_nic_packets.clone(),
        interrupts: cli.show_dev_interrupts.clone(),
        interval: None,
    }
}

/// What the data connections carry: sizes (NTttcp's buffers are 64 KiB, ntttcp-for-linux
/// sends 128 KiB), offloads, zero-copy, socket options and rate limits.
pub(super) fn data_opts(
    cli: &Cli,
    dialect: Dialect,
    protocol: Protocol,
    sender_conns: usize,
) -> config::DataOpts {
    let size = cli.buffer.map(|b| b.0 as usize);
    // The low-water marks' default by path, where the OS has them (Linux).
    let by_path = if crate::sys::socket::LOW_WATER_MARKS {
        config::Lowat::ByPath
    } else {
        config::Lowat::Kernel
    };
    config::DataOpts {
        protocol,
        send_size: size.unwrap_or(match dialect {
            Dialect::Windows => config::NTTTCP_BUFFER,
            Dialect::Linux => config::DEFAULT_SEND_SIZE,
        }),
        recv_size: size.unwrap_or(config::DEFAULT_RECV_SIZE),
        recv_by_path: size.is_none() && protocol == Protocol::Tcp,
        fit_datagrams: cli.udp && size.is_none(),
        udp_offload: !cli.no_udp_offload,
        zero_copy: config::ZeroCopy {
            sendfile: cli.sendfile,
            skip_rx_copy: cli.skip_rx_copy,
        },
        sendfile_always: cli.sendfile_always,
        workload: match (cli.workloads.rr, cli.workloads.reverse, cli.workloads.bidir) {
            (Some(b), ..) => config::Workload::RequestResponse { size: b.0 as usize },
            (None, true, _) => config::Workload::Reverse,
            (None, false, true) => config::Workload::Bidir,
            _ if cli.workloads.connect_rate => config::Workload::ConnectRate,
            (None, false, false) => config::Workload::Stream,
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
            congestion: cli.congestion,
            tos: cli.tos,
            notsent_lowat: lowat(cli.notsent_lowat, by_path),
            rcvlowat: lowat(
                cli.rcvlowat,
                match protocol {
                    Protocol::Tcp => by_path,
                    Protocol::Udp => config::Lowat::Kernel,
                },
            ),
        },
        rate_limit: cli.bandwidth.map(|r| r.0).filter(|r| *r > 0.0),
        thread_rate: cli.thread_throttle.filter(|k| *k > 0.0).map(|k| k * 1024.0),
    }
}

/// A low-water mark flag (`--notsent-lowat`, `--rcvlowat`): `-1` the kernel's, a size
/// that size, and without the flag `default`.
fn lowat(given: Option<SockBuf>, default: config::Lowat) -> config::Lowat {
    match given {
        None => default,
        Some(SockBuf(Some(n))) => config::Lowat::Fixed(n),
        Some(SockBuf(None)) => config::Lowat::Kernel,
    }
}

/// How the sides synchronize: a Windows-dialect line uses NTttcp's tokens.
pub(super) fn sync_of(cli: &Cli, dialect: Dialect) -> SyncMode {
    match (cli.no_sync, dialect) {
        (true, _) => SyncMode::Off,
        (false, Dialect::Linux) => SyncMode::Linux,
        (false, Dialect::Windows) => SyncMode::Windows {
            port_handout: cli.sync_ports,
        },
    }
}

/// `--pid-file`, made absolute (a daemon changes its directory).
pub(super) fn pid_file_of(cli: &Cli) -> Result<Option<std::path::PathBuf>, UsageError> {
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
pub(super) fn role_of(cli: &Cli) -> (Role, Option<String>) {
    let (role, host) = match (&cli.receiver, &cli.sender, cli.loopback) {
        (_, _, true) => (Role::Loopback, None),
        (_, Some(addr), _) => (Role::Sender, addr.clone()),
        (Some(addr), None, _) => (Role::Receiver, addr.clone()),
        (None, None, _) => (Role::Receiver, None),
    };
    (role, host.map(|h| strip_brackets(&h).to_string()))
}

/// --timeout (seconds) or Windows -to (milliseconds; 0 = an hour, at least 100 ms).
pub(super) fn timeout_of(cli: &Cli) -> Duration {
    match (cli.timeout, cli.timeout_ms) {
        (Some(s), _) => Duration::from_secs(s.into()),
        (None, Some(0)) => Duration::from_secs(3600),
        (None, Some(ms)) => Duration::from_millis(ms.max(100)),
        (None, None) => config::DEFAULT_TIMEOUT,
    }
}
