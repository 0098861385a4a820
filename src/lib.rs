//! ntttcp: a Rust re-implementation of Microsoft's NTTTCP network throughput benchmark,
//! drop-in for both the Windows NTttcp and the ntttcp-for-linux command lines, and
//! wire-compatible with ntttcp-for-linux's sync protocol.
//!
//! The binary is the product; this library is its inside, public only where `main`
//! enters (`main`, which returns the documented exit status). The floors, each importing
//! only from below:
//! * `app` — the command: parse, check the host and outputs, detach, run, exit status.
//! * `run` — one run of a role (both for `--loopback`) and the outcome's exit status;
//!   `merge` — `ntttcp merge`, many runs' documents folded into one; `repeat` —
//!   `--repeat`, one test run back to back and summed up.
//! * `sender`, `receiver` — each role's story: set up, handshake, timeline, report.
//! * `render` — every output: tables, log lines, JSON/XML, plots; `terminal` writes them.
//! * `cli` — the command line (both dialects) → `config::Config`. Only `cli` knows clap.
//! * `role` — what both roles share.
//! * `stats` — every formula: a measured window → its `Report`, the tables' figures.
//! * `report` — the one result model: renderers read it, `--format json` serializes it.
//! * `timeline` — warm-up / measure / cool-down and the events that cut them short.
//! * `data` — pinned worker threads and the TCP/UDP send and receive loops.
//! * `sys` — /proc counters, CPU pinning, sockets, addresses; `control` — the sync
//!   channel (`message`: bytes ↔ meaning, by phase).
//! * `plan` — one side's run resolved once from its `Config` and what the host and path
//!   showed; everything after the setup reads it.
//! * `config` — what a run needs; `pace` — rate limits; `stop` — one-way flags and
//!   signals; `admission` — which data connections a receiver keeps.

mod admission;
mod app;
mod cli;
mod config;
mod control;
mod data;
#[cfg(all(feature = "fuzzing", not(windows)))]
#[doc(hidden)]
pub mod fuzz;
mod merge;
mod pace;
mod plan;
mod receiver;
mod render;
mod repeat;
mod report;
mod role;
mod run;
mod sender;
mod stats;
mod stop;
mod sys;
mod timeline;

pub use app::main;
