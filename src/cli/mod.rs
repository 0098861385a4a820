//! The command line: one clap definition for both dialects, and the rules that turn it
//! into a `Config`. This is the only module that imports clap.
//!
//! Flow: `dialect::normalize` (dialect + spelling) → clap (`args::Cli`) →
//! `rules::to_config` (every cross-flag rule, in one place) → `host::check_on_this_host`
//! (the step after parsing, which looks at this host). Errors come back as one-line
//! `UsageError`s.

mod args;
mod assemble;
pub(crate) mod dialect;
mod help;
pub(crate) mod host;
mod merge;
mod platform;
mod rules;
mod thresholds;
pub(crate) mod values;
mod workloads;

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
    /// `ntttcp merge FILE...`: fold these runs' documents into one.
    Merge(crate::config::MergeJob),
}

/// The clap definition as the parser uses it: a flag that takes one value takes it even
/// when it starts with '-' (`-P -1`, `-b -inf`, `-t -0`), and `-m` a value like `-0`, so
/// the value's own check names the flag and says why it is refused, where clap would
/// read the value as a flag nobody typed. Built once per process: a line's checks and
/// messages consult it several times.
fn command() -> &'static clap::Command {
    static COMMAND: std::sync::LazyLock<clap::Command> = std::sync::LazyLock::new(build);
    &COMMAND
}

fn build() -> clap::Command {
    use clap::ArgAction::{Append, Set};
    Cli::command().mut_args(|a| {
        let takes = matches!(a.get_action(), Set | Append) && !a.is_positional();
        let one = a
            .get_num_args()
            .is_none_or(|n| n.min_values() == 1 && n.max_values() == 1);
        match (takes, one, a.get_num_args().map(|n| n.min_values())) {
            (true, true, _) => a.allow_hyphen_values(true),
            (true, false, Some(1)) => a.allow_negative_numbers(true),
            _ => a,
        }
    })
}

/// The man page or a completion script, from the same clap definition as the parser.
fn generate(kind: &str) -> String {
    use clap_complete::Shell;
    let mut cmd = command().clone();
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
    control_characters(args)?;
    if args.get(1).is_some_and(|a| a == "merge") {
        return match merge::parse(&args[2..]) {
            Ok(job) => Ok(Parsed::Merge(job)),
            Err(Ok(help)) => Ok(Parsed::Help(help)),
            Err(Err(e)) => Err(e),
        };
    }
    let cmd = command();
    let longs: Vec<String> = cmd
        .get_arguments()
        .flat_map(|a| a.get_long_and_visible_aliases().unwrap_or_default())
        .map(str::to_string)
        .collect();
    let normalized = dialect::normalize(args, &longs).map_err(UsageError)?;
    let matches = match cmd.clone().try_get_matches_from(&normalized.args) {
        Ok(m) => m,
        Err(e) => return refused(&e, args, &normalized),
    };
    let cli = Cli::from_arg_matches(&matches).map_err(|e| UsageError(one_line(&e.to_string())))?;
    if let Some(kind) = &cli.generate {
        return Ok(Parsed::Generated(generate(kind)));
    }
    platform::check(&matches, &normalized, crate::sys::OS)?;
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
        min_throughput: cli.thresholds.min_throughput.map(|r| r.0),
        max_stall: cli.thresholds.max_stall,
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
        warnings: [
            rules::dialect_changed(&cli, &normalized),
            rules::ports_override(&cli, &matches),
        ]
        .into_iter()
        .flatten()
        .collect(),
    };
    let config = to_config(cli, &matches, &normalized, cpus)?;
    Ok(Parsed::Run(Box::new(config), Box::new(presentation)))
}

/// What a command line clap refused means: help or the version asked for, or one line
/// naming the flag as typed (a stray value, or clap's error with a hint at the other
/// dialect).
fn refused(
    e: &clap::Error,
    args: &[OsString],
    normalized: &dialect::Normalized,
) -> Result<Parsed, UsageError> {
    use clap::error::ErrorKind;
    if e.kind() == ErrorKind::UnknownArgument
        && let Some(line) = stray_value(args)
    {
        return Err(UsageError(line));
    }
    match e.kind() {
        ErrorKind::DisplayHelp => Ok(Parsed::Help(e.render().to_string())),
        ErrorKind::DisplayVersion => Ok(Parsed::Version),
        _ => {
            let line = as_typed(&one_line(&e.render().to_string()), normalized);
            let line = in_cluster(line, e, args);
            let hint = (normalized.dialect == Dialect::Linux)
                .then(|| help::windows_hint(&line))
                .flatten();
            Err(UsageError(match hint {
                Some(h) => format!("{line}; {h}"),
                None => line,
            }))
        }
    }
}

/// Where clap names one letter of a cluster of short flags (`-%` of `-H%`), which was
/// not typed as such: the argument as typed, after it.
fn in_cluster(line: String, e: &clap::Error, args: &[OsString]) -> String {
    use clap::error::{ContextKind, ContextValue};
    let Some(ContextValue::String(bad)) = e.get(ContextKind::InvalidArg) else {
        return line;
    };
    let letter = match bad.strip_prefix('-') {
        Some(l) if l.chars().count() == 1 && !args.iter().any(|a| a == bad.as_str()) => l,
        _ => return line,
    };
    let typed = args.iter().skip(1).map(|a| a.to_string_lossy());
    let cluster = typed.into_iter().find(|a| clusters(a, letter));
    match cluster {
        Some(a) => format!("{line} (in '{a}')"),
        None => line,
    }
}

/// The argument a word names as a flag (`-P`, `--ports`), if any.
fn flag_named(word: &str) -> Option<clap::Arg> {
    command()
        .get_arguments()
        .find(|a| match word.strip_prefix("--") {
            Some(long) => a
                .get_long_and_visible_aliases()
                .unwrap_or_default()
                .contains(&long),
            None => {
                word.len() == 2 && word.starts_with('-') && a.get_short() == word.chars().nth(1)
            }
        })
        .cloned()
}

/// What clap reads as a flag nobody typed, or a word nobody meant as one, said as the
/// user typed it: a value like `-inf` or `-1` after a flag whose value is optional
/// (`--rr`, `-j`, `-f`; clap saw `'-i'`), or a flag where a value was due (`-P -t 5`:
/// `-P` took `-t`, and clap saw `'5'`).
fn stray_value(args: &[OsString]) -> Option<String> {
    use clap::ArgAction::{Append, Set};
    let words: Vec<&str> = args.iter().skip(1).filter_map(|a| a.to_str()).collect();
    let numeric = |t: &str| {
        t.strip_prefix('-').is_some_and(|rest| {
            let l = rest.to_ascii_lowercase();
            matches!(l.as_str(), "inf" | "infinity" | "nan") || l.parse::<f64>().is_ok()
        })
    };
    words.windows(2).find_map(|w| {
        let arg = flag_named(w[0]).filter(|a| matches!(a.get_action(), Set | Append))?;
        let why = if numeric(w[1]) {
            "a negative or infinite number is not a value it takes".to_string()
        } else if flag_named(w[1]).is_some() && arg.get_num_args().is_none() {
            format!("that is a flag: give '{}' its value first", w[0])
        } else {
            return None;
        };
        Some(format!("invalid value '{}' for '{}': {why}", w[1], w[0]))
    })
}

/// clap's first line ("error: ...") without the usage lines that follow it, keeping a
/// list of possible values and a "did you mean" tip.
/// An argument that is not UTF-8, or has a control character in it (a carriage return
/// from a script saved with Windows line endings, say), is never what was meant, and
/// would break the one-line error it could end up in: refused, shown escaped.
fn control_characters(args: &[OsString]) -> Result<(), UsageError> {
    if let Some(a) = args.iter().skip(1).find(|a| a.to_str().is_none()) {
        return Err(UsageError(format!("argument {a:?} is not valid UTF-8")));
    }
    let lossy = args.iter().skip(1).map(|a| a.to_string_lossy());
    let Some(arg) = lossy.into_iter().find(|a| a.chars().any(char::is_control)) else {
        return Ok(());
    };
    let hint = match arg.contains('\r') {
        true => " (a script saved with Windows line endings?)",
        false => "",
    };
    Err(UsageError(format!(
        "invalid argument '{}': it holds a control character{hint}",
        arg.escape_debug()
    )))
}

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
/// the normalizer rewrote, else `--long` if typed, else the short letter if it was
/// typed (alone or in a cluster such as `-en4`), else `--long`.
fn typed_flag(long: &str, normalized: &dialect::Normalized) -> String {
    if let Some((_, t)) = normalized.spelled.iter().find(|(l, _)| l == long) {
        return t.clone();
    }
    let dashed = format!("--{long}");
    let args: Vec<&str> = normalized.args.iter().filter_map(|a| a.to_str()).collect();
    if args
        .iter()
        .any(|a| a.split('=').next() == Some(dashed.as_str()))
    {
        return dashed;
    }
    let short = command()
        .get_arguments()
        .find(|a| a.get_long() == Some(long))
        .and_then(|a| a.get_short());
    match short {
        Some(c) if args.iter().any(|a| clusters(a, c.encode_utf8(&mut [0; 4]))) => {
            format!("-{c}")
        }
        _ => dashed,
    }
}

/// Whether `arg` is a short flag or a cluster of them (`-Vn4`) holding `letter`.
fn clusters(arg: &str, letter: &str) -> bool {
    !arg.starts_with("--") && arg.strip_prefix('-').is_some_and(|r| r.contains(letter))
}

/// clap names a flag by its long form (`'--duration <SECS>'`); say it the way the user
/// typed it (`'-t'`, or the Windows spelling the normalizer rewrote).
fn as_typed(message: &str, normalized: &dialect::Normalized) -> String {
    let mut out = message.to_string();
    for arg in command().get_arguments() {
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
