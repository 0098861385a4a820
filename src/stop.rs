//! One-way flags shared by the control plane and the workers: "start sending", "stop",
//! "the user pressed Ctrl+C". A flag is set once and never cleared.
//!
//! Hot loops check it with one relaxed load; async code awaits it; blocking threads wait
//! on it with a timeout. Signals only set a flag: the process always ends by printing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use tokio::sync::watch;

#[derive(Debug)]
struct Inner {
    set: AtomicBool,
    tx: watch::Sender<bool>,
    lock: Mutex<bool>,
    cv: Condvar,
}

/// A cloneable one-way flag.
#[derive(Debug, Clone)]
pub(crate) struct Flag(Arc<Inner>);

impl Default for Flag {
    fn default() -> Self {
        Self::new()
    }
}

impl Flag {
    /// A new, unset flag.
    pub(crate) fn new() -> Self {
        Self(Arc::new(Inner {
            set: AtomicBool::new(false),
            tx: watch::Sender::new(false),
            lock: Mutex::new(false),
            cv: Condvar::new(),
        }))
    }

    /// Sets the flag and wakes every waiter.
    pub(crate) fn trigger(&self) {
        self.0.set.store(true, Ordering::Release);
        self.0.tx.send_replace(true);
        let mut set = self.0.lock.lock().unwrap_or_else(|p| p.into_inner());
        *set = true;
        self.0.cv.notify_all();
    }

    /// Whether the flag is set (cheap enough for a data loop).
    #[inline]
    pub(crate) fn is_set(&self) -> bool {
        self.0.set.load(Ordering::Relaxed)
    }

    /// Waits until the flag is set.
    pub(crate) async fn wait(&self) {
        let mut rx = self.0.tx.subscribe();
        // The sender lives as long as `self`, so this only returns once set.
        let _ = rx.wait_for(|set| *set).await;
    }

    /// Blocks up to `timeout` for the flag; returns whether it is set.
    pub(crate) fn wait_timeout(&self, timeout: Duration) -> bool {
        let set = self.0.lock.lock().unwrap_or_else(|p| p.into_inner());
        let (set, _) = self
            .0
            .cv
            .wait_timeout_while(set, timeout, |set| !*set)
            .unwrap_or_else(|p| p.into_inner());
        *set
    }
}

/// Signals that follow the first within this long are the same interruption: GNU
/// `timeout` sends SIGTERM to the process and then to its whole process group.
pub(crate) const SAME_INTERRUPTION: Duration = Duration::from_secs(1);

/// Sets `flag` on the first interruption (SIGINT, SIGTERM or SIGHUP; on Windows the
/// console's Ctrl+C, Ctrl+Break or close). The process never exits from one: every wait
/// after an interruption is bounded, so the figures measured so far are always printed; a
/// later interruption only says that they are on their way.
pub(crate) fn install_signal_handlers(flag: Flag) -> std::io::Result<()> {
    let mut first: Option<std::time::Instant> = None;
    let mut told = false;
    crate::sys::signals::on_interrupt(move || {
        let Some(at) = first else {
            first = Some(std::time::Instant::now());
            flag.trigger();
            return;
        };
        if at.elapsed() >= SAME_INTERRUPTION && !told {
            told = true;
            eprintln!("ntttcp: already stopping; the results measured so far follow");
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_wakes_blocking_and_async_waiters() {
        let f = Flag::new();
        assert!(!f.is_set());
        assert!(!f.wait_timeout(Duration::from_millis(5)));
        let g = f.clone();
        let (probe_tx, probe_rx) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            let _ = probe_tx.send(crate::sys::test_support::sleep_probe());
            g.wait_timeout(Duration::from_secs(10))
        });
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let h = f.clone();
        // The blocking-wake path: the waiter is asleep (on the condition variable, its
        // only wait after handing over its probe) before the flag is set, where the OS
        // lets us look (Linux); elsewhere the flag may come before or during the wait.
        let asleep = probe_rx
            .recv()
            .unwrap()
            .unwrap_or_else(|| Box::new(|| true));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !asleep() {
            assert!(
                std::time::Instant::now() < deadline,
                "the waiter never slept"
            );
            std::thread::yield_now();
        }
        f.trigger();
        assert!(t.join().unwrap());
        rt.block_on(async {
            tokio::time::timeout(Duration::from_secs(5), h.wait())
                .await
                .expect("async waiter woke");
        });
        assert!(f.is_set());
    }
}
