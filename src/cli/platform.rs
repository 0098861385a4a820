//! Flags whose feature only Linux has: on another OS they are refused with the flag as
//! typed, never accepted and quietly ignored.

use clap::ArgMatches;
use clap::parser::ValueSource;

use super::{command, dialect, typed_flag};
use crate::config::UsageError;

/// The flags (long names) that need Linux, with what each needs of it.
pub(super) const LINUX_ONLY: &[(&str, &str)] = &[
    ("sendfile", "sendfile() from memory"),
    ("sendfile-always", "sendfile() from memory"),
    (
        "skip-rx-copy",
        "receives that discard in the kernel (MSG_TRUNC)",
    ),
    ("daemon", "a background process in a session of its own"),
    ("pid-file", "the background mode of -D"),
    ("notsent-lowat", "TCP_NOTSENT_LOWAT"),
    ("rcvlowat", "SO_RCVLOWAT"),
    ("fq-rate-limit", "pacing by the socket (SO_MAX_PACING_RATE)"),
    (
        "congestion",
        "a congestion control per socket (TCP_CONGESTION)",
    ),
    (
        "tos",
        "a type of service per socket (Windows takes DSCP from its QoS policies)",
    ),
    ("show-tcp-retrans", "/proc/net/netstat"),
    ("show-nic-packets", "/proc/net/dev"),
    ("show-dev-interrupts", "/proc/interrupts"),
];

/// Refuses the first Linux-only flag on the line when `os` (the OS this ntttcp runs on)
/// is not Linux.
pub(super) fn check(
    matches: &ArgMatches,
    normalized: &dialect::Normalized,
    os: &str,
) -> Result<(), UsageError> {
    if os == "Linux" {
        return Ok(());
    }
    let cmd = command();
    for (long, needs) in LINUX_ONLY {
        let Some(arg) = cmd.get_arguments().find(|a| a.get_long() == Some(long)) else {
            continue;
        };
        if matches.value_source(arg.get_id().as_str()) == Some(ValueSource::CommandLine) {
            let typed = typed_flag(long, normalized);
            return Err(UsageError(format!(
                "'{typed}' is Linux-only ({needs}); this ntttcp runs on {os}"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(line: &str, os: &str) -> Option<String> {
        let args: Vec<std::ffi::OsString> = line.split(' ').map(Into::into).collect();
        let longs: Vec<String> = command()
            .get_arguments()
            .flat_map(|a| a.get_long_and_visible_aliases().unwrap_or_default())
            .map(str::to_string)
            .collect();
        let normalized = dialect::normalize(&args, &longs).unwrap();
        let matches = command()
            .clone()
            .try_get_matches_from(&normalized.args)
            .unwrap();
        check(&matches, &normalized, os).err().map(|e| e.0)
    }

    #[test]
    fn every_linux_only_flag_exists() {
        let cmd = command();
        for (long, _) in LINUX_ONLY {
            assert!(
                cmd.get_arguments().any(|a| a.get_long() == Some(long)),
                "--{long}"
            );
        }
    }

    /// docs/cli.md marks as Linux only exactly the rows of these flags.
    #[test]
    fn the_flag_table_marks_the_linux_only_flags() {
        let doc = include_str!("../../docs/cli.md");
        let marked: Vec<&str> = doc
            .lines()
            .filter(|l| l.starts_with("| ") && l.contains("Linux only"))
            .collect();
        for (long, _) in LINUX_ONLY {
            let flag = format!("--{long}");
            assert!(
                marked.iter().any(|l| l.contains(&flag)),
                "docs/cli.md does not mark {flag} Linux only"
            );
        }
        for l in &marked {
            assert!(
                LINUX_ONLY
                    .iter()
                    .any(|(long, _)| l.contains(&format!("--{long}"))),
                "docs/cli.md marks a row Linux only that is not: {l}"
            );
        }
    }

    #[test]
    fn linux_only_flags_are_refused_elsewhere_as_typed() {
        let z = refusal("ntttcp -s -m 1,*,127.0.0.1 -Z", "Windows").unwrap();
        assert_eq!(
            z,
            "'-Z' is Linux-only (sendfile() from memory); this ntttcp runs on Windows"
        );
        let d = refusal("ntttcp -r -m 1,*,127.0.0.1 -D", "Windows").unwrap();
        assert!(d.starts_with("'-D' is Linux-only"), "{d}");
        let f = refusal("ntttcp -s -m 1,*,127.0.0.1 --fq-rate-limit 1G", "Windows").unwrap();
        assert!(f.starts_with("'--fq-rate-limit' is Linux-only"), "{f}");
        assert_eq!(refusal("ntttcp -s -m 1,*,127.0.0.1 -Z", "Linux"), None);
        assert_eq!(refusal("ntttcp -s -m 1,*,127.0.0.1 -t 5", "Windows"), None);
    }
}
