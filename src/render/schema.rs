//! Our own structured output (`--format json` and `--format jsonl`): numbers as numbers,
//! every figure of the report, stable names. The documents serialize the result model
//! (`report::Report`) as is; the JSON Schema `schema/ntttcp-report.json` is generated
//! from the same types (`ntttcp_schema`), and a test keeps the committed copy equal to it.

use schemars::JsonSchema;
use serde::Serialize;

use crate::report::merge::Merge;
use crate::report::series::Series;
use crate::report::{Report, Side};
use crate::timeline::IntervalSample;

/// Identifies the document format; bumped on incompatible changes.
pub(crate) const SCHEMA: &str = "ntttcp-report/1";

/// A `--format json` document: every side of one test (two for `--loopback`).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Document<'a> {
    /// Always "ntttcp-report/1".
    #[schemars(schema_with = "schema_name")]
    pub schema: &'static str,
    /// The ntttcp version that wrote it.
    pub version: &'static str,
    /// One entry per side.
    #[schemars(length(min = 1))]
    pub reports: &'a [Report],
    /// `ntttcp merge`: how the merged runs compare (absent from a run's own document).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merge: Option<&'a Merge>,
    /// `--repeat`: one document per run, in order (`reports` above are the last run's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<Vec<Self>>,
    /// `--repeat`: the throughput over the runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub series: Option<&'a Series>,
}

impl<'a> Document<'a> {
    /// The document for `reports`.
    pub(crate) fn new(reports: &'a [Report]) -> Self {
        Self {
            schema: SCHEMA,
            version: env!("CARGO_PKG_VERSION"),
            reports,
            merge: None,
            runs: None,
            series: None,
        }
    }

    /// The document of a series (`--repeat`): each run's, the series, and the last run's
    /// reports in `reports`.
    pub(crate) fn series(runs: &'a [Vec<Report>], series: &'a Series) -> Self {
        let last = runs.last().map_or(&[][..], Vec::as_slice);
        Self {
            runs: Some(runs.iter().map(|r| Self::new(r)).collect()),
            series: Some(series),
            ..Self::new(last)
        }
    }

    /// The document of a merge: its `reports` and how the runs compare.
    pub(crate) fn merged(reports: &'a [Report], merge: &'a Merge) -> Self {
        Self {
            merge: Some(merge),
            ..Self::new(reports)
        }
    }
}

/// The `schema` field's value, as the schema states it.
fn schema_name(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "const": SCHEMA })
}

/// One `--format jsonl` line.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum Line<'a> {
    /// An interval of the measurement on one side.
    Interval {
        /// "sender" or "receiver".
        side: Side,
        /// Which way the interval's bytes went: "send" or "receive" (a `--bidir` side
        /// writes a line of each every interval).
        direction: crate::report::Direction,
        /// Interval start, seconds since counting started.
        start_s: f64,
        /// Interval end.
        end_s: f64,
        /// Bits per second over the interval.
        bits_per_second: f64,
        /// Bytes per thread during the interval.
        thread_bytes: &'a [u64],
        /// UDP receiver: datagrams expected and lost in the interval; else null.
        udp_loss: Option<crate::timeline::IntervalLoss>,
        /// Request/response (`--rr`): the interval's transactions and round trips; else
        /// null.
        rr: Option<crate::timeline::IntervalRr>,
        /// Connection rate (`--connect-rate`): the interval's connections and connect
        /// times; else null.
        connect: Option<crate::timeline::IntervalConnect>,
        /// This host's CPUs busy over the interval, percent (all CPUs, as the report's
        /// `cpu.busy_percent`); null where the system does not say.
        cpu_busy_percent: Option<f64>,
    },
    /// `--repeat`: the throughput over the runs, after the last run's lines.
    Series {
        /// The series.
        series: &'a Series,
    },
    /// A side's final results (the same object as in `--format json`).
    Summary {
        /// The schema of the report object: "ntttcp-report/1".
        #[schemars(schema_with = "schema_name")]
        schema: &'static str,
        /// The results.
        report: &'a Report,
    },
}

impl<'a> Line<'a> {
    /// The line for an interval sample.
    pub(crate) fn interval(side: Side, s: &'a IntervalSample) -> Self {
        Self::Interval {
            side,
            direction: s.direction,
            start_s: s.start_s,
            end_s: s.end_s,
            bits_per_second: crate::stats::interval_bits_per_second(s),
            thread_bytes: &s.thread_bytes,
            udp_loss: s.udp_loss,
            rr: s.rr,
            connect: s.connect,
            cpu_busy_percent: s.cpu_busy_percent,
        }
    }

    /// The summary line for a report.
    pub(crate) fn summary(r: &'a Report) -> Self {
        Self::Summary {
            schema: SCHEMA,
            report: r,
        }
    }
}

/// Everything `--format json` and `--format jsonl` write: a document, or one line.
#[cfg(test)]
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code, reason = "only its schema is used")]
enum Output<'a> {
    /// `--format json`.
    Document(Document<'a>),
    /// One line of `--format jsonl`.
    Line(Line<'a>),
}

/// The JSON Schema of our structured output, generated from the types above.
#[cfg(test)]
pub(crate) fn ntttcp_schema() -> serde_json::Value {
    let mut schema =
        serde_json::to_value(schemars::schema_for!(Output<'static>)).unwrap_or_default();
    if let Some(map) = schema.as_object_mut() {
        map.insert("$id".into(), SCHEMA.into());
        map.insert("title".into(), "ntttcp report".into());
        map.insert(
            "description".into(),
            "Output of `ntttcp --format json` (a Document) and of each line of `ntttcp \
             --format jsonl` (a Line). Numbers are numbers; rates in bits per second are \
             decimal (1 Gbit/s = 10^9)."
                .into(),
        );
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::fixture::seed_report;

    /// A report reads back as it was written: what a receiver sends back and what
    /// `ntttcp merge` reads is the report itself.
    #[test]
    fn a_report_reads_back_as_it_was_written() {
        let mut r = seed_report();
        r.tcp_connections = vec![crate::stats::fixture::conn_info()];
        let text = serde_json::to_string(&Document::new(std::slice::from_ref(&r))).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        let back: Vec<Report> = serde_json::from_value(doc["reports"].clone()).unwrap();
        assert_eq!(back, [r]);
    }

    #[test]
    fn seed_document_matches_the_golden_copy() {
        let mut r = seed_report();
        r.tcp_connections = vec![crate::stats::fixture::conn_info()];
        let reports = [r];
        let got = serde_json::to_string_pretty(&Document::new(&reports)).unwrap() + "\n";
        if std::env::var_os("NTTTCP_BLESS").is_some() {
            std::fs::write("tests/fixtures/seed-report.json", &got).unwrap();
        }
        let want = include_str!("../../tests/fixtures/seed-report.json");
        for (i, (g, w)) in got.lines().zip(want.lines()).enumerate() {
            assert_eq!(g, w, "line {}", i + 1);
        }
        assert_eq!(got, want);
    }

    #[test]
    fn the_committed_schema_is_the_generated_one() {
        let got = serde_json::to_string_pretty(&ntttcp_schema()).unwrap() + "\n";
        if std::env::var_os("NTTTCP_BLESS").is_some() {
            std::fs::write("schema/ntttcp-report.json", &got).unwrap();
        }
        let want = include_str!("../../schema/ntttcp-report.json");
        for (i, (g, w)) in got.lines().zip(want.lines()).enumerate() {
            assert_eq!(
                g,
                w,
                "schema/ntttcp-report.json line {} (NTTTCP_BLESS=1 rewrites it)",
                i + 1
            );
        }
        assert_eq!(got, want);
    }

    #[test]
    fn numbers_are_numbers_and_match_the_tables() {
        let r = seed_report();
        let reports = [r];
        let v = serde_json::to_value(Document::new(&reports)).unwrap();
        assert_eq!(v["schema"], SCHEMA);
        let s = &v["reports"][0];
        assert_eq!(s["side"], "sender");
        assert_eq!(s["end"]["kind"], "completed");
        assert_eq!(s["totals"]["bytes"], 34243u64 * 1048576);
        let mibps = s["totals"]["mebibytes_per_second"].as_f64().unwrap();
        assert!((mibps - 114.141).abs() < 0.001);
        assert!((s["cpu"]["busy_percent"].as_f64().unwrap() - 15.075).abs() < 1e-9);
        assert_eq!(s["network"]["retransmits"], 60412);
        assert_eq!(s["threads"].as_array().unwrap().len(), 4);
        assert_eq!(s["params"]["timeline"]["duration"], 300);
    }
}
