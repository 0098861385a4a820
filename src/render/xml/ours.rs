//! What the XML files carry beyond the originals, after their totals: the direction of
//! a turned or both-ways report, a UDP receiver's accounting, the request/response and
//! connection-rate figures, and with `-V` the TCP round-trip times; each only where it
//! applies, so a plain test's file has the originals' elements alone. The `-j` file
//! carries the same blocks under the same names (camelCase there).

use super::Doc;
use crate::report::Report;

/// Every block of ours that `r` has, in order.
pub(super) fn blocks(d: &mut Doc, r: &Report) {
    direction(d, r);
    udp(d, 1, r.udp.as_ref());
    rr(d, 1, r.rr.as_ref());
    connect(d, 1, r.connect.as_ref());
    if r.params.verbose {
        rtt(d, r.rtt_us.as_ref());
    }
}

/// Every block of ours that thread `t` has, inside its `<thread>`.
pub(super) fn thread_blocks(d: &mut Doc, t: &crate::report::Thread) {
    udp(d, 2, t.udp.as_ref());
    rr(d, 2, t.rr.as_ref());
    connect(d, 2, t.connect.as_ref());
}

/// `<direction>` where a report's bytes did not go its side's usual way, or went both
/// ways (the originals have no such element: a plain test's file is theirs exactly).
fn direction(d: &mut Doc, r: &Report) {
    if r.turned().is_some() {
        d.el(1, "direction", super::super::direction_word(r.direction));
    }
}

/// A UDP receiver's accounting (the originals have none of it); nothing otherwise.
fn udp(d: &mut Doc, depth: usize, u: Option<&crate::report::UdpResult>) {
    let Some(u) = u else { return };
    d.open(depth, "udp", "");
    let depth = depth + 1;
    d.metric(depth, "datagrams", "count", u.datagrams);
    d.metric(depth, "datagrams_expected", "count", u.expected);
    // What this host cannot know is left out rather than written as a number.
    if let Some(lost) = u.lost {
        d.metric(depth, "datagrams_lost", "count", lost);
    }
    if let Some(p) = u.loss_percent {
        d.metric(depth, "loss", "%", format!("{p:.3}"));
    }
    if let Some(v) = u.duplicates {
        d.metric(depth, "duplicates", "count", v);
    }
    if let Some(v) = u.out_of_order {
        d.metric(depth, "out_of_order", "count", v);
    }
    d.metric(depth, "unstamped", "count", u.unstamped);
    if let Some(j) = u.jitter_ms {
        d.metric(depth, "jitter", "ms", format!("{j:.3}"));
    }
    d.close(depth - 1, "udp");
}

/// A request/response test's figures (`--rr`; the originals have none); nothing
/// otherwise. Latency, which only the sender times, is left out on a receiver.
fn rr(d: &mut Doc, depth: usize, x: Option<&crate::report::RrResult>) {
    let Some(x) = x else { return };
    d.open(depth, "request_response", "");
    let depth = depth + 1;
    d.metric(depth, "request_size", "B", x.size);
    d.metric(depth, "transactions", "count", x.transactions);
    let tps = format!("{:.3}", x.transactions_per_second);
    d.metric(depth, "transactions_per_second", "count/s", tps);
    percentiles(d, depth, "latency", x.latency_us);
    d.close(depth - 1, "request_response");
}

/// A connection-rate test's `<connect_rate>` block (the originals have none), nothing
/// otherwise. Connect times, which only the sender takes, are left out on a receiver.
fn connect(d: &mut Doc, depth: usize, x: Option<&crate::report::ConnectResult>) {
    let Some(x) = x else { return };
    d.open(depth, "connect_rate", "");
    let depth = depth + 1;
    d.metric(depth, "connections", "count", x.connections);
    let cps = format!("{:.3}", x.connections_per_second);
    d.metric(depth, "connections_per_second", "count/s", cps);
    percentiles(d, depth, "connect", x.latency_us);
    d.close(depth - 1, "connect_rate");
}

/// `<{prefix}_min metric="us">` ... `_max`, nothing without times.
fn percentiles(d: &mut Doc, depth: usize, prefix: &str, l: Option<crate::report::Latency>) {
    let l = l.map(|l| [l.min, l.mean, l.p50, l.p90, l.p99, l.p999, l.max]);
    let names = ["min", "mean", "p50", "p90", "p99", "p999", "max"];
    for (name, v) in names.iter().zip(l.iter().flatten()) {
        d.metric(depth, &format!("{prefix}_{name}"), "us", format!("{v:.3}"));
    }
}

/// The round-trip times sampled over the window (the originals have none); nothing
/// without samples.
fn rtt(d: &mut Doc, x: Option<&crate::report::Rtt>) {
    let Some(x) = x else { return };
    d.metric(1, "rtt_samples", "count", x.samples);
    for (tag, v) in [("rtt_p50", x.p50), ("rtt_p99", x.p99), ("rtt_max", x.max)] {
        d.metric(1, tag, "us", format!("{v:.0}"));
    }
}
