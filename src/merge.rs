//! `ntttcp merge FILE...`: the JSON documents of runs that ran side by side (one pair of
//! hosts each, started with one `--start-at`) read, checked and folded into one document
//! of the same schema, or NTttcp's Totals tables over the sum.

use std::io::Read;

use serde::Deserialize;

use crate::config::MergeJob;
use crate::render::{console, merge as text, schema, stdio};
use crate::report::merge::Merge;
use crate::report::{Report, Side};
use crate::run::{EXIT_OK, EXIT_USAGE};
use crate::stats::merge::{apart, compare, fold};

/// One input document, as `--format json` writes it (a merged one may be merged again).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    /// Checked on the JSON before this is read (`read`).
    #[serde(rename = "schema")]
    _schema: String,
    /// Read to check it is there; any version's reports are merged.
    #[serde(rename = "version")]
    _version: String,
    reports: Vec<Report>,
    /// What an earlier merge said; its reports are merged again.
    #[serde(default, rename = "merge")]
    _merge: Option<Merge>,
    /// A series' runs (`--repeat`); its `reports`, the last run's, are merged.
    #[serde(default, rename = "runs")]
    _runs: Option<serde_json::Value>,
    /// A series' summary.
    #[serde(default, rename = "series")]
    _series: Option<serde_json::Value>,
}

/// Runs the merge; its exit status (2 for input that is not a document of ours).
pub(crate) fn run(job: &MergeJob) -> u8 {
    let merged = job
        .files
        .iter()
        .map(|f| read(f))
        .collect::<Result<Vec<_>, _>>()
        .and_then(|texts| merge_texts(&job.files, &texts, job.json));
    match merged {
        Ok((out, warnings)) => {
            for w in warnings {
                stdio::err(&format!("ntttcp merge: warning: {w}"));
            }
            stdio::out(&out);
            EXIT_OK
        }
        Err(line) => {
            stdio::err(&format!("ntttcp merge: error: {line}"));
            EXIT_USAGE
        }
    }
}

/// The merge of documents `texts` (read from `files`): what goes to stdout, JSON or the
/// tables, and the warnings; or one line naming the file that is not a document of ours.
pub(crate) fn merge_texts(
    files: &[String],
    texts: &[String],
    json: bool,
) -> Result<(String, Vec<String>), String> {
    let inputs = files
        .iter()
        .zip(texts)
        .map(|(f, t)| parse(f, t).map_err(|e| one_line(&e)))
        .collect::<Result<Vec<_>, _>>()?;
    let (reports, merge) = merged(files, &inputs);
    let warnings = apart(&merge)
        .into_iter()
        .map(|(a, b)| {
            format!("the windows of {a} and {b} do not overlap: they did not run side by side")
        })
        .collect();
    let out = if json {
        let doc = schema::Document::merged(&reports, &merge);
        format!(
            "{}\n",
            serde_json::to_string_pretty(&doc).unwrap_or_default()
        )
    } else {
        let mut out = text::text(&merge);
        for r in &reports {
            out.push_str(&console::render(r, false));
        }
        out
    };
    Ok((out, warnings))
}

/// The merged reports (one per side and direction the inputs have, senders first) and
/// how the inputs compare.
fn merged(files: &[String], inputs: &[Input]) -> (Vec<Report>, Merge) {
    let mut groups: Vec<Vec<Report>> = Vec::new();
    for r in inputs.iter().flat_map(|i| &i.reports) {
        match groups
            .iter_mut()
            .find(|g| (g[0].side, g[0].direction) == (r.side, r.direction))
        {
            Some(g) => g.push(r.clone()),
            None => groups.push(vec![r.clone()]),
        }
    }
    groups.sort_by_key(|g| g[0].side == Side::Receiver);
    let reports = groups.iter().map(|g| fold(g)).collect();
    // Each input's throughput is its receiver's, where it has one.
    let measured: Vec<(String, &Report)> = files
        .iter()
        .zip(inputs)
        .map(|(f, i)| {
            let rx = i.reports.iter().find(|r| r.side == Side::Receiver);
            (f.clone(), rx.unwrap_or(&i.reports[0]))
        })
        .collect();
    (reports, compare(&measured))
}

/// `text` on one line: its control characters (a JSON string may hold any, and the
/// parser's message quotes it) escaped.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| match c.is_control() {
            true => c.escape_debug().to_string(),
            false => c.to_string(),
        })
        .collect()
}

/// Reads one document's text; the error is one line naming the file.
fn read(file: &str) -> Result<String, String> {
    if file == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| format!("stdin: {e}"))?;
        Ok(s)
    } else {
        std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))
    }
}

/// Checks and reads one document; the error is one line naming the file.
fn parse(file: &str, text: &str) -> Result<Input, String> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| match e.is_eof() {
        true => format!("{file}: the JSON ends early (a truncated file?): {e}"),
        false => format!("{file}: not JSON: {e}"),
    })?;
    let schema = value
        .get("schema")
        .and_then(|s| s.as_str())
        .unwrap_or("none");
    if schema != schema::SCHEMA {
        return Err(format!(
            "{file}: not an {} document (its schema: {schema})",
            schema::SCHEMA
        ));
    }
    let input: Input = serde_json::from_value(value)
        .map_err(|e| format!("{file}: not a valid {} document: {e}", schema::SCHEMA))?;
    if input.reports.is_empty() {
        return Err(format!("{file}: a document without reports"));
    }
    Ok(input)
}
