//! Latency figures: a request/response test's transactions and round trips, a
//! connection-rate test's connections and connect times (from the window's counts and the
//! sender workers' histograms), and a bulk test's TCP_INFO round-trip times.

use hdrhistogram::Histogram;

use crate::report::{ConnectResult, Latency, Report, RrResult, Rtt};

use super::per_second;

/// Adds the request/response figures to `report`, a test of `size`-byte requests:
/// `hists[i]` holds thread i's round trips (None on a receiver, which does not time them).
pub(crate) fn attach(report: &mut Report, size: usize, hists: &[Option<Histogram<u64>>]) {
    let size = size.max(1);
    for (i, t) in report.threads.iter_mut().enumerate() {
        let h = hists.get(i).and_then(Option::as_ref);
        t.rr = Some(result(size, t.bytes, t.seconds, h));
    }
    let all = crate::data::merged(hists.iter().flatten().cloned());
    report.rr = Some(result(
        size,
        report.totals.bytes,
        report.duration_s,
        all.as_ref(),
    ));
}

/// Adds the connection-rate figures to `report`, whose calls are the connections:
/// `hists[i]` holds thread i's connect times (None on a receiver).
pub(crate) fn attach_connect(report: &mut Report, hists: &[Option<Histogram<u64>>]) {
    let figures = |n: u64, seconds: f64, h: Option<&Histogram<u64>>| ConnectResult {
        connections: n,
        connections_per_second: per_second(n as f64, seconds),
        latency_us: h.filter(|h| !h.is_empty()).map(latency),
        timed: h.map_or(0, Histogram::len),
    };
    for (i, t) in report.threads.iter_mut().enumerate() {
        let h = hists.get(i).and_then(Option::as_ref);
        t.connect = Some(figures(t.calls, t.seconds, h));
    }
    let all = crate::data::merged(hists.iter().flatten().cloned());
    let n = report.threads.iter().map(|t| t.calls).sum();
    report.connect = Some(figures(n, report.duration_s, all.as_ref()));
}

/// One thread's (or all threads') figures.
fn result(size: usize, bytes: u64, seconds: f64, h: Option<&Histogram<u64>>) -> RrResult {
    let transactions = bytes / size as u64;
    RrResult {
        size,
        transactions,
        transactions_per_second: per_second(transactions as f64, seconds),
        latency_us: h.filter(|h| !h.is_empty()).map(latency),
    }
}

/// Percentiles of a histogram of nanoseconds, in microseconds.
pub(crate) fn latency(h: &Histogram<u64>) -> Latency {
    let us = |ns: u64| ns as f64 / 1000.0;
    Latency {
        min: us(h.min()),
        mean: h.mean() / 1000.0,
        p50: us(h.value_at_quantile(0.50)),
        p90: us(h.value_at_quantile(0.90)),
        p99: us(h.value_at_quantile(0.99)),
        p999: us(h.value_at_quantile(0.999)),
        max: us(h.max()),
    }
}

/// The percentiles of round-trip times sampled in microseconds.
pub(crate) fn rtt(h: &Histogram<u64>) -> Rtt {
    Rtt {
        samples: h.len(),
        p50: h.value_at_quantile(0.5) as f64,
        p99: h.value_at_quantile(0.99) as f64,
        max: h.max() as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_known_round_trips() {
        let mut h = Histogram::<u64>::new(3).unwrap();
        // 1..=1000 microseconds, once each.
        for us in 1..=1000u64 {
            h.record(us * 1000).unwrap();
        }
        let l = latency(&h);
        let near = |got: f64, want: f64| (got - want).abs() <= want * 0.002 + 0.001;
        assert!(near(l.min, 1.0), "{l:?}");
        assert!(near(l.p50, 500.0), "{l:?}");
        assert!(near(l.p90, 900.0), "{l:?}");
        assert!(near(l.p99, 990.0), "{l:?}");
        assert!(near(l.p999, 999.0), "{l:?}");
        assert!(near(l.max, 1000.0), "{l:?}");
        assert!(near(l.mean, 500.5), "{l:?}");
    }

    #[test]
    fn rtt_percentiles_of_samples() {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for us in [100, 100, 100, 200, 5000] {
            h.record(us).unwrap();
        }
        let r = rtt(&h);
        assert_eq!(r.samples, 5);
        assert_eq!(r.p50, 100.0);
        assert!((r.max - 5000.0).abs() <= 5.0, "{r:?}");
        assert!((r.p99 - 5000.0).abs() <= 5.0, "{r:?}");
    }

    #[test]
    fn transactions_are_whole_requests_per_second() {
        let r = result(1000, 10_500, 2.0, None);
        assert_eq!(r.transactions, 10);
        assert_eq!(r.transactions_per_second, 5.0);
        assert_eq!(r.latency_us, None);
    }
}
