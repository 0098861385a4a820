//! `--repeat` for people: a line per run as it ends, the spread over the runs at the end.

use crate::report::Report;
use crate::report::series::Series;

/// Run `i` (from 1) of `n`: its throughput (its receiver's where this side has it), its
/// window and how it ended.
pub(crate) fn run_line(i: usize, n: u32, reports: &[Report], bits_per_second: f64) -> String {
    let r = reports
        .iter()
        .find(|r| r.side == crate::report::Side::Receiver);
    let r = r.or(reports.first());
    let (who, secs, end) = r.map_or(("", 0.0, "no report".to_string()), |r| {
        let who = match r.side {
            crate::report::Side::Sender => "sender",
            crate::report::Side::Receiver => "receiver",
        };
        let end = r.end.early.as_ref().map_or("completed".to_string(), |e| {
            format!("ended early: {}", e.line())
        });
        (who, r.duration_s, end)
    });
    format!(
        "run {i} of {n}: {:10.3} Gbit/s ({who}) over {secs:.3} s, {end}\n",
        bits_per_second / 1e9
    )
}

/// The spread of the series' throughput.
pub(crate) fn table(s: &Series) -> String {
    let g = |v: f64| v / 1e9;
    let opt = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{:.3}", g(v)));
    let t = s.summary;
    let ci = match (t.ci95_low, t.ci95_high) {
        (Some(lo), Some(hi)) => format!("{:.3} - {:.3}", g(lo), g(hi)),
        _ => "n/a".into(),
    };
    format!(
        "\n\nThroughput over {} of {} runs (Gbit/s)\n\n\
         {:>10} {:>10} {:>10} {:>10} {:>10}  {}\n\
         {:>10} {:>10} {:>10} {:>10} {:>10}  {}\n\
         {:>10.3} {:>10.3} {:>10.3} {:>10.3} {:>10}  {}\n",
        s.runs,
        s.asked,
        "min",
        "median",
        "max",
        "mean",
        "stddev",
        "95% CI of the mean",
        "==========",
        "==========",
        "==========",
        "==========",
        "==========",
        "====================",
        g(t.min),
        g(t.median),
        g(t.max),
        g(t.mean),
        opt(t.stddev),
        ci
    )
}
