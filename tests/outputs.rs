//! Result files and exit floors from real runs: the XML files read by a real XML parser,
//! the JSON file by serde_json, the log compared with the console. PORTS: 26500-26999.

use std::path::PathBuf;
use std::time::Duration;

use crate::util::{assert_close, parse_tables, run, spawn};

const LIMIT: Duration = Duration::from_secs(30);

/// A scratch directory removed again on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let p = std::env::temp_dir().join(format!("ntttcp-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }

    fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.file(name))
            .unwrap_or_else(|e| panic!("{}: {e}", self.file(name).display()))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn metric<'a>(doc: &'a roxmltree::Document, tag: &str, metric: &str) -> &'a str {
    doc.root_element()
        .children()
        .find(|n| n.has_tag_name(tag) && n.attribute("metric") == Some(metric))
        .and_then(|n| n.text())
        .unwrap_or_else(|| panic!("no <{tag} metric=\"{metric}\">"))
}

#[test]
fn linux_xml_json_and_log_files_from_a_real_run() {
    let d = Scratch::new("files");
    let f = |n: &str| d.file(n).display().to_string();
    let r = spawn(
        "receiver",
        &format!(
            "-r 127.0.0.1 -P 2 -p 26501 -t 2 -V -x {} -j {}",
            f("r.xml"),
            f("r.json")
        ),
    );
    let so = run(
        &format!(
            "-s 127.0.0.1 -P 2 -n 1 -p 26501 -t 2 -x{} -j {} -O {}",
            f("s.xml"),
            f("s.json"),
            f("s.log")
        ),
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
        // The upstream suite's check (spec section 6).
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
    let d = Scratch::new("winxml");
    let path = d.file("xml.txt").display().to_string();
    for port in [26601, 26611] {
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
    let low = run(
        "--loopback -m 1,*,127.0.0.1 -p 26701 -t 1 --min-throughput 1M",
        LIMIT,
    );
    assert_eq!(low.code(), Some(0), "{low:?}");
    let high = run(
        "--loopback -m 1,*,127.0.0.1 -p 26711 -t 1 --min-throughput 100T",
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
