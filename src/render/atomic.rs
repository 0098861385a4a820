//! Output files written whole or not at all: each is written to a hidden file beside its
//! target and renamed over it once complete, so a failed write (a full file system, a
//! vanished directory) leaves no file a dashboard would read as a result. A target that
//! is no regular file (/dev/null, a pipe) is written in place.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// A file being written beside `target` (removed again unless committed), or straight
/// into a target that is no regular file.
#[derive(Debug)]
pub(crate) struct Pending {
    /// The hidden file beside the target; None for a device or pipe written in place.
    tmp: Option<PathBuf>,
    target: PathBuf,
    file: Option<File>,
}

impl Pending {
    /// Creates the hidden file beside `target` (`.NAME.PID.tmp` in its directory), or
    /// opens a target that is no regular file for writing.
    pub(crate) fn create(target: &Path) -> std::io::Result<Self> {
        let target = &resolved(target);
        if special(target) {
            let file = OpenOptions::new().write(true).open(target)?;
            return Ok(Self {
                tmp: None,
                target: target.to_path_buf(),
                file: Some(file),
            });
        }
        let name = target
            .file_name()
            .map_or_else(|| "ntttcp".into(), |n| n.to_string_lossy().into_owned());
        let tmp = target.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
        let file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        Ok(Self {
            tmp: Some(tmp),
            target: target.to_path_buf(),
            file: Some(file),
        })
    }

    /// Replaces `target` at once and writes into it as bytes come (a log that lives as
    /// long as a serving receiver, which a reader follows): nothing beside it to commit.
    pub(crate) fn in_place(target: &Path) -> std::io::Result<Self> {
        let file = File::create(target)?;
        Ok(Self {
            tmp: None,
            target: target.to_path_buf(),
            file: Some(file),
        })
    }

    pub(crate) fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match &mut self.file {
            Some(f) => f.write_all(bytes),
            None => Ok(()),
        }
    }

    /// Puts the whole file in place of the target (with the target's permissions when it
    /// existed); on any error the target is left as it was.
    pub(crate) fn commit(mut self) -> std::io::Result<()> {
        let (Some(file), Some(tmp)) = (self.file.take(), self.tmp.as_ref()) else {
            return Ok(());
        };
        file.sync_all()?;
        drop(file);
        if let Ok(meta) = std::fs::metadata(&self.target) {
            std::fs::set_permissions(tmp, meta.permissions())?;
        }
        std::fs::rename(tmp, &self.target)
    }
}

impl Drop for Pending {
    /// An uncommitted (or failed) file goes; after a rename there is nothing to remove.
    fn drop(&mut self) {
        if let Some(tmp) = &self.tmp {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// The file `target` names: a symbolic link's destination (so the link stays a link and
/// the file it points to is replaced), else `target` itself.
fn resolved(target: &Path) -> PathBuf {
    match std::fs::symlink_metadata(target) {
        Ok(m) if m.file_type().is_symlink() => {
            std::fs::canonicalize(target).unwrap_or_else(|_| target.to_path_buf())
        }
        _ => target.to_path_buf(),
    }
}

/// Whether `target` is something other than a regular file that is there already (a
/// device such as /dev/null or /dev/full, a pipe): written in place, never replaced.
fn special(target: &Path) -> bool {
    std::fs::metadata(target).is_ok_and(|m| !m.is_file())
}

/// Replaces `target` with `text`, whole or not at all.
pub(crate) fn replace(target: &Path, text: &str) -> std::io::Result<()> {
    let mut p = Pending::create(target)?;
    p.write_all(text.as_bytes())?;
    p.commit()
}

/// Appends `text` to `target` (NTttcp's XML file grows a document per run), whole or not
/// at all: the old contents and the new are written beside it and renamed over it.
pub(crate) fn append(target: &Path, text: &str) -> std::io::Result<()> {
    // A device is never read (/dev/full would give zeros without end).
    let old = if special(target) {
        Vec::new()
    } else {
        match std::fs::read(target) {
            Ok(old) => old,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        }
    };
    let mut p = Pending::create(target)?;
    p.write_all(&old)?;
    p.write_all(text.as_bytes())?;
    p.commit()
}

/// Proves that `target` could be written this way: the hidden file can be made beside it
/// and take a byte (a full file system refuses it), and is removed again; a device or
/// pipe is only opened (what it does with bytes shows when they come).
pub(crate) fn probe(target: &Path) -> std::io::Result<()> {
    let mut p = Pending::create(target)?;
    if p.tmp.is_none() {
        return Ok(());
    }
    p.write_all(b"\n")?;
    p.file.take().map_or(Ok(()), |f| f.sync_all())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ntttcp-atomic-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn replace_and_append_leave_only_the_target() {
        let d = scratch("ok");
        let t = d.join("r.xml");
        replace(&t, "one\n").unwrap();
        append(&t, "two\n").unwrap();
        assert_eq!(std::fs::read_to_string(&t).unwrap(), "one\ntwo\n");
        replace(&t, "three\n").unwrap();
        assert_eq!(std::fs::read_to_string(&t).unwrap(), "three\n");
        probe(&t).unwrap();
        let names: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, ["r.xml"], "no hidden file left beside it");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_log_in_place_is_there_as_it_is_written() {
        let d = scratch("in-place");
        let t = d.join("r.log");
        std::fs::write(&t, "an old log").unwrap();
        let mut p = Pending::in_place(&t).unwrap();
        p.write_all(b"first line\n").unwrap();
        assert_eq!(std::fs::read_to_string(&t).unwrap(), "first line\n");
        p.commit().unwrap();
        assert_eq!(
            std::fs::read_dir(&d).unwrap().count(),
            1,
            "nothing beside it"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_link_stays_a_link_and_its_file_is_replaced() {
        let d = scratch("link");
        let (file, link) = (d.join("real.json"), d.join("r.json"));
        std::fs::write(&file, "old").unwrap();
        // Where the OS makes links for a test (Linux).
        let Some(made) = crate::sys::test_support::symlink(&file, &link) else {
            return;
        };
        made.unwrap();
        replace(&link, "new").unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new");
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// Where the OS has the devices (Linux; Windows has none that refuses bytes).
    #[test]
    fn a_device_is_written_in_place_and_nothing_is_made_beside_it() {
        let Some((null, full, dir)) = crate::sys::test_support::devices() else {
            return;
        };
        let null = Path::new(null);
        probe(null).unwrap();
        replace(null, "x").unwrap();
        append(null, "y").unwrap();
        assert!(
            replace(Path::new(full), "x").is_err(),
            "{full} refuses the bytes"
        );
        let beside = std::fs::read_dir(dir).unwrap().flatten();
        let pid = format!(".{}.tmp", std::process::id());
        assert!(
            !beside
                .into_iter()
                .any(|e| e.file_name().to_string_lossy().ends_with(&pid))
        );
    }

    #[test]
    fn a_write_that_fails_leaves_no_file_and_the_old_one_intact() {
        let d = scratch("fail");
        let t = d.join("r.json");
        std::fs::write(&t, "old").unwrap();
        let mut p = Pending::create(&t).unwrap();
        p.write_all(b"half").unwrap();
        drop(p);
        assert_eq!(std::fs::read_to_string(&t).unwrap(), "old");
        let gone = d.join("nowhere").join("r.json");
        assert!(replace(&gone, "x").is_err());
        assert!(!gone.exists());
        let names: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, ["r.json"], "the abandoned file is removed");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
