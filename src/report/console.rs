//! The Windows NTttcp 5.39 console tables (ntttcp-windows.md 1.7), byte for byte: two
//! empty lines before every header, fixed widths, three decimals, binary units.
//! The banner and "Network activity progressing..." are printed by the caller as the
//! run goes; this renders what follows them.

use std::fmt::Write;

use crate::report::Report;
use crate::stats;

/// Renders the per-thread table (unless `hide_per_thread`) and the Totals tables.
pub fn render(r: &Report, hide_per_thread: bool) -> String {
    let mut o = String::new();
    if !hide_per_thread {
        o.push_str("\n\nThread  Time(s) Throughput(KB/s) Avg B / Compl\n");
        o.push_str("======  ======= ================ =============\n");
        for t in r.threads.iter().map(stats::thread) {
            let _ = writeln!(
                o,
                "{:>6} {:>8.3} {:>16.3} {:>13.3}",
                t.index, t.seconds, t.kb_per_s, t.avg_bytes_per_compl
            );
        }
    }
    let t = stats::totals(r);
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
        "{:>13.3} {:>13.3}   {:>13.3}  {:>13.3}",
        t.dpcs_per_s, t.pkts_per_dpc, t.intr_per_s, t.pkts_per_intr
    );
    o.push_str("\n\nPackets Sent Packets Received Retransmits Errors Avg. CPU %\n");
    o.push_str("============ ================ =========== ====== ==========\n");
    let _ = writeln!(
        o,
        "{:>12} {:>16} {:>11} {:>6} {:>10.3}",
        t.packets_sent, t.packets_received, t.retransmits, t.errors, t.cpu_pct
    );
    // -V on a sender: which connection suffered (TCP_INFO at the end of the test).
    if r.params.verbose && !r.tcp_connections.is_empty() {
        o.push_str("\n\nConn Thread Local Port  RTT(us) RTTVar(us) Cwnd(segs)  MSS(B) Retrans\n");
        o.push_str("==== ====== ========== ======== ========== ========== ======= =======\n");
        for (i, c) in r.tcp_connections.iter().enumerate() {
            let _ = writeln!(
                o,
                "{i:>4} {:>6} {:>10} {:>8} {:>10} {:>10} {:>7} {:>7}",
                c.thread, c.local_port, c.rtt_us, c.rttvar_us, c.cwnd, c.mss, c.retransmits
            );
        }
    }
    // Linux-only counters asked for with --show-*: after the NTttcp tables.
    let extra = crate::report::linux::extra_lines(r);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Side;
    use crate::report::fixture::seed_report;
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
        let mut r = seed_report();
        let got = render(&r, true);
        assert!(got.starts_with("\n\n#####  Totals:  #####\n"), "{got}");
        assert!(!got.contains("Thread  Time(s)"));
        r.sys.cpu = CpuTimes::default();
        let got = render(&r, false);
        assert!(
            got.ends_with("\n\nNOTE::Avg CPU% drops below 0% if test duration is too short\n\n")
        );
    }

    #[test]
    fn connection_table_with_verbose() {
        let mut r = seed_report();
        r.tcp_connections = vec![crate::sys::socket::ConnInfo {
            thread: 1,
            ..crate::report::fixture::conn_info()
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
    fn receiver_frame_size_uses_received_segments() {
        let mut r = seed_report();
        r.side = Side::Receiver;
        let t = stats::totals(&r);
        assert!((t.avg_frame_size - r.total_bytes() as f64 / 2_161_992.0).abs() < 1e-9);
    }
}
