//! Windows NTttcp's tables, read back: a side's counters (from the fuzzer) go through the
//! formulas into a report, the report is printed as the tables, and every figure of the
//! per-thread and Totals tables reads back from the text as the formulas gave it.

use arbitrary::Unstructured;

use crate::render::console;
use crate::report::Measured;
use crate::stats::{self, fixture};

/// Counters as large as a run can make them: 2^50 bytes is a petabyte per thread, 2^48
/// CPU ticks or packets far more than a host counts in years.
fn count(u: &mut Unstructured<'_>, bits: u32) -> arbitrary::Result<u64> {
    Ok(u.arbitrary::<u64>()? >> (64 - bits))
}

/// The seed's counters, with what the fuzzer chooses in place of its figures.
fn measured(u: &mut Unstructured<'_>) -> arbitrary::Result<Measured> {
    let mut m = fixture::seed_measured();
    m.seconds = f64::from(u.arbitrary::<u32>()?) / 1000.0;
    m.threads.truncate(u.int_in_range(1..=4)?);
    for t in &mut m.threads {
        t.seconds = f64::from(u.arbitrary::<u32>()?) / 1000.0;
        t.bytes = count(u, 50)?;
        t.calls = count(u, 50)?;
    }
    m.buffer_len = u.int_in_range(1..=1 << 24)?;
    m.host.cpu_count = u.int_in_range(1..=512)?;
    m.host.cpu_mhz = f64::from(u.arbitrary::<u16>()?);
    let cpu = &mut m.sys.cpu;
    (cpu.user, cpu.system, cpu.idle) = (count(u, 48)?, count(u, 48)?, count(u, 48)?);
    m.sys.interrupts = u.arbitrary::<bool>()?.then(|| count(u, 48)).transpose()?;
    m.sys.net_rx = u.arbitrary::<bool>()?.then(|| count(u, 48)).transpose()?;
    let tcp = &mut m.sys.tcp;
    (tcp.out_segs, tcp.in_segs) = (count(u, 48)?, count(u, 48)?);
    (tcp.retrans_segs, tcp.attempt_fails) = (count(u, 48)?, count(u, 48)?);
    Ok(m)
}

/// The fields of the line under the `under`-th rule line (`====`) of `text`.
fn row(text: &str, under: usize, offset: usize) -> Vec<&str> {
    let mut lines = text.lines();
    let mut rules = 0;
    for l in lines.by_ref() {
        if l.starts_with("====") {
            if rules == under {
                break;
            }
            rules += 1;
        }
    }
    lines.nth(offset).unwrap_or("").split_whitespace().collect()
}

/// `field` as printed with three decimals, against `figure`.
fn reads_back(field: &str, figure: f64, what: &str) {
    let Ok(read) = field.parse::<f64>() else {
        panic!("{what}: {field:?} is no number (the figure is {figure})");
    };
    let close = read == figure || (read - figure).abs() <= 0.0005 + figure.abs() * 1e-12;
    assert!(
        close || (read.is_nan() && figure.is_nan()),
        "{what}: {field} for {figure}"
    );
}

/// An optional figure: `n/a` when the system did not say.
fn reads_back_opt(field: &str, figure: Option<f64>, what: &str) {
    match figure {
        Some(f) => reads_back(field, f, what),
        None => assert_eq!(field, "n/a", "{what}"),
    }
}

/// Counters from the fuzzer, through the report and the tables, back to the figures.
pub fn windows_tables(data: &[u8]) {
    let Ok(m) = measured(&mut Unstructured::new(data)) else {
        return;
    };
    let r = stats::report(m);
    let text = console::render(&r, false);
    for (i, t) in r.threads.iter().map(stats::windows_thread).enumerate() {
        let f = row(&text, 0, i);
        assert_eq!(f[0], t.index.to_string());
        reads_back(f[1], t.seconds, "Time(s)");
        reads_back(f[2], t.kb_per_s, "Throughput(KB/s)");
        reads_back(f[3], t.avg_bytes_per_compl, "Avg B / Compl");
    }
    let t = stats::windows(&r);
    let totals = [t.meg, t.realtime, t.avg_frame_size, t.mb_per_s];
    for (f, v) in row(&text, 1, 0).iter().zip(totals) {
        reads_back(f, v, "Totals");
    }
    for (f, v) in row(&text, 2, 0)
        .iter()
        .zip([t.buffers_per_s, t.cycles_per_byte, t.buffers])
    {
        reads_back(f, v, "Buffers");
    }
    let dpc = [t.dpcs_per_s, t.pkts_per_dpc, t.intr_per_s, t.pkts_per_intr];
    for (f, v) in row(&text, 3, 0).iter().zip(dpc) {
        reads_back_opt(f, v, "DPCs");
    }
    let packets = row(&text, 4, 0);
    let counts = [t.packets_sent, t.packets_received, t.retransmits, t.errors];
    for (f, v) in packets.iter().zip(counts) {
        assert_eq!(*f, v.to_string(), "Packets");
    }
    reads_back(packets[4], t.cpu_pct, "Avg. CPU %");
}
