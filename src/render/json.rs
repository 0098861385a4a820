//! ntttcp-for-linux's `-j` file: 4-space indentation, `"key" : "value"` with a
//! space on both sides of the colon, every value a string, every object member on its
//! own line. Keys, order and number formats follow the original (including its
//! `packets_retransmitted` spelling) so parsers written for it read ours; unlike it, text
//! is escaped, so the file is always valid JSON.

use std::fmt::Write;

use crate::report::Report;
use crate::stats;

/// A JSON value in the original's shape: strings, objects and arrays only.
enum J {
    S(String),
    O(Vec<(&'static str, Self)>),
    A(Vec<Self>),
}

fn s(v: impl ToString) -> J {
    J::S(v.to_string())
}

/// `{ "metric" : m, "value" : v }`.
fn mv(metric: &'static str, value: String) -> J {
    J::O(vec![("metric", s(metric)), ("value", J::S(value))])
}

fn write(o: &mut String, v: &J, depth: usize) {
    let pad = "    ".repeat(depth + 1);
    let end = "    ".repeat(depth);
    match v {
        // serde_json escapes quotes, backslashes and control characters.
        J::S(text) => o.push_str(&serde_json::to_string(text).unwrap_or_default()),
        J::O(members) => {
            o.push_str("{\n");
            for (i, (k, v)) in members.iter().enumerate() {
                let _ = write!(o, "{pad}\"{k}\" : ");
                write(o, v, depth + 1);
                o.push_str(if i + 1 < members.len() { ",\n" } else { "\n" });
            }
            let _ = write!(o, "{end}}}");
        }
        J::A(items) => {
            o.push_str("[\n");
            for (i, v) in items.iter().enumerate() {
                o.push_str(&pad);
                write(o, v, depth + 1);
                o.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
            }
            let _ = write!(o, "{end}]");
        }
    }
}

fn tf(b: bool) -> J {
    s(super::tf(b))
}

/// A UDP receiver's accounting, in the file's metric/value style (the original has none).
fn udp(u: &crate::report::UdpResult) -> J {
    // What this host cannot know is left out rather than written as a number.
    let known = |key, unit, v: Option<String>| v.map(|v| (key, mv(unit, v)));
    let items = [
        Some(("datagrams", mv("count", u.datagrams.to_string()))),
        Some(("datagramsExpected", mv("count", u.expected.to_string()))),
        known("datagramsLost", "count", u.lost.map(|v| v.to_string())),
        known("loss", "%", u.loss_percent.map(|v| format!("{v:.3}"))),
        known("duplicates", "count", u.duplicates.map(|v| v.to_string())),
        known("outOfOrder", "count", u.out_of_order.map(|v| v.to_string())),
        Some(("unstamped", mv("count", u.unstamped.to_string()))),
        known("jitter", "ms", u.jitter_ms.map(|v| format!("{v:.3}"))),
    ];
    J::O(items.into_iter().flatten().collect())
}

/// A request/response test's figures, as the XML's `<request_response>`.
fn rr(x: &crate::report::RrResult) -> J {
    const KEYS: [&str; 7] = [
        "latencyMin",
        "latencyMean",
        "latencyP50",
        "latencyP90",
        "latencyP99",
        "latencyP999",
        "latencyMax",
    ];
    let mut o = vec![
        ("requestSize", mv("B", x.size.to_string())),
        ("transactions", mv("count", x.transactions.to_string())),
        (
            "transactionsPerSecond",
            mv("count/s", format!("{:.3}", x.transactions_per_second)),
        ),
    ];
    o.extend(percentiles(KEYS, x.latency_us));
    J::O(o)
}

/// A connection-rate test's figures, as the XML's `<connect_rate>`.
fn connect(x: &crate::report::ConnectResult) -> J {
    const KEYS: [&str; 7] = [
        "connectMin",
        "connectMean",
        "connectP50",
        "connectP90",
        "connectP99",
        "connectP999",
        "connectMax",
    ];
    let mut o = vec![
        ("connections", mv("count", x.connections.to_string())),
        (
            "connectionsPerSecond",
            mv("count/s", format!("{:.3}", x.connections_per_second)),
        ),
    ];
    o.extend(percentiles(KEYS, x.latency_us));
    J::O(o)
}

/// min, mean, p50, p90, p99, p99.9 and max in microseconds; nothing without times.
fn percentiles(keys: [&'static str; 7], l: Option<crate::report::Latency>) -> Vec<Member> {
    let Some(l) = l else { return Vec::new() };
    let values = [l.min, l.mean, l.p50, l.p90, l.p99, l.p999, l.max];
    keys.into_iter()
        .zip(values)
        .map(|(k, v)| (k, mv("us", format!("{v:.3}"))))
        .collect()
}

/// The blocks of ours that a thread has (`-V`), as inside the XML's `<thread>`.
fn thread_blocks(t: &crate::report::Thread) -> Vec<Member> {
    let udp = t.udp.as_ref().map(|u| ("udp", udp(u)));
    let rr = t.rr.as_ref().map(|x| ("requestResponse", rr(x)));
    let connect = t.connect.as_ref().map(|x| ("connectRate", connect(x)));
    [udp, rr, connect].into_iter().flatten().collect()
}

/// The blocks of ours after the totals, the XML files' own: the direction of a turned
/// report, a mode's figures, and with `-V` the round-trip times.
fn blocks(r: &Report) -> Vec<Member> {
    let mut o = Vec::new();
    if r.turned().is_some() {
        o.push(("direction", s(super::direction_word(r.direction))));
    }
    o.extend(r.udp.as_ref().map(|u| ("udp", udp(u))));
    o.extend(r.rr.as_ref().map(|x| ("requestResponse", rr(x))));
    o.extend(r.connect.as_ref().map(|x| ("connectRate", connect(x))));
    if let (true, Some(x)) = (r.params.verbose, r.rtt_us) {
        o.push(("rttSamples", mv("count", x.samples.to_string())));
        o.push(("rttP50", mv("us", format!("{:.0}", x.p50))));
        o.push(("rttP99", mv("us", format!("{:.0}", x.p99))));
        o.push(("rttMax", mv("us", format!("{:.0}", x.max))));
    }
    o
}

/// A member of a JSON object.
type Member = (&'static str, J);

/// The ntttcp-for-linux `-j` file.
pub(crate) fn linux(r: &Report) -> String {
    let mut top = vec![
        ("computername", s(&r.host)),
        ("version", s("5.33-linux")),
        ("parameters", parameters(r)),
    ];
    if r.params.verbose {
        top.push((
            "threads",
            J::A(r.threads.iter().map(|t| thread(r, t)).collect()),
        ));
    }
    top.extend(totals(r));
    top.extend(blocks(r));
    top.extend([
        ("cpu", mv("%", format!("{:.3}", r.cpu.busy_percent))),
        ("bufferCount", s(format!("{:.0}", r.totals.buffers.floor()))),
        ("bufferLen", s(r.buffer_len)),
        ("io", s(0)),
    ]);
    top.extend(extras(r));
    let mut o = String::new();
    write(
        &mut o,
        &J::O(vec![(super::file_root(r.side), J::O(top))]),
        0,
    );
    o.push('\n');
    o
}

/// `parameters`: the original's fixed list, then the zero-copy paths when one is on.
fn parameters(r: &Report) -> J {
    let p = &r.params;
    let mut params = vec![
        ("sendSocketBuff", s(p.send_size)),
        ("recvSocketBuff", s(p.recv_size)),
        ("port", s(p.port)),
        ("syncPort", s(p.port.saturating_sub(1))),
        ("noSync", tf(!p.sync)),
        ("waitTimeoutMilliseconds", s(0)),
        ("async", tf(false)),
        ("verbose", tf(p.verbose)),
        ("wsa", tf(false)),
        ("useIpv6", tf(p.ipv6)),
        ("udp", tf(r.is_udp())),
        ("verifyData", tf(false)),
        ("waitAll", tf(false)),
        ("runTime", s(p.timeline.duration)),
        ("warmupTime", s(p.timeline.warmup)),
        ("cooldownTime", s(p.timeline.cooldown)),
        ("dashNTimeout", s(0)),
        ("bindSender", tf(false)),
        ("senderName", s("NA")),
        ("maxActiveThreads", s(0)),
        ("tp", tf(false)),
        ("noStdioBuffer", tf(false)),
        ("throughputBpms", s(0)),
        ("cpuBurn", s(0)),
        ("latencyMeasurement", tf(false)),
        ("useIOComplPorts", s("NA")),
        ("cpuFromIdleFlag", tf(false)),
        ("getEstats", tf(false)),
        ("qosFlag", tf(false)),
        ("jitterMeasurement", tf(false)),
        ("packetSpacing", s(0)),
    ];
    let z = p.zero_copy;
    if z.sendfile || z.skip_rx_copy {
        // Only when on, so ordinary runs keep the original's parameter list.
        params.push(("zeroCopySendfile", tf(z.sendfile)));
        params.push(("zeroCopySkipRxCopy", tf(z.skip_rx_copy)));
    }
    J::O(params)
}

/// One entry of `threads` (`-V`).
fn thread(r: &Report, t: &crate::report::Thread) -> J {
    let (kb, mb, mbps) = stats::linux_thread(r, t);
    let avg = stats::windows_thread(t).avg_bytes_per_compl;
    let mut members = vec![
        ("index", s(t.index)),
        ("realTime", mv("s", format!("{:.3}", r.duration_s))),
        (
            "throughputs",
            J::A(vec![
                mv("KB/s", format!("{kb:.3}")),
                mv("MB/s", format!("{mb:.3}")),
                mv("mbps", format!("{mbps:.3}")),
            ]),
        ),
        ("avgBytesPerCompl", mv("B", format!("{avg:.3}"))),
    ];
    members.extend(thread_blocks(t));
    J::O(members)
}

/// The totals: bytes, time, rates, packets, interrupts and cycles.
fn totals(r: &Report) -> Vec<Member> {
    let l = stats::linux(r);
    let w = stats::windows(r);
    let irq = stats::dev_or_system_interrupts(r);
    let (irq_total, irq_rate) = (irq.map(|i| i.0.to_string()), irq.map(|i| i.1));
    let m = |unit: &'static str, v: f64| mv(unit, format!("{v:.3}"));
    let known = |unit: &'static str, v: Option<f64>| mv(unit, super::fixed3(v));
    vec![
        ("totalBytes", mv("MB", format!("{:.6}", l.mb))),
        ("realTime", mv("s", format!("{:.6}", r.duration_s))),
        ("avgBytesPerCompl", m("B", r.totals.bytes_per_call)),
        (
            "threadsAvgBytesPerCompl",
            m("B", stats::threads_avg_compl(r)),
        ),
        ("avgFrameSize", m("B", w.avg_frame_size)),
        (
            "throughputs",
            J::A(vec![
                m("MB/s", l.mb_per_s),
                m("mbps", l.mbps),
                m("Bps", l.bytes_per_s),
                m("buffer/s", w.buffers_per_s),
            ]),
        ),
        ("totalBuffers", s(format!("{:.3}", w.buffers))),
        (
            "avgPacketsPerInterrupt",
            known("packets/interrupt", w.pkts_per_intr),
        ),
        ("interrupt", known("count/sec", irq_rate)),
        (
            "interruptTotal",
            mv("count", irq_total.unwrap_or_else(|| super::UNKNOWN.into())),
        ),
        ("dpcs", known("count/sec", w.dpcs_per_s)),
        ("avgPacketsPerDpc", known("packets/dpc", w.pkts_per_dpc)),
        ("cycles", m("cycles/byte", l.cycles_per_byte)),
        ("packetsSent", s(w.packets_sent)),
        ("packetsReceived", s(w.packets_received)),
        ("packets_retransmitted", s(w.retransmits)),
        ("errors", s(w.errors)),
    ]
}

/// After `io`: what the original has only with flags (retransmits, the average RTT), the
/// OS, and how the run ended, as the XML files say it: the longest stall (with `-V`, or
/// when long enough to warn of), an overrun and an early end.
fn extras(r: &Report) -> Vec<Member> {
    let mut top = Vec::new();
    if r.tcp_retransmits.is_some() {
        let mut items = vec![mv("retrans_segs", r.network.retransmits.to_string())];
        items.extend(
            stats::retrans_rates(r)
                .into_iter()
                .map(|(name, v)| mv(name, format!("{v:.2}"))),
        );
        top.push(("tcp_retransmits", J::A(items)));
    }
    if let (true, Some(rtt)) = (r.params.verbose, stats::average_rtt_us(r)) {
        // Sic: the original's key has a space in it.
        top.push(("tcpAverageRtt metric", s(format!("{rtt} us"))));
    }
    top.push(("os", s(r.os.replace('\n', " "))));
    if r.params.verbose || r.stall_noted() {
        top.push(("longestStall", mv("s", format!("{:.3}", r.longest_stall_s))));
    }
    if let Some(o) = r.window_overrun_s {
        top.push(("windowOverrun", mv("s", format!("{o:.3}"))));
    }
    if let Some(e) = &r.end.early {
        let mut early = vec![
            ("by", s(&e.by)),
            ("reason", s(&e.reason)),
            ("measuredSeconds", s(format!("{:.3}", e.measured_s))),
        ];
        if let Some(p) = e.planned_s {
            early.push(("plannedSeconds", s(format!("{p:.3}"))));
        }
        top.push(("endedEarly", J::O(early)));
    }
    top
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::fixture::seed_report;

    #[test]
    fn linux_file_matches_the_golden_copy_and_parses() {
        let mut r = seed_report();
        r.params.verbose = true;
        let got = linux(&r);
        if std::env::var_os("NTTTCP_BLESS").is_some() {
            std::fs::write("tests/fixtures/seed-linux.json", &got).unwrap();
        }
        let want = include_str!("../../tests/fixtures/seed-linux.json");
        for (i, (g, w)) in got.lines().zip(want.lines()).enumerate() {
            assert_eq!(g, w, "line {}", i + 1);
        }
        assert_eq!(got, want);
        let v: serde_json::Value = serde_json::from_str(&got).expect("valid JSON");
        let root = &v["ntttcps"];
        assert_eq!(
            root["computername"], "vm<&>",
            "escaped, then read back intact"
        );
        assert_eq!(root["throughputs"][1]["metric"], "mbps");
        assert_eq!(root["packets_retransmitted"], "60412");
        assert_eq!(root["threads"][0]["throughputs"][1]["metric"], "MB/s");
    }

    #[test]
    fn text_with_quotes_stays_valid_json() {
        let mut r = seed_report();
        r.host = "a\"b\\c\n".into();
        let v: serde_json::Value = serde_json::from_str(&linux(&r)).expect("valid JSON");
        assert_eq!(v["ntttcps"]["computername"], "a\"b\\c\n");
        assert!(
            v["ntttcps"].get("threads").is_none(),
            "per-thread only with -V"
        );
    }
}
