//! The console's control events (Ctrl+C, Ctrl+Break, closing the window), delivered to a
//! thread of their own.

use std::sync::Mutex;
use std::sync::mpsc::{Sender, channel};

use windows_sys::Win32::System::Console::SetConsoleCtrlHandler;

/// Where the handler forwards each event; set once, by `on_interrupt`.
static EVENTS: Mutex<Option<Sender<()>>> = Mutex::new(None);

/// Runs on a thread Windows creates for the event: forwards it, and says it was handled
/// so that Windows does not end the process at Ctrl+C or Ctrl+Break (closing the console
/// window ends it once the handlers have returned, whatever they say).
extern "system" fn handler(_event: u32) -> windows_sys::core::BOOL {
    let events = EVENTS.lock().unwrap_or_else(|p| p.into_inner());
    let forwarded = events.as_ref().is_some_and(|tx| tx.send(()).is_ok());
    i32::from(forwarded)
}

/// Calls `each` on a thread of its own for every Ctrl+C, Ctrl+Break or close event from
/// now on; none of them ends the process at once any more.
#[allow(unsafe_code)]
pub(crate) fn on_interrupt(mut each: impl FnMut() + Send + 'static) -> std::io::Result<()> {
    let (tx, rx) = channel();
    *EVENTS.lock().unwrap_or_else(|p| p.into_inner()) = Some(tx);
    // SAFETY: `handler` is a plain function that lives as long as the process.
    if unsafe { SetConsoleCtrlHandler(Some(handler), 1) } == 0 {
        return Err(std::io::Error::last_os_error());
    }
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for () in rx {
                each();
            }
        })?;
    Ok(())
}
