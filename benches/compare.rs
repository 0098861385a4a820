//! How the latency benchmark holds ntttcp against a peer: one run's figures, their
//! medians, and the goal judged on the per-rep ratios (within a rep the two ran one after
//! the other, so a slow minute moves both; the ratio of two medians taken from different
//! reps does not cancel it), as the throughput benchmark judges its cells.

use crate::stats::{Paired, median, of_ratios};

/// One run's figures: a rate (transactions or connections per second) and, where the
/// tool gives them, latency percentiles in microseconds.
#[derive(Clone, Debug)]
pub(crate) struct Figures {
    pub(crate) rate: f64,
    pub(crate) p50: Option<f64>,
    pub(crate) p99: Option<f64>,
    pub(crate) p999: Option<f64>,
}

impl Figures {
    pub(crate) fn describe(&self) -> String {
        let us = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| format!("{v:.1}"));
        format!(
            "{:>10.0}/s  p50 {:>7} us  p99 {:>7} us  p99.9 {:>8} us",
            self.rate,
            us(self.p50),
            us(self.p99),
            us(self.p999)
        )
    }

    /// The median of each figure over the runs that gave one.
    pub(crate) fn median_of(runs: &[Option<Self>]) -> Option<Self> {
        let ok: Vec<&Self> = runs.iter().flatten().collect();
        if ok.is_empty() {
            return None;
        }
        let of = |f: Get| {
            let v: Vec<f64> = ok.iter().filter_map(|r| f(r)).collect();
            (!v.is_empty()).then(|| median(v))
        };
        Some(Self {
            rate: median(ok.iter().map(|r| r.rate).collect()),
            p50: of(|r| r.p50),
            p99: of(|r| r.p99),
            p999: of(|r| r.p999),
        })
    }

    /// "rate x1.12, p50 x0.97, p99 x1.01": the ratios of two medians (ours / theirs),
    /// latencies only where `timed_alike`.
    pub(crate) fn against(&self, theirs: &Self, timed_alike: bool) -> String {
        let mut parts = vec![format!("rate x{:.2}", self.rate / theirs.rate)];
        for (name, a, b) in [("p50", self.p50, theirs.p50), ("p99", self.p99, theirs.p99)] {
            if let (Some(a), Some(b), true) = (a, b, timed_alike) {
                parts.push(format!("{name} x{:.2}", a / b));
            }
        }
        parts.join(", ")
    }
}

/// One figure of a run, where the tool gave it.
type Get = fn(&Figures) -> Option<f64>;

/// What ntttcp is held to against a peer: at least `rate` times its rate and, with
/// `latency`, p50 and p99 at most x1.05 of its.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Goal {
    pub(crate) rate: f64,
    pub(crate) latency: bool,
}

impl Goal {
    /// Whether latencies are compared (both tools time the same exchange).
    pub(crate) fn timed_alike(goal: Option<Self>) -> bool {
        goal.is_none_or(|g| g.latency)
    }

    fn says(&self) -> String {
        let l = if self.latency {
            ", p50 and p99 <= x1.05"
        } else {
            ""
        };
        format!("rate >= x{:.1}{l}", self.rate)
    }
}

/// Rep by rep against a peer: for the rate and (where `goal` times alike) p50 and p99,
/// the median per-rep ratio ours / theirs, its range and in how many reps ours was
/// better, then the verdict of `goal` on those medians (none: shown beside).
pub(crate) fn rep_by_rep(
    ours: &[Option<Figures>],
    theirs: &[Option<Figures>],
    goal: Option<Goal>,
) -> String {
    let mut figures: Vec<(&str, Get, bool)> = vec![("rate", |f| Some(f.rate), true)];
    if Goal::timed_alike(goal) {
        figures.push(("p50", |f| f.p50, false));
        figures.push(("p99", |f| f.p99, false));
    }
    let mut parts = Vec::new();
    let mut held = goal.is_some();
    for (name, get, higher) in figures {
        let Some(p) = paired(ours, theirs, get) else {
            continue;
        };
        let (way, better) = if higher {
            ("higher", p.above)
        } else {
            ("lower", p.below)
        };
        parts.push(format!("{name} {}", p.describe(way, better)));
        held &= goal.is_some_and(|g| {
            if higher {
                p.median >= g.rate
            } else {
                p.median <= 1.05
            }
        });
    }
    let verdict = match (goal, held) {
        (None, _) => "beside, no goal".into(),
        (Some(g), true) => format!("goal held: {}", g.says()),
        (Some(g), false) => format!("goal MISSED: {}", g.says()),
    };
    format!("{} ({verdict})", parts.join("; "))
}

/// The per-rep ratios of one figure over the reps in which both gave it.
fn paired(ours: &[Option<Figures>], theirs: &[Option<Figures>], get: Get) -> Option<Paired> {
    let ratios = ours
        .iter()
        .zip(theirs)
        .filter_map(|(a, b)| Some(get(a.as_ref()?)? / get(b.as_ref()?)?));
    of_ratios(ratios.collect())
}
