//! `ntttcp merge`: real runs' documents folded into one of the same schema, and input
//! that is not such a document refused naming the file.

use std::time::Duration;

use crate::util::{
    Launch, Ports, Scratch, assert_valid, json, parse_tables, ports_in, run, validator,
};

const LIMIT: Duration = Duration::from_secs(30);

/// Two loopback runs, one after the other, written as `--format json` files in `d`.
fn two_runs(d: &Scratch) -> Vec<serde_json::Value> {
    (0..2)
        .map(|i| {
            let o = run(
                &ports_in(&format!(
                    "--loopback -P 1 -n 2 -p @{} -t 1 --format json",
                    1 + 10 * i
                )),
                LIMIT,
            );
            assert_eq!(o.code(), Some(0), "{o:?}");
            std::fs::write(d.file(&format!("run{i}.json")), &o.stdout).unwrap();
            json(&o)
        })
        .collect()
}

/// The report of `side` in document `d`.
fn side<'a>(d: &'a serde_json::Value, side: &str) -> &'a serde_json::Value {
    let reports = d["reports"].as_array().unwrap();
    reports.iter().find(|r| r["side"] == side).unwrap()
}

/// The merged document holds each side's summed totals exactly, one row per input with
/// its throughput and the spread over them; runs that did not overlap are named on
/// stderr; stdin is read for `-`; the tables layout prints the Totals over the sum.
#[test]
fn merge_sums_the_runs_into_a_document_of_the_same_schema() {
    let _ports = Ports::take(1);
    let d = Scratch::new("merge");
    let runs = two_runs(&d);
    let (a, b) = (d.file("run0.json"), d.file("run1.json"));
    let o = Launch::new("merge", &format!("merge --format json {} -", a.display()))
        .after(&format!("exec < {}", b.display()))
        .spawn()
        .wait(LIMIT);
    assert_eq!(o.code(), Some(0), "{o:?}");
    let m = json(&o);
    assert_valid(&validator(), &m);
    for s in ["sender", "receiver"] {
        let bytes = |d: &serde_json::Value| side(d, s)["totals"]["bytes"].as_u64().unwrap();
        assert_eq!(bytes(&m), bytes(&runs[0]) + bytes(&runs[1]), "{s}");
        let threads = |d: &serde_json::Value| side(d, s)["threads"].as_array().unwrap().len();
        assert_eq!(
            threads(&m),
            threads(&runs[0]) + threads(&runs[1]),
            "{s}: both runs' threads"
        );
    }
    let pairs = m["merge"]["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 2);
    assert_eq!(pairs[1]["file"], "-");
    for (p, r) in pairs.iter().zip(&runs) {
        assert_eq!(
            p["bits_per_second"],
            side(r, "receiver")["totals"]["bits_per_second"]
        );
    }
    let spread = &m["merge"]["bits_per_second"];
    let f = |k: &str| spread[k].as_f64().unwrap();
    assert!(
        f("min") <= f("median") && f("median") <= f("max"),
        "{spread}"
    );
    // One after the other: no second in common, and stderr says which.
    assert_eq!(m["merge"]["overlap_s"], 0.0);
    assert!(o.stderr.contains("do not overlap"), "{}", o.stderr);
    let tables = run(&format!("merge {} {}", a.display(), b.display()), LIMIT);
    assert_eq!(tables.code(), Some(0), "{tables:?}");
    assert_eq!(parse_tables(&tables.stdout).len(), 2, "{}", tables.stdout);
    assert!(tables.stdout.contains("Merged 2 runs"), "{}", tables.stdout);
}

/// Not JSON, JSON of another kind, a truncated document, a missing file, '-' twice: one
/// line naming the file, exit 2, nothing on stdout.
#[test]
fn merge_refuses_what_is_not_a_whole_document_naming_the_file() {
    let _ports = Ports::take(1);
    let d = Scratch::new("merge-bad");
    let runs = two_runs(&d);
    let whole = serde_json::to_string(&runs[0]).unwrap();
    let files = [
        (
            "truncated.json",
            whole[..whole.len() / 2].to_string(),
            "ends early",
        ),
        (
            "foreign.json",
            r#"{"schema":"iperf3","reports":[]}"#.to_string(),
            "not an ntttcp-report/1",
        ),
        ("text.json", "Totals: 9.4 Gbit/s".to_string(), "not JSON"),
        (
            "odd.json",
            whole.replace("\"bytes\":", "\"octets\":"),
            "not a valid",
        ),
        // Found by the merge fuzz target: the parser's message quoted a string with a
        // line break in it, over two lines.
        (
            "broken.json",
            whole.replacen("\"sender\"", "\"s\\nder\"", 1),
            "unknown variant `s\\nder`",
        ),
    ];
    for (name, text, why) in &files {
        std::fs::write(d.file(name), text).unwrap();
        let path = d.file(name);
        let o = run(
            &format!("merge {} {}", d.file("run0.json").display(), path.display()),
            LIMIT,
        );
        assert_eq!(o.code(), Some(2), "{name}: {o:?}");
        assert_eq!(o.stderr.trim().lines().count(), 1, "{name}: {}", o.stderr);
        assert!(
            o.stderr.contains(&path.display().to_string()) && o.stderr.contains(why),
            "{name}: {}",
            o.stderr
        );
        assert!(o.stdout.is_empty(), "{name}: {}", o.stdout);
    }
    for (line, needle) in [
        ("merge /nonexistent/x.json", "/nonexistent/x.json"),
        ("merge - -", "'-'"),
        ("merge", "FILE"),
    ] {
        let o = run(line, LIMIT);
        assert_eq!(o.code(), Some(2), "{line}: {o:?}");
        assert!(o.stderr.contains(needle), "{line}: {}", o.stderr);
    }
}
