//! `ntttcp merge FILE...`: its own short command line, apart from the test's flags.

use std::ffi::OsString;

use clap::{Arg, ArgAction, Command};

use crate::config::{MergeJob, UsageError};

/// The merge command's definition.
fn command() -> Command {
    Command::new("ntttcp merge")
        .about(
            "Folds the JSON documents (--format json) of runs that ran side by side, one \
             pair of hosts each, into one: the summed sender and receiver reports, one row \
             per input, the spread of their throughputs and how much their windows \
             overlapped.",
        )
        .arg(
            Arg::new("format")
                .long("format")
                .value_name("FORMAT")
                .value_parser(["windows", "json"])
                .default_value("windows")
                .help("windows: NTttcp's Totals tables over the sum; json: one document"),
        )
        .arg(
            Arg::new("files")
                .value_name("FILE")
                .num_args(1..)
                .required(true)
                .action(ArgAction::Append)
                .help("a --format json document; '-' reads one from stdin"),
        )
}

/// What `ntttcp merge ARGS` asks for (`args`: what follows `merge`); `Err(Ok(text))` is
/// help to print, `Err(Err(e))` a usage error.
pub(crate) fn parse(args: &[OsString]) -> Result<MergeJob, Result<String, UsageError>> {
    let argv = std::iter::once(OsString::from("ntttcp merge")).chain(args.iter().cloned());
    let m = command().try_get_matches_from(argv).map_err(|e| {
        use clap::error::ErrorKind;
        match e.kind() {
            ErrorKind::DisplayHelp => Ok(e.render().to_string()),
            ErrorKind::MissingRequiredArgument => Err(UsageError(
                "'ntttcp merge' needs at least one FILE: a --format json document, '-' for \
                 stdin"
                    .into(),
            )),
            _ => Err(UsageError(super::one_line(&e.render().to_string()))),
        }
    })?;
    let files: Vec<String> = m
        .get_many::<String>("files")
        .into_iter()
        .flatten()
        .cloned()
        .collect();
    if files.iter().filter(|f| *f == "-").count() > 1 {
        return Err(Err(UsageError(
            "invalid value '-' for '<FILE>': stdin holds one document; give '-' once".into(),
        )));
    }
    Ok(MergeJob {
        files,
        json: m.get_one::<String>("format").is_some_and(|f| f == "json"),
    })
}
