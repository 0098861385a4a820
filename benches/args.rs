//! Command-line options of the benchmarks (each bench is its own crate and includes this).

/// The value after `name` in `args`, or `default`.
pub(crate) fn opt(args: &[String], name: &str, default: &str) -> String {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| default.to_string())
}

/// Whether `flag` is among `args`.
pub(crate) fn has(args: &[String], flag: &str) -> bool {
    args.iter().any(|a| a == flag)
}
