//! Result files and exit floors from real runs: the XML files read by a real XML parser,
//! the JSON file by serde_json, the log compared with the console.

use std::time::Duration;

use crate::util::{
    Ports, Scratch, Tables, assert_close, assert_valid, parse_tables, port, ports_in, run, spawn,
    validator,
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

    linux_xml_files_agree_with_the_tables(&d, st, rt);
    linux_json_files_agree_with_the_tables(&d, st, rt);
    // -O: the console output, tables included.
    let log = d.read("s.log");
    assert!(
        log.contains("Network activity progressing...") && log.contains("#####  Totals:  #####")
    );
    assert_eq!(parse_tables(&log), parse_tables(&so.stdout));
}

/// The ntttcp-for-linux XML files parse, with the root of each side and the fields
/// VirtualClient and PerfKitBenchmarker read, agreeing with the console tables.
fn linux_xml_files_agree_with_the_tables(d: &Scratch, st: &Tables, rt: &Tables) {
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
}

/// The ntttcp-for-linux JSON files are valid, every value a string, in the upstream
/// layout its suite's regex expects, agreeing with the console tables.
fn linux_json_files_agree_with_the_tables(d: &Scratch, st: &Tables, rt: &Tables) {
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
    // The upstream pattern reads the whole seconds; the window measured is the plan's
    // 3 s within 5 %, as every measured window here (a late opening edge on a starved
    // machine shortens it to 2.98 s, which that pattern reads as "2").
    assert!(re(r"test duration\s+:(\d+)").is_match(out), "{out}");
    let measured = re(r"test duration\s+:(\d+\.\d+) seconds")
        .captures(out)
        .expect(out)[1]
        .parse::<f64>()
        .unwrap();
    assert_close(measured, 3.0, 5.0, "test duration");
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
    multi_client_flags_block_matches();
}

/// ntttcp-for-linux's test_multi_clients_mode check, on a `-M` receiver's flags block.
fn multi_client_flags_block_matches() {
    let m = spawn(
        "receiver",
        "-r 127.0.0.1 -P 1 -p @25 -t 1 -M -V --format linux",
    );
    let a = run("-s 127.0.0.1 -P 1 -n 1 -p @25 -t 1 -L", LIMIT);
    let mo = m.wait(LIMIT);
    assert_eq!((a.code(), mo.code()), (Some(0), Some(0)), "{a:?} {mo:?}");
    assert!(
        regex::Regex::new(r"multiple clients:\s+yes")
            .unwrap()
            .is_match(&mo.stdout),
        "{}",
        mo.stdout
    );
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
