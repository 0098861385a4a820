//! Typed command-line values: sizes (`64K`), mappings (`4,*,10.0.0.5`) and CPU specs.
//!
//! Each type parses with `FromStr` and fails loudly: the C tools run numbers through
//! `atoi`, so `-t abc` silently meant "continuous"; here it is an error naming the value.
//! Nothing in this module knows about clap or about which flag a value belongs to.

use std::str::FromStr;

/// A byte count with an optional 1024-based suffix: `65536`, `64K`, `1.5k`, `1M`, `1G`.
///
/// Both originals read `K/M/G` as powers of 1024 for buffer sizes, in either letter case,
/// and accept fractions (`1.5k` = 1536). A value must be at least one byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ByteSize(pub u64);

impl FromStr for ByteSize {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let (number, suffix) = match s.char_indices().last() {
            Some((i, c)) if c.is_ascii_alphabetic() => (&s[..i], Some(c)),
            _ => (s, None),
        };
        let value: f64 = number
            .parse()
            .map_err(|_| format!("'{s}' is not a size (examples: 65536, 64K, 1M)"))?;
        let multiplier: u64 = match suffix.map(|c| c.to_ascii_lowercase()) {
            None => 1,
            Some('k') => 1 << 10,
            Some('m') => 1 << 20,
            Some('g') => 1 << 30,
            Some(c) => {
                return Err(format!(
                    "unknown size suffix '{c}' in '{s}' (use K, M or G)"
                ));
            }
        };
        let bytes = value * multiplier as f64;
        if !bytes.is_finite() || bytes < 1.0 || bytes > (1u64 << 40) as f64 {
            return Err(format!("size '{s}' is out of range (1 byte to 1T)"));
        }
        Ok(Self(bytes.round() as u64))
    }
}

/// A rate in bits per second with an optional 1000-based suffix and unit: `5G`, `500M`,
/// `10Gbps`, `1e9` (rates are decimal in both originals, unlike sizes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rate(pub f64);

impl FromStr for Rate {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let lower = t.to_ascii_lowercase();
        let t = lower
            .strip_suffix("bit/s")
            .or_else(|| lower.strip_suffix("bps"))
            .unwrap_or(&lower);
        let (number, multiplier) = match t.chars().last() {
            Some('k') => (&t[..t.len() - 1], 1e3),
            Some('m') => (&t[..t.len() - 1], 1e6),
            Some('g') => (&t[..t.len() - 1], 1e9),
            Some('t') => (&t[..t.len() - 1], 1e12),
            _ => (t, 1.0),
        };
        let v: f64 = number
            .parse()
            .map_err(|_| format!("'{s}' is not a rate (examples: 5G, 500M, 10Gbps)"))?;
        if !v.is_finite() || v < 0.0 {
            return Err(format!("rate '{s}' is out of range"));
        }
        Ok(Self(v * multiplier))
    }
}

/// A socket-buffer size (`-sb`, `-rb`): `-1` is NTttcp's "leave it to the kernel"
/// (None), otherwise a size with K/M/G = 1024; 0 is allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SockBuf(pub Option<usize>);

impl FromStr for SockBuf {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "-1" => Ok(Self(None)),
            "0" => Ok(Self(Some(0))),
            t => t
                .parse::<ByteSize>()
                .map(|b| Self(Some(b.0 as usize)))
                .map_err(|_| {
                    format!("'{t}' is not a size: -1 (the kernel's default), 0, or 1 byte to 1T")
                }),
        }
    }
}

pub(crate) use crate::config::CpuSpec;

/// Largest thread count one mapping may ask for (the ntttcp-for-linux limit).
pub(crate) const MAX_MAPPING_THREADS: u32 = 512;

/// A Windows-style mapping `threads,cpu,host`.
///
/// ntttcp-for-linux also accepts the short forms `8` and `8,*` (host unchanged), so the
/// CPU and host fields are optional here; the host may be an address or a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mapping {
    /// Number of threads (= receiver ports) in this mapping, at least 1.
    pub threads: u32,
    /// CPU placement of those threads.
    pub cpu: CpuSpec,
    /// Receiver address (sender) or local bind address (receiver), if given.
    pub host: Option<String>,
}

impl FromStr for Mapping {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let fields: Vec<&str> = s.split(',').map(str::trim).collect();
        if s.trim().is_empty() {
            return Err("empty mapping (expected threads,cpu,host such as 4,*,10.0.0.5)".into());
        }
        if fields.len() > 3 {
            return Err(format!(
                "mapping '{s}' has {} fields (expected threads,cpu,host)",
                fields.len()
            ));
        }
        let threads: u32 = fields[0]
            .parse()
            .map_err(|_| format!("thread count '{}' is not a number", fields[0]))?;
        if threads == 0 || threads > MAX_MAPPING_THREADS {
            return Err(format!(
                "thread count {threads} is out of range (1 to {MAX_MAPPING_THREADS})"
            ));
        }
        let cpu = match fields.get(1) {
            Some(c) => c.parse()?,
            None => CpuSpec::Any,
        };
        let host = match fields.get(2) {
            Some(&"") => return Err("empty host in mapping".into()),
            Some(h) => Some(strip_brackets(h).to_string()),
            None => None,
        };
        Ok(Self { threads, cpu, host })
    }
}

/// `[::1]` → `::1`, so IPv6 literals can be written either way.
pub(crate) fn strip_brackets(host: &str) -> &str {
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes() {
        let ok = [
            ("65536", 65536),
            ("64K", 65536),
            ("64k", 65536),
            ("1M", 1 << 20),
            ("1m", 1 << 20),
            ("2G", 2 << 30),
            ("1.5k", 1536),
            ("1", 1),
        ];
        for (input, want) in ok {
            assert_eq!(input.parse::<ByteSize>(), Ok(ByteSize(want)), "{input}");
        }
        for bad in ["", "abc", "64Q", "0", "-1", "0.1", "K", "1.5.2k", "2T"] {
            assert!(bad.parse::<ByteSize>().is_err(), "{bad} should fail");
        }
    }

    #[test]
    fn rates_are_decimal_bits() {
        let ok = [
            ("5G", 5e9),
            ("5g", 5e9),
            ("500M", 5e8),
            ("10Gbps", 1e10),
            ("1.5k", 1500.0),
            ("1e9", 1e9),
            ("2 Gbit/s", f64::NAN),
        ];
        for (input, want) in ok {
            match input.parse::<Rate>() {
                Ok(Rate(v)) => assert_eq!(v, want, "{input}"),
                Err(_) => assert!(want.is_nan(), "{input} should parse"),
            }
        }
        for bad in ["", "fast", "-1G", "5X"] {
            assert!(bad.parse::<Rate>().is_err(), "{bad} should fail");
        }
    }

    #[test]
    fn socket_buffer_sizes() {
        assert_eq!("-1".parse(), Ok(SockBuf(None)));
        assert_eq!("0".parse(), Ok(SockBuf(Some(0))));
        assert_eq!("1M".parse(), Ok(SockBuf(Some(1 << 20))));
        assert!("-2".parse::<SockBuf>().is_err());
    }

    #[test]
    fn cpu_specs() {
        assert_eq!("*".parse(), Ok(CpuSpec::Any));
        assert_eq!("3".parse(), Ok(CpuSpec::Cpu(3)));
        assert!("x".parse::<CpuSpec>().is_err());
        assert!("-1".parse::<CpuSpec>().is_err());
        assert_eq!(CpuSpec::Any.to_string(), "*");
        assert_eq!(CpuSpec::Cpu(1).to_string(), "1");
    }

    #[test]
    fn mappings() {
        let m: Mapping = "4,*,10.0.0.5".parse().unwrap();
        assert_eq!(
            m,
            Mapping {
                threads: 4,
                cpu: CpuSpec::Any,
                host: Some("10.0.0.5".into())
            }
        );
        let m: Mapping = "2,1,[::1]".parse().unwrap();
        assert_eq!((m.cpu, m.host.as_deref()), (CpuSpec::Cpu(1), Some("::1")));
        let m: Mapping = "8".parse().unwrap();
        assert_eq!((m.threads, m.cpu, m.host), (8, CpuSpec::Any, None));
        let m: Mapping = "8,*".parse().unwrap();
        assert_eq!(m.host, None);
        for bad in [
            "",
            "0,*,1.2.3.4",
            "x,*,1.2.3.4",
            "513,*,1.2.3.4",
            "4,q,1.2.3.4",
            "4,*,1.2.3.4,x",
            "4,*,",
        ] {
            assert!(bad.parse::<Mapping>().is_err(), "{bad} should fail");
        }
    }
}
