//! The rules of the workloads beyond NTTTCP's bulk stream (`--rr`, `-R`, `--bidir`,
//! `--connect-rate`): whose flags they are, what they need and what they refuse.

use super::super::args::Cli;
use crate::config::{self, Protocol, Role, SyncMode, UsageError};

/// The first flag given that only our bulk sender honours (UDP, sendfile, the rate
/// limits), which `-R` and `--rr` refuse.
fn bulk_sender_flag(cli: &Cli, protocol: Protocol) -> Option<&'static str> {
    [
        (protocol == Protocol::Udp, "-u/--udp"),
        (cli.sendfile, "-Z/--sendfile"),
        (cli.bandwidth.is_some(), "-B"),
        (cli.fq_rate_limit.is_some(), "--fq-rate-limit"),
        (cli.thread_throttle.is_some(), "-thr"),
    ]
    .into_iter()
    .find_map(|(given, flag)| given.then_some(flag))
}

/// Rules of `-R` and `--bidir`: a sender's choice over TCP; the receiver's sending takes
/// no -Z or rate limit of ours.
fn check_reverse(cli: &Cli, role: Role, protocol: Protocol) -> Result<(), UsageError> {
    let flag = match (cli.workloads.reverse, cli.workloads.bidir) {
        (true, _) => "-R/--reverse",
        (false, true) => "--bidir",
        (false, false) => return Ok(()),
    };
    if role == Role::Receiver {
        return Err(UsageError(format!(
            "{flag} applies to the sender: the receiver sends when a sender asks"
        )));
    }
    match bulk_sender_flag(cli, protocol) {
        Some(other) => Err(UsageError(format!(
            "{flag} cannot be combined with {other} yet: the receiver's sending obeys none"
        ))),
        None => Ok(()),
    }
}

/// Rules of `--connect-rate`: a sender's choice over TCP with ntttcp-for-linux's sync
/// (the receiver must know before the test that its connections will not stay), a fresh
/// source port per connection, and no data options.
fn check_connect_rate(
    cli: &Cli,
    role: Role,
    protocol: Protocol,
    sync: SyncMode,
) -> Result<(), UsageError> {
    if !cli.workloads.connect_rate {
        return Ok(());
    }
    let err = |m: String| Err(UsageError(m));
    if role == Role::Receiver {
        return err(
            "--connect-rate applies to the sender: the receiver counts what its senders open"
                .into(),
        );
    }
    if sync != SyncMode::Linux {
        return err(
            "--connect-rate needs ntttcp-for-linux's sync (a Linux-dialect line without -N): \
             the receiver must be told before the test that its connections close at once"
                .into(),
        );
    }
    if cli.source_port.is_some() {
        return err(
            "--connect-rate cannot be combined with -f: each connection needs a \
                    fresh source port"
                .into(),
        );
    }
    match bulk_sender_flag(cli, protocol) {
        Some(flag) => err(format!(
            "--connect-rate cannot be combined with {flag}: no data moves"
        )),
        None => Ok(()),
    }
}

/// Rules of `--rr` (`rr`: the flag as typed): a sender's choice over TCP, with bulk-only
/// options refused; and of both: Windows NTttcp's sync has no way to ask the receiver
/// for them.
pub(super) fn check_workload(
    cli: &Cli,
    role: Role,
    protocol: Protocol,
    sync: SyncMode,
    rr: &str,
) -> Result<(), UsageError> {
    check_reverse(cli, role, protocol)?;
    check_connect_rate(cli, role, protocol, sync)?;
    if matches!(sync, SyncMode::Windows { .. })
        && (cli.workloads.rr.is_some() || cli.workloads.reverse || cli.workloads.bidir)
    {
        let flag = match (cli.workloads.reverse, cli.workloads.bidir) {
            (true, _) => "--reverse",
            (false, true) => "--bidir",
            (false, false) => rr,
        };
        return Err(UsageError(format!(
            "{flag} needs ntttcp-for-linux's sync (a Linux-dialect line) or none (-ns): \
             Windows NTttcp's sync cannot ask the receiver whether it supports it"
        )));
    }
    let Some(size) = cli.workloads.rr else {
        return Ok(());
    };
    let err = |m: String| Err(UsageError(m));
    if role == Role::Receiver {
        return err(format!(
            "{rr} applies to the sender: the receiver answers whatever its senders ask"
        ));
    }
    if size.0 == 0 || size.0 > config::MAX_RR_SIZE as u64 {
        return err(format!(
            "invalid value '{}' for '{rr}': a request is 1 byte to {} MiB",
            size.0,
            config::MAX_RR_SIZE >> 20
        ));
    }
    match bulk_sender_flag(cli, protocol) {
        Some(flag) => err(format!(
            "{rr} cannot be combined with {flag}: it is for bulk tests"
        )),
        None => Ok(()),
    }
}
