//! What a run tells the user while it goes: the caller decides where each note is shown.

use super::{Report, Side};
use crate::timeline;

/// Something the run wants the user to know while it goes (the caller prints it).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Note {
    /// Set up and serving: a receiver's ports are bound, a sender is about to connect
    /// (a `-D` daemon tells its foreground process).
    Ready,
    /// Traffic is flowing: "Network activity progressing...".
    Started,
    /// Worth knowing even without -V (on stderr).
    Warn(String),
    /// Progress detail for -V (on stderr).
    Info(String),
    /// A side's results of one test, as soon as they are measured (`-H` gives them
    /// per test): one report, or one per way its bytes went (`--bidir`: two).
    Reports(Vec<Report>),
    /// A sender's peer's results of the test, sent back over the sync connection: given
    /// before this side's own `Reports`, shown and written to the JSON document beside
    /// them (never to this side's result files).
    PeerReports(Vec<Report>),
    /// A phase change or an interval sample of one side.
    Progress(Side, timeline::Progress),
}

/// Where notes go.
pub(crate) type Notes<'a> = &'a (dyn Fn(Note) + Sync);
