//! `ntttcp`: the command line in, an exit status out (0 completed, 1 runtime failure,
//! 2 usage error, 3 below `--min-throughput`, 130 interrupted). The flow is `app::main`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<_> = std::env::args_os().collect();
    ExitCode::from(ntttcp::main(&args))
}
