//! Result files and exit floors from real runs: the XML files read by a real XML parser,
//! the JSON file by serde_json, the log compared with the console.

use std::time::Duration;

use crate::util::{
    Attempt, Ports, Scratch, assert_close, assert_valid, parse_tables, port, ports_in, promise,
    run, spawn, starved, validator,
};

const LIMIT: Duration = Duration::from_secs(30);

fn metric<'a>(doc: &'a roxmltree::Document, tag: &str, metric: &str) -> &'a str {
    doc.root_element()
        .children()
        .find(|n| n.has_tag_name(tag) && n.attribute("metric") == Some(metric))
        .and_then(|n| n.text())
        .unwrap_or_else(|| panic!("no <{tag} metric=\"{metric}\">"))
}

#[test]
fn linux_xml_json_and_log_files_from_a_real_run() {
    let _ports = Ports::take(1);
    let d = Scratch::new("files");
    let f = |n: &str| d.file(n).display().to_string();
    let r = spawn(
        "receiver",
        &ports_in(&format!(
            "-r 127.0.0.1 -P 2 -p @1 -t 2 -V -x {} -j {}",
            f("r.xml"),
            f("r.json")
        )),
    );
    let so = run(
        &ports_in(&format!(
            "-s 127.0.0.1 -P 2 -n 1 -p @1 -t 2 -x{} -j {} -O {}",
            f("s.xml"),
            f("s.json"),
            f("s.log")
        )),
        LIMIT,
    );
    let ro = r.wait(LIMIT);
    assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?} {ro:?}");
    let (st, rt) = (&parse_tables(&so.stdout)[0], &parse_tables(&ro.stdout)[0]);

    // XML: parses, root by side, the fields VirtualClient and PerfKitBenchmarker read.
    for (name, root, table, conns) in [
        ("s.xml", "ntttcps", st, true),
        ("r.xml", "ntttcpr", rt, false),
    ] {
        let text = d.read(name);
        let doc = roxmltree::Document::parse(&text).expect("well-formed XML");
        assert_eq!(doc.root_element().tag_name().name(), root);
        assert_eq!(doc.root_element().attribute("version"), Some("5.33-linux"));
        let mbps: f64 = metric(&doc, "throughput", "mbps").parse().unwrap();
        assert_close(
            mbps,
            table.mb_per_s * 8.0 * 1.048576,
            0.1,
            "XML mbps vs console MB/s",
        );
        let mb: f64 = metric(&doc, "total_bytes", "MB").parse().unwrap();
        assert_close(
            mb,
            table.meg * 1.048576,
            0.1,
            "XML MB (decimal) vs console MEG",
        );
        for tag in ["avg_frame_size", "cycles_per_byte", "cpu_busy_all"] {
            assert!(
                doc.descendants().any(|n| n.has_tag_name(tag)),
                "{name}: <{tag}>"
            );
        }
        for tag in ["packets_retransmitted", "errors", "os"] {
            assert!(
                doc.descendants().any(|n| n.has_tag_name(tag)),
                "{name}: <{tag}>"
            );
        }
        let has_conns = doc.descendants().any(|n| n.has_tag_name("conns_tested"));
        assert_eq!(has_conns, conns, "{name}: conns_tested only on the sender");
        // The check of ntttcp-for-linux's own functional test suite.
        assert!(text.contains("<throughput metric=\"MB/s\">"), "{text}");
    }
    let rdoc = d.read("r.xml");
    let rdoc = roxmltree::Document::parse(&rdoc).unwrap();
    assert_eq!(
        rdoc.descendants()
            .filter(|n| n.has_tag_name("thread"))
            .count(),
        2,
        "-V adds one <thread> per port"
    );

    // JSON: valid, every value a string, the upstream layout the suite's regex expects.
    for (name, root, table) in [("s.json", "ntttcps", st), ("r.json", "ntttcpr", rt)] {
        let text = d.read(name);
        let v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        let mbps: f64 = v[root]["throughputs"][1]["value"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(v[root]["throughputs"][1]["metric"], "mbps");
        assert_close(mbps, table.mb_per_s * 8.0 * 1.048576, 0.1, "JSON mbps");
        assert!(v[root]["cycles"]["value"].is_string() && v[root]["errors"].is_string());
        assert!(
            text.contains("\"throughputs\" : [\n            {\n                \"metric\" : \"MB/s\",\n                \"value\" : \""),
            "{text}"
        );
    }

    // -O: the console output, tables included.
    let log = d.read("s.log");
    assert!(
        log.contains("Network activity progressing...") && log.contains("#####  Totals:  #####")
    );
    assert_eq!(parse_tables(&log), parse_tables(&so.stdout));
}

#[test]
fn windows_xml_is_appended_per_run_and_parses() {
    let _ports = Ports::take(1);
    let d = Scratch::new("winxml");
    let path = d.file("xml.txt").display().to_string();
    for port in [port(1), port(11)] {
        let r = spawn(
            "receiver",
            &format!("-r -m 2,*,127.0.0.1 -p {port} -ns -t 1 -xml {path}"),
        );
        let s = run(&format!("-s -m 2,*,127.0.0.1 -p {port} -ns -t 1"), LIMIT);
        assert_eq!(s.code(), Some(0), "{s:?}");
        let ro = r.wait(LIMIT);
        assert_eq!(ro.code(), Some(0), "{ro:?}");
        // Unlike NTttcp 5.38-5.40, the console tables are printed as well.
        assert_eq!(parse_tables(&ro.stdout).len(), 1);
    }
    let text = d.read("xml.txt");
    assert_eq!(
        text.matches("<ntttcpr ").count(),
        2,
        "appended, as NTttcp does"
    );
    // Each appended document parses on its own (consumers delete the file between runs).
    for doc in text.split_inclusive("</ntttcpr>\n") {
        let doc = roxmltree::Document::parse(doc).expect("well-formed XML");
        assert_eq!(doc.root_element().attribute("version"), Some("5.40"));
        let threads = doc
            .root_element()
            .children()
            .filter(|n| n.has_tag_name("thread"));
        for t in threads {
            let mbps = t
                .children()
                .find(|n| n.attribute("metric") == Some("mbps"))
                .and_then(|n| n.text())
                .expect("per-thread mbps");
            assert!(mbps.parse::<f64>().unwrap() > 0.0);
        }
        assert!(metric(&doc, "throughput", "mbps").parse::<f64>().unwrap() > 0.0);
    }
}

#[test]
fn min_throughput_floor_sets_exit_status_3_after_printing() {
    let _ports = Ports::take(1);
    let low = run(
        "--loopback -m 1,*,127.0.0.1 -p @1 -t 1 --min-throughput 1M",
        LIMIT,
    );
    assert_eq!(low.code(), Some(0), "{low:?}");
    let high = run(
        "--loopback -m 1,*,127.0.0.1 -p @11 -t 1 --min-throughput 100T",
        LIMIT,
    );
    assert_eq!(high.code(), Some(3), "{high:?}");
    assert_eq!(
        parse_tables(&high.stdout).len(),
        2,
        "printed before the verdict"
    );
    let bad = run("--loopback --min-throughput fast", LIMIT);
    assert_eq!(bad.code(), Some(2));
    assert!(
        bad.stderr.contains("'--min-throughput'") || bad.stderr.contains("fast"),
        "{}",
        bad.stderr
    );
}

#[test]
fn golden_document_matches_the_schema() {
    let doc: serde_json::Value =
        serde_json::from_str(include_str!("fixtures/seed-report.json")).unwrap();
    assert_valid(&validator(), &doc);
    // The schema is strict: an unknown field is an error.
    let mut extra = doc.clone();
    extra["reports"][0]["surprise"] = serde_json::json!(1);
    assert!(!validator().is_valid(&extra));
}

#[test]
fn json_format_from_a_real_run_matches_the_schema() {
    let _ports = Ports::take(1);
    let o = run(
        "--loopback -m 2,*,127.0.0.1 -p @1 -W 1 -t 2 --format json",
        LIMIT,
    );
    assert_eq!(o.code(), Some(0), "{o:?}");
    // stdout is exactly one JSON document: no banner, no tables.
    let doc: serde_json::Value = serde_json::from_str(&o.stdout).expect("stdout is JSON");
    assert_valid(&validator(), &doc);
    let reports = doc["reports"].as_array().unwrap();
    assert_eq!(reports.len(), 2);
    assert_eq!(
        (reports[0]["side"].as_str(), reports[1]["side"].as_str()),
        (Some("sender"), Some("receiver"))
    );
    let bytes = |i: usize| reports[i]["totals"]["bytes"].as_u64().unwrap() as f64;
    assert!(bytes(1) > 1e6);
    assert_close(bytes(0), bytes(1), 1.0, "sender vs receiver bytes in JSON");
    // -m 2: sender thread k sends to port k, which receiver thread k serves; each pair
    // is measured by two processes on their own.
    let per_thread = |i: usize| -> Vec<f64> {
        reports[i]["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["bytes"].as_u64().unwrap() as f64)
            .collect()
    };
    let (sent, received) = (per_thread(0), per_thread(1));
    assert_eq!((sent.len(), received.len()), (2, 2));
    for (s, r) in sent.iter().zip(&received) {
        assert_close(*s, *r, 1.0, "a sender thread vs its receiver thread");
    }
}

#[test]
fn jsonl_streams_intervals_then_a_summary_per_side() {
    let _ports = Ports::take(1);
    let r = spawn(
        "receiver",
        "-r 127.0.0.1 -P 1 -p @11 -t 2 --format jsonl --interval 0.5",
    );
    let s = run(
        "-s 127.0.0.1 -P 1 -n 1 -p @11 -t 2 --format jsonl --interval 0.5",
        LIMIT,
    );
    let ro = r.wait(LIMIT);
    assert_eq!((s.code(), ro.code()), (Some(0), Some(0)), "{s:?} {ro:?}");
    let v = validator();
    for o in [&s, &ro] {
        let lines: Vec<serde_json::Value> = o
            .stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        for l in &lines {
            assert_valid(&v, l);
        }
        let intervals = lines.iter().filter(|l| l["type"] == "interval").count();
        assert!(
            (3..=4).contains(&intervals),
            "{intervals} intervals in 2 s:\n{}",
            o.stdout
        );
        assert_eq!(
            lines.last().unwrap()["type"],
            "summary",
            "the summary comes last"
        );
        let ivs: f64 = lines
            .iter()
            .filter(|l| l["type"] == "interval")
            .map(|l| l["thread_bytes"][0].as_u64().unwrap() as f64)
            .sum();
        let total = lines.last().unwrap()["report"]["totals"]["bytes"]
            .as_u64()
            .unwrap() as f64;
        // The intervals tile the window: their sum is the total, up to the bytes moved
        // between the last interval's sample and the window's closing one.
        assert_close(ivs, total, 1.0, "sum of the intervals vs the total");
    }
}

#[test]
fn linux_format_matches_the_upstream_suite_regexes() {
    let _ports = Ports::take(1);
    // Spec section 6: the patterns ntttcp-for-linux's own tests parse its output with.
    let re = |p: &str| regex::Regex::new(p).unwrap();
    let r = spawn(
        "receiver",
        "-r 127.0.0.1 -P 2 -p @21 -W 2 -t 3 -C 2 -Q -V -e --format linux -b 1470",
    );
    let s = run(
        "-s 127.0.0.1 -P 2 -n 2 -l 1 -p @21 -W 2 -t 3 -C 2 -Q --format linux",
        LIMIT,
    );
    let ro = r.wait(LIMIT);
    assert_eq!((s.code(), ro.code()), (Some(0), Some(0)), "{s:?} {ro:?}");
    let out = &s.stdout;
    let tput = re(r"INFO:\s+throughput\s+:(\d+\.\d+)(\w+)")
        .captures(out)
        .expect("throughput line");
    assert!(
        tput[1].parse::<f64>().unwrap() > 0.0 && tput[2].ends_with("bps"),
        "{out}"
    );
    let created = re(r"(\d+) connections created in (\d+) microseconds")
        .captures(out)
        .expect(out);
    assert_eq!(&created[1], "4");
    assert_eq!(
        &re(r"(\d+) connections tested").captures(out).expect(out)[1],
        "4"
    );
    assert_eq!(
        &re(r"test duration\s+:(\d+)").captures(out).expect(out)[1],
        "3"
    );
    let at = |what: &str| -> u32 {
        let c = re(&format!(
            r"(\d\d):(\d\d):(\d\d) INFO: {}",
            regex::escape(what)
        ))
        .captures(out)
        .unwrap_or_else(|| panic!("no '{what}' in\n{out}"));
        (1..=3)
            .map(|i| c[i].parse::<u32>().unwrap())
            .fold(0, |a, v| a * 60 + v)
    };
    let warm = at("Test warmup completed.") - at("Network activity progressing...");
    assert!((1..=3).contains(&warm), "warm-up took {warm} s");
    let cool = at("Test cycle finished.") - at("Test cooldown is in progress...");
    assert!((1..=3).contains(&cool), "cool-down took {cool} s");
    assert!(
        !out.contains("Real-time throughput"),
        "-Q suppresses the real-time lines"
    );
    // The receiver's -V flags block.
    let rout = &ro.stdout;
    assert!(re(r"\*\*\* use epoll\(\)").is_match(rout), "{rout}");
    assert_eq!(
        &re(r"receiver socket buffer \(bytes\):\s+(\d+)")
            .captures(rout)
            .expect(rout)[1],
        "1470"
    );
    assert!(re(r"\*\*\* receiver role").is_match(rout));
    // test_multi_clients_mode's check, on the receiver's flags block.
    let m = spawn(
        "receiver",
        "-r 127.0.0.1 -P 1 -p @25 -t 1 -M -V --format linux",
    );
    let a = run("-s 127.0.0.1 -P 1 -n 1 -p @25 -t 1 -L", LIMIT);
    let mo = m.wait(LIMIT);
    assert_eq!((a.code(), mo.code()), (Some(0), Some(0)), "{a:?} {mo:?}");
    assert!(
        re(r"multiple clients:\s+yes").is_match(&mo.stdout),
        "{}",
        mo.stdout
    );
}

#[test]
fn interval_lines_in_the_windows_layout() {
    let _ports = Ports::take(1);
    let o = run(
        "--loopback -m 1,*,127.0.0.1 -p @31 -t 2 --interval 0.5",
        LIMIT,
    );
    assert_eq!(o.code(), Some(0), "{o:?}");
    let re = regex::Regex::new(
        r"(?m)^receiver +\d+\.\d{3} - +\d+\.\d{3} s +\d+\.\d{3} KB/s +\d+\.\d{3} Gbit/s$",
    )
    .unwrap();
    let n = re.find_iter(&o.stdout).count();
    assert!(
        (3..=4).contains(&n),
        "{n} receiver interval lines:\n{}",
        o.stdout
    );
    assert_eq!(parse_tables(&o.stdout).len(), 2, "tables still follow");
}

#[test]
fn show_counters_agree_across_console_xml_and_json() {
    let _ports = Ports::take(1);
    let d = Scratch::new("show");
    let (x, j) = (d.file("s.xml"), d.file("s.json"));
    let shows = "--show-tcp-retrans --show-nic-packets lo --show-dev-interrupts LOC";
    let r = spawn(
        "receiver",
        &ports_in(&format!(
            "-r 127.0.0.1 -P 1 -p @41 -t 2 {shows} --format json"
        )),
    );
    let s = run(
        &ports_in(&format!(
            "-s 127.0.0.1 -P 1 -n 1 -p @41 -t 2 {shows} --format linux -x {} -j {}",
            x.display(),
            j.display()
        )),
        LIMIT,
    );
    let ro = r.wait(LIMIT);
    assert_eq!((s.code(), ro.code()), (Some(0), Some(0)), "{s:?} {ro:?}");
    let re = |p: &str| regex::Regex::new(p).unwrap();
    let out = &s.stdout;
    assert!(
        re(r"retrans_segments/sec\s+:(\d+\.\d+)").is_match(out),
        "{out}"
    );
    let tx: u64 = re(r"\s+tx_packets\s:(\d+)").captures(out).expect(out)[1]
        .parse()
        .unwrap();
    assert!(tx > 1000, "loopback packets counted: {tx}");
    let total: u64 = re(r"total\s+:(\d+)").captures(out).expect(out)[1]
        .parse()
        .unwrap();
    let rate: f64 = re(r"interrupts/sec\s+:(\d+\.\d+)")
        .captures(out)
        .expect(out)[1]
        .parse()
        .unwrap();
    assert!(
        total > 0 && rate > 0.0,
        "local timer interrupts move: {total} {rate}"
    );
    // test_show_dev_interrupts: the files carry the same figures.
    let xml = std::fs::read_to_string(&x).unwrap();
    assert!(
        xml.contains(&format!(
            "<total_interrupts metric=\"count\">{total}</total_interrupts>"
        )),
        "{xml}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    assert_eq!(
        json["ntttcps"]["interruptTotal"]["value"],
        total.to_string()
    );
    let per_s: f64 = json["ntttcps"]["interrupt"]["value"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((per_s - rate).abs() < 0.01, "{per_s} vs {rate}");
    // Our own JSON carries them too, and still matches the schema.
    let doc: serde_json::Value = serde_json::from_str(&ro.stdout).expect("receiver JSON");
    assert_valid(&validator(), &doc);
    let rep = &doc["reports"][0];
    assert_eq!(rep["nic"]["name"], "lo");
    assert_eq!(rep["device_interrupts"]["pattern"], "LOC");
    assert!(rep["tcp_retransmits"].is_object());
}

#[test]
fn verbose_sender_shows_tcp_info_per_connection() {
    let _ports = Ports::take(1);
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @51 -t 1");
    let s = run("-s 127.0.0.1 -P 1 -n 1 -l 2 -p @51 -t 1 -V", LIMIT);
    assert_eq!(r.wait(LIMIT).code(), Some(0));
    assert_eq!(s.code(), Some(0), "{s:?}");
    let re = regex::Regex::new(r"(?m)^ +(\d) +0 +\d+ +(\d+) +\d+ +(\d+) +\d+ +\d+$").unwrap();
    let rows: Vec<_> = re.captures_iter(&s.stdout).collect();
    assert_eq!(rows.len(), 2, "one row per connection:\n{}", s.stdout);
    assert!(
        rows.iter().all(|c| c[3].parse::<u32>().unwrap() > 0),
        "cwnd > 0"
    );
    let r = spawn("receiver", "-r 127.0.0.1 -P 1 -p @61 -t 1");
    let s = run(
        "-s 127.0.0.1 -P 1 -n 1 -l 2 -p @61 -t 1 -V --format json",
        LIMIT,
    );
    assert_eq!(r.wait(LIMIT).code(), Some(0));
    let doc: serde_json::Value = serde_json::from_str(&s.stdout).expect("JSON");
    assert_valid(&validator(), &doc);
    assert_eq!(
        doc["reports"][0]["tcp_connections"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn plot_draws_every_thread_and_the_total() {
    let _ports = Ports::take(1);
    let d = Scratch::new("plot");
    let svg = d.file("run.svg");
    let o = run(
        &ports_in(&format!(
            "--loopback -m 2,*,127.0.0.1 -p @71 -t 2 --interval 0.5 --plot {}",
            svg.display()
        )),
        LIMIT,
    );
    assert_eq!(o.code(), Some(0), "{o:?}");
    let text = std::fs::read_to_string(&svg).expect("the chart was written");
    let doc = roxmltree::Document::parse(&text).expect("well-formed SVG");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let lines: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .collect();
    assert_eq!(lines.len(), 3, "two receiver ports and the total");
    for l in &lines {
        // The origin and four 0.5 s intervals; on a loaded machine the receiver may end
        // a little early (its sender closed within the last half second): three and a bit.
        let points = l.attribute("points").unwrap().split(' ').count();
        assert!((4..=5).contains(&points), "{points} points");
    }
    assert!(
        text.contains("receiver"),
        "the loopback chart is the receiver's"
    );
}

#[test]
fn live_status_line_on_a_terminal_and_quiet_without_it() {
    let _ports = Ports::take(1);
    // script(1) gives ntttcp a pseudo-terminal, as an interactive user has.
    let ntttcp = crate::util::bin();
    let tty = |args: &str| {
        let out = std::process::Command::new("timeout")
            .args([
                "30",
                "script",
                "-qec",
                &format!("{ntttcp} {args}"),
                "/dev/null",
            ])
            .output()
            .expect("run script(1)");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let live = tty(&ports_in("--loopback -m 1,*,127.0.0.1 -p @81 -t 3"));
    // A status line every second; on a loaded machine the first shown may be a later
    // second's.
    assert!(
        (1..=3).any(|k| live.contains(&format!("\r\x1b[2Kntttcp: receiver {k} / 3 s "))),
        "{live:?}"
    );
    assert!(live.contains(" Gbit/s"), "{live:?}");
    assert_eq!(
        parse_tables(&live.replace('\r', "")).len(),
        2,
        "tables after the status line"
    );
    let quiet = tty(&ports_in("--loopback -m 1,*,127.0.0.1 -p @91 -t 2 -Q"));
    assert!(!quiet.contains("\x1b[2K"), "-Q: no live line: {quiet:?}");
}

/// The sender's bytes are those its connections delivered (TCP_INFO), with the bytes it
/// wrote into its send buffers beside them; with the defaults' 64 connections the
/// delivered figure matches the receiver's within 0.1 % (what sat queued at the
/// window's end is written, not delivered) on a machine that lets the run keep it.
#[test]
fn the_sender_counts_delivered_bytes_and_keeps_written_ones_beside_them() {
    let _ports = Ports::take(1);
    promise("delivered vs received within 0.1 %", |i| {
        let doc = loopback_json(&format!("-p @{} -t 3", 1 + 50 * i));
        let (s, r) = (&doc["reports"][0], &doc["reports"][1]);
        assert_eq!(
            (s["side"].as_str(), s["connections"].as_u64()),
            (Some("sender"), Some(64))
        );
        let delivered = s["totals"]["bytes"].as_u64().unwrap();
        let written = s["totals"]["bytes_written"].as_u64().unwrap();
        let received = r["totals"]["bytes"].as_u64().unwrap();
        assert!(
            written + 64 * 131_072 >= delivered,
            "written {written} < delivered {delivered}"
        );
        assert!(
            r["totals"]["bytes_written"].is_null(),
            "the receiver writes nothing"
        );
        // Per thread, a blocking write still in the kernel at the edge may already be
        // partly delivered: at most one 128 KiB buffer more than was counted as written.
        for t in s["threads"].as_array().unwrap() {
            let (d, w) = (
                t["bytes"].as_u64().unwrap(),
                t["bytes_written"].as_u64().unwrap(),
            );
            assert!(
                d > 0 && w + 131_072 >= d,
                "thread {}: delivered {d}, written {w}",
                t["index"]
            );
        }
        // The receiver's connections send the ACKs they owe up to its last edge, so the
        // two agree within 0.1 % (-0.01 to +0.04 % measured beside two CPU-bound
        // processes; 0.2 to 0.6 % under before they did).
        within_tenth(delivered, received, s)
    });
}

/// `--loopback ARGS --format json` run to completion (exit 0), its document checked
/// against the schema.
fn loopback_json(args: &str) -> serde_json::Value {
    let o = run(
        &ports_in(&format!("--loopback {args} --format json")),
        Duration::from_secs(60),
    );
    assert_eq!(o.code(), Some(0), "{args}: {o:?}");
    let doc: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_valid(&validator(), &doc);
    doc
}

/// Whether two sides' totals agree within 0.1 % (the promise; `report` is the run's, for
/// whether it was starved); never more than 5 % apart, starved or not.
fn within_tenth(a: u64, b: u64, report: &serde_json::Value) -> Attempt {
    let gap = (a as f64 - b as f64) / b as f64 * 100.0;
    assert!(
        gap.abs() <= 5.0,
        "{a} vs {b} ({gap:+.3} %): no load explains that"
    );
    if gap.abs() <= 0.1 {
        return Ok(());
    }
    Err((format!("{a} vs {b} ({gap:+.3} %)"), starved(&[report])))
}

/// The same agreement the other way round and after a warm-up: with `-R` the sender's
/// side reads and sends the ACKs it owes before its edges; with `-W 1` both edges fall
/// while data flows, and the first is kept current as the last is.
#[test]
fn sides_agree_within_a_tenth_of_a_percent_reversed_and_after_a_warm_up() {
    let _ports = Ports::take(1);
    for (k, (flags, what)) in [("-R", "reverse"), ("-W 1", "warm-up")]
        .into_iter()
        .enumerate()
    {
        promise(what, |i| {
            let doc = loopback_json(&format!("-p @{} -t 3 {flags}", 1 + 25 * (2 * k + i)));
            let (s, r) = (&doc["reports"][0], &doc["reports"][1]);
            assert_eq!(s["connections"].as_u64(), Some(64), "{what}");
            let bytes = |r: &serde_json::Value| r["totals"]["bytes"].as_u64().unwrap();
            within_tenth(bytes(s), bytes(r), s)
        });
    }
}

/// A Windows-dialect sender sends NTttcp's 64 KiB buffers, and a buffer is one completion
/// however many calls it took: `Avg B / Compl` is the buffer length exactly.
#[test]
fn windows_dialect_senders_complete_whole_64k_buffers() {
    let _ports = Ports::take(1);
    let dir = Scratch::new("winbuf");
    let r = spawn("receiver", "-r -m 2,*,127.0.0.1 -ns -p @11 -t 2");
    crate::util::wait_listening(port(12), Duration::from_secs(20));
    let s = run(
        &ports_in(&format!(
            "-s -m 2,*,127.0.0.1 -ns -p @11 -t 2 -xml {}",
            dir.file("s.xml").display()
        )),
        Duration::from_secs(30),
    );
    let ro = r.wait(Duration::from_secs(30));
    assert_eq!((s.code(), ro.code()), (Some(0), Some(0)), "{s:?} {ro:?}");
    let t = &parse_tables(&s.stdout)[0];
    for row in &t.threads {
        assert_eq!(row.3, 65536.0, "Avg B / Compl: {row:?}");
    }
    assert!(
        dir.read("s.xml").contains("<bufferLen>65536</bufferLen>"),
        "{}",
        dir.read("s.xml")
    );
}
