//! Summary statistics of the throughput benchmark's runs.

/// One run's (Gbit/s, cycles per byte), or None if it failed.
pub(crate) type Run = Option<(f64, f64)>;

/// The median of `v` (the upper one of an even count; NaN for none).
pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The lowest and highest of `v` (0, 0 for none).
pub(crate) fn spread(v: &[f64]) -> (f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0);
    }
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    (lo, v.iter().copied().fold(lo, f64::max))
}

/// ntttcp against a peer rep by rep. Within a rep the two ran one after the other, so
/// a slow minute of a shared machine moves both: the per-rep ratios show how often
/// ntttcp led, which the ratio of two medians hides.
#[derive(Debug, PartialEq)]
pub(crate) struct Paired {
    /// Median of the per-rep ratios ours / peer.
    pub(crate) median: f64,
    /// Lowest and highest per-rep ratio.
    pub(crate) range: (f64, f64),
    /// Reps whose ratio is above 1, and below 1.
    pub(crate) above: usize,
    pub(crate) below: usize,
    /// Reps in which both ran.
    pub(crate) reps: usize,
}

impl Paired {
    /// "x1.02 (0.79-1.15), faster in 8 of 15": `count` reps were `what`.
    pub(crate) fn describe(&self, what: &str, count: usize) -> String {
        let (m, (lo, hi)) = (self.median, self.range);
        format!(
            "x{m:.2} ({lo:.2}-{hi:.2}), {what} in {count} of {}",
            self.reps
        )
    }
}

/// The per-rep ratios of `figure` (0: Gbit/s, 1: c/B) between `ours` and `peer`, over
/// the reps in which both ran; None if there is no such rep.
pub(crate) fn paired(ours: &[Run], peer: &[Run], figure: usize) -> Option<Paired> {
    let pick = |r: (f64, f64)| if figure == 0 { r.0 } else { r.1 };
    let ratios = ours
        .iter()
        .zip(peer)
        .filter_map(|(a, b)| Some(pick((*a)?) / pick((*b)?)));
    of_ratios(ratios.collect())
}

/// The summary of per-rep ratios ours / peer (those that are finite); None if none is.
pub(crate) fn of_ratios(mut ratios: Vec<f64>) -> Option<Paired> {
    ratios.retain(|r| r.is_finite());
    if ratios.is_empty() {
        return None;
    }
    Some(Paired {
        range: spread(&ratios),
        above: ratios.iter().filter(|r| **r > 1.0).count(),
        below: ratios.iter().filter(|r| **r < 1.0).count(),
        reps: ratios.len(),
        median: median(ratios),
    })
}
