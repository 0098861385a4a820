//! `ntttcp merge` for people: one row per input run, the spread of their throughputs and
//! how much their windows overlapped, before the Totals tables over the sum.

use crate::report::merge::Merge;

/// The rows and the spread.
pub(crate) fn text(m: &Merge) -> String {
    let gbit = |bps: f64| bps / 1e9;
    let mut out = format!(
        "Merged {} runs: their windows overlap {:.2} s ({:.1} % of the longest)\n\n",
        m.pairs.len(),
        m.overlap_s,
        m.overlap_fraction * 100.0
    );
    out.push_str(&format!(
        "{:<32} {:<24} {:>18}\n",
        "File", "Host", "Throughput(Gbit/s)"
    ));
    for p in &m.pairs {
        out.push_str(&format!(
            "{:<32} {:<24} {:>18.3}\n",
            p.file,
            p.host,
            gbit(p.bits_per_second)
        ));
    }
    let s = m.bits_per_second;
    out.push_str(&format!(
        "\nThroughput over the runs: min {:.3}  median {:.3}  max {:.3} Gbit/s\n\n",
        gbit(s.min),
        gbit(s.median),
        gbit(s.max)
    ));
    out
}
