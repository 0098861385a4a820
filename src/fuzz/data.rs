//! The bytes that open a data connection, a request/response connection's requests, and
//! the UDP stamps with the accounting that follows them.

use std::net::SocketAddr;

use arbitrary::Unstructured;

use crate::data::header::{self, Header, Opening, Requests};
use crate::data::udp_accounting::{Accounting, STAMP_LEN, Stamp};

/// The first bytes of a data connection: a header reads back to its own bytes, any
/// shorter prefix of one is `Partial`, and once bytes are payload more never make them
/// a header.
pub fn data_opening(data: &[u8]) {
    let whole = Header::read(data);
    if let Opening::Header(h) = whole {
        assert_eq!(h.encode()[..], data[..header::LEN]);
        assert_eq!(Header::read(&h.encode()), whole);
    }
    for cut in 0..data.len().min(header::LEN + 1) {
        match (Header::read(&data[..cut]), whole) {
            (Opening::Payload, w) => assert_eq!(w, Opening::Payload, "{cut}"),
            (Opening::Header(h), w) => assert_eq!(w, Opening::Header(h), "{cut}"),
            (Opening::Partial, Opening::Header(_)) => assert!(cut < header::LEN),
            (Opening::Partial, _) => {}
        }
    }
}

/// A request/response connection's header, then reads of any sizes: every whole request
/// is answered once, and no more than was asked.
pub fn rr_framing(data: &[u8]) {
    let Opening::Header(Header::Echo { size }) = Header::read(data) else {
        return;
    };
    let mut u = Unstructured::new(&data[header::LEN..]);
    let mut requests = Requests::new(size as usize);
    let (mut read, mut answered) = (0u64, 0u64);
    while let (false, Ok(n)) = (u.is_empty(), u.arbitrary::<u32>()) {
        read += u64::from(n);
        answered += requests.read(n as usize) as u64;
        assert_eq!(answered, read / u64::from(size), "after {read} bytes");
    }
}

/// One datagram of a fuzz case: stamped (one of a few sessions, any sequence number and
/// send time, any length past the stamp) or any bytes at all.
fn datagram(u: &mut Unstructured<'_>) -> arbitrary::Result<Vec<u8>> {
    if u.ratio(1, 8)? {
        let len = u.int_in_range(0..=32)?;
        return Ok(u.bytes(len)?.to_vec());
    }
    let stamp = Stamp {
        session: u.int_in_range(0..=2)?,
        seq: match u.ratio(1, 16)? {
            true => u.arbitrary()?,
            false => u.int_in_range(0..=10_000)?,
        },
        sent_ns: u.arbitrary()?,
    };
    let mut d = vec![b'B'; STAMP_LEN + usize::from(u.int_in_range(0..=8u8)?)];
    stamp.write(&mut d);
    assert_eq!(Stamp::read(&d), Some(stamp), "a stamp reads back");
    Ok(d)
}

/// A stream of datagrams from a few peers, arriving at times that only go forward:
/// every datagram counts once, as received, duplicate or unstamped, and no more flows
/// are active than there are peers.
pub fn udp_accounting(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let mut acc = Accounting::default();
    let (mut now, mut datagrams) = (0u64, 0u64);
    while let (false, Ok(port), Ok(d), Ok(step)) = (
        u.is_empty(),
        u.int_in_range(1..=4u16),
        datagram(&mut u),
        u.int_in_range(0..=2_000_000_000u64),
    ) {
        now = now.saturating_add(step);
        acc.record(SocketAddr::from(([127, 0, 0, 1], port)), &d, now);
        datagrams += 1;
        if u.ratio(1, 4).unwrap_or(false) {
            acc.tick(now);
        }
        let t = acc.tally;
        assert_eq!(t.received + t.duplicates + t.unstamped, datagrams, "{t:?}");
        assert!(t.flows <= 4, "{t:?}");
    }
}
