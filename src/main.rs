//! `ntttcp`: parse the command line, run, print, map the outcome to an exit status
//! (0 completed, 1 runtime failure, 2 usage error, 130 interrupted).

use std::process::ExitCode;

use ntttcp::cli::{self, Parsed};
use ntttcp::render::{settings, terminal};
use ntttcp::sys::{affinity, daemon};
use ntttcp::{Interrupted, Note, stop::Flag};

fn main() -> ExitCode {
    let banner = format!(
        "ntttcp-rs {} (NTttcp-compatible)\n",
        env!("CARGO_PKG_VERSION")
    );
    let args: Vec<_> = std::env::args_os().collect();
    let (mut config, look) = match cli::parse(&args, &affinity::allowed_cpus()) {
        Ok(Parsed::Run(c, p)) => (c, *p),
        Ok(Parsed::Info(text)) => {
            terminal::out(&format!("{banner}{text}"));
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            terminal::err(&format!("ntttcp: error: {e}"));
            return ExitCode::from(ntttcp::EXIT_USAGE);
        }
    };
    if let Err(e) = terminal::check_outputs(&look) {
        terminal::err(&format!("ntttcp: error: {e}"));
        return ExitCode::from(ntttcp::EXIT_USAGE);
    }
    let _pid_file = match daemon::detach_if(config.daemon, config.pid_file.as_deref()) {
        Ok(daemon::Background::Started(pid)) => {
            terminal::out(&format!("running in the background (pid {pid})\n"));
            return ExitCode::SUCCESS;
        }
        Err(e) if !daemon::in_background() => {
            terminal::err(&format!(
                "ntttcp: error: the background process failed: {e}"
            ));
            return ExitCode::from(ntttcp::EXIT_FAILURE);
        }
        Ok(daemon::Background::Running(pid_file)) => pid_file,
        Err(e) => {
            terminal::err(&format!("ntttcp: error: {e}"));
            return ExitCode::from(ntttcp::EXIT_FAILURE);
        }
    };
    let term = match terminal::Terminal::new(&mut config, look.clone()) {
        Ok(t) => t,
        Err(e) => {
            terminal::err(&format!("ntttcp: error: {e}"));
            return ExitCode::from(ntttcp::EXIT_FAILURE);
        }
    };
    if look.format.is_human() {
        term.out(&banner);
        if config.verbose {
            term.out(&settings::render(&config));
        }
    }
    let interrupt = Flag::new();
    if let Err(e) = ntttcp::stop::install_signal_handlers(interrupt.clone()) {
        term.err(&format!("ntttcp: warning: no Ctrl+C handling: {e}"));
    }
    let notes = |n: Note| match n {
        Note::Ready => daemon::announce_ready(),
        n => term.note(n),
    };
    let status = match ntttcp::run(&config, &interrupt, &notes) {
        Ok(outcome) => ntttcp::exit_status(&outcome, look.min_throughput, look.max_stall),
        Err(e) if e.is::<Interrupted>() => {
            term.err(&format!("ntttcp: {e}"));
            ntttcp::EXIT_INTERRUPTED
        }
        Err(e) if e.is::<ntttcp::config::UsageError>() => {
            term.err(&format!("ntttcp: error: {e:#}"));
            ntttcp::EXIT_USAGE
        }
        Err(e) => {
            term.err(&format!("ntttcp: error: {e:#}"));
            ntttcp::EXIT_FAILURE
        }
    };
    // An output that could not be written (each said on stderr as it happened) fails a
    // run that otherwise went well.
    if !term.failures().is_empty() && status != ntttcp::EXIT_USAGE {
        return ExitCode::from(ntttcp::EXIT_FAILURE);
    }
    ExitCode::from(status)
}
