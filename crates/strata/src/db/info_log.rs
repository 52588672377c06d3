//! The `LOG` file: human-readable lines about what the DB did (options at
//! open, each flush and compaction, stalls, errors), in RocksDB's line
//! format `YYYY/MM/DD-HH:MM:SS.micros <thread> message`. At open the
//! previous LOG is renamed `LOG.old.<micros>`; the file rolls the same way
//! once it exceeds `max_log_file_size` or is older than
//! `log_file_time_to_roll`; at most `keep_log_file_num` old files stay.
//!
//! Invariant: logging never fails an operation: write errors are dropped
//! (the LOG is advisory).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::filename::{FileType, INFO_LOG_FILE_NAME, old_info_log_file_name, parse_file_name};
use crate::fs::{FileSystemRef, WritableFile};

struct LogFile {
    file: Box<dyn WritableFile>,
    size: u64,
    opened: Instant,
}

/// The DB's info log (disabled for read-only opens).
pub struct InfoLog {
    fs: FileSystemRef,
    dir: PathBuf,
    max_size: u64,
    max_age_secs: u64,
    keep: usize,
    file: Mutex<Option<LogFile>>,
}

impl std::fmt::Debug for InfoLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InfoLog").field("dir", &self.dir).finish()
    }
}

/// `YYYY/MM/DD-HH:MM:SS.micros` (UTC) of a time since the epoch.
pub fn format_time(micros_since_epoch: u64) -> String {
    let secs = micros_since_epoch / 1_000_000;
    let micros = micros_since_epoch % 1_000_000;
    let t = crate::util::civil_time::CivilTime::from_unix(secs as i64);
    format!(
        "{:04}/{:02}/{:02}-{:02}:{:02}:{:02}.{micros:06}",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    )
}

fn now_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

impl InfoLog {
    /// Starts a new LOG in `dir`, moving an existing one aside.
    pub fn open(
        fs: FileSystemRef,
        dir: &Path,
        max_size: u64,
        max_age_secs: u64,
        keep: usize,
    ) -> InfoLog {
        let log = InfoLog {
            fs,
            dir: dir.to_path_buf(),
            max_size,
            max_age_secs,
            keep,
            file: Mutex::new(None),
        };
        let mut g = log.file.lock().unwrap_or_else(PoisonError::into_inner);
        *g = log.roll();
        drop(g);
        log
    }

    /// A log that writes nothing.
    pub fn disabled(fs: FileSystemRef, dir: &Path) -> InfoLog {
        InfoLog {
            fs,
            dir: dir.to_path_buf(),
            max_size: 0,
            max_age_secs: 0,
            keep: 0,
            file: Mutex::new(None),
        }
    }

    fn roll(&self) -> Option<LogFile> {
        let path = self.dir.join(INFO_LOG_FILE_NAME);
        if self.fs.file_exists(&path) {
            let old = self.dir.join(old_info_log_file_name(now_micros()));
            let _ = self.fs.rename_file(&path, &old);
        }
        // `LOG.old.<micros>` files, oldest first (`LOG` and a bare
        // `LOG.old` parse with time 0 and are not rolled ones).
        let mut old: Vec<(u64, String)> = self
            .fs
            .children(&self.dir)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|n| match parse_file_name(&n) {
                Some((micros, FileType::InfoLog)) if micros > 0 => Some((micros, n)),
                _ => None,
            })
            .collect();
        old.sort_unstable();
        while old.len() > self.keep {
            let (_, n) = old.remove(0);
            let _ = self.fs.delete_file(&self.dir.join(n));
        }
        let file = self.fs.new_writable_file(&path).ok()?;
        Some(LogFile {
            file,
            size: 0,
            opened: Instant::now(),
        })
    }

    /// Appends one line.
    pub fn log(&self, msg: &str) {
        let mut g = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(f) = g.as_mut() else {
            return;
        };
        let roll = (self.max_size > 0 && f.size >= self.max_size)
            || (self.max_age_secs > 0 && f.opened.elapsed().as_secs() >= self.max_age_secs);
        if roll {
            let _ = f.file.close();
            *g = None;
            *g = self.roll();
        }
        let Some(f) = g.as_mut() else {
            return;
        };
        let tid = format!("{:?}", std::thread::current().id());
        let tid: String = tid.chars().filter(char::is_ascii_digit).collect();
        let line = format!("{} {:>6} {}\n", format_time(now_micros()), tid, msg);
        if f.file.append(line.as_bytes()).is_ok() {
            f.size += line.len() as u64;
            let _ = f.file.flush();
        }
    }

    /// Closes the file.
    pub fn close(&self) {
        if let Some(mut f) = self
            .file
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            let _ = f.file.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_format_matches_rocksdb_layout() {
        assert_eq!(format_time(0), "1970/01/01-00:00:00.000000");
        // 2026-11-23 13:45:06.000123 UTC
        assert_eq!(
            format_time(1_795_441_506_000_123),
            "2026/11/23-13:45:06.000123"
        );
    }

    #[test]
    fn rolls_by_size_and_keeps_a_bounded_number() {
        let fs: FileSystemRef = std::sync::Arc::new(crate::fs::mem::MemFileSystem::new());
        let dir = Path::new("/db");
        fs.create_dir_all(dir).unwrap();
        let log = InfoLog::open(fs.clone(), dir, 200, 0, 2);
        for i in 0..100 {
            log.log(&format!("line {i} with some padding to grow the file"));
            std::thread::sleep(std::time::Duration::from_micros(2));
        }
        let names = fs.children(dir).unwrap();
        assert!(names.contains(&"LOG".to_string()));
        let old = names.iter().filter(|n| n.starts_with("LOG.old.")).count();
        assert!((1..=2).contains(&old), "{names:?}");
    }
}
