//! The two XML result files, as the tools that parse them expect:
//!
//! * `linux` — ntttcp-for-linux's `-x` file: tab indentation, root `ntttcps` /
//!   `ntttcpr`, `version="5.33-linux"`, decimal units.
//! * `windows` — Windows NTttcp's `-xml` file: root `ntttcps` /
//!   `ntttcpr`, `version="5.40"`, binary MB, `mbps` and `Bps`, per-thread blocks.
//!
//! Unlike the originals, text (host name, OS line) is escaped, so the files always parse.

use std::fmt::Write;

mod ours;

use super::{fixed2, fixed3, tf};
use crate::report::{Report, Side};
use crate::stats;

/// Escapes text for element content and attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut o = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => {}
            c => o.push(c),
        }
    }
    o
}

/// One-element-per-line writer with tab indentation.
struct Doc(String);

impl Doc {
    pub(super) fn open(&mut self, depth: usize, tag: &str, attrs: &str) {
        let _ = writeln!(self.0, "{}<{tag}{attrs}>", "\t".repeat(depth));
    }

    pub(super) fn close(&mut self, depth: usize, tag: &str) {
        let _ = writeln!(self.0, "{}</{tag}>", "\t".repeat(depth));
    }

    pub(super) fn el(&mut self, depth: usize, tag: &str, value: impl std::fmt::Display) {
        let _ = writeln!(self.0, "{}<{tag}>{value}</{tag}>", "\t".repeat(depth));
    }

    pub(super) fn metric(
        &mut self,
        depth: usize,
        tag: &str,
        metric: &str,
        value: impl std::fmt::Display,
    ) {
        let _ = writeln!(
            self.0,
            "{}<{tag} metric=\"{metric}\">{value}</{tag}>",
            "\t".repeat(depth)
        );
    }
}

fn root(r: &Report) -> &'static str {
    super::file_root(r.side)
}

/// The ntttcp-for-linux `-x` file.
pub(crate) fn linux(r: &Report) -> String {
    let mut d = Doc(String::new());
    let attrs = format!(
        " computername=\"{}\" version=\"5.33-linux\"",
        escape(&r.host)
    );
    d.open(0, root(r), &attrs);
    d.open(1, "parameters", "");
    parameters(&mut d, r, linux_parameters(r));
    if r.params.verbose {
        for t in &r.threads {
            linux_thread(&mut d, r, t);
        }
    }
    if r.side == Side::Sender {
        d.el(1, "conns_tested", r.connections);
    }
    linux_totals(&mut d, r);
    ours::blocks(&mut d, r);
    d.el(1, "bufferCount", format!("{:.0}", r.totals.buffers.floor()));
    d.el(1, "bufferLen", r.buffer_len);
    if r.tcp_retransmits.is_some() {
        for (i, (name, v)) in stats::retrans_rates(r).into_iter().enumerate() {
            if i == 0 {
                d.metric(1, "tcp_retransmits", "retrans_segs", r.network.retransmits);
            }
            d.metric(1, "tcp_retransmits", name, format!("{v:.2}"));
        }
    }
    linux_cpu(&mut d, r);
    d.el(1, "io", 0);
    if let (true, Some(rtt)) = (r.params.verbose, stats::average_rtt_us(r)) {
        d.metric(1, "tcp_average_rtt", "us", rtt);
    }
    d.el(1, "os", escape(&r.os));
    how_it_ended(&mut d, r);
    d.close(0, root(r));
    d.0
}

/// The original's fixed `<parameters>` list.
fn linux_parameters(r: &Report) -> [(&'static str, String); 31] {
    let p = &r.params;
    [
        ("send_socket_buff", p.send_size.to_string()),
        ("recv_socket_buff", p.recv_size.to_string()),
        ("port", p.port.to_string()),
        ("sync_port", p.port.saturating_sub(1).to_string()),
        ("no_sync", tf(!p.sync).into()),
        ("wait_timeout_milliseconds", "0".into()),
        ("async", "False".into()),
        ("verbose", tf(p.verbose).into()),
        ("wsa", "False".into()),
        ("use_ipv6", tf(p.ipv6).into()),
        ("udp", tf(r.is_udp()).into()),
        ("verify_data", "False".into()),
        ("wait_all", "False".into()),
        ("run_time", p.timeline.duration.to_string()),
        ("warmup_time", p.timeline.warmup.to_string()),
        ("cooldown_time", p.timeline.cooldown.to_string()),
        ("dash_n_timeout", "0".into()),
        ("bind_sender", "False".into()),
        ("sender_name", "NA".into()),
        ("max_active_threads", "0".into()),
        ("tp", "False".into()),
        ("no_stdio_buffer", "False".into()),
        ("throughput_Bpms", "0".into()),
        ("cpu_burn", "0".into()),
        ("latency_measurement", "False".into()),
        ("use_io_compl_ports", "NA".into()),
        ("cpu_from_idle_flag", "False".into()),
        ("get_estats", "False".into()),
        ("qos_flag", "False".into()),
        ("jitter_measurement", "False".into()),
        ("packet_spacing", "0".into()),
    ]
}

/// One `<thread>` block (`-V`).
fn linux_thread(d: &mut Doc, r: &Report, t: &crate::report::Thread) {
    let (kb, mb, mbps) = stats::linux_thread(r, t);
    d.open(1, "thread", &format!(" index=\"{}\"", t.index));
    d.metric(2, "realtime", "s", format!("{:.3}", r.duration_s));
    d.metric(2, "throughput", "KB/s", format!("{kb:.3}"));
    d.metric(2, "throughput", "MB/s", format!("{mb:.3}"));
    d.metric(2, "throughput", "mbps", format!("{mbps:.3}"));
    let avg = stats::windows_thread(t).avg_bytes_per_compl;
    d.metric(2, "avg_bytes_per_compl", "B", format!("{avg:.3}"));
    ours::thread_blocks(d, t);
    d.close(1, "thread");
}

/// Bytes, time, rates, interrupts and packets.
fn linux_totals(d: &mut Doc, r: &Report) {
    let l = stats::linux(r);
    let w = stats::windows(r);
    d.metric(1, "total_bytes", "MB", format!("{:.6}", l.mb));
    d.metric(1, "realtime", "s", format!("{:.6}", r.duration_s));
    sizes(d, r, &w);
    d.metric(1, "throughput", "MB/s", format!("{:.3}", l.mb_per_s));
    d.metric(1, "throughput", "mbps", format!("{:.3}", l.mbps));
    d.metric(1, "throughput", "Bps", format!("{:.3}", l.bytes_per_s));
    buffers(d, &w);
    // --show-dev-interrupts narrows these to the device's lines, as upstream.
    let irq = stats::dev_or_system_interrupts(r);
    d.metric(1, "interrupts", "count/sec", fixed3(irq.map(|i| i.1)));
    let irq_total = irq.map_or_else(|| super::UNKNOWN.to_string(), |i| i.0.to_string());
    d.metric(1, "total_interrupts", "count", irq_total);
    d.metric(1, "dpcs", "count/sec", fixed3(w.dpcs_per_s));
    let per_dpc = fixed3(w.pkts_per_dpc);
    d.metric(1, "avg_packets_per_dpc", "packets/dpc", per_dpc);
    d.el(1, "packets_sent", w.packets_sent);
    d.el(1, "packets_received", w.packets_received);
    d.el(1, "packets_retransmitted", w.retransmits);
    d.el(1, "errors", w.errors);
}

/// The CPU block.
fn linux_cpu(d: &mut Doc, r: &Report) {
    let c = &r.cpu;
    d.metric(1, "cpu_cores", "cpu cores", c.cores);
    d.metric(1, "cpu_speed", "MHz", format!("{:.3}", c.mhz));
    d.metric(1, "user", "%", format!("{:.2}", c.user_percent));
    d.metric(1, "system", "%", format!("{:.2}", c.system_percent));
    d.metric(1, "idle", "%", format!("{:.2}", c.idle_percent));
    d.metric(1, "iowait", "%", fixed2(c.iowait_percent));
    d.metric(1, "softirq", "%", fixed2(c.softirq_percent));
    let cycles = format!("{:.2}", stats::linux(r).cycles_per_byte);
    d.metric(1, "cycles_per_byte", "cycles/byte", cycles);
    // All CPUs' busy share (as `cpu` in the -j file and Avg. CPU %), never over 100.
    d.metric(1, "cpu_busy_all", "%", format!("{:.2}", c.busy_percent));
}

/// The longest stall (with `-V`, or when it was long enough to warn of), any overrun,
/// and `<ended_early by=".." measured_s=".." planned_s="..">reason</ended_early>` when
/// the measurement fell short of its plan: nothing for a plain run that went to plan.
fn how_it_ended(d: &mut Doc, r: &Report) {
    if r.params.verbose || r.stall_noted() {
        d.metric(1, "longest_stall", "s", format!("{:.3}", r.longest_stall_s));
    }
    if let Some(o) = r.window_overrun_s {
        d.metric(1, "window_overrun", "s", format!("{o:.3}"));
    }
    if let Some(e) = &r.end.early {
        let planned = e
            .planned_s
            .map_or(String::new(), |p| format!(" planned_s=\"{p:.3}\""));
        d.0.push_str(&format!(
            "\t<ended_early by=\"{}\" measured_s=\"{:.3}\"{planned}>{}</ended_early>\n",
            e.by,
            e.measured_s,
            escape(&e.reason)
        ));
    }
}

/// The rest of `<parameters>`: the fixed list, then the zero-copy paths in use (only
/// when one is on, so files of ordinary runs keep the originals' parameter list).
fn parameters(d: &mut Doc, r: &Report, params: impl IntoIterator<Item = (&'static str, String)>) {
    for (tag, v) in params {
        d.el(2, tag, v);
    }
    let z = r.params.zero_copy;
    if z.sendfile || z.skip_rx_copy {
        d.el(2, "zero_copy_sendfile", tf(z.sendfile));
        d.el(2, "zero_copy_skip_rx_copy", tf(z.skip_rx_copy));
    }
    d.close(1, "parameters");
}

/// NTttcp's -sb/-rb value: the size asked for, -1 when left to the kernel.
fn socket_buff(size: Option<usize>) -> String {
    size.map_or("-1".into(), |s| s.to_string())
}

/// The three size figures both XML files carry, in this order.
fn sizes(d: &mut Doc, r: &Report, w: &stats::WindowsTotals) {
    d.metric(
        1,
        "avg_bytes_per_compl",
        "B",
        format!("{:.3}", r.totals.bytes_per_call),
    );
    let threads_avg = stats::threads_avg_compl(r);
    d.metric(
        1,
        "threads_avg_bytes_per_compl",
        "B",
        format!("{threads_avg:.3}"),
    );
    d.metric(1, "avg_frame_size", "B", format!("{:.3}", w.avg_frame_size));
}

/// The buffer counts and packets per interrupt both XML files carry, in this order.
fn buffers(d: &mut Doc, w: &stats::WindowsTotals) {
    d.el(1, "total_buffers", format!("{:.3}", w.buffers));
    d.metric(
        1,
        "throughput",
        "buffers/s",
        format!("{:.3}", w.buffers_per_s),
    );
    let per_intr = fixed3(w.pkts_per_intr);
    d.metric(
        1,
        "avg_packets_per_interrupt",
        "packets/interrupt",
        per_intr,
    );
}

/// The Windows NTttcp `-xml` file (per-thread blocks unless `hide_per_thread`).
pub(crate) fn windows(r: &Report, hide_per_thread: bool) -> String {
    let mut d = Doc(String::new());
    let attrs = format!(" computername=\"{}\" version=\"5.40\"", escape(&r.host));
    d.open(0, root(r), &attrs);
    d.open(1, "parameters", "");
    parameters(&mut d, r, windows_parameters(r));
    if !hide_per_thread {
        for t in &r.threads {
            windows_thread(&mut d, r, t);
        }
    }
    windows_totals(&mut d, r);
    ours::blocks(&mut d, r);
    d.metric(1, "cpu", "%", format!("{:.3}", r.cpu.busy_percent));
    d.el(1, "num_processors", r.cpu.cores);
    // Time mode: NTttcp's buffer count is "unlimited", 2^63 - 1.
    d.el(1, "bufferCount", i64::MAX);
    d.el(1, "bufferLen", r.buffer_len);
    d.el(1, "io", 2);
    how_it_ended(&mut d, r);
    d.close(0, root(r));
    d.0
}

/// NTttcp 5.40's fixed `<parameters>` list.
fn windows_parameters(r: &Report) -> [(&'static str, String); 35] {
    let p = &r.params;
    let ms = |s: u32| u64::from(s) * 1000;
    let threads = p.ports * p.threads_per_port as usize;
    [
        (
            "send_socket_buff",
            socket_buff(r.socket.requested.send_buffer),
        ),
        (
            "recv_socket_buff",
            socket_buff(r.socket.requested.recv_buffer),
        ),
        // NTttcp reports its final port counter: base + thread count.
        ("port", (usize::from(p.port) + threads).to_string()),
        ("sync_port", "False".into()),
        ("no_sync", tf(!p.sync).into()),
        ("wait_timeout_milliseconds", p.timeout_ms.to_string()),
        ("async", "False".into()),
        ("verbose", tf(p.verbose).into()),
        ("wsa", "False".into()),
        ("use_ipv6", tf(p.ipv6).into()),
        ("udp", tf(r.is_udp()).into()),
        ("udp_unconnected", "False".into()),
        ("verify_data", "False".into()),
        ("wait_all", "False".into()),
        ("run_time", ms(p.timeline.duration).to_string()),
        ("warmup_time", ms(p.timeline.warmup).to_string()),
        ("cooldown_time", ms(p.timeline.cooldown).to_string()),
        ("dash_n_timeout", "10800000".into()),
        ("bind_sender", "False".into()),
        ("sender_name", "NA".into()),
        ("max_active_threads", threads.to_string()),
        ("udp_uso_size", "0".into()),
        ("udp_receive_coalescing", "0".into()),
        ("tp", "False".into()),
        ("use_hvsocket_flag", "False".into()),
        ("no_stdio_buffer", "False".into()),
        ("throughput_Bpms", "0".into()),
        ("cpu_burn", "0".into()),
        ("latency_measurement", "False".into()),
        ("use_io_compl_ports", "False".into()),
        ("cpu_from_idle_flag", "False".into()),
        ("get_estats", "False".into()),
        ("qos_flag", "False".into()),
        ("jitter_measurement", "False".into()),
        ("packet_spacing", "0".into()),
    ]
}

/// One `<thread>` block.
fn windows_thread(d: &mut Doc, r: &Report, t: &crate::report::Thread) {
    // As NTttcp does, per-thread XML rates divide by the total realtime.
    let rate = stats::rate(t.bytes, r.duration_s);
    d.open(1, "thread", &format!(" index=\"{}\"", t.index));
    d.metric(2, "realtime", "s", format!("{:.3}", t.seconds));
    d.metric(2, "throughput", "KB/s", format!("{:.3}", rate.kib_per_s));
    d.metric(2, "throughput", "MB/s", format!("{:.3}", rate.mib_per_s));
    d.metric(2, "throughput", "mbps", format!("{:.3}", rate.mbps));
    d.metric(2, "throughput", "Bps", format!("{:.1}", rate.bytes_per_s));
    let avg = stats::windows_thread(t).avg_bytes_per_compl;
    d.metric(2, "avg_bytes_per_compl", "B", format!("{avg:.3}"));
    ours::thread_blocks(d, t);
    d.close(1, "thread");
}

/// Bytes, time, rates, interrupts, cycles and packets.
fn windows_totals(d: &mut Doc, r: &Report) {
    let w = stats::windows(r);
    d.metric(1, "total_bytes", "MB", format!("{:.6}", w.meg));
    d.metric(1, "realtime", "s", format!("{:.6}", r.duration_s));
    sizes(d, r, &w);
    d.metric(1, "throughput", "MB/s", format!("{:.3}", w.mb_per_s));
    let total = stats::rate(r.totals.bytes, r.duration_s);
    d.metric(1, "throughput", "mbps", format!("{:.3}", total.mbps));
    d.metric(1, "throughput", "Bps", format!("{:.1}", total.bytes_per_s));
    buffers(d, &w);
    d.metric(1, "interrupts", "count/sec", fixed3(w.intr_per_s));
    d.metric(1, "dpcs", "count/sec", fixed3(w.dpcs_per_s));
    let per_dpc = fixed3(w.pkts_per_dpc);
    d.metric(1, "avg_packets_per_dpc", "packets/dpc", per_dpc);
    d.metric(
        1,
        "cycles",
        "cycles/byte",
        format!("{:.3}", w.cycles_per_byte),
    );
    d.el(1, "packets_sent", w.packets_sent);
    d.el(1, "packets_received", w.packets_received);
    d.el(1, "packets_retransmitted", w.retransmits);
    d.el(1, "errors", w.errors);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::fixture::seed_report;

    #[test]
    fn escapes_markup_in_text() {
        assert_eq!(escape(r#"a<b>&"c"'"#), "a&lt;b&gt;&amp;&quot;c&quot;&apos;");
        assert_eq!(escape("bell\u{7}"), "bell");
    }

    #[test]
    fn linux_file_matches_the_golden_copy() {
        let mut r = seed_report();
        r.params.verbose = true;
        let got = linux(&r);
        if std::env::var_os("NTTTCP_BLESS").is_some() {
            std::fs::write("tests/fixtures/seed-linux.xml", &got).unwrap();
        }
        let want = include_str!("../../../tests/fixtures/seed-linux.xml");
        for (i, (g, w)) in got.lines().zip(want.lines()).enumerate() {
            assert_eq!(g, w, "line {}", i + 1);
        }
        assert_eq!(got, want);
    }

    #[test]
    fn windows_file_matches_the_golden_copy() {
        let got = windows(&seed_report(), false);
        if std::env::var_os("NTTTCP_BLESS").is_some() {
            std::fs::write("tests/fixtures/seed-windows.xml", &got).unwrap();
        }
        let want = include_str!("../../../tests/fixtures/seed-windows.xml");
        for (i, (g, w)) in got.lines().zip(want.lines()).enumerate() {
            assert_eq!(g, w, "line {}", i + 1);
        }
        assert_eq!(got, want);
        assert!(!windows(&seed_report(), true).contains("<thread "));
    }
}
