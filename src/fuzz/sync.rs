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

/// How the peer's bytes arrive, from a byte of options: reads of 1 to 9 bytes (the high
/// four bits), and (bit 3) the peer goes silent after its bytes instead of closing.
fn delivery(options: u8) -> (usize, After) {
    let chunk = 1 + usize::from(options >> 4) % 9;
    let after = match options & 8 {
        0 => After::Close,
        _ => After::Silent,
    };
    (chunk, after)
}

/// The first `N` bytes of `data` (zeros where it is shorter) and the rest.
fn options<const N: usize>(data: &[u8]) -> ([u8; N], &[u8]) {
    let mut head = [0u8; N];
    let n = data.len().min(N);
    head[..n].copy_from_slice(&data[..n]);
    (head, &data[n..])
}

/// The receiver's handshake against any sender. Input: a byte of options (`delivery`;
/// bits 0-1 the receiver's state, 11 + b % 3; bit 2 -M), the receiver's -t in seconds,
/// then what the sender sends. It ends within a deadline per message (twice it before the
/// start request), answers at most once per message, in whole messages, the first of
/// them its state.
pub fn sync_receiver(data: &[u8]) {
    let ([flags, duration], sent) = options(data);
    let states = [State::NotStarted, State::Running, State::Finished];
    let state = states[usize::from(flags & 3) % 3];
    let policy = Policy {
        duration: u32::from(duration),
        multi_client: flags & 4 != 0,
        deadline: DEADLINE,
        keepalive: None,
    };
    let (chunk, after) = delivery(flags);
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

/// The sender's command line for a fuzz case: a workload (`workload` % 6), and by the
/// bits of `flags` -L (1), --repeat 2 (2) and --start-at (4).
fn sender_config(workload: u8, flags: u8) -> Config {
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
    let workload = workloads[usize::from(workload) % workloads.len()];
    args.extend(workload.iter().map(|a| a.to_string()));
    if flags & 1 != 0 {
        args.push("-L".into());
    }
    if flags & 2 != 0 {
        args.extend(["--repeat".into(), "2".into()]);
    }
    if flags & 4 != 0 {
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
/// again). Input: the workload and flags of `sender_config`, a byte of options
/// (`delivery`), the number of sessions (1 + b % 3), then for each session but the last
/// a length byte (4 × (b % 9) bytes follow) and what the receiver sends; the rest is the
/// last session's. Each read ends by its deadline, and the sender writes whole
/// messages, at most four more per session than it read.
pub fn sync_sender(data: &[u8]) {
    let ([workload, flags, delivered, count], mut rest) = options(data);
    let cfg = sender_config(workload, flags);
    let (chunk, after) = delivery(delivered);
    let count = 1 + usize::from(count) % 3;
    let mut replies: Vec<&[u8]> = Vec::new();
    for _ in 1..count {
        let ([len], after_len) = options(rest);
        let len = (4 * usize::from(len % 9)).min(after_len.len());
        let (reply, more) = after_len.split_at(len);
        replies.push(reply);
        rest = more;
    }
    replies.push(rest);
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

/// What arrives on a sync connection during a test, as the reader task frames it (input:
/// a byte of options, `delivery`, then the bytes):
/// messages and report frames in order, then the close; nothing kept that was not sent
/// (a frame's length never allocates more); each message decodes back to itself in the
/// phases it can arrive in, and a report that reads reads back as written.
pub fn sync_frames(data: &[u8]) {
    let ([delivered], sent) = options(data);
    let (chunk, _) = delivery(delivered);
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

/// Windows NTttcp's token exchange, then a `-sp` port hand-out, against any peer (input:
/// a byte of options, `delivery`; a byte whose value % 3 is the length of the token the
/// peer sends; then the port bytes): the
/// exchange takes any one byte and sends exactly the token; the port is the 4 bytes
/// little-endian when they make a port, else an error; both end by the deadline.
pub fn windows_sync(data: &[u8]) {
    let ([delivered, split], rest) = options(data);
    let (chunk, after) = delivery(delivered);
    let (token, port) = rest.split_at(usize::from(split % 3).min(rest.len()));
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
