//! What the sender checks and works out before its first connection: the receiver's
//! addresses, the descriptors the run needs, whether `-Z` pays, and the UDP datagram
//! size.

use std::net::{SocketAddr, ToSocketAddrs};

use anyhow::{Context, Result, anyhow, bail};

use crate::config::{Config, IoMode, Lowat, Protocol, Role, UsageError};
use crate::data::udp;
use crate::report::{Note, Notes};
use crate::sys::limits;

/// `-Z` when every receiver is on this host's own addresses: the sender copies instead,
/// and says so (None: keep the configuration). Over the loopback device sendfile()
/// costs more than the copy it saves: the kernel splices the file into the socket one
/// 4 KiB page at a time (a page-cache lookup, a pipe buffer and a fragment each) and
/// the receiver copies out of each fragment, where a copying sender fills 32 KiB
/// pages (measured in docs/benchmarks.md).
pub(super) fn zero_copy_plan(
    cfg: &Config,
    targets: &[SocketAddr],
    notes: Notes<'_>,
) -> Option<Config> {
    let z = cfg.data.zero_copy;
    if !z.sendfile || cfg.data.sendfile_always || cfg.data.protocol != Protocol::Tcp {
        return None;
    }
    if !targets
        .iter()
        .all(|t| crate::sys::net::is_local_address(t.ip().to_canonical()))
    {
        return None;
    }
    notes(Note::Warn(format!(
        "-Z: the receiver ({}) is on this host, where sendfile() costs more than the copy \
         it saves (the kernel splices the file in 4 KiB pages and the receiver copies \
         each); sending with copies (--sendfile-always keeps sendfile)",
        targets[0].ip()
    )));
    let mut c = cfg.clone();
    c.data.zero_copy.sendfile = false;
    Some(c)
}

/// `-Z` that sends with sendfile() keeps the kernel's TCP_NOTSENT_LOWAT unless
/// `--notsent-lowat` gives one (None: keep the configuration): towards a limit of
/// 128 KiB sendfile() measured x0.69 of copying on one veth stream, without one x1.1
/// (docs/benchmarks.md).
pub(super) fn sendfile_lowat(cfg: &Config) -> Option<Config> {
    let by_path = cfg.data.sockopts.notsent_lowat == Lowat::ByPath;
    if !(cfg.data.zero_copy.sendfile && by_path) {
        return None;
    }
    let mut c = cfg.clone();
    c.data.sockopts.notsent_lowat = Lowat::Kernel;
    Some(c)
}

/// Fails, before anything is connected, when the run would need more descriptors than
/// this process may open, naming the number; the need is what is open now plus every
/// socket and runtime the run will open (in loopback mode the receiver's ends too).
pub(super) fn check_descriptors(cfg: &Config, hosts: usize) -> Result<()> {
    let connections = cfg.sender_connections() as u64;
    let sessions = if cfg.linux_sync() { hosts as u64 } else { 0 };
    let tokens = if cfg.windows_sync() {
        cfg.streams.ports.len() as u64
    } else {
        0
    };
    let async_workers = cfg.data.protocol == Protocol::Tcp && cfg.data.io_mode == IoMode::Async;
    let mut budget = limits::Budget {
        sockets: connections + sessions + tokens,
        runtimes: if async_workers {
            cfg.sender_threads().len() as u64
        } else {
            0
        },
    };
    if cfg.role == Role::Loopback {
        // This process also accepts every connection, with a runtime per receiver port.
        budget.sockets += connections + sessions + tokens;
        budget.runtimes += cfg.streams.ports.len() as u64;
    }
    let (soft, hard) = limits::raise_nofile();
    let need = budget.need(limits::open_descriptors());
    if soft > 0 && need > soft {
        bail!(
            "{connections} connections need {need} file descriptors, but this process may \
             open {soft} (hard limit {hard}); raise it (ulimit -n {need}) or use fewer \
             connections"
        );
    }
    Ok(())
}

/// A copy of `cfg` whose send size is the UDP datagram size: without `-b` the largest
/// that crosses every target's path unfragmented, else `-b` capped to what UDP carries;
/// and how many datagrams one send carries (more than one with UDP GSO, which needs
/// datagrams that cross the path unfragmented).
pub(super) fn udp_plan(
    cfg: &Config,
    targets: &[SocketAddr],
    notes: Notes<'_>,
) -> Result<(Config, usize)> {
    let mut c = cfg.clone();
    let max = targets
        .iter()
        .map(udp::max_payload)
        .min()
        .unwrap_or(udp::MAX_PAYLOAD_V4);
    // The probe takes the -a address and device (any port, not a pinned -f one).
    let source = cfg
        .source
        .addr
        .map(|ip| (SocketAddr::new(ip, 0), cfg.source.device.clone()));
    let mut path = max;
    for t in targets {
        let fits = udp::path_payload(*t, source.as_ref())
            .with_context(|| format!("cannot find the path MTU to receiver {t}"))?;
        path = path.min(fits);
    }
    if cfg.data.fit_datagrams {
        c.data.send_size = path;
        notes(Note::Info(format!(
            "UDP datagrams of {path} bytes: the largest that fits the path MTU (set with -b)"
        )));
    } else if cfg.data.send_size > max {
        // Parsing checked the bound for the address family it could see; a host name
        // that resolved to IPv4 can still be over it.
        return Err(UsageError(format!(
            "invalid value '{}' for '-b': a UDP datagram carries at most {max} bytes to {}",
            cfg.data.send_size, targets[0]
        ))
        .into());
    }
    let size = c.data.send_size.max(udp::STAMP_LEN);
    let mut per_send = 1;
    if cfg.data.udp_offload && size <= path {
        per_send = (max / size).min(udp::GSO_MAX_SEGMENTS);
    }
    if per_send > 1 {
        match udp::gso_available(targets[0], size) {
            Ok(()) => notes(Note::Info(format!(
                "UDP segmentation offload (GSO): up to {per_send} datagrams per send \
                 (--no-udp-offload for one)"
            ))),
            Err(e) => {
                notes(Note::Warn(format!(
                    "UDP segmentation offload (GSO) is not available ({e}): one datagram \
                     per send"
                )));
                per_send = 1;
            }
        }
    }
    Ok((c, per_send))
}

/// Name or address → socket address, preferring the configured family. A name that does
/// not resolve is a usage error (exit 2), as a bad address is on the receiver.
fn resolve(host: &str, port: u16, ipv6: bool) -> Result<SocketAddr> {
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| UsageError(format!("cannot resolve receiver address '{host}': {e}")))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv6() == ipv6)
        .or(addrs.first())
        .copied()
        .ok_or_else(|| anyhow!("receiver address '{host}' resolves to nothing"))
}

/// Every data port's address, resolved (names, IPv4/IPv6).
pub(super) fn resolve_targets(cfg: &Config) -> Result<Vec<SocketAddr>> {
    (0..cfg.streams.ports.len())
        .map(|j| resolve(&cfg.host_of(j), cfg.port(j), cfg.streams.ipv6))
        .collect()
}
