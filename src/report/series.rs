//! A series of runs (`--repeat N`): how their throughputs spread.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The throughput of a series of the same test, run back to back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Series {
    /// Runs asked for (`--repeat`).
    pub asked: u32,
    /// Runs that completed and are summed up here (fewer when one failed: the series
    /// ends there).
    pub runs: usize,
    /// Each run's throughput, bits per second (its receiver's where this side has it).
    pub bits_per_second: Vec<f64>,
    /// Over the runs, bits per second.
    pub summary: Spread,
}

/// Least, median, most, mean, standard deviation and 95 % confidence interval of the mean.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Spread {
    /// The least.
    pub min: f64,
    /// The median (the mean of the middle two of an even count).
    pub median: f64,
    /// The most.
    pub max: f64,
    /// The mean.
    pub mean: f64,
    /// The sample standard deviation (n − 1); null for one run.
    pub stddev: Option<f64>,
    /// The 95 % confidence interval of the mean (Student's t, n − 1 degrees of freedom):
    /// its low end; null for one run.
    pub ci95_low: Option<f64>,
    /// Its high end; null for one run.
    pub ci95_high: Option<f64>,
}
