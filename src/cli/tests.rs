//! Flag tables: argv → normalize → clap → Config (→ the host checks), for both dialects.

use super::*;
use crate::config::{CpuSpec, DEFAULT_SEND_SIZE, Phases, Role};

const CPUS: &[usize] = &[0, 1];

/// The low-water marks' default: by path where the OS has them (Linux), else the
/// stack's own.
fn by_path() -> crate::config::Lowat {
    if crate::sys::OS == "Linux" {
        crate::config::Lowat::ByPath
    } else {
        crate::config::Lowat::Kernel
    }
}

fn parse_line(line: &str) -> Result<Config, UsageError> {
    let args: Vec<OsString> = std::iter::once("ntttcp")
        .chain(line.split_whitespace())
        .map(OsString::from)
        .collect();
    match parse(&args, CPUS)? {
        Parsed::Run(mut c, _) => {
            host::check_on_this_host(&mut c)?;
            Ok(*c)
        }
        Parsed::Help(t) => panic!("unexpected help output: {t}"),
        Parsed::Version | Parsed::Generated(_) | Parsed::Merge(_) => {
            panic!("unexpected version output")
        }
    }
}

fn ok(line: &str) -> Config {
    parse_line(line).unwrap_or_else(|e| panic!("{line}: {e}"))
}

fn err(line: &str) -> String {
    match parse_line(line) {
        Ok(c) => panic!("{line}: expected an error, got {c:?}"),
        Err(e) => e.0,
    }
}

fn hosts(c: &Config) -> Vec<Option<&str>> {
    c.streams.ports.iter().map(|p| p.host.as_deref()).collect()
}

#[test]
fn clap_definition_is_consistent() {
    super::command().clone().debug_assert();
}

#[test]
fn issue_commands() {
    let c = ok("-r -m 4,*,127.0.0.1 -t 300");
    assert_eq!(
        (c.role, c.streams.ports.len(), c.streams.threads_per_port),
        (Role::Receiver, 4, 1)
    );
    assert_eq!(c.timeline.duration, 300);
    assert!(c.sync.is_on());
    let c = ok("-s -m 4,*,10.0.0.5 -t 300");
    assert_eq!((c.role, c.sender_connections()), (Role::Sender, 4));
    assert_eq!(hosts(&c), vec![Some("10.0.0.5"); 4]);
    // -P after -m sets the port count (ntttcp-for-linux: one stream).
    let c = ok("-s -m 4,*,10.0.0.5 -t 10 -P 1");
    assert_eq!((c.streams.ports.len(), c.sender_connections()), (1, 1));
    let c = ok("-s10.0.0.5 -W 1 -t 10 -C 1");
    assert_eq!(
        (
            c.streams.ports.len(),
            c.streams.threads_per_port,
            c.sender_connections()
        ),
        (16, 4, 64)
    );
    assert_eq!((c.timeline.warmup, c.timeline.cooldown), (1, 1));
    assert_eq!(c.data.send_size, DEFAULT_SEND_SIZE);
    let c = ok("-r -m 4,*,127.0.0.1 -N -t 300");
    assert!(!c.sync.is_on());
    let c = ok("-s -m 4,*,10.0.0.5 -ns -t 300");
    assert_eq!((c.sync.is_on(), c.streams.ports.len()), (false, 4));
    let c = ok("--loopback -t 5");
    assert_eq!(c.role, Role::Loopback);
    assert_eq!(hosts(&c), vec![Some("127.0.0.1"); 16]);
}

#[test]
fn linux_flag_table() {
    // (line, check) for every Linux flag in attached and separate forms.
    let c = ok("-r");
    assert_eq!((c.role, c.host_of(0).as_str()), (Role::Receiver, "0.0.0.0"));
    let c = ok("");
    assert_eq!(c.role, Role::Receiver);
    let c = ok("-r127.0.0.1");
    assert_eq!(hosts(&c)[0], Some("127.0.0.1"));
    let c = ok("-r 127.0.0.1 -P 2");
    assert_eq!(hosts(&c), vec![Some("127.0.0.1"); 2]);
    let c = ok("-s 10.0.0.5 -P 3 -n 2 -l 5");
    assert_eq!(c.sender_connections(), 30);
    let c = ok("-s10.0.0.5 -P3 -n2 -l5 -p6001 -b64K");
    assert_eq!((c.sender_connections(), c.streams.base_port), (30, 6001));
    assert_eq!((c.data.send_size, c.data.recv_size), (65536, 65536));
    let c = ok("-s 10.0.0.5 -b 1.5k -W 2 -t 7 -C 3 -Q -V");
    assert_eq!(c.data.send_size, 1536);
    assert_eq!(
        c.timeline,
        Phases {
            warmup: 2,
            duration: 7,
            cooldown: 3
        }
    );
    assert!(c.show.quiet && c.show.verbose);
    let c = ok("-s 10.0.0.5 -v -t 0");
    assert!(c.show.verbose);
    assert_eq!(c.timeline.cycle(), 0);
    let c = ok("-r -e -6");
    assert_eq!(c.host_of(0), "::");
    let c = ok("-s [::1] -6");
    assert_eq!(hosts(&c)[0], Some("::1"));
    // Repeats: the last one wins.
    let c = ok("-s 10.0.0.5 -t 5 -t 9 -p 7000 -p 7100");
    assert_eq!((c.timeline.duration, c.streams.base_port), (9, 7100));
    // Long spellings and single-dash long names.
    let c = ok("--sender 10.0.0.5 --ports 2 --threads 1 --duration 3 -warmup 1");
    assert_eq!((c.sender_connections(), c.timeline.warmup), (2, 1));
}

#[test]
fn mapping_and_counts_interact_like_ntttcp_for_linux() {
    // As ntttcp-for-linux 1.4.3 reads them.
    let c = ok("-s -m 8,*,10.0.0.5");
    assert_eq!((c.streams.ports.len(), c.streams.threads_per_port), (8, 1));
    let c = ok("-s -m 8,*,10.0.0.5 -n 3");
    assert_eq!(c.sender_connections(), 24);
    let c = ok("-s -P 4 -m 8,*,10.0.0.5");
    assert_eq!(c.streams.ports.len(), 8);
    let c = ok("-s -m 8,*,10.0.0.5 -P 4");
    assert_eq!(c.streams.ports.len(), 4);
    // Deviation: an explicit -n is never dropped, whatever its position.
    let c = ok("-s -n 3 -m 8,*,10.0.0.5");
    assert_eq!(c.streams.threads_per_port, 3);
    let c = ok("-s 10.0.0.5 -m 8");
    assert_eq!(hosts(&c), vec![Some("10.0.0.5"); 8]);
    let c = ok("-r -m 2,1,127.0.0.1");
    assert_eq!(c.streams.ports[1].cpu, CpuSpec::Cpu(1));
    // Several mappings: ports keep counting across them.
    let c = ok("-s -m 2,0,10.0.0.5 1,*,10.0.0.6");
    assert_eq!(
        hosts(&c),
        [Some("10.0.0.5"), Some("10.0.0.5"), Some("10.0.0.6")]
    );
    assert_eq!(
        (c.streams.ports[0].cpu, c.streams.ports[2].cpu),
        (CpuSpec::Cpu(0), CpuSpec::Any)
    );
    // A later -m replaces an earlier one.
    let c = ok("-s -m 2,*,10.0.0.5 -m 3,*,10.0.0.6");
    assert_eq!(hosts(&c), vec![Some("10.0.0.6"); 3]);
}

#[test]
fn windows_flag_table() {
    let c = ok("-s -m 4,*,10.0.0.5 -ns -t 300");
    assert_eq!((c.streams.ports.len(), c.streams.threads_per_port), (4, 1));
    // -P is the port base on Windows (case-insensitive -p), not a port count.
    let c = ok("-s -m 4,*,10.0.0.5 -ns -P 6001");
    assert_eq!((c.streams.base_port, c.streams.ports.len()), (6001, 4));
    // -l is the buffer length; names are case-insensitive; -wu/-cd are warm-up/cool-down.
    let c = ok("-S -M 2,0,10.0.0.5 -NS -L 64K -T 20 -WU 2 -CD 3 -V");
    assert_eq!((c.data.send_size, c.data.recv_size), (65536, 65536));
    assert_eq!(
        c.timeline,
        Phases {
            warmup: 2,
            duration: 20,
            cooldown: 3
        }
    );
    assert!(c.show.verbose);
    assert_eq!(c.streams.ports[1].cpu, CpuSpec::Cpu(0));
    // Socket options and the per-thread throttle.
    let c = ok("-s -m 1,*,10.0.0.5 -ns -sb 1M -rb -1 -ndl -thr 100 -t 5");
    assert_eq!(
        c.data.sockopts,
        crate::config::SockOpts {
            no_delay: true,
            pacing_rate: None,
            send_buffer: Some(1 << 20),
            recv_buffer: None,
            congestion: None,
            tos: None,
            notsent_lowat: by_path(),
            rcvlowat: by_path(),
        }
    );
    assert_eq!(c.data.thread_rate, Some(102_400.0));
    let c = ok("-s 10.0.0.5 -a 127.0.0.1 -f -V");
    assert_eq!(
        (c.source.port, c.show.verbose),
        (Some(25001), true),
        "bare -f is 25001"
    );
    // Linux binds the source's device too; Windows binds by address alone.
    let lo = (crate::sys::OS == "Linux").then_some("lo");
    assert_eq!(c.source.device.as_deref(), lo);
    let c = ok("-s -m 1,*,10.0.0.5 -ns -nic 127.0.0.1");
    assert_eq!(c.source.addr, Some("127.0.0.1".parse().unwrap()));
    let c = ok("-s 10.0.0.5 -B 2.5G --no-delay");
    assert_eq!(
        (c.data.rate_limit, c.data.sockopts.no_delay),
        (Some(2.5e9), true)
    );
    // Several mappings after one -m.
    let c = ok("-s -m 2,*,10.0.0.5 2,1,10.0.0.6 -ns -t 5");
    assert_eq!(c.streams.ports.len(), 4);
    assert_eq!(hosts(&c)[3], Some("10.0.0.6"));
    // The Linux line that collides: -N is no-sync here, Windows would need a count.
    let c = ok("-r -m 1,*,127.0.0.1 -N -t 5");
    assert!(!c.sync.is_on());
    // Forced dialects.
    let c = ok("--dialect windows -s -m 1,*,10.0.0.5 -P 7001 -t 5");
    assert_eq!((c.streams.base_port, c.streams.ports.len()), (7001, 1));
    let c = ok("--dialect linux -s -m 1,*,10.0.0.5 -ns -P 2 -t 5");
    assert_eq!((c.sync.is_on(), c.streams.ports.len()), (false, 2));
}

/// The low-water marks (Linux): by path unless given, `-1` the kernel's, each on its side;
/// where the OS has none, the stack's own, and the flags that ask for them refused.
#[test]
fn low_water_marks_by_path_given_or_the_kernels() {
    let lowat = |line: &str| ok(line).data.sockopts.notsent_lowat;
    use crate::config::Lowat;
    if !crate::sys::socket::LOW_WATER_MARKS {
        assert_eq!(lowat("-s 10.0.0.5"), Lowat::Kernel);
        for line in [
            "-s 10.0.0.5 --notsent-lowat 64K",
            "-r 127.0.0.1 --rcvlowat 64K",
        ] {
            assert!(err(line).contains("is Linux-only"), "{line}");
        }
        return;
    }
    // TCP_NOTSENT_LOWAT: by path unless given; -1 leaves the kernel's.
    assert_eq!(lowat("-s 10.0.0.5"), Lowat::ByPath);
    assert_eq!(
        lowat("-s 10.0.0.5 --notsent-lowat 64K"),
        Lowat::Fixed(65_536)
    );
    assert_eq!(lowat("-s 10.0.0.5 --notsent-lowat -1"), Lowat::Kernel);
    let e = err("-r 10.0.0.5 --notsent-lowat 64K");
    assert!(e.contains("--notsent-lowat applies to the sender"), "{e}");
    let e = err("-s 10.0.0.5 -u --notsent-lowat 64K");
    assert!(e.contains("not applicable for UDP"), "{e}");
    let e = err("-s 10.0.0.5 --notsent-lowat lots");
    assert!(e.contains("--notsent-lowat") && e.contains("'lots'"), "{e}");
    // SO_RCVLOWAT: by path for TCP unless given; -1 leaves the kernel's; the receiver's.
    let rcv = |line: &str| ok(line).data.sockopts.rcvlowat;
    assert_eq!(rcv("-r 127.0.0.1"), Lowat::ByPath);
    assert_eq!(rcv("-r 127.0.0.1 --rcvlowat 256K"), Lowat::Fixed(262_144));
    assert_eq!(rcv("-r 127.0.0.1 --rcvlowat -1"), Lowat::Kernel);
    assert_eq!(rcv("-r 127.0.0.1 -u"), Lowat::Kernel, "UDP reads datagrams");
    let e = err("-s 10.0.0.5 --rcvlowat 64K");
    assert!(e.contains("--rcvlowat applies to the receiver"), "{e}");
    let e = err("-r 127.0.0.1 -u --rcvlowat 64K");
    assert!(
        e.contains("--rcvlowat") && e.contains("not applicable for UDP"),
        "{e}"
    );
    let e = err("-r 127.0.0.1 --rcvlowat lots");
    assert!(e.contains("--rcvlowat") && e.contains("'lots'"), "{e}");
}

/// Each line is a usage error of one line that contains every needle.
fn assert_errors(rows: &[(&str, &[&str])]) {
    for (line, needles) in rows {
        let e = err(line);
        assert!(!e.contains('\n'), "{line}: multi-line error {e:?}");
        // Elsewhere than on Linux a Linux-only flag is refused before any other rule.
        let needles = if crate::sys::OS != "Linux" && uses_a_linux_only_flag(line) {
            &["is Linux-only"][..]
        } else {
            needles
        };
        for n in needles {
            assert!(e.contains(n), "{line}: {e:?} lacks {n:?}");
        }
    }
}

/// Whether `line` has one of the flags only Linux can serve, in its long or short form.
fn uses_a_linux_only_flag(line: &str) -> bool {
    let cmd = super::command();
    super::platform::LINUX_ONLY.iter().any(|(long, _)| {
        let arg = cmd.get_arguments().find(|a| a.get_long() == Some(long));
        let short = arg.and_then(|a| a.get_short()).map(|c| format!("-{c}"));
        line.split_whitespace()
            .any(|w| w == format!("--{long}") || Some(w) == short.as_deref())
    })
}

#[test]
fn errors_name_the_flag_as_typed_and_the_other_dialect() {
    assert_errors(&[
        // Errors name the flag as typed, with the accepted range.
        (
            "-s -m 1,*,10.0.0.5 -ns -nic 10.99.99.99",
            &["'-nic'", "not an address of this host"],
        ),
        ("-s -m 1,*,10.0.0.5 -ns -P 0", &["'-P'", "1 to 65535"]),
        ("-r -L", &["-L (last client)", "sender role"]),
        ("-s 10.0.0.5 -H", &["-H (hold mode)", "receiver role"]),
        (
            "-s -m 1,*,10.0.0.5 -ns -sb -5",
            &["'-sb'", "-1 (the kernel's default), 0, or 1 byte to 1T"],
        ),
        (
            "-s -m 1,*,10.0.0.5 -ns -to -5",
            &["'-to'", "milliseconds (0 = one hour)"],
        ),
        (
            "-s 10.0.0.5 -t -1",
            &["'-t'", "whole number of seconds (0 or more)"],
        ),
        // A token of the other dialect says so.
        (
            "-s 10.0.0.5 -l 64K",
            &["'-l'", "buffer length", "--dialect windows"],
        ),
        (
            "-s 10.0.0.5 -T 5",
            &["'-T'", "-t (--duration)", "--dialect windows"],
        ),
        (
            "-r -m 1,*,127.0.0.1 -ns -b 64K",
            &["'-b'", "ntttcp-for-linux flag", "--dialect linux"],
        ),
        (
            "-s 10.0.0.5 --format xml",
            &[
                "'xml'",
                "'--format'",
                "possible values: windows, linux, json, jsonl",
            ],
        ),
        ("-s 10.0.0.5 --io fast", &["'fast'", "blocking, async"]),
        (
            "-s 10.0.0.5 --duraton 5",
            &["'--duraton'", "a similar argument exists: '--duration'"],
        ),
    ]);
}

#[test]
fn usage_errors_name_the_flag_and_value() {
    let rows: &[(&str, &[&str])] = &[
        ("-r -Z", &["-Z"]),
        ("-r -m 0,*,127.0.0.1", &["0,*,127.0.0.1", "-m"]),
        ("-r -m 8,99,127.0.0.1", &["-m", "CPU 99", "0-1"]),
        ("-s 10.0.0.5 -t abc", &["'abc'", "'-t'"]),
        ("-s 10.0.0.5 -p 70000", &["70000", "-p"]),
        ("-s 10.0.0.5 -p 65530 -P 16", &["-p", "65530", "65545"]),
        ("-s 10.0.0.5 -p 1", &["-p", "'1'"]),
        ("-r -s 10.0.0.5", &["'-r'", "'-s'"]),
        (
            "-r 203.0.113.77",
            &["203.0.113.77", "not an address of this host"],
        ),
        ("-r not-an-ip", &["not-an-ip"]),
        ("-s", &["receiver's address"]),
        ("-s 10.0.0.5 -P 0", &["-P", "0"]),
        ("-s 10.0.0.5 -P 513", &["-P", "513"]),
        ("-s 10.0.0.5 -b 12Q", &["-b", "12Q"]),
        ("-s -m 2,*,a 2,*,b -P 1", &["-P 1"]),
        ("-s -ns -t 5", &["-m"]),
        ("--loopback -m 2,*,10.0.0.5", &["10.0.0.5", "loopback"]),
        ("--loopback -r", &["--loopback"]),
        ("-s 10.0.0.5 -u --no-delay", &["--no-delay", "UDP"]),
        ("-s -m 1,*,h -ns -u -ndl", &["no-delay", "UDP"]),
        ("-s 10.0.0.5 -u -Z", &["--sendfile", "UDP"]),
        ("-s 10.0.0.5 -u -b 16", &["'-b'", "24"]),
        ("-s 10.0.0.5 -u --io async", &["--io async", "UDP"]),
        ("-r -Z", &["--sendfile", "sender"]),
        (
            "-s 10.0.0.5 --sendfile-always",
            &["--sendfile-always", "-Z"],
        ),
        (
            "-s 10.0.0.5 --skip-rx-copy",
            &["--skip-rx-copy", "receiver"],
        ),
        ("-r -B 1G", &["-B", "sender"]),
        ("-r -a 127.0.0.1", &["-a", "sender"]),
        ("-s 10.0.0.5 -f 80", &["'-f'", "1025-65535"]),
        ("-s -m 1,*,h -ns -l abc", &["'-l'", "'abc' is not a size"]),
    ];
    assert_errors(rows);
}

#[test]
fn help_and_version_are_info_not_errors() {
    for flag in ["--help", "-h"] {
        let args: Vec<OsString> = ["ntttcp", flag].map(OsString::from).to_vec();
        match parse(&args, CPUS) {
            Ok(Parsed::Help(text)) => assert!(text.contains("ntttcp"), "{flag}"),
            other => panic!("{flag}: {other:?}"),
        }
    }
    let args: Vec<OsString> = ["ntttcp", "--version"].map(OsString::from).to_vec();
    assert!(matches!(parse(&args, CPUS), Ok(Parsed::Version)));
    let args: Vec<OsString> = ["ntttcp", "--help"].map(OsString::from).to_vec();
    let Ok(Parsed::Help(help)) = parse(&args, CPUS) else {
        panic!("no help")
    };
    assert!(
        help.contains("Dialects:") && help.contains("--ns"),
        "{help}"
    );
}

#[test]
fn each_dialect_sends_its_own_default_buffer() {
    assert_eq!(ok("-s 10.0.0.5").data.send_size, DEFAULT_SEND_SIZE);
    assert_eq!(ok("-s -m 2,*,10.0.0.5 -ns").data.send_size, 64 * 1024);
    assert_eq!(
        ok("-s -m 2,*,10.0.0.5 -ns -l 128K").data.send_size,
        128 * 1024
    );
    assert_eq!(ok("-r -m 2,*,127.0.0.1 -ns").data.recv_size, 64 * 1024);
}

#[test]
fn deadlines_in_both_dialects() {
    use std::time::Duration;
    assert_eq!(ok("-s 10.0.0.5").timeout, crate::config::DEFAULT_TIMEOUT);
    assert_eq!(
        ok("-s 10.0.0.5 --timeout 3").timeout,
        Duration::from_secs(3)
    );
    let win = |to: &str| ok(&format!("-s -m 1,*,10.0.0.5 -ns -to {to}")).timeout;
    assert_eq!(win("2000"), Duration::from_millis(2000));
    assert_eq!(win("50"), Duration::from_millis(100), "at least 100 ms");
    assert_eq!(
        win("0"),
        Duration::from_secs(3600),
        "0: an hour, as NTttcp's 'none'"
    );
}

#[test]
fn the_dialect_and_a_p_that_overrides_m_are_said() {
    let look = |line: &str| -> Presentation {
        let args: Vec<OsString> = std::iter::once("ntttcp")
            .chain(line.split_whitespace())
            .map(OsString::from)
            .collect();
        match parse(&args, CPUS) {
            Ok(Parsed::Run(_, p)) => *p,
            other => panic!("{line}: {other:?}"),
        }
    };
    let w = look("-s -m 4,*,10.0.0.5 -ns -t 5");
    assert_eq!(
        w.notes,
        ["read as a Windows NTttcp line ('-ns' is a Windows-only spelling)"]
    );
    // The dialect changed a default nobody set: said once, naming the spelling.
    assert_eq!(
        w.warnings,
        [
            "'-ns' made this a Windows NTttcp line: NTttcp's 64 KiB send buffer instead of \
             ntttcp-for-linux's 128 KiB; --dialect linux reads it as ntttcp-for-linux's"
        ]
    );
    let synced = look("-r -m 4,*,10.0.0.5 -wu 1 -t 5");
    assert!(
        synced.warnings[0].starts_with("'-wu' made this a Windows NTttcp line: NTttcp's sync"),
        "{:?}",
        synced.warnings
    );
    // Nothing changed (the size given, no sync), or the dialect forced: nothing said.
    assert!(
        look("-s -m 4,*,10.0.0.5 -ns -l 128K -t 5")
            .warnings
            .is_empty()
    );
    assert!(
        look("--dialect windows -s -m 4,*,10.0.0.5 -ns -t 5")
            .warnings
            .is_empty()
    );
    let l = look("-s -m 4,*,10.0.0.5 -P 2 -t 5");
    assert!(
        l.notes[0].contains("ntttcp-for-linux line (no Windows-only"),
        "{:?}",
        l.notes
    );
    assert_eq!(
        l.warnings,
        ["-P 2 after -m: 2 ports (and sender threads) instead of the mapping's 4"]
    );
    // -P before -m, or the same count: nothing to say.
    assert!(look("-s -P 2 -m 4,*,10.0.0.5 -t 5").warnings.is_empty());
    assert!(look("-s -m 4,*,10.0.0.5 -P 4 -t 5").warnings.is_empty());
    let forced = look("--dialect windows -s -m 1,*,10.0.0.5 -t 5");
    assert!(
        forced.notes[0].contains("--dialect forces it"),
        "{:?}",
        forced.notes
    );
}

#[test]
fn a_latency_test_without_a_layout_runs_one_connection_and_any_layout_flag_keeps_its_meaning() {
    let layout = |line: &str| {
        let c = ok(line);
        (
            c.streams.ports.len(),
            c.streams.threads_per_port,
            c.streams.conns_per_thread,
            c.streams.latency_default,
        )
    };
    assert_eq!(layout("-s 10.0.0.5 --rr"), (1, 1, 1, true));
    assert_eq!(layout("--loopback --rr 64"), (1, 1, 1, true));
    assert_eq!(layout("-s 10.0.0.5 --rr -l 4"), (1, 1, 4, true));
    assert_eq!(layout("-s 10.0.0.5 --rr -P 2"), (2, 4, 1, false));
    assert_eq!(layout("-s 10.0.0.5 --rr -n 3"), (16, 3, 1, false));
    assert_eq!(layout("-s -m 2,*,10.0.0.5 --rr"), (2, 1, 1, false));
    // A throughput test keeps the ntttcp-for-linux layout.
    assert_eq!(layout("-s 10.0.0.5"), (16, 4, 1, false));
    assert_eq!(layout("-s 10.0.0.5 --connect-rate"), (16, 4, 1, false));
}
