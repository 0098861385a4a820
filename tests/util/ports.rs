//! The test-port allocator: blocks of 100 ports, never shared by two tests of a run nor
//! by two runs on one machine, whichever users make them.

/// Test ports come from one allocator, so no two tests can share one (nor two test runs
/// on one machine: a block is also claimed with a lock file): each test takes a
/// block of 100 consecutive ports (ntttcp's sync port is a base's `-p` minus one, its data
/// ports follow) that no other test in this run gets, below the ephemeral range so that no
/// outgoing connection holds one. Inside a test, `@K` in a string (`at`, or any argument
/// list given to `spawn`/`run`) and `port(K)` name the block's port K.
const FIRST_PORT: u16 = 10_000;
const BLOCK: u16 = 100;
const BLOCKS: usize = 220;

static TAKEN: std::sync::Mutex<[bool; BLOCKS]> = std::sync::Mutex::new([false; BLOCKS]);

thread_local! {
    static BASE: std::cell::Cell<Option<u16>> = const { std::cell::Cell::new(None) };
}

/// A test's ports; they stay taken for the rest of the run (a port can linger in
/// TIME_WAIT after its test).
pub(crate) struct Ports;

impl Ports {
    /// `blocks` consecutive blocks of 100 ports for this test.
    pub(crate) fn take(blocks: usize) -> Self {
        Self::claim(
            |i, taken| (i..i + blocks).all(|b| b < BLOCKS && !taken[b]),
            blocks,
            0,
        )
    }

    /// One block, and the block 1000 ports above it: Windows-sync tests, whose token
    /// ports are the data ports plus 1000.
    pub(crate) fn with_tokens() -> Self {
        let tokens = usize::from(1000 / BLOCK);
        Self::claim(
            |i, taken| i + tokens < BLOCKS && !taken[i] && !taken[i + tokens],
            1,
            tokens,
        )
    }

    /// A block set aside for another process of another user (`tests/ports.rs`): taken
    /// here, so no test of this run uses it, with its lock file made by this user but not
    /// held. Its index, for `take_block` over there.
    pub(crate) fn set_aside() -> usize {
        let mut taken = TAKEN.lock().unwrap_or_else(|p| p.into_inner());
        for b in 0..BLOCKS {
            if taken[b] || !block_is_free(b) {
                continue;
            }
            // Free across processes too: locked for a moment, then let go.
            if lock_file(&lock_path(b)).is_some_and(|f| f.try_lock().is_ok()) {
                taken[b] = true;
                return b;
            }
        }
        panic!("no block to set aside: {}", lock_dir().display());
    }

    /// Block `b` (set aside by another process) for this test, claimed as `take` would.
    pub(crate) fn take_block(b: usize) -> Self {
        assert!(
            claim_across_processes(b),
            "cannot claim block {b} in {} as uid {}",
            lock_dir().display(),
            uid()
        );
        assert!(block_is_free(b), "block {b} has a port in use");
        TAKEN.lock().unwrap_or_else(|p| p.into_inner())[b] = true;
        BASE.with(|c| c.set(Some(FIRST_PORT + b as u16 * BLOCK)));
        Self
    }

    fn claim(fits: impl Fn(usize, &[bool; BLOCKS]) -> bool, blocks: usize, also: usize) -> Self {
        let mut taken = TAKEN.lock().unwrap_or_else(|p| p.into_inner());
        for i in 0..BLOCKS {
            if !fits(i, &taken) {
                continue;
            }
            let mut all: Vec<usize> = (i..i + blocks).collect();
            if also > 0 {
                all.push(i + also);
            }
            for &b in &all {
                taken[b] = true;
            }
            // A block some other process holds a port of, or that another test run on
            // this machine has claimed, is skipped (and stays taken).
            if all
                .iter()
                .all(|&b| claim_across_processes(b) && block_is_free(b))
            {
                BASE.with(|c| c.set(Some(FIRST_PORT + i as u16 * BLOCK)));
                return Self;
            }
        }
        panic!(
            "no free block of test ports left: all {BLOCKS} are taken by this run's tests, \
             held by another test run on this machine (lock files in {}) or have a port in \
             use; one run at a time fits",
            lock_dir().display()
        );
    }
}

/// Claims block `b` for this process's lifetime with a lock file, so that two test runs
/// on one machine, by any users one after the other or at once, never share a block.
fn claim_across_processes(b: usize) -> bool {
    static HELD: std::sync::Mutex<Vec<std::fs::File>> = std::sync::Mutex::new(Vec::new());
    let Some(file) = lock_file(&lock_path(b)) else {
        return false;
    };
    if file.try_lock().is_err() {
        return false;
    }
    HELD.lock().unwrap_or_else(|p| p.into_inner()).push(file);
    true
}

/// Block `b`'s lock file.
fn lock_path(b: usize) -> std::path::PathBuf {
    lock_dir().join(format!("{}.lock", FIRST_PORT + b as u16 * BLOCK))
}

/// The lock directory every user shares: `$TMPDIR/ntttcp-test-ports`, world-writable
/// with the sticky bit (as /tmp). One that an older run made private to its user is
/// passed over for this user's own; where neither can be had the claim says why.
fn lock_dir() -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let shared = std::env::temp_dir().join("ntttcp-test-ports");
        let _ = std::fs::create_dir(&shared);
        // Made (now, or by an older run of this user's) private: opened to every user.
        use std::os::unix::fs::MetadataExt;
        if std::fs::metadata(&shared).is_ok_and(|m| m.uid() == uid()) {
            let _ = std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777));
        }
        if writable(&shared) {
            return shared;
        }
        let own = std::env::temp_dir().join(format!("ntttcp-test-ports-{}", uid()));
        let _ = std::fs::create_dir_all(&own);
        assert!(
            writable(&own),
            "cannot claim test ports: neither {} nor {} is a directory this user (uid {}) \
             may write; remove them or point TMPDIR elsewhere",
            shared.display(),
            own.display(),
            uid()
        );
        own
    })
    .clone()
}

/// Whether this user can create files in `dir` (tried, not guessed from mode bits).
fn writable(dir: &std::path::Path) -> bool {
    let probe = dir.join(format!(".probe-{}", std::process::id()));
    let ok = std::fs::File::create(&probe).is_ok();
    let _ = std::fs::remove_file(&probe);
    ok
}

/// The lock file at `path`, opened for reading (a lock needs no more), made readable by
/// every user when this process creates it.
fn lock_file(path: &std::path::Path) -> Option<std::fs::File> {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(f) = std::fs::File::open(path) {
        return Some(f);
    }
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .ok()?;
    let _ = f.set_permissions(std::fs::Permissions::from_mode(0o666));
    Some(f)
}

/// This process's user id (from /proc/self/status).
pub(crate) fn uid() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|u| u.parse().ok()))
        .unwrap_or(u32::MAX)
}

fn block_is_free(b: usize) -> bool {
    let first = FIRST_PORT + b as u16 * BLOCK;
    (first..first + BLOCK).all(|p| {
        std::net::TcpListener::bind(("127.0.0.1", p)).is_ok()
            && std::net::UdpSocket::bind(("127.0.0.1", p)).is_ok()
    })
}

/// Port `k` of this test's block.
pub(crate) fn port(k: u16) -> u16 {
    let base = BASE.with(std::cell::Cell::get);
    base.expect("the test takes its ports (Ports::take) before naming one") + k
}

/// `s` with every `@K` replaced by port K of this test's block.
pub(crate) fn ports_in(s: &str) -> String {
    each_offset(s, |k| port(k).to_string())
}

/// `s` with every `@K` moved to `@K+by`: the same run on ports of another attempt.
pub(crate) fn shifted(s: &str, by: u16) -> String {
    each_offset(s, |k| format!("@{}", k + by))
}

/// `s` with every `@K` (a port offset) replaced by `with(K)`.
fn each_offset(s: &str, with: impl Fn(u16) -> String) -> String {
    let re = regex::Regex::new(r"@(\d+)").expect("pattern");
    re.replace_all(s, |c: &regex::Captures<'_>| {
        with(c[1].parse().expect("a port offset"))
    })
    .into_owned()
}
