//! Data buffers that start on a page boundary.
//!
//! The kernel copies a stream's bytes between its socket buffers and ours with
//! `rep movsb` on CPUs that have fast short string moves (FSRM). On an AMD EPYC of the
//! Zen 3 generation that copy ran three times slower into a buffer 16 bytes past a cache
//! line than into one on a line (one loopback stream 8-9 against 20-30 Gbit/s), and a
//! buffer of 128 KiB or more from the allocator starts 16 bytes past a page, since the
//! allocator maps it with its own header in front. A page boundary is on every line, so
//! every buffer the data paths read into or send from starts on one
//! (docs/benchmarks.md, "Where a buffer starts").

use std::cell::RefCell;
use std::io;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

/// The boundary a buffer starts on: a page, which is also on every cache line.
const PAGE: usize = 4096;

/// `len` elements of one byte each, the first on a page boundary.
#[derive(Debug)]
pub(crate) struct Aligned<T> {
    raw: Vec<T>,
    start: usize,
    len: usize,
}

impl<T> Aligned<T> {
    /// No bytes (a thread's buffer before its worker gives it one).
    pub(crate) const fn empty() -> Self {
        Self {
            raw: Vec::new(),
            start: 0,
            len: 0,
        }
    }
}

impl<T: Clone> Aligned<T> {
    /// `len` copies of `value` on a page boundary, or an error if the memory cannot be
    /// had (never an abort).
    pub(crate) fn filled(len: usize, value: T) -> io::Result<Self> {
        let mut raw = Vec::new();
        let want = len.checked_add(PAGE).ok_or_else(|| too_large(len))?;
        raw.try_reserve_exact(want).map_err(|_| too_large(len))?;
        raw.resize(want, value);
        // One-byte elements: the offset to the next page is under PAGE elements.
        let start = raw.as_ptr().align_offset(PAGE).min(PAGE);
        Ok(Self { raw, start, len })
    }
}

/// Bytes of a worker thread's fill.
pub(super) const FILL_LEN: usize = 4 << 20;

thread_local! {
    /// What a receiver's answering and reverse connections write: `'A'`s, made once per
    /// worker thread that needs them and shared by all its connections (only read), so a
    /// connection costs no buffer of its own whatever size its header asks for.
    static FILL: RefCell<Option<Arc<Aligned<u8>>>> = const { RefCell::new(None) };
}

/// This thread's `FILL`, made on its first use; an error when the memory cannot be had
/// (the connection that asked then ends).
pub(super) fn fill() -> io::Result<Arc<Aligned<u8>>> {
    FILL.with_borrow_mut(|kept| match kept {
        Some(fill) => Ok(Arc::clone(fill)),
        None => {
            let fill = Arc::new(Aligned::filled(FILL_LEN, b'A')?);
            *kept = Some(Arc::clone(&fill));
            Ok(fill)
        }
    })
}

fn too_large(len: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::OutOfMemory,
        format!("cannot allocate a {len}-byte buffer"),
    )
}

impl<T> Deref for Aligned<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        &self.raw[self.start..self.start + self.len]
    }
}

impl<T> DerefMut for Aligned<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.raw[self.start..self.start + self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::MaybeUninit;

    #[test]
    fn a_buffer_starts_on_a_page_and_holds_what_was_asked() {
        // Sizes on both sides of the allocator's mapping threshold (128 KiB).
        for len in [1, 4095, 65_536, 131_072, 1 << 20] {
            let b = Aligned::filled(len, b'A').unwrap();
            assert_eq!(b.as_ptr() as usize % PAGE, 0, "{len} bytes");
            assert_eq!(b.len(), len);
            assert!(b.iter().all(|&x| x == b'A'));
            let mut u = Aligned::filled(len, MaybeUninit::<u8>::uninit()).unwrap();
            assert_eq!(u.as_mut_ptr() as usize % PAGE, 0, "{len} uninit bytes");
            assert_eq!(u.len(), len);
        }
        assert!(Aligned::<u8>::empty().is_empty());
    }

    #[test]
    fn a_thread_makes_its_fill_once_on_a_page() {
        let first = fill().unwrap();
        assert_eq!(first.as_ptr() as usize % PAGE, 0);
        assert_eq!(first.len(), FILL_LEN);
        assert!(first.iter().all(|&x| x == b'A'));
        assert!(Arc::ptr_eq(&first, &fill().unwrap()), "made again");
        let other = std::thread::spawn(|| fill().unwrap().as_ptr() as usize);
        assert_ne!(
            other.join().unwrap(),
            first.as_ptr() as usize,
            "shared across threads"
        );
    }

    #[test]
    fn a_buffer_too_large_to_have_is_an_error_not_an_abort() {
        let e = Aligned::filled(usize::MAX - 1, 0u8).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::OutOfMemory);
        assert!(e.to_string().contains("cannot allocate"), "{e}");
    }
}
