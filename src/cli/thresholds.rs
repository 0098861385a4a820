//! The exit thresholds (`--min-throughput`, `--max-stall`): what a CI job's run must
//! reach to exit 0, flattened into `Cli` under the Output heading.

use std::time::Duration;

use super::help::parse_interval;
use super::values::Rate;

/// After printing, the verdicts that turn a completed run's exit status.
#[derive(Debug, clap::Args)]
pub(crate) struct Thresholds {
    /// After printing, exit 3 if the throughput is below RATE (bits/s; 5G, 500M).
    #[arg(
        long = "min-throughput",
        value_name = "RATE",
        help_heading = "Output",
        hide_short_help = true
    )]
    pub min_throughput: Option<Rate>,

    /// After printing, exit 1 if no data moved for longer than SECS at any one time during
    /// the measurement (stalls are tracked every 0.1 s).
    #[arg(long = "max-stall", value_name = "SECS", value_parser = parse_interval, help_heading = "Output", hide_short_help = true)]
    pub max_stall: Option<Duration>,
}
