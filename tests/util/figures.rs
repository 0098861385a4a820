//! What the runs print, read back: NTttcp's tables, figures compared within a margin, and
//! whether a run's own figures say the machine let it keep a promise.

/// One parsed set of NTttcp tables.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tables {
    /// (thread, seconds, KB/s, avg bytes per completion)
    pub(crate) threads: Vec<(usize, f64, f64, f64)>,
    pub(crate) meg: f64,
    pub(crate) realtime: f64,
    pub(crate) mb_per_s: f64,
    pub(crate) cpu_pct: f64,
}

/// Parses every table set in `stdout` (two for --loopback), checking the fixed layout.
pub(crate) fn parse_tables(stdout: &str) -> Vec<Tables> {
    let lines: Vec<&str> = stdout.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mut threads = Vec::new();
    while i < lines.len() {
        let l = lines[i];
        if l == "Thread  Time(s) Throughput(KB/s) Avg B / Compl" {
            assert_eq!(
                lines[i + 1],
                "======  ======= ================ ============="
            );
            threads.clear();
            i += 2;
            while i < lines.len() && !lines[i].is_empty() {
                let row = lines[i];
                assert_eq!(row.len(), 6 + 1 + 8 + 1 + 16 + 1 + 13, "row width: {row:?}");
                let f: Vec<&str> = row.split_whitespace().collect();
                threads.push((
                    f[0].parse().unwrap(),
                    f[1].parse().unwrap(),
                    f[2].parse().unwrap(),
                    f[3].parse().unwrap(),
                ));
                i += 1;
            }
            continue;
        }
        if l == "   Bytes(MEG)    realtime(s) Avg Frame Size Throughput(MB/s)" {
            assert_eq!(lines[i - 1], "");
            assert_eq!(lines[i - 2], "");
            let row = lines[i + 2];
            assert_eq!(
                row.len(),
                16 + 1 + 11 + 1 + 14 + 1 + 16,
                "row width: {row:?}"
            );
            let f: Vec<f64> = row.split_whitespace().map(|v| v.parse().unwrap()).collect();
            // Row 4 (packets, CPU) is 15 lines further down.
            let cpu_row = lines
                .iter()
                .skip(i)
                .skip_while(|l| !l.starts_with("Packets Sent"))
                .nth(2)
                .expect("packets row");
            let cpu_pct = cpu_row.split_whitespace().last().unwrap().parse().unwrap();
            out.push(Tables {
                threads: std::mem::take(&mut threads),
                meg: f[0],
                realtime: f[1],
                mb_per_s: f[3],
                cpu_pct,
            });
        }
        i += 1;
    }
    out
}

/// How far apart `a` and `b` are, in percent of the larger.
fn apart_pct(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.max(b).max(f64::MIN_POSITIVE) * 100.0
}

/// Asserts `a` and `b` agree within `pct` percent.
pub(crate) fn assert_close(a: f64, b: f64, pct: f64, what: &str) {
    let diff = apart_pct(a, b);
    assert!(
        diff <= pct,
        "{what}: {a} vs {b} differ by {diff:.3}% (> {pct}%)"
    );
}

/// Whether `a` and `b` agree within `pct` percent (the promise), with the run's own word
/// on whether it was starved (`reports`, as for `starved`) when they do not.
pub(crate) fn close_or_starved(
    a: f64,
    b: f64,
    pct: f64,
    reports: &[&serde_json::Value],
) -> Attempt {
    let diff = apart_pct(a, b);
    if diff <= pct {
        return Ok(());
    }
    Err((
        format!("{a} vs {b}, apart by {diff:.3} %"),
        starved(reports),
    ))
}

/// Whether two console sides' byte totals (`a`, `b`) agree within `pct` percent (the
/// promise), with the runs' own word on whether they were starved when they do not
/// (`tables_starved`, from every side's tables and stderr).
pub(crate) fn tables_close_or_starved(
    a: &Tables,
    b: &Tables,
    pct: f64,
    stderr: &[&str],
) -> Attempt {
    let diff = apart_pct(a.meg, b.meg);
    if diff <= pct {
        return Ok(());
    }
    Err((
        format!("{} vs {} MB, apart by {diff:.3} %", a.meg, b.meg),
        tables_starved(&[a, b], stderr),
    ))
}

/// Why console runs say they were starved, or None: a side warned that its test was
/// disturbed (a stall, its window past its plan, steal), or the sides' measured seconds
/// differ by more than a tenth of a percent (one side's edge woke late).
pub(crate) fn tables_starved(sides: &[&Tables], stderr: &[&str]) -> Option<String> {
    let warned = stderr
        .iter()
        .flat_map(|e| e.lines())
        .find(|l| l.contains("test disturbed"));
    if let Some(l) = warned {
        return Some(l.trim().to_string());
    }
    let (lo, hi) = sides.iter().fold((f64::MAX, 0.0_f64), |(lo, hi), t| {
        (lo.min(t.realtime), hi.max(t.realtime))
    });
    (sides.len() > 1 && hi - lo > hi / 1000.0)
        .then(|| format!("the sides measured {lo:.3} and {hi:.3} s"))
}

/// The share of `report`'s window that its jsonl `intervals` tile: the last one's end
/// over the window, at most 1. The rest moved between that sample and the closing edge,
/// which a late wake on a loaded machine widens (by percents of the bytes), so a sum of the
/// intervals is held against the total over this share.
pub(crate) fn covered(intervals: &[&serde_json::Value], report: &serde_json::Value) -> f64 {
    let last_end = intervals
        .iter()
        .filter_map(|l| l["end_s"].as_f64())
        .fold(0.0, f64::max);
    let window = report["duration_s"].as_f64().expect("a window");
    (last_end / window).min(1.0)
}

/// Why a run's own figures say it was starved, or None: the hypervisor's steal (5 % or
/// more), this test's processes holding less than `SHARE` of the CPU time that was busy
/// (other load had the rest), or a stall long enough to warn of. `reports` holds one
/// report per process of the run (both sides of a `--loopback` run are one process).
pub(crate) fn starved(reports: &[&serde_json::Value]) -> Option<String> {
    /// Below this share of the busy CPU time, other processes had the machine.
    const SHARE: f64 = 0.6;
    let cpu = |r: &serde_json::Value, k: &str| r["cpu"][k].as_f64().unwrap_or(0.0);
    let most =
        |f: &dyn Fn(&serde_json::Value) -> f64| reports.iter().map(|r| f(r)).fold(0.0, f64::max);
    let steal = most(&|r| cpu(r, "steal_percent"));
    let busy = most(&|r| cpu(r, "busy_percent") * cpu(r, "cores"));
    let stall = most(&|r| r["longest_stall_s"].as_f64().unwrap_or(0.0));
    let ours: f64 = reports.iter().map(|r| cpu(r, "process_percent")).sum();
    let share = if busy > 0.0 { ours / busy } else { 1.0 };
    (steal >= 5.0 || share < SHARE || stall >= 0.5)
        .then(|| {
            format!(
                "steal {steal:.1} %, this test's share of the busy CPU time {:.0} %, \
                 longest stall {stall:.2} s",
                share * 100.0
            )
        })
        .or_else(|| windows_apart(reports))
}

/// Why the sides' own windows say the run was starved, or None: their edges (on the
/// host's one wall clock) lie further apart than a tenth of a percent of the window, so
/// the two counted different stretches of the traffic. A sampling thread without a
/// real-time priority (an ordinary user's) wakes late for an edge, by tens of
/// milliseconds, when other processes hold the CPUs.
pub(crate) fn windows_apart(sides: &[&serde_json::Value]) -> Option<String> {
    let apart = apart_s(sides);
    let window = sides
        .iter()
        .filter_map(|r| r["duration_s"].as_f64())
        .fold(0.0, f64::max);
    (apart > window / 1000.0).then(|| {
        format!(
            "the sides' windows lie {:.1} ms apart at their edges",
            apart * 1000.0
        )
    })
}

/// How far apart the sides' windows lie: the widest spread of their starts plus that of
/// their ends, in seconds (0 for fewer than two sides).
pub(crate) fn apart_s(sides: &[&serde_json::Value]) -> f64 {
    let spread = |k: &str| {
        let at: Vec<f64> = sides.iter().filter_map(|r| r[k].as_f64()).collect();
        let (lo, hi) = at
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), &t| (lo.min(t), hi.max(t)));
        if at.len() < 2 { 0.0 } else { hi - lo }
    };
    spread("window_start_unix_s") + spread("window_end_unix_s")
}

/// One attempt at a promise: `Err((what was measured, why the run was starved, if it was))`
/// when the promise did not hold.
pub(crate) type Attempt = Result<(), (String, Option<String>)>;

/// A promise checked on up to two attempts (`attempt(i)`, each on ports of its own):
/// passes when an attempt kept it, or when every attempt that broke it was starved by its
/// own figures (said on stderr, where the harness does not hide it); fails, naming both
/// attempts, when one broke it on a machine that was not starved.
pub(crate) fn promise(what: &str, mut attempt: impl FnMut(usize) -> Attempt) {
    let mut broken = Vec::new();
    for i in 0..2 {
        match attempt(i) {
            Ok(()) => return,
            Err(seen) => broken.push(seen),
        }
    }
    let said: Vec<String> = broken
        .iter()
        .map(|(m, s)| format!("{m} ({})", s.as_deref().unwrap_or("not starved")))
        .collect();
    assert!(
        broken.iter().all(|(_, s)| s.is_some()),
        "{what}: broken on a machine that was not starved: {}",
        said.join("; then ")
    );
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "{what}: not judged, every attempt was starved: {}",
        said.join("; then ")
    );
}
