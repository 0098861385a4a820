//! The `ntttcp` command from arguments to exit status: parse, check the line against this
//! host and the outputs, detach with `-D`, print the banner, run, and map the outcome to a
//! documented status (0 completed, 1 runtime failure, 2 usage error, 3 below
//! `--min-throughput`, 130 interrupted).

use std::ffi::OsString;

use crate::cli::{self, Parsed};
use crate::config::{Config, UsageError};
use crate::render::{files, settings, stdio, terminal};
use crate::report::{Note, Presentation};
use crate::role::Interrupted;
use crate::run::{EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_USAGE};
use crate::stop::{self, Flag};
use crate::sys::{affinity, daemon};

/// The one line `--version` prints and the human formats start with: the version, and
/// the git commit when built from a checkout.
pub(crate) fn banner() -> String {
    let commit = option_env!("NTTTCP_GIT_COMMIT").map_or(String::new(), |c| format!(" {c}"));
    format!(
        "ntttcp {}{commit} (NTttcp-compatible)\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// Runs the command line `args` (program name first) and returns its exit status.
pub fn main(args: &[OsString]) -> u8 {
    let banner = banner();
    let (mut config, look) = match cli::parse(args, &affinity::allowed_cpus()) {
        Ok(Parsed::Run(c, p)) => (c, *p),
        Ok(Parsed::Help(text)) => return print_info(&format!("{banner}{text}")),
        Ok(Parsed::Version) => return print_info(&banner),
        Ok(Parsed::Generated(text)) => return print_info(&text),
        Ok(Parsed::Merge(job)) => return crate::merge::run(&job),
        Err(e) => return usage_error(&e),
    };
    if let Err(e) = cli::host::check_on_this_host(&mut config) {
        return usage_error(&e);
    }
    if let Err(e) = files::check_outputs(&look) {
        return usage_error(&e);
    }
    let _pid_file = match detach(&config) {
        Ok(pid_file) => pid_file,
        Err(status) => return status,
    };
    config.show.interval = terminal::sampling_interval(&look);
    let mut term = match terminal::Terminal::new(&config, look.clone()) {
        Ok(t) => t,
        Err(e) => {
            stdio::err(&format!("ntttcp: error: {e}"));
            return EXIT_FAILURE;
        }
    };
    print_preamble(&term, &config, &look, &banner);
    let interrupt = Flag::new();
    if let Err(e) = stop::install_signal_handlers(interrupt.clone()) {
        term.err(&format!("ntttcp: warning: no Ctrl+C handling: {e}"));
    }
    let status = run(&config, &look, &term, &interrupt);
    term.finish();
    // An output that could not be written (each said on stderr as it happened) fails a
    // run that otherwise went well.
    if !term.failures().is_empty() && status != EXIT_USAGE {
        return EXIT_FAILURE;
    }
    status
}

/// Prints `text` (help, the version, a generated file) and exits 0.
fn print_info(text: &str) -> u8 {
    stdio::out(text);
    0
}

/// `-D`: returns in the daemon (with its pid file), or the foreground's exit status.
fn detach(config: &Config) -> Result<Option<daemon::PidFile>, u8> {
    let bg = &config.background;
    match daemon::detach_if(bg.daemon, bg.pid_file.as_deref()) {
        Ok(daemon::Background::Started(pid)) => {
            stdio::out(&format!("running in the background (pid {pid})\n"));
            Err(0)
        }
        Err(e) if !daemon::in_background() => {
            stdio::err(&format!(
                "ntttcp: error: the background process failed: {e}"
            ));
            Err(EXIT_FAILURE)
        }
        Ok(daemon::Background::Running(pid_file)) => Ok(pid_file),
        Err(e) => {
            stdio::err(&format!("ntttcp: error: {e}"));
            Err(EXIT_FAILURE)
        }
    }
}

/// What is said before the run: the parser's warnings and (with -V) notes, the banner
/// and (with -V) the settings.
fn print_preamble(term: &terminal::Terminal, config: &Config, look: &Presentation, banner: &str) {
    for w in &look.warnings {
        term.note(Note::Warn(w.clone()));
    }
    for n in &look.notes {
        term.note(Note::Info(n.clone()));
    }
    if look.format.is_human() {
        term.out(banner);
        if config.show.verbose {
            term.out(&settings::render(config));
        }
    }
}

/// The run, its notes on the console, and its exit status.
fn run(config: &Config, look: &Presentation, term: &terminal::Terminal, interrupt: &Flag) -> u8 {
    let failed = |e: anyhow::Error| failure(term, &e);
    if config.repeat > 1 {
        return crate::repeat::run(config, look, term, interrupt, failed);
    }
    let notes = |n: Note| match n {
        Note::Ready => daemon::announce_ready(),
        n => term.note(n),
    };
    match crate::run::run(config, interrupt, &notes) {
        Ok(outcome) => crate::run::exit_status(&outcome, look.min_throughput, look.max_stall),
        Err(e) => failed(e),
    }
}

/// A run that measured nothing: its error on stderr, and its exit status.
fn failure(term: &terminal::Terminal, e: &anyhow::Error) -> u8 {
    if e.is::<Interrupted>() {
        term.err(&format!("ntttcp: {e}"));
        return EXIT_INTERRUPTED;
    }
    term.err(&format!("ntttcp: error: {e:#}"));
    if e.is::<UsageError>() {
        EXIT_USAGE
    } else {
        EXIT_FAILURE
    }
}

/// A usage error: one line on stderr, exit 2.
fn usage_error(e: &dyn std::fmt::Display) -> u8 {
    stdio::err(&format!("ntttcp: error: {e}"));
    EXIT_USAGE
}
