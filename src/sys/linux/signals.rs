//! SIGINT, SIGTERM and SIGHUP, delivered to a thread of their own (signal-hook).

/// Calls `each` on a thread of its own for every SIGINT, SIGTERM or SIGHUP from now on;
/// none of them ends the process any more.
pub(crate) fn on_interrupt(mut each: impl FnMut() + Send + 'static) -> std::io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for _ in signals.forever() {
                each();
            }
        })?;
    Ok(())
}
