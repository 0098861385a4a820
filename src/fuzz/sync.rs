//! Both sync protocols as state machines over what a peer sends: the receiver's
//! handshake, the sender's handshake and start request, the messages and report frames
//! that arrive during a test, and Windows NTttcp's token exchange and port hand-out.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::ffi::OsString;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use anyhow::anyhow;
use arbitrary::Unstructured;
use tokio::sync::mpsc;

use super::script::{After, Script, messages, paused_runtime};
use crate::cli::{Parsed, parse};
use crate::config::Config;
use crate::control::message::{self, Reply, ReplyPhase, Request, RequestPhase, State};
use crate::control::{Connection, Incoming, windows};
use crate::receiver::sessions::{Policy, one_session};
use crate::sender::sync::{negotiate, receiver_reports, request_start};
use crate::stop::Flag;

/// A sync deadline (`--timeout`'s default); on the paused clock it costs nothing.
const DEADLINE: Duration = Duration::from_secs(10);

/// How the peer's bytes arrive: the read size, and what the peer does after them.
fn delivery(u: &mut Unstructured<'_>) -> (usize, After) {
    let chunk = u.int_in_range(1..=9).unwrap_or(4);
    let after = match u.arbitrary().unwrap_or(false) {
        true => After::Silent,
        false => After::Close,
    };
    (chunk, after)
}

/// The receiver's handshake against any sender: it ends within a deadline per message
/// (twice it before the start request), answers at most once per message, in whole
/// messages, the first of them its state.
pub fn sync_receiver(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let states = [State::NotStarted, State::Running, State::Finished];
    let state = *u.choose(&states).unwrap_or(&State::NotStarted);
    let policy = Policy {
        duration: u.int_in_range(0..=600).unwrap_or(10),
        multi_client: u.arbitrary().unwrap_or(false),
        deadline: DEADLINE,
        keepalive: None,
    };
    let (chunk, after) = delivery(&mut u);
    let sent = u.take_rest();
    let (script, written) = Script::new(sent, chunk, after);
    let conn = Connection::over(script, "fuzz".into(), DEADLINE);
    let took = paused_runtime().block_on(async {
        let t0 = tokio::time::Instant::now();
        let _ = one_session(conn, state, policy).await;
        t0.elapsed()
    });
    let asked = sent.len() / 4;
    assert!(
        took <= 2 * DEADLINE * (asked as u32 + 1),
        "the session took {took:?} for {asked} messages"
    );
    let written = written.lock().unwrap_or_else(|p| p.into_inner());
    assert_eq!(written.len() % 4, 0, "a partial message written");
    let answers = messages(&written);
    assert!(
        answers.len() <= asked,
        "{} answers to {asked} messages",
        answers.len()
    );
    if let Some(first) = answers.first() {
        assert!(
            Reply::decode(ReplyPhase::State, *first).is_ok(),
            "first answer {first}"
        );
    }
}

/// The sender's command line for a fuzz case: a workload, and maybe -L, --repeat and
/// --start-at.
fn sender_config(u: &mut Unstructured<'_>) -> Config {
    let workloads: [&[&str]; 6] = [
        &[],
        &["--rr", "64"],
        &["-R"],
        &["--bidir"],
        &["--connect-rate"],
        &["-u"],
    ];
    let mut args: Vec<String> = ["ntttcp", "-s", "127.0.0.1", "-t", "5"]
        .map(String::from)
        .into();
    args.extend(
        u.choose(&workloads)
            .unwrap_or(&workloads[0])
            .iter()
            .map(|a| a.to_string()),
    );
    if u.arbitrary().unwrap_or(false) {
        args.push("-L".into());
    }
    if u.arbitrary().unwrap_or(false) {
        args.extend(["--repeat".into(), "2".into()]);
    }
    if u.arbitrary().unwrap_or(false) {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        // One to two hours ahead, the same for an hour (so that the line parses once).
        let at = (now.as_secs() / 3600 + 2) * 3600;
        args.extend(["--start-at".into(), at.to_string()]);
    }
    // Parsed once per line (clap's parser costs more than a case), then reused.
    static PARSED: Mutex<BTreeMap<Vec<String>, Config>> = Mutex::new(BTreeMap::new());
    let mut parsed = PARSED.lock().unwrap_or_else(|p| p.into_inner());
    let cfg = parsed.entry(args).or_insert_with_key(|args| {
        let argv: Vec<OsString> = args.iter().map(OsString::from).collect();
        match parse(&argv, &[0, 1]) {
            Ok(Parsed::Run(cfg, _)) => *cfg,
            other => panic!("the sender's command line {args:?} gave {other:?}"),
        }
    });
    cfg.clone()
}

/// The sender's handshake and start request against any receiver, over up to three
/// sessions (a stock receiver's probe session, then the test's; a busy receiver asked
/// again): each read ends by its deadline, and the sender writes whole messages, at most
/// four more per session than it read.
pub fn sync_sender(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let cfg = sender_config(&mut u);
    let (chunk, after) = delivery(&mut u);
    let count = u.int_in_range(1..=3).unwrap_or(1);
    let mut replies: Vec<&[u8]> = (1..count)
        .map(|_| {
            let len = 4 * u.int_in_range(0..=8).unwrap_or(0);
            u.bytes(len).unwrap_or_default()
        })
        .collect();
    replies.push(u.take_rest());
    let sessions: Vec<_> = replies
        .iter()
        .map(|r| Script::new(r, chunk, after))
        .collect();
    let outputs: Vec<_> = sessions.iter().map(|(_, w)| w.clone()).collect();
    let queue = RefCell::new(
        sessions
            .into_iter()
            .map(|(s, _)| s)
            .collect::<VecDeque<_>>(),
    );
    let connect = async |_: Instant| {
        let next = queue.borrow_mut().pop_front();
        let script = next.ok_or_else(|| anyhow!("no receiver answers"))?;
        Ok(Connection::over(script, "fuzz".into(), cfg.timeout))
    };
    let notes = &|_| {};
    let interrupt = Flag::new();
    let took = paused_runtime().block_on(async {
        let t0 = tokio::time::Instant::now();
        if let Ok((mut conn, _)) = negotiate(connect, &cfg, notes).await {
            let _ = request_start(&mut conn, &cfg, &interrupt, notes).await;
        }
        t0.elapsed()
    });
    let read: usize = replies.iter().map(|r| r.len() / 4).sum();
    let until = cfg
        .start_at
        .and_then(|at| at.duration_since(SystemTime::now()).ok());
    let bound = cfg.timeout * (read as u32 + 2 * count as u32 + 2)
        + until.unwrap_or_default()
        + cfg.last_client_wait()
        + Duration::from_millis(100) * count as u32;
    assert!(
        took <= bound,
        "the handshake took {took:?} (bound {bound:?})"
    );
    for (reply, out) in replies.iter().zip(&outputs) {
        let out = out.lock().unwrap_or_else(|p| p.into_inner());
        assert_eq!(out.len() % 4, 0, "a partial message written");
        assert!(
            out.len() / 4 <= reply.len() / 4 + 4,
            "{} messages sent",
            out.len() / 4
        );
    }
}

/// What arrives on a sync connection during a test, as the reader task frames it:
/// messages and report frames in order, then the close; nothing kept that was not sent
/// (a frame's length never allocates more); each message decodes back to itself in the
/// phases it can arrive in, and a report that reads reads back as written.
pub fn sync_frames(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let (chunk, _) = delivery(&mut u);
    let sent = u.take_rest();
    let (script, _) = Script::new(sent, chunk, After::Close);
    let conn = Connection::over(script, "fuzz".into(), DEADLINE);
    let events = paused_runtime().block_on(async {
        let (tx, mut rx) = mpsc::channel(8);
        let _writer = conn.monitor(0, tx);
        let mut events = Vec::new();
        while let Some((_, e)) = rx.recv().await {
            let closed = matches!(e, Incoming::Closed(_));
            events.push(e);
            if closed {
                break;
            }
        }
        events
    });
    assert!(
        matches!(events.last(), Some(Incoming::Closed(_))),
        "{events:?}"
    );
    let kept: usize = events
        .iter()
        .map(|e| match e {
            Incoming::Message(_) => 4,
            Incoming::Report(json) => 8 + json.len(),
            Incoming::Closed(_) => 0,
        })
        .sum();
    assert!(
        kept <= sent.len(),
        "{kept} bytes framed from {}",
        sent.len()
    );
    for e in &events {
        match e {
            Incoming::Message(v) => decodes_back(*v),
            Incoming::Report(json) => reads_back(json),
            Incoming::Closed(_) => {}
        }
    }
}

/// A message decoded in any phase encodes back to the same value.
fn decodes_back(v: i32) {
    assert_eq!(message::decode(message::encode(v)), v);
    for phase in [
        RequestPhase::Query,
        RequestPhase::Proposal,
        RequestPhase::Start,
        RequestPhase::Running,
    ] {
        if let Ok(r) = Request::decode(phase, v) {
            assert_eq!(r.value(), v, "{phase:?}");
        }
    }
    for phase in [
        ReplyPhase::State,
        ReplyPhase::Negotiated,
        ReplyPhase::Start,
        ReplyPhase::Probe,
    ] {
        if let Ok(r) = Reply::decode(phase, v) {
            assert_eq!(r.value(), v, "{phase:?}");
        }
    }
}

/// A receiver's reports, once read, are written and read again to the same JSON.
fn reads_back(json: &[u8]) {
    let Ok(reports) = receiver_reports(json) else {
        return;
    };
    let again = serde_json::to_vec(&reports).expect("reports serialize");
    let back = receiver_reports(&again).expect("a report written reads back");
    let as_value = |r| serde_json::to_value(r).expect("reports serialize");
    assert_eq!(as_value(&reports), as_value(&back));
}

/// Windows NTttcp's token exchange, then a `-sp` port hand-out, against any peer: the
/// exchange takes any one byte and sends exactly the token; the port is the 4 bytes
/// little-endian when they make a port, else an error; both end by the deadline.
pub fn windows_sync(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let (chunk, after) = delivery(&mut u);
    let split = u.int_in_range(0..=2).unwrap_or(1);
    let rest = u.take_rest();
    let (token, port) = rest.split_at(split.min(rest.len()));
    let base = SocketAddr::from(([127, 0, 0, 1], 5001));
    let (mut t, sent) = Script::new(token, chunk, after);
    let (mut p, _) = Script::new(port, chunk, after);
    let (swapped, handed) = paused_runtime().block_on(async {
        let swapped = windows::swap_tokens(&mut t, Instant::now() + DEADLINE).await;
        let handed = windows::read_port(&mut p, Instant::now() + DEADLINE, base).await;
        (swapped, handed)
    });
    assert_eq!(swapped.is_ok(), !token.is_empty(), "{swapped:?}");
    assert_eq!(
        *sent.lock().unwrap_or_else(|p| p.into_inner()),
        [windows::TOKEN]
    );
    let expected = port
        .get(..4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .and_then(|p| u16::try_from(p).ok())
        .filter(|p| *p > 0);
    assert_eq!(handed.ok(), expected);
}
