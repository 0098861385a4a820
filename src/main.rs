//! `ntttcp`: parse the command line, run, print, map the outcome to an exit status.
//! Exit status: 0 completed, 1 runtime failure, 2 usage error, 130 interrupted.

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use ntttcp::cli::{self, Parsed};
use ntttcp::config::Role;
use ntttcp::report::{Side, console};
use ntttcp::timeline::End;
use ntttcp::{Interrupted, Note, stop::Flag};

fn main() -> ExitCode {
    println!(
        "ntttcp-rs {} (NTttcp-compatible)",
        env!("CARGO_PKG_VERSION")
    );
    let args: Vec<_> = std::env::args_os().collect();
    let (config, look) = match cli::parse(&args, &ntttcp::sys::affinity::allowed_cpus()) {
        Ok(Parsed::Run(c, p)) => (c, p),
        Ok(Parsed::Info(text)) => {
            print!("{text}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("ntttcp: error: {e}");
            return ExitCode::from(2);
        }
    };
    if config.verbose {
        print!("{}", ntttcp::report::settings::render(&config));
    }
    let interrupt = Flag::new();
    if let Err(e) = ntttcp::stop::install_signal_handlers(interrupt.clone()) {
        eprintln!("ntttcp: warning: Ctrl+C handling unavailable: {e}");
    }
    let started = AtomicBool::new(false);
    let verbose = config.verbose;
    let notes = move |n: Note| match n {
        Note::Started if !started.swap(true, Ordering::Relaxed) => {
            println!("Network activity progressing...");
            let _ = std::io::stdout().flush();
        }
        Note::Started => {}
        Note::Warn(m) => eprintln!("ntttcp: {m}"),
        Note::Info(m) if verbose => eprintln!("ntttcp: {m}"),
        Note::Info(_) => {}
    };
    match ntttcp::run(&config, &interrupt, &notes) {
        Ok(outcome) => {
            for r in &outcome.reports {
                if config.role == Role::Loopback {
                    let who = if r.side == Side::Sender {
                        "Sender"
                    } else {
                        "Receiver"
                    };
                    print!("\n\n{who}:");
                }
                print!("{}", console::render(r, look.hide_per_thread));
            }
            match outcome.end() {
                End::Fault(reason) => {
                    eprintln!("ntttcp: error: test ended early: {reason}");
                    ExitCode::from(1)
                }
                End::Interrupted => ExitCode::from(130),
                End::Completed | End::PeerEnded => ExitCode::SUCCESS,
            }
        }
        Err(e) if e.is::<Interrupted>() => {
            eprintln!("ntttcp: {e}");
            ExitCode::from(130)
        }
        Err(e) => {
            eprintln!("ntttcp: error: {e:#}");
            ExitCode::from(1)
        }
    }
}
