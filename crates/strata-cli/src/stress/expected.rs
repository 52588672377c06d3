//! The expected state of a stress run (RocksDB's `ExpectedState`): one
//! 8-byte slot per key in a file that outlives the process, so a run killed
//! with SIGKILL can be verified by the next one.
//!
//! A key's *value state* is a `u32`: bit 30 says the key exists, bits 0..30
//! are its generation, bumped by every write (put, merge or delete) so
//! every state names one value. A slot holds the committed state in its low
//! half; while a write is in flight, the high half holds the state the write
//! would set, with [`PENDING`] set. The protocol, under the key's lock:
//! record the pending state, write to the database, then record the
//! committed state. After a crash a pending slot accepts either state.
//!
//! File layout: `STRATAES`, the key count as fixed64, then the slots as
//! fixed64 little-endian. Slots are written with `pwrite` straight to the
//! page cache, which survives the process's death (not a power loss, which
//! the crash test does not simulate).
//!
//! With the WAL off, a crash loses the unflushed writes, so the slots are
//! not the truth: such a run also keeps `<file>.base` (the slots when the
//! run started) and `<file>.trace`, the writes in commit order, and the next
//! run finds the longest prefix of the trace the database holds (RocksDB's
//! trace replay to the recovered sequence number).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

const MAGIC: &[u8; 8] = b"STRATAES";
const HEADER: u64 = 16;

/// Set in a value state when the key exists.
pub const EXISTS: u32 = 1 << 30;
const GEN_MASK: u32 = EXISTS - 1;
/// Set in a slot while a write of its key is in flight.
const PENDING: u64 = 1 << 63;

/// The state a write sets: the next generation, existing or not.
pub fn next_state(cur: u32, exists: bool) -> u32 {
    let generation = (cur & GEN_MASK).wrapping_add(1) & GEN_MASK;
    if exists {
        generation | EXISTS
    } else {
        generation
    }
}

pub fn exists(state: u32) -> bool {
    state & EXISTS != 0
}

/// The key for key index `k`: fixed width, so keys sort as indexes do.
pub fn key_bytes(k: u64) -> Vec<u8> {
    format!("{k:016}").into_bytes()
}

pub fn parse_key(key: &[u8]) -> Option<u64> {
    if key.len() != 16 {
        return None;
    }
    std::str::from_utf8(key).ok()?.parse().ok()
}

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The value of key `k` in (existing) state `state`: `k:generation:` then
/// filler derived from both, 8 to `8 + max_extra` bytes in all, so a value
/// from another key or generation, or a damaged one, never passes.
pub fn value_bytes(k: u64, state: u32, max_extra: u64) -> Vec<u8> {
    let generation = state & GEN_MASK;
    let mut v = format!("{k}:{generation}:").into_bytes();
    let mut h = mix(k.wrapping_mul(0x1_0000_0001) ^ u64::from(generation));
    let len = 8 + (h % (max_extra + 1)) as usize;
    while v.len() < len {
        h = mix(h);
        v.push(b'a' + (h % 26) as u8);
    }
    v
}

/// The state a value read for key `k` stands for, if it is a valid value.
pub fn value_state(k: u64, value: &[u8], max_extra: u64) -> Option<u32> {
    let s = std::str::from_utf8(value).ok()?;
    let mut parts = s.splitn(3, ':');
    let key: u64 = parts.next()?.parse().ok()?;
    let generation: u32 = parts.next()?.parse().ok()?;
    if key != k || generation > GEN_MASK {
        return None;
    }
    let state = generation | EXISTS;
    (value_bytes(k, state, max_extra) == value).then_some(state)
}

/// Describes a value state for messages.
pub fn describe(state: Option<u32>) -> String {
    match state {
        None => "absent".into(),
        Some(s) if exists(s) => format!("generation {}", s & GEN_MASK),
        Some(_) => "absent".into(),
    }
}

/// The slots, their file, and one lock per key.
pub struct ExpectedState {
    file: File,
    path: PathBuf,
    slots: Vec<AtomicU64>,
    locks: Vec<Mutex<()>>,
}

fn io(what: &str, path: &Path, e: std::io::Error) -> String {
    format!("expected state {}: {what}: {e}", path.display())
}

impl ExpectedState {
    /// Opens the file, or creates it with every key absent.
    pub fn open(path: &Path, max_key: u64) -> Result<ExpectedState, String> {
        let fresh = !path.exists();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| io("open", path, e))?;
        let n = usize::try_from(max_key).map_err(|_| "--max_key too large".to_string())?;
        let mut bytes = vec![0u8; n * 8];
        if fresh {
            let mut header = MAGIC.to_vec();
            header.extend_from_slice(&max_key.to_le_bytes());
            file.write_all_at(&header, 0)
                .and_then(|()| file.write_all_at(&bytes, HEADER))
                .map_err(|e| io("create", path, e))?;
        } else {
            let mut header = [0u8; HEADER as usize];
            file.read_exact_at(&mut header, 0)
                .map_err(|e| io("read header", path, e))?;
            if &header[..8] != MAGIC {
                return Err(format!("{}: not an expected-state file", path.display()));
            }
            let keys = u64::from_le_bytes(header[8..].try_into().unwrap_or_default());
            if keys != max_key {
                return Err(format!(
                    "{}: made for --max_key={keys}, not {max_key}",
                    path.display()
                ));
            }
            file.read_exact_at(&mut bytes, HEADER)
                .map_err(|e| io("read slots", path, e))?;
        }
        let slots = bytes
            .chunks_exact(8)
            .map(|c| AtomicU64::new(u64::from_le_bytes(c.try_into().unwrap_or_default())))
            .collect();
        Ok(ExpectedState {
            file,
            path: path.to_path_buf(),
            slots,
            locks: (0..n).map(|_| Mutex::new(())).collect(),
        })
    }

    pub fn max_key(&self) -> u64 {
        self.slots.len() as u64
    }

    /// The lock that orders writes and checked reads of key `k`.
    pub fn lock(&self, k: u64) -> MutexGuard<'_, ()> {
        self.locks[k as usize]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// The committed state of `k` and the pending one, if a write was in
    /// flight when the last process died.
    pub fn get(&self, k: u64) -> (u32, Option<u32>) {
        let slot = self.slots[k as usize].load(Ordering::Acquire);
        let pending = (slot & PENDING != 0).then_some((slot >> 32) as u32 & !(1 << 31));
        (slot as u32, pending)
    }

    fn store(&self, k: u64, slot: u64) -> Result<(), String> {
        self.slots[k as usize].store(slot, Ordering::Release);
        self.file
            .write_all_at(&slot.to_le_bytes(), HEADER + 8 * k)
            .map_err(|e| io("write slot", &self.path, e))
    }

    /// Before a write of `k` to the database (the key's lock held).
    pub fn begin(&self, k: u64, new: u32) -> Result<(), String> {
        let (committed, _) = self.get(k);
        self.store(k, PENDING | (u64::from(new) << 32) | u64::from(committed))
    }

    /// After the write: `new` is the key's state.
    pub fn commit(&self, k: u64, new: u32) -> Result<(), String> {
        self.store(k, u64::from(new))
    }

    /// After a failed write: the key keeps its committed state.
    pub fn abort(&self, k: u64) -> Result<(), String> {
        let (committed, _) = self.get(k);
        self.store(k, u64::from(committed))
    }

    /// Every committed state, for a WAL-off run's base.
    pub fn snapshot(&self) -> Vec<u32> {
        (0..self.max_key()).map(|k| self.get(k).0).collect()
    }

    pub fn base_path(&self) -> PathBuf {
        with_suffix(&self.path, ".base")
    }

    pub fn trace_path(&self) -> PathBuf {
        with_suffix(&self.path, ".trace")
    }

    /// Makes the file durable (after a verification settled it).
    pub fn sync(&self) -> Result<(), String> {
        self.file.sync_all().map_err(|e| io("sync", &self.path, e))
    }
}

fn with_suffix(p: &Path, suffix: &str) -> PathBuf {
    let mut s = p.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

/// One entry of a WAL-off trace.
#[derive(Debug, Clone, PartialEq)]
pub enum TraceRecord {
    /// A write about to be made: every key it touches with its new state.
    Write(Vec<(u64, u32)>),
    /// Every write before this one is in a flushed table.
    Flush,
}

/// Appends trace records, one `write` call each, so a killed process
/// leaves whole records (plus at most one torn last line).
pub struct TraceWriter {
    file: File,
    path: PathBuf,
}

impl TraceWriter {
    pub fn create(path: &Path) -> Result<TraceWriter, String> {
        let file = File::create(path).map_err(|e| io("create trace", path, e))?;
        Ok(TraceWriter {
            file,
            path: path.to_path_buf(),
        })
    }

    /// Opens an existing trace to add records at its end.
    pub fn open_append(path: &Path) -> Result<TraceWriter, String> {
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| io("open trace", path, e))?;
        Ok(TraceWriter {
            file,
            path: path.to_path_buf(),
        })
    }

    pub fn append(&mut self, r: &TraceRecord) -> Result<(), String> {
        let line = match r {
            TraceRecord::Flush => "f\n".to_string(),
            TraceRecord::Write(kv) => {
                let mut s = String::from("w");
                for (k, st) in kv {
                    s.push_str(&format!(" {k}={st}"));
                }
                s.push('\n');
                s
            }
        };
        self.file
            .write_all(line.as_bytes())
            .map_err(|e| io("append", &self.path, e))
    }
}

/// Reads a trace; a torn last line (no newline) is dropped.
pub fn read_trace(path: &Path) -> Result<Vec<TraceRecord>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| io("read trace", path, e))?;
    let mut out = Vec::new();
    let complete = match text.rfind('\n') {
        Some(i) => &text[..=i],
        None => "",
    };
    for (n, line) in complete.lines().enumerate() {
        let bad = || format!("{}: line {}: bad record {line:?}", path.display(), n + 1);
        if line == "f" {
            out.push(TraceRecord::Flush);
            continue;
        }
        let rest = line.strip_prefix('w').ok_or_else(bad)?;
        let mut kv = Vec::new();
        for item in rest.split_whitespace() {
            let (k, s) = item.split_once('=').ok_or_else(bad)?;
            kv.push((k.parse().map_err(|_| bad())?, s.parse().map_err(|_| bad())?));
        }
        out.push(TraceRecord::Write(kv));
    }
    Ok(out)
}

/// Writes a WAL-off run's base: every committed state.
pub fn write_base(path: &Path, states: &[u32]) -> Result<(), String> {
    let bytes: Vec<u8> = states.iter().flat_map(|s| s.to_le_bytes()).collect();
    std::fs::write(path, bytes).map_err(|e| io("write base", path, e))
}

pub fn read_base(path: &Path, max_key: u64) -> Result<Vec<u32>, String> {
    let bytes = std::fs::read(path).map_err(|e| io("read base", path, e))?;
    if bytes.len() as u64 != max_key * 4 {
        return Err(format!(
            "{}: {} bytes, not {}",
            path.display(),
            bytes.len(),
            max_key * 4
        ));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap_or_default()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_reject_others() {
        for k in [0u64, 7, 12345] {
            let mut s = 0;
            for _ in 0..50 {
                s = next_state(s, true);
                let v = value_bytes(k, s, 40);
                assert!(v.len() >= 8 && v.len() <= 48);
                assert_eq!(value_state(k, &v, 40), Some(s));
                assert_eq!(value_state(k + 1, &v, 40), None);
                let mut bad = v.clone();
                let last = bad.len() - 1;
                bad[last] ^= 1;
                assert_eq!(value_state(k, &bad, 40), None);
            }
        }
        assert_eq!(parse_key(&key_bytes(42)), Some(42));
        assert!(!exists(next_state(next_state(0, true), false)));
    }

    #[test]
    fn slots_survive_reopen_with_pending() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("exp");
        let e = ExpectedState::open(&p, 10).unwrap();
        let s1 = next_state(0, true);
        e.begin(3, s1).unwrap();
        e.commit(3, s1).unwrap();
        let s2 = next_state(s1, false);
        e.begin(3, s2).unwrap();
        drop(e);
        let e = ExpectedState::open(&p, 10).unwrap();
        assert_eq!(e.get(3), (s1, Some(s2)));
        assert_eq!(e.get(4), (0, None));
        assert!(ExpectedState::open(&p, 11).is_err());
    }

    #[test]
    fn trace_round_trip_drops_a_torn_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t");
        let mut w = TraceWriter::create(&p).unwrap();
        let r1 = TraceRecord::Write(vec![(1, 5), (2, EXISTS | 3)]);
        w.append(&r1).unwrap();
        w.append(&TraceRecord::Flush).unwrap();
        w.file.write_all(b"w 3=").unwrap();
        assert_eq!(read_trace(&p).unwrap(), vec![r1, TraceRecord::Flush]);
    }
}
