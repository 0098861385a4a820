//! How the user asked to see the results: formats, files, exit thresholds. Nothing here changes
//! what is measured.

use std::time::Duration;

use super::Format;

/// A file the user asked for, with the flag as typed (for messages about it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OutputFile {
    /// Absolute path.
    pub path: std::path::PathBuf,
    /// The flag as the user typed it (`-x`, `--xml`, `-xml`, ...).
    pub flag: String,
}

/// Rendering and output choices that do not affect the measurement. Paths are absolute,
/// so a daemon writes where the command was typed.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Presentation {
    /// Omit the per-thread table (`-hpt`).
    pub hide_per_thread: bool,
    /// ntttcp-for-linux XML file (`-x`).
    pub xml: Option<OutputFile>,
    /// ntttcp-for-linux JSON file (`-j`).
    pub json: Option<OutputFile>,
    /// Console copy (`-O`).
    pub log: Option<OutputFile>,
    /// Windows NTttcp XML file, appended (`-xml`).
    pub xml_windows: Option<OutputFile>,
    /// SVG chart of the intervals (`--plot`).
    pub plot: Option<OutputFile>,
    /// Exit 3 below this many bits per second.
    pub min_throughput: Option<f64>,
    /// Exit 1 when a stall was longer than this.
    pub max_stall: Option<Duration>,
    /// How results are shown on stdout.
    pub format: Format,
    /// Interval reports asked for with `--interval`.
    pub interval: Option<Duration>,
    /// `-Q`: no live progress lines.
    pub quiet: bool,
    /// What the parser wants said with `-V` (which dialect the line was read in, and why).
    pub notes: Vec<String>,
    /// What the parser wants said always (a `-P` that overrides `-m`).
    pub warnings: Vec<String>,
}
