//! A request/response test's figures (`--rr`) and a connection-rate test's
//! (`--connect-rate`), which neither NTTTCP has: a table after the Windows layout's
//! Totals, and lines in the Linux layout's Totals block.

use std::fmt::Write;

use crate::report::{ConnectResult, Latency, Report, RrResult};

/// The percentile columns of a row: p50, p90, p99, p99.9 and max, or n/a.
fn latency_cells(l: Option<Latency>) -> String {
    l.map_or_else(
        || {
            format!(
                "{:>8} {:>8} {:>8} {:>9} {:>9}",
                "n/a", "n/a", "n/a", "n/a", "n/a"
            )
        },
        |l| {
            format!(
                "{:>8.1} {:>8.1} {:>8.1} {:>9.1} {:>9.1}",
                l.p50, l.p90, l.p99, l.p999, l.max
            )
        },
    )
}

/// The table of whichever latency-minded test `r` is, if any.
pub(crate) fn table(r: &Report, hide_per_thread: bool) -> Option<String> {
    rr_table(r, hide_per_thread).or_else(|| connect_table(r, hide_per_thread))
}

/// A connection-rate test's table: a row per thread (unless `hide_per_thread`) and the
/// total.
fn connect_table(r: &Report, hide_per_thread: bool) -> Option<String> {
    let total = r.connect?;
    let mut o = String::from(
        "\n\nThread  Connections      Conn/s  p50(us)  p90(us)  p99(us) p99.9(us)   Max(us)\n",
    );
    o.push_str("====== ============ =========== ======== ======== ======== ========= =========\n");
    let row = |o: &mut String, name: &str, x: &ConnectResult| {
        let l = latency_cells(x.latency_us);
        let _ = writeln!(
            o,
            "{name:>6} {:>12} {:>11.1} {l}",
            x.connections, x.connections_per_second
        );
    };
    if !hide_per_thread {
        for t in &r.threads {
            if let Some(x) = &t.connect {
                row(&mut o, &t.index.to_string(), x);
            }
        }
    }
    row(&mut o, "Total", &total);
    if total.latency_us.is_none() {
        o.push_str("connect times are taken by the sender: see its report\n");
    } else if total.timed < total.connections {
        let _ = writeln!(
            o,
            "{} of {} connects untimed: their slot's thread was preempted by this host's \
             scheduler meanwhile, or they were reset before it looked",
            total.connections - total.timed,
            total.connections
        );
    }
    Some(o)
}

/// A line for a test whose `*` workers `--placement auto` pinned because both ends are on
/// this host: the CPUs chosen, and that towards another host nothing is pinned (so a
/// figure measured here gains what a test between two hosts does not).
fn placed_locally(r: &Report) -> Option<String> {
    let auto = r.params.placement == crate::config::Placement::Auto;
    let cpus: Vec<String> = r
        .threads
        .iter()
        .filter_map(|t| t.cpu)
        .map(|c| c.to_string())
        .collect();
    (auto && !cpus.is_empty()).then(|| {
        format!(
            "placement auto pinned the workers to CPU {} (both ends on this host: a \
             connection's ends share a core; towards another host nothing is pinned)\n",
            cpus.join(", ")
        )
    })
}

/// A request/response test's table: a row per thread (unless `hide_per_thread`) and
/// the total.
fn rr_table(r: &Report, hide_per_thread: bool) -> Option<String> {
    let total = r.rr?;
    let mut o = String::from("\n\n");
    if r.params.latency_default {
        let n = r.params.conns_per_thread;
        let _ = writeln!(
            o,
            "{n} connection{}: a latency test's default without -m, -P or -n",
            if n == 1 { "" } else { "s" }
        );
    }
    if let Some(line) = placed_locally(r) {
        o.push_str(&line);
    }
    o.push_str(
        "Thread  Size(B) Transactions   Trans/s  p50(us)  p90(us)  p99(us) p99.9(us)   Max(us)\n",
    );
    o.push_str(
        "====== ======== ============ ========= ======== ======== ======== ========= =========\n",
    );
    let row = |o: &mut String, name: &str, x: &RrResult| {
        let l = latency_cells(x.latency_us);
        let _ = writeln!(
            o,
            "{name:>6} {:>8} {:>12} {:>9.1} {l}",
            x.size, x.transactions, x.transactions_per_second
        );
    };
    if !hide_per_thread {
        for t in &r.threads {
            if let Some(x) = &t.rr {
                row(&mut o, &t.index.to_string(), x);
            }
        }
    }
    row(&mut o, "Total", &total);
    if total.latency_us.is_none() {
        o.push_str("latency is timed by the sender: see its report\n");
    }
    Some(o)
}

/// The Linux layout's lines of whichever latency-minded test `r` is (none otherwise).
pub(crate) fn lines(r: &Report, verbose: bool) -> Vec<String> {
    let mut o = rr_lines(r, verbose);
    o.extend(connect_lines(r, verbose));
    o
}

/// The three lines of one thread's (`who` = "thread N ") or the total's figures: the
/// count, its rate, and the times' percentiles (`what` names them).
fn block(
    o: &mut Vec<String>,
    who: &str,
    count: String,
    rate: String,
    what: &str,
    l: Option<Latency>,
) {
    o.push(format!("\t {who}{count}"));
    o.push(format!("\t {who}{rate}"));
    let times = l
        .as_ref()
        .map_or("n/a (timed by the sender)".into(), percentiles);
    o.push(format!("\t {who}{what}\t:{times}"));
}

/// `lines_of(x)` for each thread first with `verbose` when there are several, then for
/// `total`.
fn per_thread<T: Copy>(
    r: &Report,
    verbose: bool,
    of: impl Fn(&crate::report::Thread) -> Option<T>,
    total: T,
    mut lines_of: impl FnMut(&mut Vec<String>, &str, T),
) -> Vec<String> {
    let mut o = Vec::new();
    if verbose && r.threads.len() > 1 {
        for t in &r.threads {
            if let Some(x) = of(t) {
                lines_of(&mut o, &format!("thread {} ", t.index), x);
            }
        }
    }
    lines_of(&mut o, "", total);
    o
}

/// A connection-rate test's lines: connections, their rate and the connect times'
/// percentiles, per thread first with `verbose` when there are several.
fn connect_lines(r: &Report, verbose: bool) -> Vec<String> {
    let Some(total) = r.connect else {
        return Vec::new();
    };
    per_thread(
        r,
        verbose,
        |t| t.connect,
        total,
        |o, who, x: ConnectResult| {
            let count = format!("connections\t:{}", x.connections);
            let rate = format!("conn/s\t:{:.2}", x.connections_per_second);
            block(o, who, count, rate, "connect", x.latency_us);
        },
    )
}

/// A request/response test's lines: transactions, their rate and the latency
/// percentiles, per thread first with `verbose` when there are several.
fn rr_lines(r: &Report, verbose: bool) -> Vec<String> {
    let Some(total) = r.rr else {
        return Vec::new();
    };
    per_thread(
        r,
        verbose,
        |t| t.rr,
        total,
        |o, who, x: RrResult| {
            let count = format!(
                "transactions\t:{} of {} bytes each way",
                x.transactions, x.size
            );
            let rate = format!("trans/s\t:{:.2}", x.transactions_per_second);
            block(o, who, count, rate, "latency", x.latency_us);
        },
    )
}

/// What an interval line adds for a request/response test (", 51234.0 trans/s, p50
/// 36.9 us, p99 75.5 us, max ...") or a connection-rate test (", 15800.0 conn/s, ...");
/// nothing otherwise.
pub(crate) fn interval_text(iv: &crate::timeline::IntervalSample) -> String {
    let (rate, what, l) = match (iv.rr, iv.connect) {
        (Some(x), _) => (x.transactions_per_second, "trans/s", x.latency_us),
        (None, Some(x)) => (x.connections_per_second, "conn/s", x.latency_us),
        (None, None) => return String::new(),
    };
    let lat = l.map_or(String::new(), |l| {
        format!(
            ", p50 {:.1} us, p99 {:.1} us, max {:.1} us",
            l.p50, l.p99, l.max
        )
    });
    format!(", {rate:.1} {what}{lat}")
}

/// "p50 12.3 us, p90 ..., max ... us".
fn percentiles(l: &Latency) -> String {
    format!(
        "p50 {:.1} us, p90 {:.1} us, p99 {:.1} us, p99.9 {:.1} us, max {:.1} us",
        l.p50, l.p90, l.p99, l.p999, l.max
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::fixture::seed_report;

    fn rr_report(latency: Option<Latency>) -> Report {
        let mut r = seed_report();
        let x = RrResult {
            size: 64,
            transactions: 1000,
            transactions_per_second: 500.0,
            latency_us: latency,
        };
        r.rr = Some(x);
        for t in &mut r.threads {
            t.rr = Some(x);
        }
        r
    }

    const L: Latency = Latency {
        min: 10.0,
        mean: 20.0,
        p50: 18.25,
        p90: 30.0,
        p99: 55.5,
        p999: 90.0,
        max: 120.0,
    };

    #[test]
    fn the_table_has_a_row_per_thread_and_the_total() {
        let t = table(&rr_report(Some(L)), false).unwrap();
        let rows: Vec<&str> = t.lines().filter(|l| l.contains(" 1000 ")).collect();
        assert_eq!(rows.len(), 5, "{t}");
        assert!(rows[4].starts_with(" Total       64         1000     500.0     18.2     30.0     55.5      90.0     120.0"), "{t}");
        let hidden = table(&rr_report(Some(L)), true).unwrap();
        assert_eq!(hidden.lines().filter(|l| l.contains(" 1000 ")).count(), 1);
        assert!(table(&seed_report(), false).is_none());
    }

    #[test]
    fn a_receiver_says_where_latency_is() {
        let t = table(&rr_report(None), true).unwrap();
        assert!(t.contains("n/a"), "{t}");
        assert!(t.contains("timed by the sender"), "{t}");
        let l = lines(&rr_report(None), false);
        assert_eq!(l[2], "\t latency\t:n/a (timed by the sender)");
    }

    #[test]
    fn interval_lines_add_the_rate_and_latency() {
        use crate::timeline::{IntervalConnect, IntervalLatency, IntervalRr, IntervalSample};
        let mut iv = IntervalSample {
            start_s: 0.0,
            end_s: 1.0,
            direction: crate::config::Direction::Send,
            thread_bytes: vec![10],
            planned_s: None,
            udp_loss: None,
            rr: None,
            connect: None,
            cpu_busy_percent: None,
        };
        assert_eq!(interval_text(&iv), "");
        let mut x = IntervalRr {
            transactions: 10,
            transactions_per_second: 20.0,
            latency_us: None,
        };
        iv.rr = Some(x);
        assert_eq!(interval_text(&iv), ", 20.0 trans/s");
        x.latency_us = Some(IntervalLatency {
            p50: 1.25,
            p99: 2.0,
            max: 3.0,
        });
        iv.rr = Some(x);
        assert_eq!(
            interval_text(&iv),
            ", 20.0 trans/s, p50 1.2 us, p99 2.0 us, max 3.0 us"
        );
        iv.rr = None;
        iv.connect = Some(IntervalConnect {
            connections: 500,
            connections_per_second: 500.0,
            latency_us: x.latency_us,
        });
        assert_eq!(
            interval_text(&iv),
            ", 500.0 conn/s, p50 1.2 us, p99 2.0 us, max 3.0 us"
        );
    }

    #[test]
    fn a_connection_rate_report_has_its_table_and_lines() {
        let mut r = seed_report();
        let x = ConnectResult {
            connections: 3000,
            connections_per_second: 1500.0,
            latency_us: Some(L),
            timed: 2990,
        };
        r.connect = Some(x);
        for t in &mut r.threads {
            t.connect = Some(x);
        }
        let t = table(&r, false).unwrap();
        assert!(t.contains("10 of 3000 connects untimed"), "{t}");
        let rows: Vec<&str> = t
            .lines()
            .filter(|l| l.contains(" 3000 ") && !l.contains("untimed"))
            .collect();
        assert_eq!(rows.len(), 5, "{t}");
        assert!(
            rows[4].starts_with(" Total         3000      1500.0     18.2     30.0     55.5"),
            "{t}"
        );
        let l = lines(&r, false);
        assert_eq!(l[0], "\t connections\t:3000");
        assert_eq!(l[1], "\t conn/s\t:1500.00");
        assert!(l[2].starts_with("\t connect\t:p50 18.2 us"), "{l:?}");
        r.connect = Some(ConnectResult {
            latency_us: None,
            ..x
        });
        let t = table(&r, true).unwrap();
        assert!(t.contains("taken by the sender"), "{t}");
    }

    #[test]
    fn rtt_percentiles_show_with_verbose_in_every_layout() {
        let mut r = seed_report();
        r.rtt_us = Some(crate::report::Rtt {
            samples: 12,
            p50: 250.0,
            p99: 900.0,
            max: 1500.0,
        });
        let line = "RTT over the window (TCP_INFO every second, 12 samples): p50 250 us, p99 \
                    900 us, max 1500 us";
        assert!(!crate::render::console::render(&r, false).contains(line));
        assert!(!crate::render::linux::render(&r, false).contains("rtt p50"));
        assert!(
            !crate::render::xml::linux(&r).contains("rtt_p50"),
            "-V only"
        );
        r.params.verbose = true;
        let xml = crate::render::xml::linux(&r);
        assert!(
            xml.contains("<rtt_p50 metric=\"us\">250</rtt_p50>"),
            "{xml}"
        );
        let json = crate::render::json::linux(&r);
        assert!(json.contains("\"rttP50\" : {"), "{json}");
        assert!(crate::render::console::render(&r, false).contains(line));
        let l = crate::render::linux::render(&r, true);
        assert!(
            l.contains("rtt p50/p99/max\t:250/900/1500 us (12 samples)"),
            "{l}"
        );
    }

    #[test]
    fn linux_lines_give_the_percentiles() {
        let l = lines(&rr_report(Some(L)), false);
        assert_eq!(l[0], "\t transactions\t:1000 of 64 bytes each way");
        assert_eq!(l[1], "\t trans/s\t:500.00");
        assert_eq!(
            l[2],
            "\t latency\t:p50 18.2 us, p90 30.0 us, p99 55.5 us, p99.9 90.0 us, max 120.0 us"
        );
        assert_eq!(lines(&rr_report(Some(L)), true).len(), 15);
        assert!(lines(&seed_report(), true).is_empty());
    }
}
