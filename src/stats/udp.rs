//! A UDP receiver's accounting between two samples, and over several threads.

use crate::data::Sample;
use crate::report::UdpResult;

/// What the stamps say between two samples of a UDP receiver's worker (`ops` =
/// datagrams).
pub(crate) fn udp_between(a: &Sample, b: &Sample) -> UdpResult {
    let (x, y) = (&a.udp, &b.udp);
    let expected = y.expected.saturating_sub(x.expected);
    let received = y.received.saturating_sub(x.received);
    let unstamped = y.unstamped.saturating_sub(x.unstamped);
    // Only unstamped datagrams: nothing says what was lost, doubled or reordered.
    let known = |v: u64| (expected > 0 || unstamped == 0).then_some(v);
    let lost = expected.saturating_sub(received);
    UdpResult {
        datagrams: b.ops.saturating_sub(a.ops),
        expected,
        lost: known(lost),
        loss_percent: percent(lost, expected),
        duplicates: known(y.duplicates.saturating_sub(x.duplicates)),
        out_of_order: known(y.out_of_order.saturating_sub(x.out_of_order)),
        unstamped,
        jitter_ms: y.jitter_ms(),
    }
}

/// The sum of several threads' UDP results: a figure unknown on any thread is unknown
/// in total; jitter is the mean of the threads that have one.
pub(crate) fn udp_sum<'a>(all: impl IntoIterator<Item = &'a UdpResult>) -> UdpResult {
    let mut t = UdpResult {
        lost: Some(0),
        duplicates: Some(0),
        out_of_order: Some(0),
        ..UdpResult::default()
    };
    let add = |a: Option<u64>, b: Option<u64>| a.zip(b).map(|(a, b)| a + b);
    let (mut jitter, mut n) = (0.0, 0);
    for u in all {
        t.datagrams += u.datagrams;
        t.expected += u.expected;
        t.lost = add(t.lost, u.lost);
        t.duplicates = add(t.duplicates, u.duplicates);
        t.out_of_order = add(t.out_of_order, u.out_of_order);
        t.unstamped += u.unstamped;
        if let Some(j) = u.jitter_ms {
            jitter += j;
            n += 1;
        }
    }
    t.jitter_ms = (n > 0).then(|| jitter / f64::from(n));
    t.loss_percent = t.lost.and_then(|l| percent(l, t.expected));
    t
}

fn percent(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 * 100.0 / whole as f64)
}
