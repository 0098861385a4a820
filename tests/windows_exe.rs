//! The Windows build (`ntttcp.exe`) under Wine against the Linux build, on loopback: each
//! role on each side, with ntttcp-for-linux's sync and with the Azure guide's no-sync
//! lines (`-ns` on the Windows side, `-N` on the Linux one), TCP and UDP, the XML file
//! that VirtualClient and PerfKitBenchmarker read, `-H`, loopback over IPv6 with a rate
//! limit and every file, Windows NTttcp's token sync, a dead peer, Ctrl+C and the flags only
//! Linux can serve. Wine's figures are Wine's: these tests hold what the two builds
//! promise each other, never a throughput.

use std::time::{Duration, Instant};

use crate::util::{
    Launch, Ports, Scratch, attempt_at, close_or_starved, exe, json, parse_tables, port, promise,
    report, run, run_exe, spawn, spawn_exe, wait_listening, wait_listening_udp, wine,
};

const LIMIT: Duration = Duration::from_secs(60);

/// What the .exe reports of its host: Windows' own name for itself, and counters Windows
/// (or Wine) does not give as unknown (null), never as 0.
fn a_windows_report(r: &serde_json::Value) {
    let os = r["os"].as_str().unwrap_or_default();
    assert!(os.starts_with("Windows "), "{os}");
    for k in ["interrupts", "net_rx_softirqs"] {
        let v = &r["network"][k];
        assert!(v.is_null() || v.as_u64() > Some(0), "{k}: {v}");
    }
    assert!(
        r["cpu"]["busy_percent"].as_f64() > Some(0.0),
        "{}",
        r["cpu"]
    );
    // What Windows keeps no count of at all.
    for k in ["iowait_percent", "steal_percent"] {
        assert!(r["cpu"][k].is_null(), "{k}: {}", r["cpu"]);
    }
    let drops = &r["network"]["udp"]["rcvbuf_errors"];
    assert!(drops.is_null(), "rcvbuf_errors: {drops}");
}

/// A sync pair on ports from `@at`: the receiver started by `rx` (the .exe or the Linux
/// build), then the sender by `tx`; both exit 0. Their reports (sender, receiver), and
/// what the sender said on stderr.
fn sync_pair(
    at: u16,
    rx: impl Fn(&str) -> crate::util::Proc,
    tx: impl Fn(&str) -> crate::util::Output,
) -> (serde_json::Value, serde_json::Value, String) {
    let line = format!("-m 2,*,127.0.0.1 -p @{at} -t 3 --format json");
    let r = rx(&format!("-r {line}"));
    wait_listening(port(at) - 1, LIMIT);
    let so = tx(&format!("-s {line}"));
    assert_eq!(so.code(), Some(0), "{so:?}");
    let ro = r.wait(LIMIT);
    assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?}\n{ro:?}");
    let (s, r) = (report(&json(&so)).clone(), report(&json(&ro)).clone());
    (s, r, so.stderr)
}

/// With ntttcp-for-linux's sync the .exe receives from the Linux build and sends to it,
/// and the two sides' totals agree within 1 % either way, as two Linux processes' do
/// (the .exe's sender counts what it wrote where Wine does not say what was delivered).
#[test]
fn the_exe_and_the_linux_build_pair_with_sync_either_way() {
    let Some(exe) = exe() else { return };
    let _ports = Ports::take(1);
    promise("the .exe receiving: both sides within 1 %", |i| {
        let rx = |a: &str| spawn_exe(&exe, "ntttcp.exe receiver", a);
        let (s, r, _) = sync_pair(attempt_at(0, i), rx, |a| run(a, LIMIT));
        a_windows_report(&r);
        assert_eq!(r["side"], "receiver");
        let bytes = |d: &serde_json::Value| d["totals"]["bytes"].as_f64().unwrap_or(0.0);
        close_or_starved(bytes(&s), bytes(&r), 1.0, &[&s, &r])
    });
    promise("the .exe sending: both sides within 1 %", |i| {
        let rx = |a: &str| spawn("receiver", a);
        let (s, r, said) = sync_pair(attempt_at(1, i), rx, |a| run_exe(&exe, a, LIMIT));
        a_windows_report(&s);
        assert_eq!(s["side"], "sender");
        // Delivered bytes where the OS says them (bytes written beside them), else the
        // bytes written, and the sender says which.
        let written_only = s["totals"]["bytes_written"].is_null();
        let warned = said.contains("does not say what a connection delivered");
        assert_eq!(written_only, warned, "{said}");
        let bytes = |d: &serde_json::Value| d["totals"]["bytes"].as_f64().unwrap_or(0.0);
        close_or_starved(bytes(&s), bytes(&r), 1.0, &[&s, &r])
    });
}

/// The guide's lines: `-ns` on the Windows side, `-N` on the Linux side, each side timing
/// itself for its 3 s, whichever side receives.
#[test]
fn the_guides_no_sync_lines_pair_the_exe_and_the_linux_build() {
    let Some(exe) = exe() else { return };
    let _ports = Ports::take(1);
    let windows = "-m 2,*,127.0.0.1 -ns -t 3";
    let linux = "-m 2,*,127.0.0.1 -N -t 3";
    for (k, exe_receives) in [(1u16, true), (11, false)] {
        let (rx, tx) = if exe_receives {
            (
                format!("-r {windows} -p @{k}"),
                format!("-s {linux} -p @{k}"),
            )
        } else {
            (
                format!("-r {linux} -p @{k}"),
                format!("-s {windows} -p @{k}"),
            )
        };
        let r = if exe_receives {
            spawn_exe(&exe, "ntttcp.exe receiver", &rx)
        } else {
            spawn("receiver", &rx)
        };
        wait_listening(port(k), LIMIT);
        let so = if exe_receives {
            run(&tx, LIMIT)
        } else {
            run_exe(&exe, &tx, LIMIT)
        };
        assert_eq!(so.code(), Some(0), "{so:?}");
        let ro = r.wait(LIMIT);
        assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?}\n{ro:?}");
        for o in [&so, &ro] {
            let t = &parse_tables(&o.stdout)[0];
            assert!((t.realtime - 3.0).abs() < 0.15, "{t:?}");
            assert!(t.meg > 1.0, "{t:?}");
        }
    }
}

/// UDP from the Linux build to the .exe, with the receiver's loss accounting: the
/// datagrams carry the Linux sender's stamps, so the .exe knows what it expected and what
/// it lost, and it never receives more than was sent.
#[test]
fn udp_from_the_linux_build_to_the_exe_is_accounted() {
    let Some(exe) = exe() else { return };
    let _ports = Ports::take(1);
    let line = "-u -m 1,*,127.0.0.1 -p @1 -t 2 --format json";
    let r = spawn_exe(&exe, "ntttcp.exe receiver", &format!("-r {line}"));
    wait_listening_udp(port(1), LIMIT);
    let so = run(&format!("-s {line} -B 200M"), LIMIT);
    let ro = r.wait(LIMIT);
    assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?}\n{ro:?}");
    let (s, r) = (json(&so), json(&ro));
    let (s, r) = (report(&s), report(&r));
    a_windows_report(r);
    let u = &r["udp"];
    let n = |k: &str| u[k].as_u64().unwrap_or_else(|| panic!("udp.{k}: {u}"));
    // Loopback's 64 KiB MTU makes few, large datagrams: 200 Mbit/s is ~380 a second.
    assert!(n("datagrams") > 100 && n("expected") > 100, "{u}");
    assert!(n("lost") <= n("expected") && n("unstamped") == 0, "{u}");
    assert!(n("datagrams") <= n("expected"), "{u}");
    // Each side counts its own window; on a busy machine the receiver's edges may catch
    // a datagram the sender counted just outside its own, one at each edge at most.
    let sent = s["totals"]["bytes"].as_u64().unwrap();
    let datagram = s["buffer_len"].as_u64().unwrap();
    let got = r["totals"]["bytes"].as_u64().unwrap();
    assert!(got <= sent + 2 * datagram, "{s}\n{r}");
}

/// `-xml FILE` on the .exe writes NTttcp's XML document, which parses and carries the
/// figures VirtualClient and PerfKitBenchmarker read.
#[test]
fn the_exe_writes_the_xml_that_virtualclient_reads() {
    let Some(exe) = exe() else { return };
    let _ports = Ports::take(1);
    let d = Scratch::new("exe-xml");
    let path = d.file("ntttcp.xml").display().to_string();
    let r = spawn_exe(
        &exe,
        "ntttcp.exe receiver",
        &format!("-r -m 2,*,127.0.0.1 -p @1 -ns -t 2 -xml {path}"),
    );
    wait_listening(port(1), LIMIT);
    let so = run("-s -m 2,*,127.0.0.1 -p @1 -N -t 2", LIMIT);
    let ro = r.wait(LIMIT);
    assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?}\n{ro:?}");
    let text = d.read("ntttcp.xml");
    let doc = roxmltree::Document::parse(&text).expect("well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "ntttcpr");
    let value = |tag: &str, metric: Option<&str>| -> f64 {
        root.children()
            .find(|n| n.has_tag_name(tag) && (metric.is_none() || n.attribute("metric") == metric))
            .and_then(|n| n.text())
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("<{tag} {metric:?}> in {text}"))
    };
    assert!(value("throughput", Some("mbps")) > 0.0);
    assert!(value("total_bytes", Some("MB")) > 1.0);
    assert!((value("realtime", Some("s")) - 2.0).abs() < 0.1);
    assert!(value("cpu", Some("%")) > 0.0);
    assert!(value("packets_received", None) > 0.0);
}

/// A receiver that stops answering (SIGSTOP: no reset, no close) ends the .exe sender's
/// run within its `--timeout` (2 s) and the bounded wind-down after it, with what it
/// measured printed and exit 1.
#[test]
fn a_dead_peer_ends_the_exes_run_within_its_deadline_with_partial_results() {
    let Some(exe) = exe() else { return };
    let _ports = Ports::take(1);
    let r = spawn("receiver", "-r -m 1,*,127.0.0.1 -p @1 -t 20");
    wait_listening(port(1) - 1, LIMIT);
    let s = spawn_exe(
        &exe,
        "ntttcp.exe sender",
        "-s -m 1,*,127.0.0.1 -p @1 -t 20 -B 1G --timeout 2 --interval 0.2",
    );
    s.wait_for_stdout("Gbit/s", LIMIT);
    r.signal(19);
    let stopped = Instant::now();
    let so = s.wait(LIMIT);
    let took = stopped.elapsed();
    r.signal(18);
    assert_eq!(so.code(), Some(1), "{so:?}");
    assert!(so.stderr.contains("no data could be sent"), "{}", so.stderr);
    let t = &parse_tables(&so.stdout)[0];
    assert!(t.meg > 0.0 && t.realtime < 20.0, "{t:?}");
    // The 2 s deadline, then at most a second for each of the closing waits.
    assert!(so.within(Duration::from_secs(6)), "{took:?}: {so:?}");
}

/// Ctrl+C (SIGINT, which Wine turns into the console's CTRL_C_EVENT) stops the .exe with
/// the figures measured so far and exit 130.
#[test]
fn ctrl_c_stops_the_exe_with_what_it_measured() {
    let Some(exe) = exe() else { return };
    let _ports = Ports::take(1);
    let r = spawn_exe(
        &exe,
        "ntttcp.exe receiver",
        "-r -m 1,*,127.0.0.1 -p @1 -t 20",
    );
    wait_listening(port(1) - 1, LIMIT);
    let s = spawn(
        "sender",
        "-s -m 1,*,127.0.0.1 -p @1 -t 20 -B 1G --interval 0.2",
    );
    s.wait_for_stdout("Gbit/s", LIMIT);
    r.signal(2);
    let ro = r.wait(LIMIT);
    let so = s.wait(LIMIT);
    assert_eq!(ro.code(), Some(130), "{ro:?}");
    let t = &parse_tables(&ro.stdout)[0];
    assert!(t.meg > 0.0 && t.realtime < 20.0, "{t:?}");
    assert_eq!(
        so.code(),
        Some(1),
        "the sender's receiver went away: {so:?}"
    );
}

/// What only Linux can do is refused by the .exe: exit 2 and one line naming the flag as
/// typed.
#[test]
fn the_exe_refuses_linux_only_flags_naming_them() {
    let Some(exe) = exe() else { return };
    for (args, flag) in [
        ("-s -m 1,*,127.0.0.1 -Z", "'-Z'"),
        ("-r -m 1,*,127.0.0.1 -D", "'-D'"),
        ("-s -m 1,*,127.0.0.1 --skip-rx-copy", "'--skip-rx-copy'"),
        (
            "-s -m 1,*,127.0.0.1 --fq-rate-limit 1G",
            "'--fq-rate-limit'",
        ),
        (
            "-r -m 1,*,127.0.0.1 --show-dev-interrupts virtio",
            "'--show-dev-interrupts'",
        ),
    ] {
        let o = run_exe(&exe, args, LIMIT);
        assert_eq!(o.code(), Some(2), "{args}: {o:?}");
        let line = o.stderr.trim_end();
        assert_eq!(line.lines().count(), 1, "{args}: {line}");
        assert!(
            line.contains(&format!("{flag} is Linux-only")) && line.ends_with("runs on Windows"),
            "{args}: {line}"
        );
    }
}

/// `--loopback` on the .exe over IPv6, rate limited, pinned, with every result file: both
/// roles in one Windows process, every worker on the CPU the mapping names, the limit held
/// (a token bucket never lets more through than its rate), the ntttcp-for-linux XML and
/// JSON files and our JSON document written; and a floor it misses exits 3.
#[test]
fn the_exe_runs_loopback_over_ipv6_rate_limited_with_every_file() {
    let Some(exe) = exe() else { return };
    let _ports = Ports::take(1);
    let d = Scratch::new("exe-files");
    let (x, j) = (d.file("r.xml"), d.file("r.json"));
    let o = run_exe(
        &exe,
        &format!(
            "--loopback -6 -m 2,1,::1 -p @1 -t 2 -B 400M --format json -x {} -j {}",
            x.display(),
            j.display()
        ),
        LIMIT,
    );
    assert_eq!(o.code(), Some(0), "{o:?}");
    let doc = json(&o);
    let reports = doc["reports"].as_array().unwrap();
    assert_eq!(reports.len(), 2, "{doc}");
    for r in reports {
        a_windows_report(r);
        assert_eq!(r["params"]["ipv6"], true);
        let bps = r["totals"]["bits_per_second"].as_f64().unwrap();
        assert!(bps > 1e6 && bps <= 400e6 * 1.05, "{bps}");
        for t in r["threads"].as_array().unwrap() {
            assert_eq!(t["cpu"], 1, "pinned as the mapping says: {t}");
        }
    }
    roxmltree::Document::parse(&d.read("r.xml")).expect("the -x file is well-formed");
    let lj: serde_json::Value = serde_json::from_str(&d.read("r.json")).expect("the -j file");
    assert!(lj.is_object(), "{lj}");
    let floor = run_exe(&exe, "--loopback -p @11 -t 1 --min-throughput 100T", LIMIT);
    assert_eq!(floor.code(), Some(3), "{floor:?}");
}

/// Windows NTttcp's own sync (a Windows-dialect line: a token on data port + 1000 per
/// thread) between the .exe and the Linux build, the .exe receiving, with a warm-up and
/// a cool-down around the 2 s measured.
#[test]
fn windows_token_sync_between_the_exe_and_the_linux_build() {
    let Some(exe) = exe() else { return };
    let _ports = Ports::with_tokens();
    let line = "-m 2,*,127.0.0.1 -p @1 -wu 1 -t 2 -cd 1";
    let r = spawn_exe(&exe, "ntttcp.exe receiver", &format!("-r {line}"));
    wait_listening(port(1) + 1000, LIMIT);
    let so = run(&format!("-s {line}"), LIMIT);
    assert_eq!(so.code(), Some(0), "{so:?}");
    let ro = r.wait(LIMIT);
    assert_eq!(ro.code(), Some(0), "{ro:?}");
    for o in [&so, &ro] {
        let t = &parse_tables(&o.stdout)[0];
        assert!((t.realtime - 2.0).abs() < 0.1 && t.meg > 1.0, "{t:?}");
    }
}

/// `-H` on the .exe serves test after test until Ctrl+C, each one's tables printed as it
/// ends; every test it served completed, so the interruption between them exits 0.
#[test]
fn a_hold_receiver_on_the_exe_serves_senders_until_ctrl_c() {
    let Some(exe) = exe() else { return };
    let _ports = Ports::take(1);
    let r = spawn_exe(
        &exe,
        "ntttcp.exe -H receiver",
        "-r -H -m 1,*,127.0.0.1 -p @1 -t 1",
    );
    wait_listening(port(1) - 1, LIMIT);
    for i in 1..=2 {
        let s = run("-s -m 1,*,127.0.0.1 -p @1 -t 1", LIMIT);
        assert_eq!(s.code(), Some(0), "sender {i}: {s:?}");
        r.wait_for_stdout_count("#####  Totals:  #####", i, LIMIT);
    }
    r.signal(2);
    let ro = r.wait(LIMIT);
    assert_eq!(ro.code(), Some(0), "{ro:?}");
    assert_eq!(parse_tables(&ro.stdout).len(), 2, "{}", ro.stdout);
}

/// The workloads beyond NTTTCP on the .exe (`--loopback`, both roles in it): `-R` moves
/// bytes from the receiver to the sender and each side reports its own direction,
/// `--bidir` reports both ways on both sides, `--rr` times transactions.
#[test]
fn the_exe_runs_the_workloads_beyond_ntttcp() {
    let Some(exe) = exe() else { return };
    let _ports = Ports::take(1);
    let ways = |extra: &str, k: u16| -> Vec<(String, String, u64)> {
        let line = format!("--loopback -m 1,*,127.0.0.1 -p @{k} -t 2 --format json {extra}");
        let o = run_exe(&exe, &line, LIMIT);
        assert_eq!(o.code(), Some(0), "{extra}: {o:?}");
        let doc = json(&o);
        let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
        doc["reports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let bytes = r["totals"]["bytes"].as_u64().unwrap_or(0);
                (text(&r["side"]), text(&r["direction"]), bytes)
            })
            .collect()
    };
    let moved = |w: &[(String, String, u64)], side: &str, dir: &str| {
        w.iter()
            .find(|(s, d, _)| s == side && d == dir)
            .map(|w| w.2)
            .unwrap_or_else(|| panic!("no {side} {dir} report in {w:?}"))
    };
    let reverse = ways("-R", 1);
    assert!(
        moved(&reverse, "sender", "receive") > 1 << 20,
        "{reverse:?}"
    );
    assert!(moved(&reverse, "receiver", "send") > 1 << 20, "{reverse:?}");
    let both = ways("--bidir", 11);
    for (side, dir) in [
        ("sender", "send"),
        ("sender", "receive"),
        ("receiver", "send"),
        ("receiver", "receive"),
    ] {
        assert!(moved(&both, side, dir) > 1 << 20, "{side} {dir}: {both:?}");
    }
    let o = run_exe(
        &exe,
        "--loopback -m 1,*,127.0.0.1 -p @21 -t 2 --rr --format json",
        LIMIT,
    );
    assert_eq!(o.code(), Some(0), "{o:?}");
    let rr = &json(&o)["reports"][0]["rr"];
    assert!(rr["transactions"].as_u64() > Some(10), "{rr}");
}

/// A reader that goes away (`| head -1`) is not an error: the .exe stops writing and
/// exits 0, as the Linux build does.
#[test]
fn the_exe_exits_0_when_its_reader_goes_away() {
    let Some(exe) = exe() else { return };
    let _ports = Ports::take(1);
    let o = Launch::new(
        "ntttcp.exe | head -1",
        "--loopback -m 1,*,127.0.0.1 -p @1 -t 2 --format jsonl --interval 0.2",
    )
    .binary(wine(&exe))
    .wrapped(&["bash", "-c", "set -o pipefail; \"$@\" | head -1", "bash"])
    .spawn()
    .wait(LIMIT);
    assert_eq!(o.code(), Some(0), "{o:?}");
    assert_eq!(o.stdout.lines().count(), 1, "{}", o.stdout);
    assert!(!o.stderr.contains("cannot write"), "{}", o.stderr);
}
