//! What `ntttcp merge` adds to a document: one row per input (a pair of hosts that ran
//! side by side), the spread of their throughputs, and how much their windows overlapped.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How the merged runs compare.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Merge {
    /// One row per input document, in the order given.
    pub pairs: Vec<Pair>,
    /// The inputs' throughputs: least, median and most, bits per second.
    pub bits_per_second: Spread,
    /// Seconds every input's window has in common (0 when some never overlapped).
    pub overlap_s: f64,
    /// `overlap_s` over the longest input window, 0 to 1: 1 when all measured the same
    /// seconds.
    pub overlap_fraction: f64,
}

/// One input of a merge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Pair {
    /// The file it came from (`-` for stdin).
    pub file: String,
    /// The host that measured its throughput: the receiver's where the document has it,
    /// else the sender's.
    pub host: String,
    /// Its throughput, bits per second (that report's `totals.bits_per_second`).
    pub bits_per_second: f64,
    /// Its window's first edge on the wall clock, seconds since the Unix epoch.
    pub window_start_unix_s: f64,
    /// Its window's last edge.
    pub window_end_unix_s: f64,
}

/// Least, median and most of a set of figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Spread {
    /// The least.
    pub min: f64,
    /// The median (the mean of the middle two of an even count).
    pub median: f64,
    /// The most.
    pub max: f64,
}

impl Spread {
    /// The spread of `v` (all zero when empty).
    pub(crate) fn of(v: &[f64]) -> Self {
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        if n == 0 {
            return Self {
                min: 0.0,
                median: 0.0,
                max: 0.0,
            };
        }
        let median = if n % 2 == 1 {
            s[n / 2]
        } else {
            (s[n / 2 - 1] + s[n / 2]) / 2.0
        };
        Self {
            min: s[0],
            median,
            max: s[n - 1],
        }
    }
}
