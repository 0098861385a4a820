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

/// Checks `args` (the program's, name first) before anything runs: `--help` prints
/// `usage` and exits 0; an argument that is neither one of `options` (each takes a value)
/// nor one of `flags`, or an option without its value, prints one line naming it and the
/// usage, and exits 2. `--bench`, which cargo passes to every bench, is accepted.
pub(crate) fn check(args: &[String], options: &[&str], flags: &[&str], usage: &str) {
    if let Err(e) = unknown(args, options, flags) {
        if e == "--help" {
            println!("{usage}");
            std::process::exit(0);
        }
        eprintln!("bench: {e}\n{usage}");
        std::process::exit(2);
    }
}

/// The first argument `check` refuses, as the line it prints (`--help` as itself).
fn unknown(args: &[String], options: &[&str], flags: &[&str]) -> Result<(), String> {
    let mut rest = args.iter().skip(1);
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--help" | "-h" => return Err("--help".into()),
            "--bench" => {}
            a if flags.contains(&a) => {}
            a if options.contains(&a) => {
                if rest.next().is_none() {
                    return Err(format!("{a} needs a value"));
                }
            }
            a => return Err(format!("unknown argument `{a}`")),
        }
    }
    Ok(())
}

/// The value of option `name` (or `default`) parsed as `T`; one line naming the option and
/// exit 2 when it does not parse.
pub(crate) fn parsed<T: std::str::FromStr>(args: &[String], name: &str, default: &str) -> T {
    let value = opt(args, name, default);
    value.parse().unwrap_or_else(|_| {
        eprintln!("bench: {name} {value}: not a valid value");
        std::process::exit(2);
    })
}
