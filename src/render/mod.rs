//! Renderers: each turns a `Report` into one of the layouts people and parsers read, with
//! the figures from `stats`; `terminal` shows them to a person (stdout, stderr, the status
//! line, the `-O` log) and `files` exports them (the result files).

pub(crate) mod atomic;
pub(crate) mod console;
pub(crate) mod files;
pub(crate) mod json;
pub(crate) mod linux;
pub(crate) mod merge;
pub(crate) mod plot;
pub(crate) mod rr;
pub(crate) mod schema;
pub(crate) mod series;
pub(crate) mod settings;
pub(crate) mod stdio;
pub(crate) mod terminal;
pub(crate) mod xml;

use crate::report::{Direction, Side};

/// A direction as the reports write it.
fn direction_word(d: Direction) -> &'static str {
    match d {
        Direction::Send => "send",
        Direction::Receive => "receive",
    }
}

/// A figure with three decimals, or `UNKNOWN` when the system does not give it.
fn fixed3(v: Option<f64>) -> String {
    v.map_or_else(|| UNKNOWN.to_string(), |v| format!("{v:.3}"))
}

/// A percentage with two decimals, or `UNKNOWN` when the system does not give it.
fn fixed2(v: Option<f64>) -> String {
    v.map_or_else(|| UNKNOWN.to_string(), |v| format!("{v:.2}"))
}

/// How every text output writes a figure the system does not give (never 0).
const UNKNOWN: &str = "n/a";

/// `True` / `False`, as both originals write booleans.
fn tf(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

/// The originals' name for a side's result file object: `ntttcps` (sender) or `ntttcpr`.
fn file_root(side: Side) -> &'static str {
    match side {
        Side::Sender => "ntttcps",
        Side::Receiver => "ntttcpr",
    }
}

#[cfg(test)]
mod tests {
    use crate::stats::fixture::cut_short;
    use crate::timeline::End;

    #[test]
    fn a_short_window_says_who_ended_it_in_every_format() {
        let r = cut_short(End::PeerEnded, Some(6.0));
        let e = r.end.early.clone().expect("ended early");
        assert_eq!(
            (e.by.as_str(), e.measured_s, e.planned_s),
            ("sender", 2.0, Some(6.0))
        );
        assert!(
            e.line().ends_with("; measured 2.00 of 6.00 planned s"),
            "{}",
            e.line()
        );
        let note = "test ended early\t:the sender stopped its test early";
        assert!(super::console::render(&r, false).contains(note));
        assert!(super::linux::render(&r, false).contains(note));
        let tag = "<ended_early by=\"sender\" measured_s=\"2.000\" planned_s=\"6.000\">";
        assert!(
            super::xml::linux(&r).contains(tag),
            "{}",
            super::xml::linux(&r)
        );
        assert!(super::xml::windows(&r, false).contains(tag));
        let j: serde_json::Value = serde_json::from_str(&super::json::linux(&r)).unwrap();
        assert_eq!(j["ntttcpr"]["endedEarly"]["plannedSeconds"], "6.000", "{j}");
        let doc = serde_json::to_value(&r).unwrap();
        assert_eq!(doc["end"]["early"]["by"], "sender", "{doc}");
    }

    #[test]
    fn stalls_and_overruns_are_said_in_every_format() {
        assert_eq!(cut_short(End::Completed, Some(10.0)).disturbance(), None);
        let disturbed = |seconds: f64| {
            crate::stats::report(crate::report::Measured {
                side: crate::report::Side::Receiver,
                planned_s: Some(10.0),
                seconds,
                stall: crate::timeline::Stall {
                    seconds: 2.1,
                    from_s: 2.0,
                },
                ..crate::stats::fixture::seed_measured()
            })
        };
        let r = disturbed(11.96);
        assert!((r.window_overrun_s.unwrap() - 1.96).abs() < 1e-9);
        let line = r.disturbance().unwrap();
        assert_eq!(
            line,
            "no data moved for 2.1 s from 2.0 s; the window ran 1.96 s past its planned 10.00 s"
        );
        assert!(super::console::render(&r, false).contains(&format!("test disturbed\t:{line}")));
        assert!(
            super::linux::render(&r, false).contains("longest stall\t:2.10 seconds (from 2.00 s)")
        );
        assert!(
            super::xml::linux(&r).contains("<window_overrun metric=\"s\">1.960</window_overrun>")
        );
        let doc = serde_json::to_value(&r).unwrap();
        assert_eq!(doc["longest_stall_s"], 2.1);
        // Within 1 % of the plan is no overrun.
        assert_eq!(disturbed(10.09).window_overrun_s, None);
    }

    #[test]
    fn steal_is_reported_and_much_of_it_said() {
        let with_steal = |steal: u64| {
            crate::stats::fixture::seed_with(|m| {
                m.sys.cpu.idle -= steal;
                m.sys.cpu.steal = Some(steal);
            })
        };
        // 12,000 of the seed's 100,000 ticks.
        let r = with_steal(12_000);
        assert!((r.cpu.steal_percent.unwrap() - 12.0).abs() < 1e-9);
        assert_eq!(
            r.disturbance().as_deref(),
            Some("the hypervisor withheld 12 % of the CPUs' time (steal)")
        );
        let doc = serde_json::to_value(&r).unwrap();
        assert_eq!(doc["cpu"]["steal_percent"], 12.0);
        assert_eq!(
            with_steal(4_000).disturbance(),
            None,
            "below 5 % is not said"
        );
    }

    #[test]
    fn the_xml_says_ended_early_only_when_the_test_did() {
        let f = cut_short(End::Fault("sender 1.2.3.4 closed".into()), None);
        for r in [cut_short(End::Completed, Some(6.0)), f] {
            let has = super::xml::linux(&r).contains("<ended_early");
            assert_eq!(has, r.end.early.is_some());
        }
    }
}
