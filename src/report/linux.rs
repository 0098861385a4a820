//! ntttcp-for-linux's console layout (`--format linux`, spec 4.3-4.6): `HH:MM:SS LEVEL:`
//! log lines, "Real-time throughput" lines, and its Totals block, so scripts that regex
//! the C tool's output read ours.

use std::fmt::Write;

use crate::report::{Report, Side};
use crate::stats;

/// The local wall-clock time as `HH:MM:SS` (from /etc/localtime via the C library).
pub fn clock() -> String {
    crate::sys::host::local_hms()
}

/// One `HH:MM:SS INFO: text` line.
pub fn info(text: &str) -> String {
    format!("{} INFO: {text}\n", clock())
}

/// ntttcp-for-linux's throughput format: bits per second scaled by 1000 up to Gbps
/// (never further), two decimals, unit glued on: `40.15Gbps`.
pub fn format_throughput(bytes: u64, seconds: f64) -> String {
    let mut x = if seconds > 0.0 {
        bytes as f64 * 8.0 / seconds
    } else {
        0.0
    };
    let units = ["bps", "Kbps", "Mbps", "Gbps"];
    let mut u = 0;
    while x > 1000.0 && u < units.len() - 1 {
        x /= 1000.0;
        u += 1;
    }
    format!("{x:.2}{}", units[u])
}

/// The per-thread table (with `verbose`), "N connections tested" (sender), the Totals
/// block and the closing dashes.
pub fn render(r: &Report, verbose: bool) -> String {
    let l = stats::linux(r);
    let t = stats::totals(r);
    let mut o = String::new();
    let mut line = |text: String| o.push_str(&info(&text));
    if verbose {
        line("\tThread\tTime(s)\tThroughput".into());
        line("\t======\t=======\t==========".into());
        for th in &r.threads {
            let tp = format_throughput(th.bytes, r.realtime_s);
            line(format!("\t{}\t {:.2}\t {tp}", th.index, r.realtime_s));
        }
    }
    if r.side == Side::Sender {
        line(format!("{} connections tested", r.connections));
    }
    line("#####  Totals:  #####".into());
    line(format!("test duration\t:{:.2} seconds", r.realtime_s));
    line(format!("total bytes\t:{}", r.total_bytes()));
    line(format!(
        "\t throughput\t:{}",
        format_throughput(r.total_bytes(), r.realtime_s)
    ));
    line(format!("\t retrans segs\t:{}", t.retransmits));
    line(format!("cpu cores\t:{}", r.cpu_count));
    line(format!("\t cpu speed\t:{:.3}MHz", r.cpu_mhz));
    line(format!("\t user\t\t:{:.2}%", l.user));
    line(format!("\t system\t\t:{:.2}%", l.system));
    line(format!("\t idle\t\t:{:.2}%", l.idle));
    line(format!("\t iowait\t\t:{:.2}%", l.iowait));
    line(format!("\t softirq\t:{:.2}%", l.softirq));
    line(format!("\t cycles/byte\t:{:.2}", l.cycles_per_byte));
    line(format!("cpu busy (all)\t:{:.2}%", l.cpu_busy_all));
    let _ = writeln!(o, "{}", "-".repeat(57));
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture::seed_report;

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
        let mut r = seed_report();
        r.threads.truncate(1);
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
            format!("INFO: cpu busy (all)\t:{:.2}%", 120.0 * 100.0 / 300.00515),
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
