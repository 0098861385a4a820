//! The texts around the flag list (`-h`, `--help`) and the value parsers of the flags that
//! take seconds, milliseconds or one of a few words.

use std::time::Duration;

use super::dialect::WINDOWS_FLAGS;
use super::values::ByteSize;
use crate::config::{IoMode, Placement};
use crate::report::Format;

/// Under `-h`: where the rest is.
pub(super) const AFTER_SHORT_HELP: &str = "\
The flags people use most; every flag, grouped, with the Windows NTttcp spellings and the
exit statuses: ntttcp --help (or man ntttcp, after ntttcp --generate man).

Examples:
  receiver:  ntttcp -r -m 4,*,10.0.0.5 -t 300
  sender:    ntttcp -s -m 4,*,10.0.0.5 -t 300
  one host:  ntttcp --loopback -t 5

Exit status: 0 completed, 1 failure, 2 usage error, 3 below --min-throughput, 130 interrupted.";

/// Under `--help`: dialects, examples, exit statuses, and the Windows spellings.
pub(super) fn after_long_help() -> String {
    format!(
        "{AFTER_HELP}\n\nWindows NTttcp spellings (one dash, any letter case), and what they mean here:\n{}",
        spellings()
    )
}

const AFTER_HELP: &str = "\
Dialects: a line is read as Windows NTttcp when it contains a Windows-only spelling
(-ns, -wu, -cd, -sb, -rb, -ndl, -nic, -xml, -hpt, -to, -sp, ...; any letter case), and
as ntttcp-for-linux 1.4.3 otherwise; --dialect linux|windows forces it. Letters that
differ: -P is the port count on Linux but the base port (-p) on Windows; -l is
connections per thread on Linux but the buffer length on Windows; -N is no-sync on Linux
but a buffer count on Windows; -n is threads per port on Linux. Windows multi-letter
flags are written with one dash (-ns, -wu 2) and match whole words only.

Examples:
  receiver:  ntttcp -r -m 4,*,10.0.0.5 -t 300
  sender:    ntttcp -s -m 4,*,10.0.0.5 -t 300
  no sync:   ntttcp -r -m 4,*,10.0.0.5 -N -t 60   /   ntttcp -s -m 4,*,10.0.0.5 -ns -t 60
  one host:  ntttcp --loopback -t 5

Exit status: 0 test completed, 1 runtime failure or a test the peer ended early (results
measured so far are still printed), 2 usage error, 3 below --min-throughput, 130
interrupted by Ctrl+C, SIGTERM or SIGHUP (results printed).";

/// What `--generate` writes.
pub(crate) const GENERATE: [&str; 5] = [
    "man",
    "complete-bash",
    "complete-zsh",
    "complete-fish",
    "complete-powershell",
];

/// `--format`'s value (one of the possible values clap lists and checks).
pub(super) fn format_of(s: String) -> Format {
    match s.as_str() {
        "linux" => Format::Linux,
        "json" => Format::Json,
        "jsonl" => Format::Jsonl,
        _ => Format::Windows,
    }
}

/// Windows `-to`: whole milliseconds, 0 meaning one hour.
pub(super) fn parse_ms(s: &str) -> Result<u64, String> {
    s.parse()
        .map_err(|_| format!("'{s}' is not a whole number of milliseconds (0 = one hour)"))
}

/// Whole seconds, 0 or more (`-t 0` is continuous), at most u32's.
pub(super) fn parse_secs(s: &str) -> Result<u32, String> {
    let digits = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    s.parse().map_err(|_| match digits {
        true => format!("'{s}' seconds is more than the limit of {} s", u32::MAX),
        false => format!("'{s}' is not a whole number of seconds (0 or more)"),
    })
}

/// `--congestion`: an algorithm's name as the kernel spells it (whether this kernel has
/// it is the host's to say, after parsing).
pub(super) fn parse_congestion(s: &str) -> Result<crate::config::Congestion, String> {
    crate::config::Congestion::new(s).ok_or_else(|| {
        format!(
            "'{s}' is not a congestion control name (up to {} letters, digits, '_' or '-', \
             as in cubic, bbr, reno)",
            crate::config::Congestion::MAX
        )
    })
}

/// `--start-at`: Unix seconds (a fraction allowed) or an RFC 3339 time with its offset.
/// Whether it lies ahead is the host's clock's to say, after parsing.
pub(super) fn parse_start_at(s: &str) -> Result<std::time::SystemTime, String> {
    let bad = || {
        format!(
            "'{s}' is neither Unix seconds nor an RFC 3339 time (such as \
             2026-12-07T20:00:00Z)"
        )
    };
    if s.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        let secs: f64 = s.parse().map_err(|_| bad())?;
        let d = std::time::Duration::try_from_secs_f64(secs).map_err(|_| bad())?;
        return std::time::UNIX_EPOCH.checked_add(d).ok_or_else(bad);
    }
    let t: jiff::Timestamp = s.parse().map_err(|_| bad())?;
    let micros = u64::try_from(t.as_microsecond()).map_err(|_| bad())?;
    Ok(std::time::UNIX_EPOCH + std::time::Duration::from_micros(micros))
}

/// `--tos`: the type-of-service byte, decimal or `0x` hex (DSCP 46, EF, is 0xb8).
pub(super) fn parse_tos(s: &str) -> Result<u8, String> {
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u8::from_str_radix(hex, 16),
        None => s.parse(),
    };
    v.map_err(|_| format!("'{s}' is not a type-of-service byte (0 to 255, or 0x00 to 0xff)"))
}

/// `-p`: a port number in digits (a minus-led `-0` is refused as typed, not read as 0).
pub(super) fn parse_port(s: &str) -> Result<u16, String> {
    s.parse()
        .map_err(|_| format!("'{s}' is not a port number (1 to 65535)"))
}

/// `-b`: bytes per send or receive, one range however the value misses it.
pub(super) fn parse_buffer(s: &str) -> Result<ByteSize, String> {
    let range = || {
        format!(
            "'{s}' is not a size from 1 byte to 1G ({} bytes) per send or receive",
            crate::config::MAX_BUFFER
        )
    };
    match s.parse::<ByteSize>() {
        Ok(b) if b.0 <= crate::config::MAX_BUFFER as u64 => Ok(b),
        Ok(_) => Err(range()),
        Err(e) if e.contains("out of range") => Err(range()),
        Err(e) => Err(e),
    }
}

pub(super) fn parse_interval(s: &str) -> Result<Duration, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.1..=3600.0).contains(&v) => Ok(Duration::from_secs_f64(v)),
        _ => Err(format!("'{s}' is not a number of seconds from 0.1 to 3600")),
    }
}

/// `--placement`'s value (one of the possible values clap lists and checks).
pub(super) fn placement_of(s: String) -> Placement {
    match s.as_str() {
        "auto" => Placement::Auto,
        "none" => Placement::None,
        "opposite" => Placement::Opposite,
        _ => Placement::RoundRobin,
    }
}

/// `--io`'s value (one of the possible values clap lists and checks).
pub(super) fn io_mode_of(s: String) -> IoMode {
    match s.as_str() {
        "blocking" => IoMode::Blocking,
        "async" => IoMode::Async,
        _ => IoMode::Auto,
    }
}

/// On an ntttcp-for-linux line, what a token clap refused means in Windows NTttcp: a hint
/// to add to the error, if it is one of NTttcp's (`-T`, `-S`: NTttcp ignores letter
/// case), or `-l` given a size (NTttcp's buffer length, connections per thread here).
pub(crate) fn windows_hint(message: &str) -> Option<String> {
    let force = "read the line as Windows NTttcp's with --dialect windows";
    if let Some(rest) = message.strip_prefix("unexpected argument '-") {
        let token = rest.split('\'').next()?;
        let f = WINDOWS_FLAGS
            .iter()
            .find(|f| f.name == token.to_ascii_lowercase() && f.long.is_some())?;
        return Some(format!(
            "'-{token}' is Windows NTttcp's -{} (--{}): {force}",
            f.name,
            f.long.unwrap_or_default()
        ));
    }
    let value = message
        .strip_prefix("invalid value '")?
        .split('\'')
        .next()?;
    let size = value.ends_with(['K', 'M', 'G', 'k', 'm', 'g']);
    (message.contains("for '-l'") && size).then(|| {
        format!(
            "-l is connections per thread on an ntttcp-for-linux line (-b sets the buffer \
             size); Windows NTttcp's -l is the buffer length: {force}"
        )
    })
}

/// The Windows NTttcp spellings as typed, each with the flag it means here (or why it is
/// refused), for `--help`.
pub(crate) fn spellings() -> String {
    let mut out = String::new();
    for f in WINDOWS_FLAGS {
        let line = match f.long {
            Some(long) => format!("  -{:<5} --{long}\n", f.name),
            None => format!("  -{:<5} not supported: {}\n", f.name, f.what),
        };
        out.push_str(&line);
    }
    out
}
