//! The parsers of outside input, as the fuzz targets in `fuzz/` drive them (feature
//! `fuzzing`; not part of the product). Each function takes the fuzzer's bytes, runs
//! the real code on them and panics when a property fails: no panic of the code itself,
//! no wait without a deadline, no output out of proportion to the input, and the
//! round trips named at each target. The targets measure memory themselves (`fuzz/src`).
//!
//! The sync protocols run over [`Script`], a stream in memory that gives the fuzzer's
//! bytes as the peer's and keeps what the code sends, on a current-thread runtime whose
//! clock is paused: it jumps to the next timer when nothing else can run, so a deadline
//! of 10 s costs nothing and a read with no deadline never ends (and the fuzzer reports
//! it as a timeout).

mod data;
mod script;
mod sync;
mod tables;
mod text;

pub use data::{data_opening, rr_framing, udp_accounting};
pub use sync::{sync_frames, sync_receiver, sync_sender, windows_sync};
pub use tables::windows_tables;
pub use text::{cli, merge, procfs};
