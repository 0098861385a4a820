//! The command line: one clap definition for both dialects, and the rules that turn it
//! into a `Config`. This is the only module that imports clap.
//!
//! Flow: `winstyle::normalize` (dialect + spelling) → clap (`args::Cli`) →
//! `rules::to_config` (every cross-flag rule, in one place) → `host::check_on_this_host`
//! (the step after parsing, which looks at this host). Errors come back as one-line
//! `UsageError`s.

mod args;
mod assemble;
mod beyond;
mod help;
pub(crate) mod host;
mod rules;
pub(crate) mod values;
pub(crate) mod winstyle;

use std::ffi::OsString;

use clap::{CommandFactory, FromArgMatches};

use crate::config::{Config, Dialect, UsageError};
use crate::report::{OutputFile, Presentation};
use args::Cli;
use rules::to_config;

/// What `parse` produced: a configuration to run, or help or the version to show.
#[derive(Debug)]
pub(crate) enum Parsed {
    /// Run a test.
    Run(Box<Config>, Box<Presentation>),
    /// `-h` / `--help`: print this text to stdout and exit 0.
    Help(String),
    /// `--version`: print the version line and exit 0.
    Version,
    /// `--generate`: print this text (a man page, a completion script) as it is.
    Generated(String),
}

/// The man page or a completion script, from the same clap definition as the parser.
fn generate(kind: &str) -> String {
    use clap_complete::Shell;
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    let shell = match kind {
        "complete-bash" => Some(Shell::Bash),
        "complete-zsh" => Some(Shell::Zsh),
        "complete-fish" => Some(Shell::Fish),
        "complete-powershell" => Some(Shell::PowerShell),
        _ => None,
    };
    match shell {
        Some(shell) => clap_complete::generate(shell, &mut cmd, "ntttcp", &mut out),
        // Writing into a Vec cannot fail.
        None => clap_mangen::Man::new(cmd)
            .render(&mut out)
            .unwrap_or_default(),
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses a whole command line (program name first). `cpus` are the CPU numbers this
/// process may run on, for checking `-m` CPU fields.
pub(crate) fn parse(args: &[OsString], cpus: &[usize]) -> Result<Parsed, UsageError> {
    let command = Cli::command();
    let longs: Vec<String> = command
        .get_arguments()
        .flat_map(|a| a.get_long_and_visible_aliases().unwrap_or_default())
        .map(str::to_string)
        .collect();
    let normalized = winstyle::normalize(args, &longs).map_err(UsageError)?;
    let matches = match command.try_get_matches_from(&normalized.args) {
        Ok(m) => m,
        Err(e) => {
            use clap::error::ErrorKind;
            return match e.kind() {
                ErrorKind::DisplayHelp => Ok(Parsed::Help(e.render().to_string())),
                ErrorKind::DisplayVersion => Ok(Parsed::Version),
                _ => {
                    let line = as_typed(&one_line(&e.render().to_string()), &normalized);
                    let hint = (normalized.dialect == Dialect::Linux)
                        .then(|| help::windows_hint(&line))
                        .flatten();
                    Err(UsageError(match hint {
                        Some(h) => format!("{line}; {h}"),
                        None => line,
                    }))
                }
            };
        }
    };
    let cli = Cli::from_arg_matches(&matches).map_err(|e| UsageError(one_line(&e.to_string())))?;
    if let Some(kind) = &cli.generate {
        return Ok(Parsed::Generated(generate(kind)));
    }
    let file = |p: &Option<std::path::PathBuf>, long: &str| {
        let flag = typed_flag(long, &normalized);
        p.as_ref()
            .map(|p| match std::path::absolute(p) {
                Ok(path) => Ok(OutputFile { path, flag }),
                Err(e) => Err(UsageError(format!(
                    "invalid value '{}' for '{flag}': {e}",
                    p.display()
                ))),
            })
            .transpose()
    };
    let presentation = Presentation {
        hide_per_thread: cli.hide_per_thread,
        xml: file(&cli.xml, "xml")?,
        json: file(&cli.json, "json")?,
        log: file(&cli.log, "log")?,
        xml_windows: file(&cli.xml_windows, "xml-windows")?,
        plot: file(&cli.plot, "plot")?,
        min_throughput: cli.min_throughput.map(|r| r.0),
        max_stall: cli.max_stall,
        format: cli.format.unwrap_or_default(),
        interval: cli.interval,
        quiet: cli.quiet,
        notes: vec![format!(
            "read as {} ({})",
            match normalized.dialect {
                Dialect::Linux => "an ntttcp-for-linux line",
                Dialect::Windows => "a Windows NTttcp line",
            },
            normalized.reason
        )],
        warnings: rules::ports_override(&cli, &matches).into_iter().collect(),
    };
    let config = to_config(cli, &matches, &normalized, cpus)?;
    Ok(Parsed::Run(Box::new(config), Box::new(presentation)))
}

/// clap's first line ("error: ...") without the usage lines that follow it, keeping a
/// list of possible values and a "did you mean" tip.
fn one_line(rendered: &str) -> String {
    let first = rendered.lines().next().unwrap_or("invalid command line");
    let mut out = first.trim_start_matches("error: ").trim().to_string();
    let line = |prefix: &str| {
        rendered
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with(prefix))
    };
    // A value outside a fixed list: clap lists the list on a line of its own.
    if let Some(values) = line("[possible values:") {
        out = format!("{out} {values}");
    }
    // A misspelled flag: clap's "did you mean".
    if let Some(tip) = line("tip: a similar") {
        out = format!("{out} ({tip})");
    }
    out
}

/// The spelling the user typed for the flag whose long name is `long`: the Windows token
/// the normalizer rewrote, else the short letter if one was typed, else `--long`.
fn typed_flag(long: &str, normalized: &winstyle::Normalized) -> String {
    if let Some((_, t)) = normalized.spelled.iter().find(|(l, _)| l == long) {
        return t.clone();
    }
    let short = Cli::command()
        .get_arguments()
        .find(|a| a.get_long() == Some(long))
        .and_then(|a| a.get_short())
        .map(|c| format!("-{c}"));
    short
        .filter(|short| {
            normalized
                .args
                .iter()
                .any(|a| a.to_str().is_some_and(|a| a.starts_with(short.as_str())))
        })
        .unwrap_or_else(|| format!("--{long}"))
}

/// clap names a flag by its long form (`'--duration <SECS>'`); say it the way the user
/// typed it (`'-t'`, or the Windows spelling the normalizer rewrote).
fn as_typed(message: &str, normalized: &winstyle::Normalized) -> String {
    let mut out = message.to_string();
    for arg in Cli::command().get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        let typed = typed_flag(long, normalized);
        let v = arg
            .get_value_names()
            .and_then(|n| n.first().map(|v| v.to_string()))
            .unwrap_or_default();
        for form in [
            format!("'--{long} <{v}>'"),
            format!("'--{long} [<{v}>]'"),
            format!("'--{long} <{v}>...'"),
            format!("'--{long}'"),
        ] {
            out = out.replace(&form, &format!("'{typed}'"));
        }
    }
    out
}

#[cfg(test)]
mod tests;
