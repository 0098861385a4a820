//! The argv normalizer that lets one clap definition read both command-line dialects.
//!
//! Rules (also in `--help` and the README):
//! * A line is read as **Windows NTttcp** when it contains a Windows-only spelling
//!   (`-ns`, `-wu`, `-cd`, `-sb`, `-rb`, `-ndl`, `-nic`, `-xml`, `-hpt`, `-to`, `-sp`, ... any
//!   letter case), otherwise as **ntttcp-for-linux**. `--dialect linux|windows` forces it.
//! * Linux lines: a whole token `-NAME` whose NAME (two or more letters) is a long flag or
//!   alias becomes `--NAME`; everything else reaches clap untouched, so `-s10.0.0.5`,
//!   `-b64K` and `-P 4` keep their getopt meaning.
//! * Windows lines: every option name is matched case-insensitively against the Windows
//!   table below and rewritten to our long flag (`-P 1` → `--port=1`, `-l 64K` →
//!   `--buffer=64K`), `-m` takes every following word that does not start with `-`.
//! * Nothing after `--` is rewritten. Multi-letter names match whole tokens only (`-wu5`
//!   is not `-wu 5`).
//!
//! This module decides spelling only; what a value means is clap's and `values`' job.

use std::ffi::OsString;

use crate::config::Dialect;

/// Spellings that exist only in Windows NTttcp; one of them switches the line's dialect.
const WINDOWS_ONLY: &[&str] = &[
    "ns", "wu", "cd", "sb", "rb", "ndl", "nic", "xml", "hpt", "to", "sp", "thr", "brn", "icp",
    "cfi", "es", "sam", "qos", "jm", "ps", "uso", "uro", "hv", "uc", "rt", "lm", "wa", "na", "nsb",
];

/// How a Windows option takes its value.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Arity {
    /// A switch.
    None,
    /// Exactly the next token, whatever it looks like (`-rb -1` is legal).
    One,
    /// The next token, if it does not start with `-`.
    Optional,
    /// Every following token that does not start with `-` (`-m`).
    Many,
}

/// A Windows option: its lower-case name, our long flag (None = not supported yet) and arity.
pub(super) struct WinFlag {
    pub(super) name: &'static str,
    pub(super) long: Option<&'static str>,
    arity: Arity,
    pub(super) what: &'static str,
}

const fn flag(name: &'static str, long: &'static str, arity: Arity) -> WinFlag {
    WinFlag {
        name,
        long: Some(long),
        arity,
        what: "",
    }
}

const fn unsupported(name: &'static str, arity: Arity, what: &'static str) -> WinFlag {
    WinFlag {
        name,
        long: None,
        arity,
        what,
    }
}

/// Windows NTttcp 5.39/5.40 options, lower case.
pub(super) const WINDOWS_FLAGS: &[WinFlag] = &[
    flag("s", "sender", Arity::None),
    flag("r", "receiver", Arity::None),
    flag("m", "mapping", Arity::Many),
    flag("l", "buffer", Arity::One),
    flag("t", "duration", Arity::One),
    flag("wu", "warmup", Arity::One),
    flag("cd", "cooldown", Arity::One),
    flag("p", "port", Arity::One),
    flag("ns", "no-sync", Arity::None),
    flag("v", "verbose", Arity::None),
    flag("6", "ipv6", Arity::None),
    flag("hpt", "hide-per-thread", Arity::None),
    unsupported(
        "n",
        Arity::One,
        "count mode (number of buffers); give -t instead",
    ),
    flag("sp", "sync-ports", Arity::None),
    flag("to", "timeout-ms", Arity::One),
    unsupported("a", Arity::Optional, "overlapped I/O"),
    flag("rb", "recv-buffer", Arity::One),
    flag("sb", "send-buffer", Arity::One),
    flag("ndl", "no-delay", Arity::None),
    flag("u", "udp", Arity::None),
    unsupported("uc", Arity::None, "unconnected UDP"),
    unsupported("w", Arity::None, "WSASend/WSARecv"),
    unsupported("x", Arity::Optional, "TransmitPackets"),
    unsupported("rt", Arity::None, "round-trip mode"),
    unsupported("lm", Arity::None, "latency measurement"),
    unsupported("d", Arity::None, "data verification"),
    unsupported("wa", Arity::None, "MSG_WAITALL"),
    flag("nic", "source-address", Arity::One),
    unsupported("na", Arity::One, "NUMA affinity"),
    flag("xml", "xml-windows", Arity::Optional),
    unsupported("nsb", Arity::None, "unbuffered stdio"),
    flag("thr", "thread-throttle", Arity::One),
    unsupported("brn", Arity::One, "CPU burn"),
    unsupported("icp", Arity::One, "I/O completion ports"),
    unsupported("cfi", Arity::None, "CPU from idle cycles"),
    unsupported("es", Arity::None, "TCP EStats"),
    unsupported("sam", Arity::One, "sampling"),
    unsupported("qos", Arity::One, "qWAVE traffic class"),
    unsupported("jm", Arity::Optional, "jitter measurement"),
    unsupported("ps", Arity::One, "packet spacing"),
    unsupported("uso", Arity::One, "UDP send offload"),
    unsupported("uro", Arity::None, "UDP receive coalescing"),
    unsupported("hv", Arity::None, "Hyper-V sockets"),
];

/// ntttcp-for-linux's single letters, for the hint on a Windows line.
const LINUX_LETTERS: &str = "rsmPnlpbuWtCNMLHDeQVv6xjOafBZ";

/// The result of normalizing one command line.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Normalized {
    /// The dialect the line was read in.
    pub dialect: Dialect,
    /// Arguments for clap (program name first).
    pub args: Vec<OsString>,
    /// (our long flag, the token the user typed) for every rewritten flag, so messages
    /// can name the flag as typed.
    pub spelled: Vec<(String, String)>,
    /// Why the line was read in that dialect.
    pub reason: String,
    /// The Windows-only spelling that chose the Windows dialect (None: forced, or Linux).
    pub chosen_by: Option<String>,
}

/// Rewrites `args` (program name first) into clap's spelling. `long_names` are the long
/// flags and aliases of the clap definition (the single source of truth for Linux lines).
pub(crate) fn normalize(args: &[OsString], long_names: &[String]) -> Result<Normalized, String> {
    let mut rest: Vec<String> = Vec::with_capacity(args.len());
    let program = args.first().cloned().unwrap_or_else(|| "ntttcp".into());
    for a in args.iter().skip(1) {
        rest.push(
            a.to_str()
                .ok_or_else(|| format!("argument {a:?} is not valid UTF-8"))?
                .to_string(),
        );
    }
    // Nothing after `--` is looked at, let alone rewritten.
    let tail = match rest.iter().position(|a| a == "--") {
        Some(i) => rest.split_off(i),
        None => Vec::new(),
    };
    let (forced, rest) = take_dialect(rest)?;
    let dialect = forced.unwrap_or_else(|| detect(&rest));
    let chosen_by = match (forced, windows_token(&rest)) {
        (None, Some(t)) => Some(t.to_string()),
        _ => None,
    };
    let reason = match (forced, windows_token(&rest)) {
        (Some(_), _) => "--dialect forces it".to_string(),
        (None, Some(t)) => format!("'{t}' is a Windows-only spelling"),
        (None, None) => "no Windows-only spelling on it".to_string(),
    };
    // `-?` and `/?` ask for help on either dialect's line (as NTttcp's own do), and so does
    // `-h` on a Windows line.
    let asks_help = |a: &str| a == "-?" || a == "/?" || (dialect == Dialect::Windows && a == "-h");
    let rest: Vec<String> = rest
        .into_iter()
        .map(|a| if asks_help(&a) { "--help".into() } else { a })
        .collect();
    let mut spelled = Vec::new();
    let rewritten = match dialect {
        Dialect::Linux => linux(rest, long_names, &mut spelled)?,
        Dialect::Windows => windows(rest, &mut spelled)?,
    };
    let mut out = vec![program];
    out.extend(rewritten.into_iter().chain(tail).map(OsString::from));
    Ok(Normalized {
        dialect,
        args: out,
        spelled,
        reason,
        chosen_by,
    })
}

/// Removes `--dialect X` / `--dialect=X` and returns the forced dialect, if any.
fn take_dialect(args: Vec<String>) -> Result<(Option<Dialect>, Vec<String>), String> {
    let mut forced = None;
    let mut out = Vec::with_capacity(args.len());
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let value = if a == "--dialect" {
            Some(
                it.next()
                    .ok_or("flag --dialect needs a value: linux or windows")?,
            )
        } else {
            a.strip_prefix("--dialect=").map(str::to_string)
        };
        match value.as_deref() {
            None => out.push(a),
            Some("linux") => forced = Some(Dialect::Linux),
            Some("windows") => forced = Some(Dialect::Windows),
            Some(other) => {
                return Err(format!(
                    "invalid value '{other}' for --dialect (expected linux or windows)"
                ));
            }
        }
    }
    Ok((forced, out))
}

/// Windows when any token (before `--`) is a Windows-only spelling, in any letter case.
pub(crate) fn detect(args: &[String]) -> Dialect {
    if windows_token(args).is_some() {
        Dialect::Windows
    } else {
        Dialect::Linux
    }
}

/// The first Windows-only spelling on the line, as typed.
fn windows_token(args: &[String]) -> Option<&str> {
    args.iter().map(String::as_str).find(|a| {
        a.strip_prefix('-')
            .is_some_and(|name| WINDOWS_ONLY.contains(&name.to_ascii_lowercase().as_str()))
    })
}

fn linux(
    args: Vec<String>,
    long_names: &[String],
    spelled: &mut Vec<(String, String)>,
) -> Result<Vec<String>, String> {
    let mut out = Vec::with_capacity(args.len());
    for a in args {
        match a.strip_prefix('-') {
            Some(name)
                if !name.starts_with('-')
                    && name.len() >= 2
                    && long_names.iter().any(|l| l == name) =>
            {
                spelled.push((name.to_string(), a.clone()));
                out.push(format!("--{name}"));
            }
            _ => out.push(a),
        }
    }
    Ok(out)
}

fn windows(args: Vec<String>, spelled: &mut Vec<(String, String)>) -> Result<Vec<String>, String> {
    let mut out = Vec::with_capacity(args.len());
    let mut it = args.into_iter().peekable();
    while let Some(a) = it.next() {
        if a.starts_with("--") {
            // Our own long flags (`--loopback`, `--help`) work in either dialect.
            out.push(a);
            continue;
        }
        let Some(name) = a.strip_prefix('-').map(str::to_ascii_lowercase) else {
            out.push(a);
            continue;
        };
        let Some(f) = WINDOWS_FLAGS.iter().find(|f| f.name == name) else {
            let linux = LINUX_LETTERS.contains(a.trim_start_matches('-'));
            let why = if linux && a.len() == 2 {
                format!(
                    "; '{a}' is an ntttcp-for-linux flag: give its Windows spelling, or read \
                     the line as ntttcp-for-linux's with --dialect linux"
                )
            } else {
                String::new()
            };
            return Err(format!(
                "unknown Windows NTttcp flag '{a}' (the line is read as Windows NTttcp's \
                 because of a Windows-only flag){why}"
            ));
        };
        let Some(long) = f.long else {
            return Err(format!(
                "Windows flag '{a}' ({}) is not supported by this ntttcp yet",
                f.what
            ));
        };
        spelled.push((long.to_string(), a.clone()));
        match f.arity {
            Arity::None => out.push(format!("--{long}")),
            Arity::One => {
                let v = it
                    .next()
                    .ok_or_else(|| format!("flag '{a}' needs a value"))?;
                out.push(format!("--{long}={v}"));
            }
            Arity::Optional => match it.next_if(|v| !v.starts_with('-')) {
                Some(v) => out.push(format!("--{long}={v}")),
                None => out.push(format!("--{long}")),
            },
            Arity::Many => {
                out.push(format!("--{long}"));
                while let Some(v) = it.next_if(|v| !v.starts_with('-')) {
                    out.push(v);
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(line: &str) -> Result<Normalized, String> {
        let args: Vec<OsString> = std::iter::once("ntttcp")
            .chain(line.split_whitespace())
            .map(OsString::from)
            .collect();
        let longs = [
            "no-sync", "ns", "warmup", "wu", "cooldown", "cd", "loopback",
        ]
        .map(String::from)
        .to_vec();
        normalize(&args, &longs)
    }

    fn words(n: &Normalized) -> Vec<String> {
        n.args
            .iter()
            .skip(1)
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn question_marks_ask_for_help_in_either_dialect() {
        for line in [
            "-?",
            "/?",
            "-s 1.2.3.4 -?",
            "-s -m 1,*,1.2.3.4 -ns /?",
            "-s -m 1,*,1.2.3.4 -ns -h",
        ] {
            let n = norm(line).unwrap();
            assert!(n.args.iter().any(|a| a == "--help"), "{line}: {:?}", n.args);
        }
        // On a Linux line -h is clap's own short help flag, left as typed.
        assert_eq!(norm("-h").unwrap().args[1], "-h");
    }

    #[test]
    fn dialect_detection_table() {
        let rows = [
            ("-r -m 4,*,10.0.0.5 -t 300", Dialect::Linux),
            ("-s10.0.0.5 -W 1 -t 10 -C 1", Dialect::Linux),
            ("-s -m 4,*,10.0.0.5 -ns -t 300", Dialect::Windows),
            ("-s -m 4,*,10.0.0.5 -NS -t 300", Dialect::Windows),
            ("-r -m 4,*,10.0.0.5 -wu 1 -cd 1", Dialect::Windows),
            ("-r -m 1,*,1.2.3.4 -P 1", Dialect::Linux),
            ("-r -m 1,*,127.0.0.1 -N -t 5", Dialect::Linux),
            ("-r -- -ns", Dialect::Linux),
            ("-s -ns --dialect linux", Dialect::Linux),
            ("-s -m 1,*,1.2.3.4 --dialect=windows", Dialect::Windows),
        ];
        for (line, want) in rows {
            assert_eq!(norm(line).unwrap().dialect, want, "{line}");
        }
    }

    #[test]
    fn linux_lines_rewrite_whole_long_names_only() {
        let n = norm("-r -ns -wu 2 -cd 3 -s10.0.0.5 -b64K -P 4 --dialect linux").unwrap();
        assert_eq!(
            words(&n),
            [
                "-r",
                "--ns",
                "--wu",
                "2",
                "--cd",
                "3",
                "-s10.0.0.5",
                "-b64K",
                "-P",
                "4"
            ]
        );
        // -wu5 is not -wu 5, and nothing after -- is touched.
        let n = norm("--dialect linux -r -wu5 -- -ns").unwrap();
        assert_eq!(words(&n), ["-r", "-wu5", "--", "-ns"]);
    }

    #[test]
    fn windows_collision_table() {
        // Each row of the README's collision table that a Windows line can contain.
        let rows = [
            (
                "-s -m 4,*,10.0.0.5 -ns -P 1",
                vec![
                    "--sender",
                    "--mapping",
                    "4,*,10.0.0.5",
                    "--no-sync",
                    "--port=1",
                ],
            ),
            (
                "-R -M 2,0,h -NS -T 5",
                vec![
                    "--receiver",
                    "--mapping",
                    "2,0,h",
                    "--no-sync",
                    "--duration=5",
                ],
            ),
            (
                "-r -m 1,*,h -ns -l 64K",
                vec![
                    "--receiver",
                    "--mapping",
                    "1,*,h",
                    "--no-sync",
                    "--buffer=64K",
                ],
            ),
            (
                "-r -m 1,*,h -ns -V",
                vec!["--receiver", "--mapping", "1,*,h", "--no-sync", "--verbose"],
            ),
            (
                "-r -m 1,*,h 2,1,g -wu 1 -cd 2",
                vec![
                    "--receiver",
                    "--mapping",
                    "1,*,h",
                    "2,1,g",
                    "--warmup=1",
                    "--cooldown=2",
                ],
            ),
            (
                "-r -m 1,*,h -ns -p 6001 -hpt",
                vec![
                    "--receiver",
                    "--mapping",
                    "1,*,h",
                    "--no-sync",
                    "--port=6001",
                    "--hide-per-thread",
                ],
            ),
        ];
        for (line, want) in rows {
            let n = norm(line).unwrap();
            assert_eq!(n.dialect, Dialect::Windows, "{line}");
            assert_eq!(words(&n), want, "{line}");
        }
    }

    #[test]
    fn windows_letters_that_differ_are_explained() {
        // -N is Windows' -n (a buffer count): not no-sync.
        let e = norm("-s -m 1,*,h -ns -N 5").unwrap_err();
        assert!(e.contains("'-N'") && e.contains("count mode"), "{e}");
        // -x is TransmitPackets, -D verify data, -a async I/O on Windows.
        for f in ["-x", "-D", "-a"] {
            let e = norm(&format!("-s -m 1,*,h -ns {f}")).unwrap_err();
            assert!(e.contains("not supported"), "{f}: {e}");
        }
        // -u is UDP in both dialects; -U too (names are case-insensitive).
        for f in ["-u", "-U"] {
            let n = norm(&format!("-s -m 1,*,h -ns {f}")).unwrap();
            assert!(words(&n).contains(&"--udp".to_string()), "{f}");
        }
        // -W and -C are not Windows flags at all (warm-up is -wu, cool-down -cd).
        let e = norm("-s -m 1,*,h -ns -C 1").unwrap_err();
        assert!(e.contains("unknown Windows NTttcp flag '-C'"), "{e}");
        // -b does not exist on Windows, and options are separate tokens there.
        let e = norm("-s -m 1,*,h -ns -b 64K").unwrap_err();
        assert!(e.contains("unknown Windows NTttcp flag '-b'"), "{e}");
        let e = norm("-s10.0.0.4 -m 1,*,h -ns").unwrap_err();
        assert!(
            e.contains("unknown Windows NTttcp flag '-s10.0.0.4'"),
            "{e}"
        );
        let e = norm("-s -m 1,*,h -ns -t").unwrap_err();
        assert!(e.contains("'-t' needs a value"), "{e}");
    }

    #[test]
    fn unknown_dialect_is_named() {
        assert!(norm("-r --dialect mac").unwrap_err().contains("--dialect"));
    }
}
