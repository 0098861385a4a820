//! What the sender checks and works out before its first connection: the receiver's
//! addresses, the descriptors the run needs, whether `-Z` pays, and the UDP datagram
//! size.

use std::net::{SocketAddr, ToSocketAddrs};

use anyhow::{Context, Result, anyhow, bail};

use crate::config::{Config, IoMode, Lowat, Protocol, Role, UsageError};
use crate::data::udp;
use crate::plan::{Datagrams, Traffic};
use crate::report::{Note, Notes};
use crate::sys::limits;

/// What this sender sends, as far as this host decides: for TCP bulk data, whether `-Z`
/// pays and the TCP_NOTSENT_LOWAT that goes with it; the path decides the UDP datagram
/// size later (`fit_datagrams`).
pub(super) fn local_traffic(cfg: &Config, targets: &[SocketAddr], notes: Notes<'_>) -> Traffic {
    let mut traffic = Traffic::configured(cfg);
    if let Traffic::Bulk { send, .. } = &mut traffic {
        send.sendfile = send.sendfile && sendfile_pays(cfg, targets, notes);
        send.notsent_lowat = notsent_lowat(send.notsent_lowat, send.sendfile);
    }
    traffic
}

/// Whether `-Z` sends with sendfile() here: not when every receiver is on this host's
/// own addresses (unless `--sendfile-always`), and the sender says so. Over the loopback
/// device sendfile() costs more than the copy it saves: the kernel splices the file into
/// the socket one 4 KiB page at a time (a page-cache lookup, a pipe buffer and a
/// fragment each) and the receiver copies out of each fragment, where a copying sender
/// fills 32 KiB pages (measured in docs/benchmarks.md).
fn sendfile_pays(cfg: &Config, targets: &[SocketAddr], notes: Notes<'_>) -> bool {
    let local = targets
        .iter()
        .all(|t| crate::sys::net::is_local_address(t.ip().to_canonical()));
    if cfg.data.sendfile_always || !local {
        return true;
    }
    notes(Note::Warn(format!(
        "-Z: the receiver ({}) is on this host, where sendfile() costs more than the copy \
         it saves (the kernel splices the file in 4 KiB pages and the receiver copies \
         each); sending with copies (--sendfile-always keeps sendfile)",
        targets[0].ip()
    )));
    false
}

/// The TCP_NOTSENT_LOWAT of the sender's connections: sendfile() keeps the kernel's
/// unless `--notsent-lowat` gives one. Towards a limit of 128 KiB sendfile() measured
/// x0.69 of copying on one veth stream, without one x1.1 (docs/benchmarks.md).
fn notsent_lowat(asked: Lowat, sendfile: bool) -> Lowat {
    if sendfile && asked == Lowat::ByPath {
        Lowat::Kernel
    } else {
        asked
    }
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

/// The UDP datagrams this sender sends: without `-b` the largest that crosses every
/// target's path unfragmented, else `-b` capped to what UDP carries; and how many go in
/// one send (more than one with UDP GSO, which needs datagrams that cross the path
/// unfragmented).
pub(super) fn fit_datagrams(
    cfg: &Config,
    targets: &[SocketAddr],
    notes: Notes<'_>,
) -> Result<Datagrams> {
    if cfg.data.sockopts.pacing_rate.is_some() {
        notes(Note::Warn(
            "--fq-rate-limit on UDP sockets takes effect only where the fq qdisc runs on \
             the sending interface; -B limits UDP in ntttcp itself"
                .into(),
        ));
    }
    let max = targets
        .iter()
        .map(udp::max_payload)
        .min()
        .unwrap_or(udp::MAX_PAYLOAD_V4);
    let path = path_payload(cfg, targets, max)?;
    let mut size = cfg.data.send_size;
    if cfg.data.fit_datagrams {
        size = path;
        notes(Note::Info(format!(
            "UDP datagrams of {path} bytes: the largest that fits the path MTU (set with -b)"
        )));
    } else if size > max {
        // Parsing checked the bound for the address family it could see; a host name
        // that resolved to IPv4 can still be over it.
        return Err(UsageError(format!(
            "invalid value '{size}' for '-b': a UDP datagram carries at most {max} bytes to {}",
            targets[0]
        ))
        .into());
    }
    let stamped = size.max(udp::STAMP_LEN);
    let per_send = if cfg.data.udp_offload && stamped <= path {
        (max / stamped).min(udp::GSO_MAX_SEGMENTS)
    } else {
        1
    };
    Ok(Datagrams {
        size,
        per_send: offload(targets[0], stamped, per_send, notes),
    })
}

/// The largest datagram (at most `max`) that crosses every target's path unfragmented;
/// the probe takes the `-a` address and device (any port, not a pinned `-f` one).
fn path_payload(cfg: &Config, targets: &[SocketAddr], max: usize) -> Result<usize> {
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
    Ok(path)
}

/// `per_send` datagrams of `size` bytes per send where the kernel's segmentation offload
/// (GSO) takes them, else one; says which.
fn offload(target: SocketAddr, size: usize, per_send: usize, notes: Notes<'_>) -> usize {
    if per_send <= 1 {
        return 1;
    }
    match udp::gso_available(target, size) {
        Ok(()) => {
            notes(Note::Info(format!(
                "UDP segmentation offload (GSO): up to {per_send} datagrams per send \
                 (--no-udp-offload for one)"
            )));
            per_send
        }
        Err(e) => {
            notes(Note::Warn(format!(
                "UDP segmentation offload (GSO) is not available ({e}): one datagram per send"
            )));
            1
        }
    }
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
