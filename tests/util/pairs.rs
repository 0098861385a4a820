//! Runs of a receiver and its senders as processes of the built binary, each printing
//! JSON, on ports of their own per attempt of a promise.

use std::time::Duration;

use super::{Output, json, run, spawn};

/// A receiver (`-r 127.0.0.1 -p @1 --format json RX`) and a sender (`-s 127.0.0.1 -p @1
/// --format json TX`), both of which must exit 0: their JSON documents.
pub(crate) fn json_pair(rx: &str, tx: &str) -> (serde_json::Value, serde_json::Value) {
    let limit = Duration::from_secs(30);
    let r = spawn(
        "receiver",
        &format!("-r 127.0.0.1 -p @1 --format json {rx}"),
    );
    let so = run(&format!("-s 127.0.0.1 -p @1 --format json {tx}"), limit);
    let ro = r.wait(limit);
    assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?}\n{ro:?}");
    (json(&so), json(&ro))
}

/// The first port offset of attempt `i` of case `k` of a promise (`promise`): 25 ports
/// each, two attempts per case, so no attempt reuses another's ports.
pub(crate) fn attempt_at(k: usize, i: usize) -> u16 {
    1 + 25 * (2 * k + i) as u16
}

/// `json_pair` on ports from `@at` (`attempt_at`) instead of `@1`.
pub(crate) fn json_pair_at(at: u16, rx: &str, tx: &str) -> (serde_json::Value, serde_json::Value) {
    let p = format!(" -p @{at}");
    json_pair(&(rx.to_string() + &p), &(tx.to_string() + &p))
}

/// A multi-client receiver (`-M`, 2 ports from `@at`, `-t 2`) and two senders with `extra`,
/// the second the last client (`-L`) once the first waits for it; all must exit 0. Their
/// outputs: (first sender, last sender, receiver), in JSON.
pub(crate) fn multi_client_at(at: u16, extra: &str) -> (Output, Output, Output) {
    let limit = Duration::from_secs(30);
    let m = format!("-P 2 -p @{at} -t 2 --format json");
    let r = spawn("receiver", &format!("-r 127.0.0.1 {m} -M"));
    let a = spawn("sender a", &format!("-s 127.0.0.1 -n 1 {m} {extra}"));
    a.wait_for_stderr("waiting for the last client", limit);
    let b = run(&format!("-s 127.0.0.1 -n 1 {m} {extra} -L"), limit);
    let (ao, ro) = (a.wait(limit), r.wait(limit));
    assert_eq!(
        (ao.code(), b.code(), ro.code()),
        (Some(0), Some(0), Some(0)),
        "{ao:?}\n{b:?}\n{ro:?}"
    );
    (ao, b, ro)
}
