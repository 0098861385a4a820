//! ntttcp-for-linux's console layout (`--format linux`): `HH:MM:SS LEVEL:`
//! log lines, "Real-time throughput" lines, and its Totals block, so scripts that regex
//! the C tool's output read ours.

use std::fmt::Write;

use crate::report::{Report, Side};
use crate::stats;

/// The local wall-clock time as `HH:MM:SS` (from /etc/localtime via the C library).
pub(crate) fn clock() -> String {
    crate::sys::host::local_hms()
}

/// One `HH:MM:SS INFO: text` line.
pub(crate) fn info(text: &str) -> String {
    format!("{} INFO: {text}\n", clock())
}

/// ntttcp-for-linux's throughput format: bits per second scaled by 1000 up to Gbps
/// (never further), two decimals, unit glued on: `40.15Gbps`.
pub(crate) fn format_throughput(bytes: u64, seconds: f64) -> String {
    let mut x = stats::bits_per_second(bytes, seconds);
    let units = ["bps", "Kbps", "Mbps", "Gbps"];
    let mut u = 0;
    while x > 1000.0 && u < units.len() - 1 {
        x /= 1000.0;
        u += 1;
    }
    format!("{x:.2}{}", units[u])
}

/// The zero-copy notice, then the `--show-tcp-retrans`, `--show-nic-packets` and
/// `--show-dev-interrupts` lines, without the log stamp; empty when none applies.
pub(crate) fn extra_lines(r: &Report) -> Vec<String> {
    let rate = |v: u64| stats::per_second(v as f64, r.duration_s);
    let mut o = Vec::new();
    if let Some(e) = &r.end.early {
        o.push(format!("test ended early\t:{}", e.line()));
    }
    if let Some(d) = r.disturbance() {
        o.push(format!("test disturbed\t:{d}"));
    }
    let z = r.params.zero_copy;
    if z.sendfile {
        o.push(
            "zero-copy\t:sendfile (-Z): data is not copied from user space; not comparable \
             with copying runs"
                .into(),
        );
    }
    if z.skip_rx_copy && r.side == Side::Receiver {
        o.push(
            "zero-copy\t:MSG_TRUNC (--skip-rx-copy): received data is discarded, not copied; \
             not comparable with copying runs"
                .into(),
        );
    }
    if let Some(x) = &r.tcp_retransmits {
        o.push("tcp retransmit:".to_string());
        for (name, v) in [
            ("retrans_segments", r.network.retransmits),
            ("lost_retrans", x.lost_retrans),
            ("syn_retrans", x.syn_retrans),
            ("fast_retrans", x.fast_retrans),
            ("forward_retrans", x.forward_retrans),
            ("slowStart_retrans", x.slow_start_retrans),
            ("retrans_fail", x.retrans_fail),
        ] {
            o.push(format!("\t {name}/sec\t:{:.2}", rate(v)));
        }
    }
    if let Some(n) = &r.nic {
        o.push("total packets:".into());
        o.push(format!("\t tx_packets\t:{}", n.tx_packets));
        o.push(format!("\t rx_packets\t:{}", n.rx_packets));
    }
    if let Some(d) = &r.device_interrupts {
        o.push("interrupts:".into());
        o.push(format!("\t total\t\t:{}", d.total));
        o.push(format!("\t interrupts/sec\t:{:.3}", rate(d.total)));
        if let Some(per) = stats::packets_per_interrupt(r) {
            o.push(format!("\t pkts/interrupt\t:{per:.2}"));
        }
    }
    o
}

/// The UDP lines of the Totals block: datagrams sent (sender) or the receiver's
/// accounting, per thread first with `verbose` when there are several.
pub(crate) fn udp_lines(r: &Report, verbose: bool) -> Vec<String> {
    let Some(total) = r.udp else {
        let sent: u64 = r.threads.iter().map(|t| t.calls).sum();
        return vec![format!("\t datagrams sent\t:{sent}")];
    };
    let na = |v: Option<f64>, unit: &str| v.map_or("n/a".into(), |v| format!("{v:.3}{unit}"));
    let mut o = Vec::new();
    let mut block = |who: String, u: &crate::report::UdpResult| {
        o.push(format!("\t {who}datagrams\t:{}", u.datagrams));
        let count = |v: Option<u64>| v.map_or("n/a".to_string(), |v| v.to_string());
        o.push(format!(
            "\t {who}lost\t\t:{} of {} ({})",
            count(u.lost),
            u.expected,
            na(u.loss_percent, "%")
        ));
        o.push(format!("\t {who}duplicated\t:{}", count(u.duplicates)));
        o.push(format!("\t {who}out of order\t:{}", count(u.out_of_order)));
        o.push(format!("\t {who}jitter\t\t:{}", na(u.jitter_ms, " ms")));
        if u.unstamped > 0 {
            o.push(format!(
                "\t {who}unstamped\t:{} (sent by another tool: loss unknown)",
                u.unstamped
            ));
        }
    };
    if verbose && r.threads.len() > 1 {
        for t in &r.threads {
            if let Some(u) = &t.udp {
                block(format!("thread {} ", t.index), u);
            }
        }
    }
    block(String::new(), &total);
    o
}

/// The per-thread table (with `verbose`), "N connections tested" (sender), the Totals
/// block and the closing dashes.
pub(crate) fn render(r: &Report, verbose: bool) -> String {
    let l = stats::linux(r);
    let t = stats::windows(r);
    let mut o = String::new();
    let mut line = |text: String| o.push_str(&info(&text));
    if verbose {
        line("\tThread\tTime(s)\tThroughput".into());
        line("\t======\t=======\t==========".into());
        for th in &r.threads {
            let tp = format_throughput(th.bytes, r.duration_s);
            line(format!("\t{}\t {:.2}\t {tp}", th.index, r.duration_s));
        }
    }
    if r.side == Side::Sender {
        line(format!("{} connections tested", r.connections));
    }
    if let Some(way) = r.turned() {
        line(way.into());
    }
    line("#####  Totals:  #####".into());
    line(format!("test duration\t:{:.2} seconds", r.duration_s));
    line(format!(
        "longest stall\t:{:.2} seconds (from {:.2} s)",
        r.longest_stall_s, r.longest_stall_from_s
    ));
    line(format!("total bytes\t:{}", r.totals.bytes));
    line(format!(
        "\t throughput\t:{}",
        format_throughput(r.totals.bytes, r.duration_s)
    ));
    if r.is_udp() {
        // As upstream, no retransmit line for UDP; ours adds what the stamps tell.
        for l in udp_lines(r, verbose) {
            line(l);
        }
    } else {
        line(format!("\t retrans segs\t:{}", t.retransmits));
    }
    for rr in crate::render::rr::lines(r, verbose) {
        line(rr);
    }
    for extra in extra_lines(r) {
        line(extra);
    }
    line(format!("cpu cores\t:{}", r.cpu.cores));
    line(format!("\t cpu speed\t:{:.3}MHz", r.cpu.mhz));
    line(format!("\t user\t\t:{:.2}%", r.cpu.user_percent));
    line(format!("\t system\t\t:{:.2}%", r.cpu.system_percent));
    line(format!("\t idle\t\t:{:.2}%", r.cpu.idle_percent));
    let percent = |v: Option<f64>| v.map_or_else(|| super::UNKNOWN.into(), |v| format!("{v:.2}%"));
    line(format!("\t iowait\t\t:{}", percent(r.cpu.iowait_percent)));
    line(format!("\t softirq\t:{}", percent(r.cpu.softirq_percent)));
    line(format!("\t cycles/byte\t:{:.2}", l.cycles_per_byte));
    // All CPUs' busy share, as Avg. CPU %: the original's per-process figure exceeds 100.
    line(format!("cpu busy (all)\t:{:.2}%", r.cpu.busy_percent));
    if let (true, Some(rtt)) = (verbose, stats::average_rtt_us(r)) {
        line(format!("tcpi rtt\t\t:{rtt} us"));
    }
    if let (true, Some(rtt)) = (verbose, r.rtt_us) {
        line(format!(
            "rtt p50/p99/max\t:{:.0}/{:.0}/{:.0} us ({} samples)",
            rtt.p50, rtt.p99, rtt.max, rtt.samples
        ));
    }
    let _ = writeln!(o, "{}", "-".repeat(57));
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throughput_format_matches_the_c_tool() {
        assert_eq!(format_throughput(15_070_396_416, 3.0), "40.19Gbps");
        assert_eq!(format_throughput(1000, 1.0), "8.00Kbps");
        assert_eq!(format_throughput(100, 1.0), "800.00bps");
        assert_eq!(
            format_throughput(125_000_000_000_000, 1.0),
            "1000000.00Gbps"
        );
        assert_eq!(format_throughput(5, 0.0), "0.00bps");
    }

    #[test]
    fn totals_block_without_timestamps() {
        let r = crate::stats::fixture::seed_with(|m| m.threads.truncate(1));
        let got = render(&r, true);
        // Strip the "HH:MM:SS " stamp of log lines; the dashes have none.
        let body: Vec<&str> = got
            .lines()
            .map(|l| if l.starts_with('-') { l } else { &l[9..] })
            .collect();
        let bytes = 138_834u64 * 65536;
        let gbps = bytes as f64 * 8.0 / 300.00515 / 1e6;
        let want = [
            "INFO: \tThread\tTime(s)\tThroughput".to_string(),
            "INFO: \t======\t=======\t==========".into(),
            format!("INFO: \t0\t 300.01\t {gbps:.2}Mbps"),
            "INFO: 4 connections tested".into(),
            "INFO: #####  Totals:  #####".into(),
            "INFO: test duration\t:300.01 seconds".into(),
            "INFO: longest stall\t:0.00 seconds (from 0.00 s)".into(),
            format!("INFO: total bytes\t:{bytes}"),
            format!("INFO: \t throughput\t:{gbps:.2}Mbps"),
            "INFO: \t retrans segs\t:60412".into(),
            "INFO: cpu cores\t:2".into(),
            "INFO: \t cpu speed\t:2793.000MHz".into(),
            "INFO: \t user\t\t:5.00%".into(),
            "INFO: \t system\t\t:10.07%".into(),
            "INFO: \t idle\t\t:84.92%".into(),
            "INFO: \t iowait\t\t:0.00%".into(),
            "INFO: \t softirq\t:0.00%".into(),
            format!(
                "INFO: \t cycles/byte\t:{:.2}",
                2793.0e6 * 300.00515 * 2.0 * (1.0 - 0.84925) / bytes as f64
            ),
            // All CPUs' busy share, 100 - idle - iowait (not the process's 120 s of 300).
            "INFO: cpu busy (all)\t:15.08%".into(),
            "-".repeat(57),
        ];
        assert_eq!(body, want);
        // Every log line starts with HH:MM:SS.
        let first = got.lines().next().unwrap();
        assert!(
            first.as_bytes()[2] == b':' && first.as_bytes()[5] == b':',
            "{first}"
        );
    }
}

#[cfg(test)]
mod udp_tests {
    use super::*;
    use crate::report::UdpResult;

    #[test]
    fn udp_lines_replace_retransmits_on_both_sides() {
        let udp =
            |m: &mut crate::report::Measured| m.params.protocol = crate::config::Protocol::Udp;
        let sender = render(&crate::stats::fixture::seed_with(udp), false);
        assert!(!sender.contains("retrans segs"), "{sender}");
        assert!(
            sender.contains("INFO: \t datagrams sent\t:547888\n"),
            "{sender}"
        );
        // The receiver's report, thread 0's figures as `first` leaves them.
        let receiver = |first: &dyn Fn(&mut UdpResult)| {
            crate::stats::fixture::seed_with(|m| {
                udp(m);
                m.side = Side::Receiver;
                for (i, t) in m.threads.iter_mut().enumerate() {
                    let mut u = UdpResult {
                        datagrams: 100,
                        expected: 110,
                        lost: Some(10),
                        loss_percent: Some(10.0 / 1.1),
                        duplicates: Some(i as u64),
                        out_of_order: Some(1),
                        unstamped: 0,
                        jitter_ms: Some(0.5),
                    };
                    if i == 0 {
                        first(&mut u);
                    }
                    t.udp = Some(u);
                }
            })
        };
        let r = receiver(&|_| {});
        let got = udp_lines(&r, false);
        assert_eq!(
            got,
            [
                "\t datagrams\t:400",
                "\t lost\t\t:40 of 440 (9.091%)",
                "\t duplicated\t:6",
                "\t out of order\t:4",
                "\t jitter\t\t:0.500 ms",
            ]
        );
        let verbose = udp_lines(&r, true);
        assert_eq!(verbose.len(), 5 * 5, "four threads, then the total");
        assert_eq!(verbose[0], "\t thread 0 datagrams\t:100");
        let some_unstamped = |u: &mut UdpResult| (u.unstamped, u.jitter_ms) = (7, None);
        assert!(
            udp_lines(&receiver(&some_unstamped), false)
                .contains(&"\t unstamped\t:7 (sent by another tool: loss unknown)".to_string())
        );
        // Nothing stamped on a thread: unknown figures say n/a, never 0.
        let r = receiver(&|u| {
            some_unstamped(u);
            (u.expected, u.lost, u.loss_percent) = (0, None, None);
            (u.duplicates, u.out_of_order) = (None, None);
        });
        let got = udp_lines(&r, false);
        assert_eq!(got[1], "\t lost\t\t:n/a of 330 (n/a)");
        assert_eq!(got[2], "\t duplicated\t:n/a");
    }
}

#[cfg(test)]
mod extra_tests {
    use super::*;
    use crate::report::DevInterrupts;
    use crate::stats::fixture::seed_report;
    use crate::sys::net::{NicPackets, TcpExt};

    /// The seed with every --show-* counter: 300.00515 s, so rates are v / 300.00515.
    pub(crate) fn seed_with_extras() -> Report {
        let mut r = seed_report();
        r.tcp_retransmits = Some(TcpExt {
            lost_retrans: 3,
            syn_retrans: 0,
            fast_retrans: 4296,
            forward_retrans: 0,
            slow_start_retrans: 30,
            retrans_fail: 0,
        });
        r.nic = Some(NicPackets {
            name: "eth0".into(),
            rx_packets: 2_161_992,
            tx_packets: 25_324_915,
        });
        r.device_interrupts = Some(DevInterrupts {
            pattern: "virtio".into(),
            total: 900_000,
        });
        r
    }

    #[test]
    fn show_lines_in_the_spec_layout() {
        let lines = extra_lines(&seed_with_extras());
        let want = [
            "tcp retransmit:",
            "\t retrans_segments/sec\t:201.37",
            "\t lost_retrans/sec\t:0.01",
            "\t syn_retrans/sec\t:0.00",
            "\t fast_retrans/sec\t:14.32",
            "\t forward_retrans/sec\t:0.00",
            "\t slowStart_retrans/sec\t:0.10",
            "\t retrans_fail/sec\t:0.00",
            "total packets:",
            "\t tx_packets\t:25324915",
            "\t rx_packets\t:2161992",
            "interrupts:",
            "\t total\t\t:900000",
            "\t interrupts/sec\t:2999.949",
            "\t pkts/interrupt\t:30.54",
        ];
        assert_eq!(lines, want);
        let r = seed_with_extras();
        let x = crate::render::xml::linux(&r);
        assert!(x.contains("<tcp_retransmits metric=\"retrans_segs\">60412</tcp_retransmits>"));
        assert!(
            x.contains("<tcp_retransmits metric=\"fast_retrans_per_sec\">14.32</tcp_retransmits>")
        );
        assert!(x.contains("<total_interrupts metric=\"count\">900000</total_interrupts>"));
        let j: serde_json::Value = serde_json::from_str(&crate::render::json::linux(&r)).unwrap();
        assert_eq!(j["ntttcps"]["tcp_retransmits"].as_array().unwrap().len(), 8);
        assert_eq!(j["ntttcps"]["interruptTotal"]["value"], "900000");
        let windows = crate::render::console::render(&r, true);
        assert!(windows.contains("\n\ntcp retransmit:\n\t retrans_segments/sec\t:201.37\n"));
    }
}
