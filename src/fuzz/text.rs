//! Text from outside: both command-line dialects, the kernel's /proc files, and the JSON
//! documents `ntttcp merge` reads.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use crate::cli::parse;
use crate::sys::procfs;

/// Any argv (NUL-separated arguments, any bytes): it parses, or the error is one line
/// that quotes something typed (control characters escaped), from the start of one of
/// the arguments.
pub fn cli(data: &[u8]) {
    let mut args = vec![OsString::from("ntttcp")];
    if !data.is_empty() {
        args.extend(
            data.split(|b| *b == 0)
                .map(|a| OsString::from_vec(a.to_vec())),
        );
    }
    let Err(e) = parse(&args, &[0, 1]) else {
        return;
    };
    let line = e.0;
    assert!(!line.contains('\n'), "more than one line: {line:?}");
    assert!(
        names_typed(&line, &args[1..]),
        "{line:?} names nothing of {args:?}"
    );
}

/// Whether an error line names something typed: it quotes the start of an argument (as
/// typed, as Rust escapes it, or as its bytes are shown), or names an argument as a word
/// (`-B`, `--fq-rate-limit=1G`, a Windows `-THR` in any case, `merge`), or a flag typed as
/// one letter of a cluster or with its value attached (`-n` of `-en4`, `-f` of `-f4`).
/// With nothing typed, nothing can be named; a flag the line lacks is named as required.
fn names_typed(line: &str, args: &[OsString]) -> bool {
    let typed: Vec<String> = args
        .iter()
        .flat_map(|a| {
            let lossy = a.to_string_lossy().into_owned();
            let bytes = format!("{a:?}").trim_matches('"').to_string();
            [lossy.escape_debug().to_string(), lossy, bytes]
        })
        .collect();
    let quoted = typed.iter().any(|a| {
        (a.len().min(2)..=a.len())
            .rev()
            .filter(|k| a.is_char_boundary(*k))
            .any(|k| {
                ['\'', '"']
                    .iter()
                    .any(|q| line.contains(&format!("{q}{}", &a[..k])))
            })
    });
    let lower = line.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || "(),:;'/".contains(c))
        .collect();
    let named = typed.iter().filter(|a| a.len() > 1).any(|a| {
        let name = a.split('=').next().unwrap_or(a).to_lowercase();
        words.contains(&name.as_str())
    });
    let letter = |c: char| {
        let flag = format!("-{c}");
        line.contains(&format!("'{flag}'")) || words.contains(&flag.to_lowercase().as_str())
    };
    let clustered = typed
        .iter()
        .filter(|a| a.starts_with('-') && !a.starts_with("--"))
        .any(|a| a[1..].chars().any(letter));
    // A flag the line lacks cannot have been typed: the message names the one missing.
    let missing = line.contains("is required");
    quoted || named || clustered || missing || typed.iter().all(|a| a.is_empty())
}

/// Any text as each /proc file: parsed without a panic, no more lines out than in.
pub fn procfs(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let lines = text.lines().count();
    let _ = procfs::parse_cpu_line(&text);
    let _ = procfs::parse_intr_total(&text);
    let _ = procfs::parse_net_rx(&text);
    assert!(procfs::parse_interrupts(&text).len() <= lines);
    let _ = procfs::parse_tcp(&text);
    let mid = (0..=text.len() / 2)
        .rev()
        .find(|i| text.is_char_boundary(*i));
    let (snmp, snmp6) = text.split_at(mid.unwrap_or(0));
    let _ = procfs::parse_udp(snmp, snmp6);
    let _ = procfs::parse_tcp_ext(&text);
    assert!(procfs::parse_net_dev(&text).len() <= lines);
    assert!(procfs::count_half_open(&text, &[5001, 5002]) <= lines);
}

/// Up to three documents (after a byte whose bit 0 asks for JSON, split at NUL bytes)
/// merged, into JSON or into the tables:
/// a document of ours merges, anything else is one line naming its file.
pub fn merge(data: &[u8]) {
    let Some((options, rest)) = data.split_first() else {
        return;
    };
    let json = options & 1 != 0;
    let texts: Vec<String> = rest
        .splitn(3, |b| *b == 0)
        .map(|t| String::from_utf8_lossy(t).into_owned())
        .collect();
    let files: Vec<String> = (0..texts.len()).map(|i| format!("run{i}.json")).collect();
    match crate::merge::merge_texts(&files, &texts, json) {
        Ok((out, _)) if json => {
            let doc: serde_json::Value = serde_json::from_str(&out).expect("the merge is JSON");
            assert!(doc.get("reports").is_some_and(|r| r.is_array()), "{out}");
        }
        Ok((out, _)) => assert!(out.contains("Totals"), "{out}"),
        Err(line) => {
            assert!(!line.contains('\n'), "{line:?}");
            assert!(
                files.iter().any(|f| line.starts_with(&format!("{f}: "))),
                "{line}"
            );
        }
    }
}
