//! The ntttcp-for-linux sync protocol's messages: 4-byte big-endian signed integers.
//!
//! The same integer means different things at different points of the exchange ('R' = 82
//! is a start request, but 82 is also a valid cycle time), so decoding is always done
//! *by expected phase*: the caller says what it is waiting for. This is what lets a
//! 69/76/82/88-second cycle work, which the C receiver's single `switch` misreads.
//! Pure: no I/O here.

use std::fmt;

/// 'X': the sender asks for the receiver's state.
pub(crate) const QUERY: i32 = b'X' as i32;
/// 'R': start request (sender) or "start now" (receiver).
pub(crate) const START: i32 = b'R' as i32;
/// 'L': start request from the last client of a multi-client test.
pub(crate) const START_LAST: i32 = b'L' as i32;
/// 'W': wait for the last client.
pub(crate) const WAIT: i32 = b'W' as i32;
/// 'E': the sender ended early, or the receiver rejects.
pub(crate) const END: i32 = b'E' as i32;

/// Our extension's probe, sent in place of the first proposal by a sender that needs
/// more than ntttcp-for-linux's exchange (`--rr`). Negative, so no stock sender ever
/// proposes it; a stock receiver reads it as a proposal shorter than its own `-t` and
/// answers that `-t` (0 or more), which no extended receiver sends here.
pub(crate) const PROBE: i32 = i32::from_be_bytes([0xA7, b'N', b'T', 1]);
/// The high bytes of an extended receiver's answer to `PROBE`; the low byte holds the
/// `Features` it serves.
const FEATURES_TAG: [u8; 3] = [0xA8, b'N', b'T'];

/// After a probe answered with `Features::CONNECT_RATE`: this sender's test opens and
/// closes connections (`--connect-rate`); the receiver answers the same value.
pub(crate) const CONNECT_RATE: i32 = i32::from_be_bytes([0xA9, b'N', b'T', 1]);

/// After a probe answered with `Features::REPORT`: this sender wants the receiver's
/// report over the sync connection at the end of the test; the receiver answers the
/// same value.
pub(crate) const WANT_REPORT: i32 = i32::from_be_bytes([0xAA, b'N', b'T', 1]);

/// After a probe answered with `Features::START_AT` (`--start-at`): the instant the
/// measured window begins, as two more values (the high and low halves of Unix time in
/// microseconds); the receiver answers this value.
pub(crate) const START_AT: i32 = i32::from_be_bytes([0xAC, b'N', b'T', 1]);

/// Receiver to sender, at the end of a test whose sender asked (`WANT_REPORT`): this
/// value, then the length of what follows (4 bytes, big-endian) and that many bytes of
/// JSON, the receiver's reports.
pub(crate) const REPORT_FRAME: i32 = i32::from_be_bytes([0xAB, b'N', b'T', 1]);

/// The most bytes of a report frame a sender takes (a receiver of 10,000 connections
/// writes about a megabyte): a length past it ends the exchange, never an allocation.
pub(crate) const MAX_REPORT_BYTES: u32 = 16 << 20;

/// What an extended receiver serves, one bit each (the answer's low byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Features(pub u8);

impl Features {
    /// `--rr`: it echoes requests.
    pub(crate) const REQUEST_RESPONSE: Self = Self(1);
    /// `-R`: it sends on connections its senders opened.
    pub(crate) const REVERSE: Self = Self(2);
    /// `--bidir`: it sends on connections its senders opened while it reads them.
    pub(crate) const BIDIR: Self = Self(4);
    /// `--connect-rate`: it counts and closes the connections of a test it was told is
    /// one (`CONNECT_RATE`).
    pub(crate) const CONNECT_RATE: Self = Self(8);
    /// It sends its report back to a sender that asks (`WANT_REPORT`).
    pub(crate) const REPORT: Self = Self(16);
    /// It opens the window at the instant a sender gives (`START_AT`).
    pub(crate) const START_AT: Self = Self(32);
    /// Everything this build serves.
    pub(crate) const ALL: Self = Self(
        Self::REQUEST_RESPONSE.0
            | Self::REVERSE.0
            | Self::BIDIR.0
            | Self::CONNECT_RATE.0
            | Self::REPORT.0
            | Self::START_AT.0,
    );

    /// Whether every bit of `other` is served.
    pub(crate) fn has(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }
}

/// The receiver's state as reported to a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// 11: no test has started.
    NotStarted = 11,
    /// 12: a test is running (a new sender must treat the receiver as busy).
    Running = 12,
    /// 13: the last test has finished.
    Finished = 13,
}

/// What the receiver is waiting for on a sync connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RequestPhase {
    /// The first message: a state query.
    Query,
    /// The proposed cycle time (any non-negative integer, even 82), or our extension's
    /// probe.
    Proposal,
    /// A start request (or another query, or an early end).
    Start,
    /// During the test: an early end or a query.
    Running,
}

/// A message from sender to receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Request {
    /// 'X'
    Query,
    /// Proposed cycle time in seconds (0 = continuous).
    Propose(u32),
    /// 'R'
    Start,
    /// 'L'
    StartLast,
    /// 'E'
    End,
    /// Our extension's probe (`PROBE`).
    Probe,
    /// Our extension: the test is a connection-rate one (`CONNECT_RATE`, after a probe).
    ConnectRate,
    /// Our extension: send me your report at the end (`WANT_REPORT`, after a probe).
    WantReport,
    /// Our extension: the window begins at an instant, which follows (`START_AT`).
    StartAt,
}

/// What the sender is waiting for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReplyPhase {
    /// The answer to a query (or to an 'E').
    State,
    /// The negotiated cycle time.
    Negotiated,
    /// The answer to a start request.
    Start,
    /// The answer to our extension's probe.
    Probe,
    /// The answer to a connection-rate test's announcement.
    ConnectRate,
    /// The answer to a request for the receiver's report.
    WantReport,
    /// The answer to a start instant.
    StartAt,
}

/// A message from receiver to sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reply {
    /// 11, 12 or 13.
    State(State),
    /// Negotiated cycle time in seconds (0 = continuous).
    Negotiated(u32),
    /// 'R': start now.
    Go,
    /// 'W': wait for the last client.
    Wait,
    /// 'E': rejected.
    Reject,
    /// An extended receiver's answer to the probe: what it serves.
    Features(Features),
    /// Any other answer to the probe (0 or more: a stock receiver's own `-t`).
    NotExtended(i32),
    /// The receiver will count and close this test's connections (`CONNECT_RATE`).
    ConnectRateTaken,
    /// The receiver will send its report at the end (`WANT_REPORT`).
    ReportPromised,
    /// The receiver will open the window at the instant given (`START_AT`).
    StartAtTaken,
}

/// An integer that makes no sense in the phase it arrived in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unexpected {
    /// The raw value.
    pub value: i32,
    /// What was expected instead.
    pub expected: &'static str,
}

impl Unexpected {
    /// What kind of peer sends these four bytes, when they are text: no ntttcp value is
    /// (every message but a cycle time is one letter in a big-endian integer).
    fn peer_kind(&self) -> Option<String> {
        let bytes = self.value.to_be_bytes();
        if !bytes.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
            return None;
        }
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let kind = match &bytes {
            b"HTTP" => " (an HTTP server)",
            b"SSH-" => " (an SSH server)",
            b"220 " | b"220-" => " (an FTP or mail server)",
            _ => "",
        };
        Some(format!("text \"{text}\"{kind}"))
    }
}

impl fmt::Display for Unexpected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(kind) = self.peer_kind() {
            return write!(
                f,
                "the peer on the sync port is not ntttcp: it sent {kind} while {} was due \
                 (check the address and -p)",
                self.expected
            );
        }
        write!(
            f,
            "unexpected sync message {} (0x{:08x}) while waiting for {}",
            self.value, self.value, self.expected
        )
    }
}

impl std::error::Error for Unexpected {}

/// Big-endian wire form of any message value.
pub(crate) fn encode(value: i32) -> [u8; 4] {
    value.to_be_bytes()
}

/// Value of a 4-byte wire message.
pub(crate) fn decode(bytes: [u8; 4]) -> i32 {
    i32::from_be_bytes(bytes)
}

impl Request {
    /// The integer sent on the wire.
    pub(crate) fn value(self) -> i32 {
        match self {
            Self::Query => QUERY,
            Self::Propose(secs) => secs.min(i32::MAX as u32) as i32,
            Self::Start => START,
            Self::StartLast => START_LAST,
            Self::End => END,
            Self::Probe => PROBE,
            Self::ConnectRate => CONNECT_RATE,
            Self::WantReport => WANT_REPORT,
            Self::StartAt => START_AT,
        }
    }

    /// Reads `value` as what the receiver expects in `phase`.
    pub(crate) fn decode(phase: RequestPhase, value: i32) -> Result<Self, Unexpected> {
        let unexpected = |expected| Unexpected { value, expected };
        match (phase, value) {
            (RequestPhase::Query, QUERY) => Ok(Self::Query),
            (RequestPhase::Query, _) => Err(unexpected("a state query ('X')")),
            (RequestPhase::Proposal, v) if v >= 0 => Ok(Self::Propose(v as u32)),
            (RequestPhase::Proposal, PROBE) => Ok(Self::Probe),
            (RequestPhase::Proposal, CONNECT_RATE) => Ok(Self::ConnectRate),
            (RequestPhase::Proposal, WANT_REPORT) => Ok(Self::WantReport),
            (RequestPhase::Proposal, START_AT) => Ok(Self::StartAt),
            (RequestPhase::Proposal, _) => Err(unexpected("a cycle time in seconds")),
            (RequestPhase::Start, START) => Ok(Self::Start),
            (RequestPhase::Start, START_LAST) => Ok(Self::StartLast),
            (RequestPhase::Start | RequestPhase::Running, QUERY) => Ok(Self::Query),
            (RequestPhase::Start | RequestPhase::Running, END) => Ok(Self::End),
            (RequestPhase::Start, _) => Err(unexpected("a start request ('R' or 'L')")),
            (RequestPhase::Running, _) => Err(unexpected("an end request ('E')")),
        }
    }
}

impl Reply {
    /// The integer sent on the wire.
    pub(crate) fn value(self) -> i32 {
        match self {
            Self::State(s) => s as i32,
            Self::Negotiated(secs) => secs.min(i32::MAX as u32) as i32,
            Self::Go => START,
            Self::Wait => WAIT,
            Self::Reject => END,
            Self::Features(f) => {
                let [a, b, c] = FEATURES_TAG;
                i32::from_be_bytes([a, b, c, f.0])
            }
            Self::NotExtended(v) => v,
            Self::ConnectRateTaken => CONNECT_RATE,
            Self::ReportPromised => WANT_REPORT,
            Self::StartAtTaken => START_AT,
        }
    }

    /// Reads `value` as what the sender expects in `phase`.
    pub(crate) fn decode(phase: ReplyPhase, value: i32) -> Result<Self, Unexpected> {
        let unexpected = |expected| Unexpected { value, expected };
        match (phase, value) {
            (ReplyPhase::State, 11) => Ok(Self::State(State::NotStarted)),
            (ReplyPhase::State, 12) => Ok(Self::State(State::Running)),
            (ReplyPhase::State, 13) => Ok(Self::State(State::Finished)),
            (ReplyPhase::State, _) => Err(unexpected("the receiver state (11, 12 or 13)")),
            (ReplyPhase::Negotiated, v) if v >= 0 => Ok(Self::Negotiated(v as u32)),
            (ReplyPhase::Negotiated, _) => Err(unexpected("the negotiated cycle time")),
            (ReplyPhase::Start, START) => Ok(Self::Go),
            (ReplyPhase::Start, WAIT) => Ok(Self::Wait),
            (ReplyPhase::Start, END) => Ok(Self::Reject),
            (ReplyPhase::Start, _) => Err(unexpected("'R', 'W' or 'E'")),
            (ReplyPhase::ConnectRate, CONNECT_RATE) => Ok(Self::ConnectRateTaken),
            (ReplyPhase::ConnectRate, _) => Err(unexpected("the connection-rate answer")),
            (ReplyPhase::WantReport, WANT_REPORT) => Ok(Self::ReportPromised),
            (ReplyPhase::WantReport, _) => Err(unexpected("the answer to the report request")),
            (ReplyPhase::StartAt, START_AT) => Ok(Self::StartAtTaken),
            (ReplyPhase::StartAt, _) => Err(unexpected("the answer to the start instant")),
            (ReplyPhase::Probe, v) => {
                let [a, b, c, bits] = v.to_be_bytes();
                Ok(if [a, b, c] == FEATURES_TAG {
                    Self::Features(Features(bits))
                } else {
                    Self::NotExtended(v)
                })
            }
        }
    }
}

/// The receiver's negotiation rule (ntttcp-for-linux 2.3): a proposal of 0 or a
/// continuous receiver gives 0; otherwise the larger of the proposal and the receiver's
/// own duration. (The receiver's warm-up and cool-down do not enter, as upstream.)
pub(crate) fn negotiate(proposal: u32, receiver_duration: u32) -> u32 {
    if proposal == 0 || receiver_duration == 0 {
        0
    } else {
        proposal.max(receiver_duration)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_on_the_sync_port_names_the_kind_of_peer() {
        let said = |bytes: &[u8; 4]| {
            let value = i32::from_be_bytes(*bytes);
            Reply::decode(ReplyPhase::State, value)
                .unwrap_err()
                .to_string()
        };
        let http = said(b"HTTP");
        assert!(
            http.starts_with(
                "the peer on the sync port is not ntttcp: it sent text \"HTTP\" (an HTTP server)"
            ),
            "{http}"
        );
        assert!(said(b"SSH-").contains("(an SSH server)"));
        assert!(said(b"abcd").contains("it sent text \"abcd\" while"));
        let number = said(&[0, 0, 0, 0x63]);
        assert!(
            number.starts_with("unexpected sync message 99 (0x00000063)"),
            "{number}"
        );
    }

    #[test]
    fn wire_bytes_match_the_observed_capture() {
        // ntttcp-for-linux's observed exchange: 'X', state 11, proposal 3, 'R', 'E', state 13.
        assert_eq!(encode(Request::Query.value()), [0, 0, 0, 0x58]);
        assert_eq!(
            encode(Reply::State(State::NotStarted).value()),
            [0, 0, 0, 0x0b]
        );
        assert_eq!(encode(Request::Propose(3).value()), [0, 0, 0, 3]);
        assert_eq!(encode(Request::Start.value()), [0, 0, 0, 0x52]);
        assert_eq!(encode(Reply::Go.value()), [0, 0, 0, 0x52]);
        assert_eq!(encode(Request::End.value()), [0, 0, 0, 0x45]);
        assert_eq!(
            encode(Reply::State(State::Finished).value()),
            [0, 0, 0, 0x0d]
        );
        assert_eq!(encode(Reply::Wait.value()), [0, 0, 0, 0x57]);
        assert_eq!(encode(Request::StartLast.value()), [0, 0, 0, 0x4c]);
        assert_eq!(decode([0, 0, 0x01, 0x2c]), 300);
        assert_eq!(
            encode(Request::Propose(u32::MAX).value()),
            [0x7f, 0xff, 0xff, 0xff]
        );
    }

    #[test]
    fn colliding_cycle_times_decode_by_phase() {
        for secs in [69, 76, 82, 88] {
            assert_eq!(
                Request::decode(RequestPhase::Proposal, secs),
                Ok(Request::Propose(secs as u32))
            );
            assert_eq!(
                Reply::decode(ReplyPhase::Negotiated, secs),
                Ok(Reply::Negotiated(secs as u32))
            );
        }
        assert_eq!(Request::decode(RequestPhase::Start, 82), Ok(Request::Start));
        assert_eq!(
            Request::decode(RequestPhase::Start, 76),
            Ok(Request::StartLast)
        );
        assert_eq!(Request::decode(RequestPhase::Running, 69), Ok(Request::End));
        assert_eq!(
            Request::decode(RequestPhase::Running, 88),
            Ok(Request::Query)
        );
    }

    #[test]
    fn out_of_phase_values_are_errors() {
        assert!(Request::decode(RequestPhase::Query, 3).is_err());
        assert!(Request::decode(RequestPhase::Proposal, -1).is_err());
        assert!(Request::decode(RequestPhase::Start, 3).is_err());
        assert!(Request::decode(RequestPhase::Running, 82).is_err());
        assert!(Reply::decode(ReplyPhase::State, 82).is_err());
        assert!(Reply::decode(ReplyPhase::Negotiated, -5).is_err());
        // A stock receiver answers 'L' without -M with a stale value: not a start.
        let e = Reply::decode(ReplyPhase::Start, 5).unwrap_err();
        assert!(e.to_string().contains("'R', 'W' or 'E'"), "{e}");
        assert_eq!(Reply::decode(ReplyPhase::Start, 69), Ok(Reply::Reject));
    }

    #[test]
    fn any_value_in_any_phase_decodes_or_errs_without_panicking() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut values: Vec<i32> = vec![i32::MIN, -1, 0, 11, 12, 13, 69, 76, 82, 87, 88, i32::MAX];
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(x as i32);
        }
        let request_phases = [
            RequestPhase::Query,
            RequestPhase::Proposal,
            RequestPhase::Start,
            RequestPhase::Running,
        ];
        let reply_phases = [
            ReplyPhase::State,
            ReplyPhase::Negotiated,
            ReplyPhase::Start,
            ReplyPhase::Probe,
            ReplyPhase::ConnectRate,
            ReplyPhase::WantReport,
            ReplyPhase::StartAt,
        ];
        for v in values {
            for p in request_phases {
                // Whatever decodes must encode back to the same integer.
                if let Ok(r) = Request::decode(p, v) {
                    assert_eq!(r.value(), v, "{p:?} {v}");
                }
            }
            for p in reply_phases {
                if let Ok(r) = Reply::decode(p, v) {
                    assert_eq!(r.value(), v, "{p:?} {v}");
                }
            }
            assert_eq!(decode(encode(v)), v);
        }
    }

    #[test]
    fn the_probe_is_read_apart_from_any_proposal_and_its_answers_apart_from_a_stock_one() {
        const { assert!(PROBE < 0, "a stock sender never proposes a negative cycle") };
        assert_eq!(encode(PROBE), [0xA7, b'N', b'T', 1]);
        assert_eq!(
            Request::decode(RequestPhase::Proposal, PROBE),
            Ok(Request::Probe)
        );
        // Any other negative proposal is still an error, and the probe means nothing
        // in the other phases.
        assert!(Request::decode(RequestPhase::Proposal, PROBE + 1).is_err());
        assert!(Request::decode(RequestPhase::Start, PROBE).is_err());
        let ours = Reply::Features(Features::ALL);
        assert_eq!(Reply::decode(ReplyPhase::Probe, ours.value()), Ok(ours));
        assert_eq!(
            ours.value().to_be_bytes(),
            [0xA8, b'N', b'T', 1 | 2 | 4 | 8 | 16 | 32]
        );
        assert_eq!(encode(Request::WantReport.value()), [0xAA, b'N', b'T', 1]);
        assert_eq!(
            Request::decode(RequestPhase::Proposal, WANT_REPORT),
            Ok(Request::WantReport)
        );
        assert_eq!(
            Reply::decode(ReplyPhase::WantReport, Reply::ReportPromised.value()),
            Ok(Reply::ReportPromised)
        );
        assert_eq!(encode(REPORT_FRAME), [0xAB, b'N', b'T', 1]);
        assert_eq!(encode(Request::ConnectRate.value()), [0xA9, b'N', b'T', 1]);
        assert_eq!(
            Request::decode(RequestPhase::Proposal, CONNECT_RATE),
            Ok(Request::ConnectRate)
        );
        assert_eq!(
            Reply::decode(ReplyPhase::ConnectRate, Reply::ConnectRateTaken.value()),
            Ok(Reply::ConnectRateTaken)
        );
        // A stock or earlier receiver never gets here; anything else is an error.
        assert!(Reply::decode(ReplyPhase::ConnectRate, 3).is_err());
        // A stock receiver answers the probe with its own -t, 0 or more.
        for stock in [0, 3, 60, 82, i32::MAX] {
            assert_eq!(
                Reply::decode(ReplyPhase::Probe, stock),
                Ok(Reply::NotExtended(stock))
            );
        }
        assert!(Features(3).has(Features::REQUEST_RESPONSE));
        assert!(!Features(2).has(Features::REQUEST_RESPONSE));
        // An extended receiver of an earlier build (request/response and reverse only).
        assert!(!Features(3).has(Features::BIDIR));
    }

    #[test]
    fn negotiation_rule() {
        assert_eq!(negotiate(3, 5), 5);
        assert_eq!(negotiate(12, 10), 12);
        assert_eq!(negotiate(0, 10), 0);
        assert_eq!(negotiate(10, 0), 0);
        assert_eq!(negotiate(88, 60), 88);
    }
}
