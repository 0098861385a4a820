//! The flags of what neither NTTTCP has (`--rr`, `-R`, `--bidir`, `--connect-rate`),
//! flattened into `Cli` under their own help heading.

use super::values::ByteSize;

/// The workloads beyond NTTTCP's bulk stream; at most one per line.
#[derive(Debug, clap::Args)]
pub(crate) struct Workloads {
    /// Sender: request/response instead of bulk data: each connection sends SIZE bytes
    /// (default 1), waits for the receiver to echo them and times the round trip;
    /// reports transactions/s and latency percentiles. Needs this ntttcp as the receiver.
    #[arg(long = "rr", value_name = "SIZE", num_args = 0..=1, default_missing_value = "1",
          help_heading = "Beyond NTTTCP")]
    pub rr: Option<ByteSize>,

    /// Sender: reverse: open the connections as usual, but the receiver sends and this
    /// side receives (both report which way their bytes went). Needs this ntttcp as the
    /// receiver.
    #[arg(
        short = 'R',
        long = "reverse",
        conflicts_with = "rr",
        help_heading = "Beyond NTTTCP"
    )]
    pub reverse: bool,

    /// Sender: both directions at once: every connection carries data each way, and
    /// each side reports each way on its own. Needs this ntttcp as the receiver.
    #[arg(
        long = "bidir",
        conflicts_with_all = ["rr", "reverse"],
        help_heading = "Beyond NTTTCP"
    )]
    pub bidir: bool,

    /// Sender: connection rate: each connection slot of a thread (-l) opens a connection
    /// and closes it again at once, as fast as it goes; reports connections/s and the
    /// connect times' percentiles. Needs this ntttcp as the receiver, with sync.
    #[arg(
        long = "connect-rate",
        conflicts_with_all = ["rr", "reverse", "bidir"],
        help_heading = "Beyond NTTTCP"
    )]
    pub connect_rate: bool,
}
