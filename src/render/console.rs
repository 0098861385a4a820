//! The Windows NTttcp 5.39 console tables, byte for byte: two
//! empty lines before every header, fixed widths, three decimals, binary units.
//! The banner and "Network activity progressing..." are printed by the caller as the
//! run goes; this renders what follows them.

use std::fmt::Write;

use crate::report::{Report, UdpResult};
use crate::stats;

/// Renders the per-thread table (unless `hide_per_thread`) and the Totals tables.
pub(crate) fn render(r: &Report, hide_per_thread: bool) -> String {
    let mut o = String::new();
    if let Some(way) = r.turned() {
        let _ = write!(o, "\n\n{way}");
    }
    if !hide_per_thread {
        o.push_str("\n\nThread  Time(s) Throughput(KB/s) Avg B / Compl\n");
        o.push_str("======  ======= ================ =============\n");
        for t in r.threads.iter().map(stats::windows_thread) {
            let _ = writeln!(
                o,
                "{:>6} {:>8.3} {:>16.3} {:>13.3}",
                t.index, t.seconds, t.kb_per_s, t.avg_bytes_per_compl
            );
        }
    }
    let t = stats::windows(r);
    o.push_str("\n\n#####  Totals:  #####\n");
    o.push_str("\n\n   Bytes(MEG)    realtime(s) Avg Frame Size Throughput(MB/s)\n");
    o.push_str("================ =========== ============== ================\n");
    let _ = writeln!(
        o,
        "{:>16.6} {:>11.3} {:>14.3} {:>16.3}",
        t.meg, t.realtime, t.avg_frame_size, t.mb_per_s
    );
    o.push_str("\n\nThroughput(Buffers/s) Cycles/Byte       Buffers\n");
    o.push_str("===================== =========== =============\n");
    let _ = writeln!(
        o,
        "{:>21.3} {:>11.3} {:>13.3}",
        t.buffers_per_s, t.cycles_per_byte, t.buffers
    );
    o.push_str("\n\nDPCs(count/s) Pkts(num/DPC)   Intr(count/s) Pkts(num/intr)\n");
    o.push_str("============= ============= =============== ==============\n");
    let _ = writeln!(
        o,
        "{:>13} {:>13}   {:>13}  {:>13}",
        super::fixed3(t.dpcs_per_s),
        super::fixed3(t.pkts_per_dpc),
        super::fixed3(t.intr_per_s),
        super::fixed3(t.pkts_per_intr)
    );
    o.push_str("\n\nPackets Sent Packets Received Retransmits Errors Avg. CPU %\n");
    o.push_str("============ ================ =========== ====== ==========\n");
    let _ = writeln!(
        o,
        "{:>12} {:>16} {:>11} {:>6} {:>10.3}",
        t.packets_sent, t.packets_received, t.retransmits, t.errors, t.cpu_pct
    );
    if let Some(total) = r.udp {
        udp_table(&mut o, r, &total, hide_per_thread);
    }
    if let Some(rr) = crate::render::rr::table(r, hide_per_thread) {
        o.push_str(&rr);
    }
    verbose_tables(&mut o, r);
    // Linux-only counters asked for with --show-*: after the NTttcp tables.
    let extra = crate::render::linux::extra_lines(r);
    if !extra.is_empty() {
        o.push_str("\n\n");
        for l in extra {
            o.push_str(&l);
            o.push('\n');
        }
    }
    if t.cpu_pct <= 0.0 {
        o.push_str("\n\nNOTE::Avg CPU% drops below 0% if test duration is too short\n\n");
    }
    o
}

/// `-V`: which connection suffered (a sender's TCP_INFO at the end of the test), and
/// the round-trip times sampled over the window on either side.
fn verbose_tables(o: &mut String, r: &Report) {
    if r.params.verbose && !r.tcp_connections.is_empty() {
        o.push_str("\n\nConn Thread Local Port  RTT(us) RTTVar(us) Cwnd(segs)  MSS(B) Retrans\n");
        o.push_str("==== ====== ========== ======== ========== ========== ======= =======\n");
        for (i, c) in r.tcp_connections.iter().enumerate() {
            let known = |v: Option<u32>| v.map_or_else(|| "n/a".to_string(), |v| v.to_string());
            let (rttvar, retrans) = (known(c.rttvar_us), known(c.retransmits));
            let _ = writeln!(
                o,
                "{i:>4} {:>6} {:>10} {:>8} {rttvar:>10} {:>10} {:>7} {retrans:>7}",
                c.thread, c.local_port, c.rtt_us, c.cwnd, c.mss
            );
        }
    }
    if let (true, Some(rtt)) = (r.params.verbose, r.rtt_us) {
        let _ = writeln!(
            o,
            "\n\nRTT over the window (TCP_INFO every second, {} samples): p50 {:.0} us, \
             p99 {:.0} us, max {:.0} us",
            rtt.samples, rtt.p50, rtt.p99, rtt.max
        );
    }
}

/// A UDP receiver's accounting per thread and in total (NTttcp has no such table).
fn udp_table(o: &mut String, r: &Report, total: &UdpResult, hide_per_thread: bool) {
    o.push_str(
        "\n\nThread    Datagrams         Lost  Loss(%)   Duplicates Out of Order  Jitter(ms)\n",
    );
    o.push_str("====== ============ ============ ======== ============ ============ ===========\n");
    let row = |o: &mut String, name: &str, u: &UdpResult| {
        let na =
            |v: Option<f64>, w: usize| v.map_or(format!("{:>w$}", "n/a"), |v| format!("{v:>w$.3}"));
        let count = |v: Option<u64>| v.map_or(format!("{:>12}", "n/a"), |v| format!("{v:>12}"));
        let _ = writeln!(
            o,
            "{name:>6} {:>12} {} {} {} {} {}",
            u.datagrams,
            count(u.lost),
            na(u.loss_percent, 8),
            count(u.duplicates),
            count(u.out_of_order),
            na(u.jitter_ms, 11)
        );
    };
    if !hide_per_thread {
        for t in &r.threads {
            if let Some(u) = &t.udp {
                row(o, &t.index.to_string(), u);
            }
        }
    }
    row(o, "Total", total);
    if total.unstamped > 0 {
        let _ = writeln!(
            o,
            "{} datagrams carried no ntttcp stamp (another tool sent them): their loss is \
             unknown",
            total.unstamped
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Side;
    use crate::stats::fixture::seed_report;
    use crate::sys::cpu::CpuTimes;

    #[test]
    fn seed_figures_render_exactly_as_ntttcp_5_39() {
        let sample = include_str!("../../tests/fixtures/windows-seed-sender.txt");
        let expected = sample
            .strip_prefix("Copyright Version 5.39\nNetwork activity progressing...\n")
            .expect("fixture starts with the banner");
        let got = render(&seed_report(), false);
        for (i, (g, e)) in got.lines().zip(expected.lines()).enumerate() {
            assert_eq!(g, e, "line {}", i + 1);
        }
        assert_eq!(got, expected);
    }

    #[test]
    fn hidden_per_thread_table_and_cpu_note() {
        let r = seed_report();
        let got = render(&r, true);
        assert!(got.starts_with("\n\n#####  Totals:  #####\n"), "{got}");
        assert!(!got.contains("Thread  Time(s)"));
        let mut idle = crate::stats::fixture::seed_measured();
        idle.sys.cpu = CpuTimes::default();
        let got = render(&crate::stats::report(idle), false);
        assert!(
            got.ends_with("\n\nNOTE::Avg CPU% drops below 0% if test duration is too short\n\n")
        );
    }

    #[test]
    fn connection_table_with_verbose() {
        let mut r = seed_report();
        r.tcp_connections = vec![crate::sys::socket::ConnInfo {
            thread: 1,
            ..crate::stats::fixture::conn_info()
        }];
        assert!(!render(&r, false).contains("Conn Thread"), "only with -V");
        r.params.verbose = true;
        let got = render(&r, false);
        assert!(
            got.contains(
                "Conn Thread Local Port  RTT(us) RTTVar(us) Cwnd(segs)  MSS(B) Retrans\n\
                 ==== ====== ========== ======== ========== ========== ======= =======\n\
                 \x20  0      1      49699      409        100         10   65483       2\n"
            ),
            "{got}"
        );
    }

    #[test]
    fn udp_receiver_table() {
        // `unstamped_on_1`: thread 1 got only unstamped datagrams.
        let udp = |unstamped_on_1: bool| {
            crate::stats::fixture::seed_with(|m| {
                m.side = Side::Receiver;
                m.params.protocol = crate::config::Protocol::Udp;
                for (i, t) in m.threads.iter_mut().enumerate() {
                    t.udp = Some(UdpResult {
                        datagrams: 1000,
                        expected: 1000 + i as u64 * 10,
                        lost: Some(i as u64 * 10),
                        loss_percent: Some(i as f64 * 10.0 / (1000.0 + i as f64 * 10.0) * 100.0),
                        duplicates: Some(0),
                        out_of_order: Some(2),
                        unstamped: 0,
                        jitter_ms: (i != 3).then_some(0.25),
                    });
                }
                if unstamped_on_1 {
                    let u = m.threads[1].udp.as_mut().unwrap();
                    (u.expected, u.lost, u.loss_percent) = (0, None, None);
                    (u.duplicates, u.out_of_order) = (None, None);
                    u.unstamped = 1000;
                }
            })
        };
        let r = udp(false);
        let got = render(&r, false);
        assert!(
            got.contains(
                "Thread    Datagrams         Lost  Loss(%)   Duplicates Out of Order  Jitter(ms)\n\
                 ====== ============ ============ ======== ============ ============ ===========\n\
                 \x20    0         1000            0    0.000            0            2       0.250\n"
            ),
            "{got}"
        );
        assert!(
            got.contains(
                " Total         4000           60    1.478            0            8       0.250\n"
            ),
            "{got}"
        );
        assert!(got.contains(
            "     3         1000           30    2.913            0            2         n/a\n"
        ));
        let hidden = render(&r, true);
        assert!(hidden.contains(" Total ") && !hidden.contains("     0         1000"));
        // Only unstamped datagrams on a thread: what it lost is unknown, and so is the total.
        let got = render(&udp(true), false);
        assert!(
            got.contains(
                "     1         1000          n/a      n/a          n/a          n/a       0.250\n"
            ),
            "{got}"
        );
        assert!(
            got.contains(" Total         4000          n/a      n/a          n/a          n/a"),
            "{got}"
        );
    }

    #[test]
    fn receiver_frame_size_uses_received_segments() {
        let r = crate::stats::fixture::seed_with(|m| m.side = Side::Receiver);
        let t = stats::windows(&r);
        assert!((t.avg_frame_size - r.totals.bytes as f64 / 2_161_992.0).abs() < 1e-9);
    }
}
