//! The header a data connection of one of our extension's tests opens with, so that the
//! receiver learns per connection what it carries: the first bytes of a plain stream are
//! payload (`'A'` from both ntttcp senders), which never begins with this header's zero
//! byte. Pure: no I/O here.

/// What every header begins with.
pub(crate) const MAGIC: [u8; 4] = [0x00, b'N', b'T', b'X'];
/// Header length on the wire.
pub(crate) const LEN: usize = 12;

/// What a connection carries after its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Header {
    /// Requests of `size` bytes, each to be echoed back whole.
    Echo {
        /// Bytes per request.
        size: u32,
    },
    /// The receiver sends on this connection, `size` bytes per write, and reads nothing.
    Reverse {
        /// Bytes per write.
        size: u32,
    },
    /// The receiver sends on this connection, `size` bytes per write, while it reads
    /// what the sender sends on it.
    Bidir {
        /// Bytes per write.
        size: u32,
    },
}

/// Kind byte of `Header::Echo`.
const ECHO: u8 = 1;
/// Kind byte of `Header::Reverse`.
const REVERSE: u8 = 2;
/// Kind byte of `Header::Bidir`.
const BIDIR: u8 = 3;

/// How the first bytes of a connection read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Opening {
    /// A whole header.
    Header(Header),
    /// Possibly a header: too few bytes yet to tell.
    Partial,
    /// Not a header of ours: payload of a plain stream.
    Payload,
}

impl Header {
    /// Wire form: magic, kind, three reserved zero bytes, the argument big-endian.
    pub(crate) fn encode(self) -> [u8; LEN] {
        let (kind, size) = match self {
            Self::Echo { size } => (ECHO, size),
            Self::Reverse { size } => (REVERSE, size),
            Self::Bidir { size } => (BIDIR, size),
        };
        let mut b = [0u8; LEN];
        b[..4].copy_from_slice(&MAGIC);
        b[4] = kind;
        b[8..].copy_from_slice(&size.to_be_bytes());
        b
    }

    /// Reads the first bytes of a connection. A header of a kind this build does not know,
    /// or with a zero size, is payload: counted, never acted on.
    pub(crate) fn read(first: &[u8]) -> Opening {
        let n = first.len().min(MAGIC.len());
        if first[..n] != MAGIC[..n] {
            return Opening::Payload;
        }
        if first.len() < LEN {
            return Opening::Partial;
        }
        let size = u32::from_be_bytes([first[8], first[9], first[10], first[11]]);
        match (first[4], &first[5..8], size) {
            (ECHO, [0, 0, 0], 1..) => Opening::Header(Self::Echo { size }),
            (REVERSE, [0, 0, 0], 1..) => Opening::Header(Self::Reverse { size }),
            (BIDIR, [0, 0, 0], 1..) => Opening::Header(Self::Bidir { size }),
            _ => Opening::Payload,
        }
    }
}

/// A request/response connection's requests as the receiver reads them: bytes as they
/// come, out whole requests of `size` bytes, each answered with `size` bytes (never more
/// answered than was asked).
#[derive(Debug)]
pub(crate) struct Requests {
    size: usize,
    pending: usize,
}

impl Requests {
    /// Requests of `size` bytes (a header never gives 0; 0 counts as 1).
    pub(crate) fn new(size: usize) -> Self {
        Self {
            size: size.max(1),
            pending: 0,
        }
    }

    /// Counts `n` more bytes read: how many requests they complete.
    pub(crate) fn read(&mut self, n: usize) -> usize {
        let whole = n / self.size + (self.pending + n % self.size) / self.size;
        self.pending = (self.pending + n % self.size) % self.size;
        whole
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_reads_back_and_plain_payload_is_never_one() {
        for r in [Header::Reverse { size: 131072 }, Header::Bidir { size: 1 }] {
            assert_eq!(Header::read(&r.encode()), Opening::Header(r));
        }
        assert_eq!(Header::Bidir { size: 2 }.encode()[4], 3);
        let h = Header::Echo { size: 65536 };
        let wire = h.encode();
        assert_eq!(&wire[..4], &[0, b'N', b'T', b'X']);
        assert_eq!(Header::read(&wire), Opening::Header(h));
        // Longer reads (the first request behind the header) read the same.
        let mut more = wire.to_vec();
        more.extend_from_slice(b"AAAA");
        assert_eq!(Header::read(&more), Opening::Header(h));
        for cut in 1..LEN {
            assert_eq!(Header::read(&wire[..cut]), Opening::Partial, "{cut}");
        }
        // Both ntttcp senders fill their buffers with 'A'; iperf sends digits.
        assert_eq!(Header::read(b"AAAAAAAAAAAAAAAA"), Opening::Payload);
        assert_eq!(Header::read(b"0123456789012345"), Opening::Payload);
        assert_eq!(Header::read(&[0, b'N', b'X']), Opening::Payload);
    }

    #[test]
    fn unknown_kinds_and_zero_sizes_are_payload() {
        let mut w = Header::Echo { size: 1 }.encode();
        w[4] = 9;
        assert_eq!(Header::read(&w), Opening::Payload);
        let mut w = Header::Echo { size: 1 }.encode();
        w[6] = 1;
        assert_eq!(Header::read(&w), Opening::Payload);
        let w = Header::Echo { size: 0 }.encode();
        assert_eq!(Header::read(&w), Opening::Payload);
    }
}
