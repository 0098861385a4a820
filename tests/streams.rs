//! What a run streams and draws: the JSON document against its schema, JSONL intervals
//! and summaries, interval rows, plots and the live status line.

use std::time::Duration;

use crate::util::{
    Ports, Scratch, assert_close, assert_valid, close_or_starved, covered, parse_tables, ports_in,
    promise, run, spawn, validator,
};

const LIMIT: Duration = Duration::from_secs(30);

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

/// A `--loopback` run's JSON: one valid document, sender then receiver, whose bytes and
/// each sender thread's against its receiver thread agree within 1 % (a promise: a
/// starved run says so).
#[test]
fn json_format_from_a_real_run_matches_the_schema() {
    let _ports = Ports::take(1);
    promise("sender vs receiver bytes in JSON within 1 %", |i| {
        let at = 1 + 50 * i;
        let o = run(
            &format!("--loopback -m 2,*,127.0.0.1 -p @{at} -W 1 -t 2 --format json"),
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
        // -m 2: sender thread k sends to port k, which receiver thread k serves; each
        // pair is measured by the two sides on their own.
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
        let sides = [&reports[0], &reports[1]];
        let mut pairs = vec![(bytes(0), bytes(1))];
        pairs.extend(sent.iter().copied().zip(received.iter().copied()));
        pairs
            .into_iter()
            .try_for_each(|(s, r)| close_or_starved(s, r, 1.0, &sides))
    });
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
        let intervals: Vec<&serde_json::Value> =
            lines.iter().filter(|l| l["type"] == "interval").collect();
        let ivs: f64 = intervals
            .iter()
            .map(|l| l["thread_bytes"][0].as_u64().unwrap() as f64)
            .sum();
        let summary = &lines.last().unwrap()["report"];
        // Each interval says how busy this host's CPUs were over it: a sending or
        // receiving side is never idle, nor past every CPU.
        for l in &intervals {
            let busy = l["cpu_busy_percent"].as_f64().expect("a CPU figure");
            assert!(busy > 0.0 && busy <= 100.0, "{l}");
        }
        let total = summary["totals"]["bytes"].as_u64().unwrap() as f64;
        // The intervals tile the window up to the last one's end (`covered`).
        assert_close(
            ivs,
            total * covered(&intervals, summary),
            1.0,
            "sum of the intervals vs the total",
        );
    }
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
        r"(?m)^receiver +\d+\.\d{3} - +\d+\.\d{3} s +\d+\.\d{3} KB/s +\d+\.\d{3} Gbit/s  CPU +(\d+\.\d) %$",
    )
    .unwrap();
    let n = re.find_iter(&o.stdout).count();
    for c in re.captures_iter(&o.stdout) {
        let busy: f64 = c[1].parse().unwrap();
        assert!(busy > 0.0 && busy <= 100.0, "{}", &c[0]);
    }
    assert!(
        (3..=4).contains(&n),
        "{n} receiver interval lines:\n{}",
        o.stdout
    );
    assert_eq!(parse_tables(&o.stdout).len(), 2, "tables still follow");
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

/// `--repeat 3`: three runs back to back, each its own document in `runs`, and a series
/// whose figures are those of the runs (each run's receiver throughput, their min,
/// median, max, mean, standard deviation and a 95 % interval around the mean); a -H
/// receiver serves a sender's series the same way.
#[test]
fn repeat_runs_a_series_whose_summary_matches_its_runs() {
    let _ports = Ports::take(1);
    let o = run(
        &ports_in("--loopback -P 1 -n 1 -p @1 -t 1 --repeat 3 --format json"),
        LIMIT,
    );
    assert_eq!(o.code(), Some(0), "{o:?}");
    let d: serde_json::Value = serde_json::from_str(&o.stdout).expect("one JSON document");
    assert_valid(&validator(), &d);
    let runs = d["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    let rates: Vec<f64> = runs
        .iter()
        .map(|r| {
            let rx = r["reports"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["side"] == "receiver");
            rx.unwrap()["totals"]["bits_per_second"].as_f64().unwrap()
        })
        .collect();
    let s = &d["series"];
    assert_eq!(s["runs"], 3);
    let listed: Vec<f64> = s["bits_per_second"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(listed, rates);
    let f = |k: &str| s["summary"][k].as_f64().unwrap();
    let mean = rates.iter().sum::<f64>() / 3.0;
    let sd = (rates.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
    let mut sorted = rates.clone();
    sorted.sort_by(f64::total_cmp);
    assert_eq!(
        (f("min"), f("median"), f("max")),
        (sorted[0], sorted[1], sorted[2])
    );
    assert!((f("mean") - mean).abs() <= mean * 1e-12);
    assert!((f("stddev") - sd).abs() <= sd * 1e-9 + 1e-6);
    assert!(f("ci95_low") < mean && mean < f("ci95_high"), "{s}");
    assert_eq!(
        d["reports"], runs[2]["reports"],
        "reports are the last run's"
    );
    // A sender's series against a -H receiver: each run waits for the receiver to be free.
    let r = spawn("receiver", &ports_in("-r 127.0.0.1 -H -P 1 -p @11 -t 1"));
    let s = run(
        &ports_in("-s 127.0.0.1 -P 1 -n 1 -p @11 -t 1 --repeat 2"),
        LIMIT,
    );
    r.signal(15);
    let _ = r.wait(LIMIT);
    assert_eq!(s.code(), Some(0), "{s:?}");
    assert_eq!(s.stdout.matches(" of 2: ").count(), 2, "{}", s.stdout);
    assert!(
        s.stdout.contains("Throughput over 2 of 2 runs"),
        "{}",
        s.stdout
    );
}

/// A run that misses the floor ends the series with exit 3 and what it measured.
#[test]
fn a_failed_run_ends_the_series_with_its_status() {
    let _ports = Ports::take(1);
    let o = run(
        &ports_in("--loopback -P 1 -n 1 -p @1 -t 1 --repeat 3 --min-throughput 100T"),
        LIMIT,
    );
    assert_eq!(o.code(), Some(3), "{o:?}");
    assert_eq!(o.stdout.matches(" of 3: ").count(), 1, "{}", o.stdout);
    assert!(
        o.stdout.contains("Throughput over 1 of 3 runs"),
        "{}",
        o.stdout
    );
}
