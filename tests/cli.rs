//! Black-box command-line behaviour: help, version, usage errors and their exit status.

use std::time::Duration;

use std::process::Command;

use crate::util::{Ports, Scratch, ports_in, run, usage_error};

const LIMIT: Duration = Duration::from_secs(20);

#[test]
fn help_and_version_exit_zero() {
    let o = run("--help", LIMIT);
    assert_eq!(o.code(), Some(0));
    assert!(o.stdout.contains("Dialects:"), "{}", o.stdout);
    assert!(o.stdout.contains("--no-sync") && o.stdout.contains("--ns"));
    // --help: every flag under its heading, the Windows spellings as typed, the exit
    // statuses; -h: the common flags and where the rest is.
    for want in [
        "Roles and hosts:",
        "Socket options:",
        "Rate limits:",
        "--dialect <DIALECT>",
        "-wu    --warmup",
        "-ndl   --no-delay",
        "-to    --timeout-ms",
        "3 below --min-throughput",
    ] {
        assert!(o.stdout.contains(want), "{want}: {}", o.stdout);
    }
    let o = run("-h", LIMIT);
    assert_eq!(o.code(), Some(0));
    assert!(
        o.stdout.contains("--loopback") && o.stdout.contains("ntttcp --help"),
        "{}",
        o.stdout
    );
    assert!(
        !o.stdout.contains("--show-tcp-retrans"),
        "-h is the short page: {}",
        o.stdout
    );
    // NTttcp's own ways to ask, on either dialect's line.
    for line in [
        "-?",
        "/?",
        "-s -m 1,*,127.0.0.1 -ns -h",
        "-s -m 1,*,127.0.0.1 -ns -?",
    ] {
        let o = run(line, LIMIT);
        assert_eq!(o.code(), Some(0), "{line}: {o:?}");
        assert!(o.stdout.contains("Dialects:"), "{line}: {}", o.stdout);
    }
    let o = run("--version", LIMIT);
    assert_eq!(o.code(), Some(0));
    // One line, one name, and the commit when built from a git checkout: one of this
    // checkout's history (HEAD itself unless a commit was made after the build).
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()
            .filter(|g| g.status.success())
    };
    let version = env!("CARGO_PKG_VERSION");
    let line = o.stdout.strip_suffix(" (NTttcp-compatible)\n");
    let rest = line.and_then(|l| l.strip_prefix(&format!("ntttcp {version}")));
    let Some(rest) = rest else {
        panic!("not one version line: {:?}", o.stdout);
    };
    if git(&["rev-parse", "HEAD"]).is_some() {
        let commit = rest
            .strip_prefix(' ')
            .unwrap_or_else(|| panic!("no commit: {rest:?}"));
        assert!(
            commit.len() == 12 && commit.bytes().all(|b| b.is_ascii_hexdigit()),
            "{commit:?}"
        );
        assert!(
            git(&["merge-base", "--is-ancestor", commit, "HEAD"]).is_some(),
            "{commit} is not in this checkout's history"
        );
    } else {
        assert_eq!(rest, "", "no checkout, no commit");
    }
}

#[test]
fn the_man_page_and_completions_come_from_the_binary() {
    let dir = Scratch::new("generate");
    let write = |kind: &str| {
        let o = run(&format!("--generate {kind}"), LIMIT);
        assert_eq!(o.code(), Some(0), "{kind}: {o:?}");
        assert!(
            !o.stdout.contains("NTttcp-compatible\n"),
            "{kind}: no banner"
        );
        let path = dir.file(kind);
        std::fs::write(&path, &o.stdout).unwrap();
        (path, o.stdout)
    };
    // The man page renders (man -l, as a user reads a local file) and lists the flags.
    let (man, _) = write("man");
    let page = Command::new("man")
        .arg("-l")
        .arg(&man)
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100")
        .output()
        .expect("man is installed (man-db)");
    assert!(page.status.success(), "{page:?}");
    let text = String::from_utf8_lossy(&page.stdout);
    for want in [
        "NAME",
        "ntttcp",
        "--loopback",
        "--generate",
        "--min-throughput",
    ] {
        assert!(
            text.contains(want),
            "{want} missing from the man page:\n{text}"
        );
    }
    // The bash completion is valid bash and completes our flags; the others name them.
    let (bash, script) = write("complete-bash");
    let syntax = Command::new("bash").arg("-n").arg(&bash).output().unwrap();
    assert!(syntax.status.success(), "{syntax:?}");
    assert!(
        script.contains("--loopback") && script.contains("_ntttcp"),
        "{script}"
    );
    for kind in ["complete-zsh", "complete-fish", "complete-powershell"] {
        let (_, script) = write(kind);
        assert!(script.contains("loopback"), "{kind}: {script}");
    }
    let bad = run("--generate troff", LIMIT);
    assert_eq!(bad.code(), Some(2), "{bad:?}");
    assert!(
        bad.stderr.contains("possible values: man, complete-bash"),
        "{}",
        bad.stderr
    );
}

#[test]
fn usage_errors_exit_2_with_one_line() {
    let rows = [
        ("-r -Y", "'-Y'"),
        ("-r -m 0,*,127.0.0.1", "'0,*,127.0.0.1'"),
        ("-r -m 8,99,127.0.0.1", "CPU 99"),
        ("-s 127.0.0.1 -t abc", "'-t'"),
        ("-s 127.0.0.1 -p 65536", "'65536'"),
        ("-r -s 127.0.0.1", "cannot be used with"),
        ("-r 203.0.113.9", "not an address of this host"),
        ("-s -m 1,*,127.0.0.1 -ns -X", "'-X'"),
        // Found by the cli fuzz target: a letter of a cluster was named alone.
        ("-r -H%", "unexpected argument '-%' found (in '-H%')"),
        ("-s 127.0.0.1 -Vnx", "invalid value 'x' for '-n'"),
        ("-r -rr", "error: -rr applies to the sender"),
    ];
    for (args, needle) in rows {
        let o = run(args, LIMIT);
        assert_eq!(o.code(), Some(2), "{args}: {o:?}");
        let lines: Vec<&str> = o.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{args}: {:?}", o.stderr);
        assert!(
            lines[0].starts_with("ntttcp: error: "),
            "{args}: {}",
            lines[0]
        );
        assert!(
            lines[0].contains(needle),
            "{args}: {} lacks {needle}",
            lines[0]
        );
    }
}

/// Found by the cli fuzz target: an argument with a line break in it cut its error short
/// of the argument. A control character (a carriage return from a script saved with
/// Windows line endings, most often) or bytes that are not UTF-8 are refused, shown
/// escaped, on one line.
#[test]
fn an_argument_with_a_control_character_is_refused_on_one_line() {
    for (arg, shown) in [("10\r", "'10\\r'"), ("a\nb", "'a\\nb'")] {
        let o = std::process::Command::new(crate::util::bin())
            .args(["-s", "127.0.0.1", "-t", arg])
            .output()
            .expect("ntttcp runs");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(shown), "{stderr} lacks {shown}");
    }
    // Also found by it: a file name that is not UTF-8 was refused without naming it.
    use std::os::unix::ffi::OsStrExt;
    let name = std::ffi::OsStr::from_bytes(b"fle\xe5t.json");
    let o = std::process::Command::new(crate::util::bin())
        .args(["merge".as_ref(), name])
        .output()
        .expect("ntttcp runs");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains(r#""fle\xE5t.json""#), "{stderr}");
}

#[test]
fn sender_with_no_receiver_fails_within_the_connect_deadline() {
    let _ports = Ports::take(1);
    let o = run("-s 127.0.0.1 -P 1 -p @1 -t 5", Duration::from_secs(20));
    assert_eq!(o.code(), Some(1), "{o:?}");
    assert!(
        o.within(Duration::from_secs(12)),
        "{:?} (waiter late {:?})",
        o.elapsed,
        o.late
    );
    assert!(
        o.stderr.contains(&ports_in(
            "failed to connect to receiver 127.0.0.1:@0 (sync port)"
        )),
        "{}",
        o.stderr
    );
}

/// Negative, minus-led, infinite and huge values: each is refused with exit 2 and one
/// line that names the flag as typed and the value it got, never a flag nobody typed;
/// the one range of `-b` is stated the same way whichever side a value misses it on.
#[test]
fn every_refused_value_names_its_flag_as_typed() {
    let rows: &[(&str, &str, &str)] = &[
        ("-s 127.0.0.1 -P -1", "'-P'", "'-1'"),
        ("-s 127.0.0.1 -B -1", "'-B'", "'-1'"),
        ("-s 127.0.0.1 --timeout -1", "'--timeout'", "'-1'"),
        (
            "-s 127.0.0.1 --fq-rate-limit -1",
            "'--fq-rate-limit'",
            "'-1'",
        ),
        ("-s -m -0", "'-m'", "'-0'"),
        ("-s 127.0.0.1 -P -0", "'-P'", "'-0'"),
        ("-s 127.0.0.1 -b -0", "'-b'", "'-0'"),
        ("-s 127.0.0.1 -p -0", "'-p'", "'-0'"),
        ("-s 127.0.0.1 --placement -0", "'--placement'", "'-0'"),
        ("-s 127.0.0.1 -b -inf", "'-b'", "'-inf'"),
        ("-s 127.0.0.1 -t -inf", "'-t'", "'-inf'"),
        ("-s 127.0.0.1 -B -inf", "'-B'", "'-inf'"),
        ("-s 127.0.0.1 -W -inf", "'-W'", "'-inf'"),
        ("-s 127.0.0.1 --rr -inf", "'--rr'", "'-inf'"),
        ("-s 127.0.0.1 -f -inf", "'-f'", "'-inf'"),
        ("-s 127.0.0.1 -j -inf", "'-j'", "'-inf'"),
        (
            "-s 127.0.0.1 -t 99999999999999999",
            "'-t'",
            "limit of 4294967295 s",
        ),
        (
            "-s 127.0.0.1 -b 0",
            "'-b'",
            "from 1 byte to 1G (1073741824 bytes)",
        ),
        (
            "-s 127.0.0.1 -b 2G",
            "'-b'",
            "from 1 byte to 1G (1073741824 bytes)",
        ),
    ];
    for (line, flag, what) in rows {
        let said = usage_error(line);
        assert!(
            said.contains(flag) && said.contains(what),
            "{line}: {said} lacks {flag} or {what}"
        );
        assert!(!said.contains("unexpected argument"), "{line}: {said}");
    }
}

/// A line that is Windows NTttcp's only by a Windows-only spelling, where that changed a
/// default nobody set, says so once, first on stderr, naming the spelling and the way
/// back; a line that sets the size says nothing of it.
#[test]
fn a_windows_spelling_that_changed_a_default_says_so_once() {
    let _ports = Ports::take(1);
    let line = ports_in("-s -m 1,*,127.0.0.1 -ns -p @1 -t 1 -to 300");
    let o = run(&line, LIMIT);
    assert_eq!(o.code(), Some(1), "nobody listens: {o:?}");
    let first = o.stderr.lines().next().unwrap_or_default();
    assert_eq!(
        first,
        "ntttcp: '-ns' made this a Windows NTttcp line: NTttcp's 64 KiB send buffer instead \
         of ntttcp-for-linux's 128 KiB; --dialect linux reads it as ntttcp-for-linux's"
    );
    assert_eq!(
        o.stderr.matches("made this a Windows").count(),
        1,
        "{}",
        o.stderr
    );
    let sized = run(&format!("{line} -l 64K"), LIMIT);
    assert!(
        !sized.stderr.contains("made this a Windows"),
        "{}",
        sized.stderr
    );
}
