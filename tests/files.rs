//! The ntttcp-for-linux result files (`-x`, `-j`) of real runs: one CPU figure, never over
//! 100 %, in every output of a run; a plain run's files element for element the
//! originals'; and what ours adds beyond them, the same in both files.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::Value;

use crate::util::{Ports, Scratch, parse_tables, ports_in, run, spawn};

const LIMIT: Duration = Duration::from_secs(30);

/// The children of the originals' `<parameters>` (`parameters` in the JSON file).
const PARAMETERS: [&str; 31] = [
    "send_socket_buff",
    "recv_socket_buff",
    "port",
    "sync_port",
    "no_sync",
    "wait_timeout_milliseconds",
    "async",
    "verbose",
    "wsa",
    "use_ipv6",
    "udp",
    "verify_data",
    "wait_all",
    "run_time",
    "warmup_time",
    "cooldown_time",
    "dash_n_timeout",
    "bind_sender",
    "sender_name",
    "max_active_threads",
    "tp",
    "no_stdio_buffer",
    "throughput_Bpms",
    "cpu_burn",
    "latency_measurement",
    "use_io_compl_ports",
    "cpu_from_idle_flag",
    "get_estats",
    "qos_flag",
    "jitter_measurement",
    "packet_spacing",
];

/// What ntttcp-for-linux 1.4.3 writes in its `-x` file, at the top and per `<thread>`,
/// root attributes included; `OPTIONAL` of them only with a flag or on one side.
const STOCK_XML: [&str; 34] = [
    "computername",
    "version",
    "conns_tested",
    "total_bytes",
    "realtime",
    "avg_bytes_per_compl",
    "threads_avg_bytes_per_compl",
    "avg_frame_size",
    "throughput",
    "total_buffers",
    "avg_packets_per_interrupt",
    "interrupts",
    "total_interrupts",
    "dpcs",
    "avg_packets_per_dpc",
    "packets_sent",
    "packets_received",
    "packets_retransmitted",
    "errors",
    "bufferCount",
    "bufferLen",
    "tcp_retransmits",
    "cpu_cores",
    "cpu_speed",
    "user",
    "system",
    "idle",
    "iowait",
    "softirq",
    "cycles_per_byte",
    "cpu_busy_all",
    "io",
    "tcp_average_rtt",
    "os",
];
const STOCK_XML_THREAD: [&str; 4] = ["index", "realtime", "throughput", "avg_bytes_per_compl"];

/// The same for its `-j` file.
const STOCK_JSON: [&str; 26] = [
    "computername",
    "version",
    "totalBytes",
    "realTime",
    "avgBytesPerCompl",
    "threadsAvgBytesPerCompl",
    "avgFrameSize",
    "throughputs",
    "totalBuffers",
    "avgPacketsPerInterrupt",
    "interrupt",
    "interruptTotal",
    "dpcs",
    "avgPacketsPerDpc",
    "cycles",
    "packetsSent",
    "packetsReceived",
    "packets_retransmitted",
    "errors",
    "cpu",
    "bufferCount",
    "bufferLen",
    "io",
    "tcp_retransmits",
    "tcpAverageRtt metric",
    "os",
];
const STOCK_JSON_THREAD: [&str; 4] = ["index", "realTime", "throughputs", "avgBytesPerCompl"];

/// Written only with -V, on the sender, or with --show-tcp-retrans.
const OPTIONAL: [&str; 5] = [
    "conns_tested",
    "tcp_retransmits",
    "tcp_average_rtt",
    "tcpAverageRtt metric",
    "thread",
];

/// A name as both files would spell it: lower case, letters and digits only
/// (`total_bytes` and `totalBytes` are one name).
fn norm(name: &str) -> String {
    name.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Every stock path of one file: its names, `parameters/...` and `thread/...`.
fn stock(top: &[&str], thread: &[&str]) -> BTreeSet<String> {
    let mut all: BTreeSet<String> = top.iter().map(|n| norm(n)).collect();
    all.extend(PARAMETERS.iter().map(|n| format!("parameters/{}", norm(n))));
    all.extend(thread.iter().map(|n| format!("thread/{}", norm(n))));
    all
}

/// The paths of an XML file: elements (and attributes of elements with children), each
/// leaf as `parent/child`, normalized.
fn xml_keys(text: &str) -> BTreeSet<String> {
    fn walk(node: roxmltree::Node, prefix: &str, keys: &mut BTreeSet<String>) {
        for a in node.attributes() {
            keys.insert(format!("{prefix}{}", norm(a.name())));
        }
        for c in node.children().filter(roxmltree::Node::is_element) {
            let path = format!("{prefix}{}", norm(c.tag_name().name()));
            if c.children().any(|g| g.is_element()) {
                walk(c, &format!("{path}/"), keys);
            } else {
                keys.insert(path);
            }
        }
    }
    let doc = roxmltree::Document::parse(text).expect("well-formed XML");
    let mut keys = BTreeSet::new();
    walk(doc.root_element(), "", &mut keys);
    keys
}

/// The paths of a `-j` file the same way: a string, a `{metric, value}` pair, the
/// `endedEarly` record (the XML's attributes) or an array of them is a leaf; `threads`
/// entries are `thread/...`.
fn json_keys(text: &str) -> BTreeSet<String> {
    fn leaf(v: &Value) -> bool {
        match v {
            Value::Object(m) => m.contains_key("metric") || m.contains_key("by"),
            Value::Array(a) => a.iter().all(leaf),
            _ => true,
        }
    }
    fn walk(v: &Value, prefix: &str, keys: &mut BTreeSet<String>) {
        for (k, v) in v.as_object().expect("an object") {
            let name = if k == "threads" {
                "thread".into()
            } else {
                norm(k)
            };
            let path = format!("{prefix}{name}");
            match v {
                _ if leaf(v) => {
                    keys.insert(path);
                }
                Value::Array(items) => items
                    .iter()
                    .for_each(|i| walk(i, &format!("{path}/"), keys)),
                _ => walk(v, &format!("{path}/"), keys),
            }
        }
    }
    let v: Value = serde_json::from_str(text).expect("valid JSON");
    let (_, body) = v.as_object().unwrap().iter().next().expect("a root");
    let mut keys = BTreeSet::new();
    walk(body, "", &mut keys);
    keys
}

/// (the XML file's paths beyond the originals', the JSON file's).
fn extras(d: &Scratch, xml: &str, json: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let x = xml_keys(&d.read(xml));
    let j = json_keys(&d.read(json));
    let sx = stock(&STOCK_XML, &STOCK_XML_THREAD);
    let sj = stock(&STOCK_JSON, &STOCK_JSON_THREAD);
    (&x - &sx, &j - &sj)
}

/// A window's overrun past its plan, as `norm` spells both files' name for it.
const OVERRUN: &str = "windowoverrun";

/// The first figure after `tag` in an XML file.
fn xml_figure(text: &str, tag: &str) -> f64 {
    let doc = roxmltree::Document::parse(text).expect("well-formed XML");
    let n = doc.root_element().children().find(|n| n.has_tag_name(tag));
    let v = n
        .and_then(|n| n.text())
        .unwrap_or_else(|| panic!("no <{tag}>: {text}"));
    v.parse().unwrap()
}

/// The JSON file's `cpu` value.
fn json_cpu(text: &str, root: &str) -> f64 {
    let v: Value = serde_json::from_str(text).expect("valid JSON");
    let cpu = v[root]["cpu"]["value"].as_str().expect("cpu value");
    cpu.parse().unwrap()
}

/// The Linux layout's `cpu busy (all)` figure.
fn linux_cpu(stdout: &str) -> f64 {
    let line = stdout.lines().find(|l| l.contains("cpu busy (all)\t:"));
    let line = line.unwrap_or_else(|| panic!("no cpu busy line:\n{stdout}"));
    let v = line.rsplit(':').next().unwrap().trim_end_matches('%');
    v.parse().unwrap()
}

/// A receiver with files under a stock-shaped two-port run, its sender with files and the
/// Linux layout: on each side the console, the XML and the JSON give one CPU figure
/// (each to its own decimals), between 0 and 100, the XML's busy share being the rest of
/// its own idle and iowait; and a plain run's files are the originals' elements, every
/// one the originals always write present, nothing else but the overrun of a side whose
/// window a loaded machine stretched.
#[test]
fn cpu_is_one_bounded_figure_in_every_output_and_plain_files_are_the_originals() {
    let _ports = Ports::take(1);
    let d = Scratch::new("cpu-files");
    let f = |n: &str| d.file(n).display().to_string();
    let r = spawn(
        "receiver",
        &ports_in(&format!(
            "-r -m 2,*,127.0.0.1 -p @1 -t 2 -x {} -j {}",
            f("r.xml"),
            f("r.json")
        )),
    );
    let so = run(
        &ports_in(&format!(
            "-s -m 2,*,127.0.0.1 -p @1 -t 2 --format linux -x {} -j {}",
            f("s.xml"),
            f("s.json")
        )),
        LIMIT,
    );
    let ro = r.wait(LIMIT);
    assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?}\n{ro:?}");
    let consoles = [
        ("r", "ntttcpr", parse_tables(&ro.stdout)[0].cpu_pct),
        ("s", "ntttcps", linux_cpu(&so.stdout)),
    ];
    for (side, root, console) in consoles {
        let xml = d.read(&format!("{side}.xml"));
        let json = d.read(&format!("{side}.json"));
        let (x, j) = (xml_figure(&xml, "cpu_busy_all"), json_cpu(&json, root));
        for v in [console, x, j] {
            assert!((0.0..=100.0).contains(&v), "{side}: CPU {v} outside 0-100");
        }
        assert!(
            (x - console).abs() <= 0.006,
            "{side}: XML {x} vs console {console}"
        );
        assert!(
            (j - console).abs() <= 0.006,
            "{side}: JSON {j} vs console {console}"
        );
        let rest = 100.0 - xml_figure(&xml, "idle") - xml_figure(&xml, "iowait");
        assert!(
            (x - rest).abs() <= 0.02,
            "{side}: busy {x} vs 100 - idle - iowait {rest}"
        );
    }
    for (xml, json, always_absent) in [("r.xml", "r.json", true), ("s.xml", "s.json", false)] {
        let (mut ex, mut ej) = extras(&d, xml, json);
        // A side whose window ran past its plan (its edge thread woke late on a loaded
        // machine: an ordinary user's has no real-time priority) says so in both files;
        // that run did not go to plan, and the overrun is the one name it may add.
        let overran = ex.remove(OVERRUN);
        assert_eq!(
            ej.remove(OVERRUN),
            overran,
            "{xml}, {json}: one says overrun"
        );
        assert!(ex.is_empty(), "{xml} beyond the original: {ex:?}");
        assert!(ej.is_empty(), "{json} beyond the original: {ej:?}");
        let x = xml_keys(&d.read(xml));
        let required = STOCK_XML.iter().filter(|n| !OPTIONAL.contains(n));
        for name in required {
            assert!(x.contains(&norm(name)), "{xml}: no <{name}>");
        }
        assert_eq!(
            x.contains("connstested"),
            !always_absent,
            "{xml}: conns_tested"
        );
        let j = json_keys(&d.read(json));
        for name in STOCK_JSON.iter().filter(|n| !OPTIONAL.contains(n)) {
            assert!(j.contains(&norm(name)), "{json}: no \"{name}\"");
        }
    }
}

/// With -V, and in the modes the originals lack (request/response, UDP), the XML and
/// JSON files of each side carry the same names beyond the originals': the round-trip
/// times and the longest stall, the mode's block at the top and inside each thread.
#[test]
fn both_files_carry_the_same_extras_with_v_and_in_each_mode() {
    let _ports = Ports::take(1);
    let d = Scratch::new("extras-files");
    let f = |n: &str| d.file(n).display().to_string();
    // (name, both sides' flags, the sender's, an extra it must have, on which sides)
    let runs: [(&str, &str, &str, &str, &[&str]); 3] = [
        ("tcp", "", "", "rttsamples", &["s"]),
        (
            "rr",
            "",
            "--rr 64",
            "requestresponse/transactions",
            &["r", "s"],
        ),
        ("udp", "-u", "-u -b 1200 -B 20M", "udp/datagrams", &["r"]),
    ];
    for (i, (name, both, sender, must, sides)) in runs.into_iter().enumerate() {
        let p = format!("@{}", 1 + 10 * i);
        let files = |side: &str| {
            let (x, j) = (format!("{name}-{side}.xml"), format!("{name}-{side}.json"));
            format!("-V -x {} -j {}", f(&x), f(&j))
        };
        let r = spawn(
            "receiver",
            &ports_in(&format!(
                "-r 127.0.0.1 {both} -P 1 -p {p} -t 1 {}",
                files("r")
            )),
        );
        let line = format!(
            "-s 127.0.0.1 {both} -P 1 -n 1 -p {p} -t 1 {sender} {}",
            files("s")
        );
        let so = run(&ports_in(&line), LIMIT);
        let ro = r.wait(LIMIT);
        assert_eq!(
            (so.code(), ro.code()),
            (Some(0), Some(0)),
            "{name}: {so:?}\n{ro:?}"
        );
        for side in ["r", "s"] {
            let (x, j) = (format!("{name}-{side}.xml"), format!("{name}-{side}.json"));
            let (ex, ej) = extras(&d, &x, &j);
            assert_eq!(ex, ej, "{name}-{side}: the XML's extras, then the JSON's");
            assert!(ex.contains("longeststall"), "{name}-{side}: {ex:?}");
            if sides.contains(&side) {
                assert!(ex.contains(must), "{name}-{side}: no {must} in {ex:?}");
            }
        }
    }
}
