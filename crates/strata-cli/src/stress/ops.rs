//! The operations of a stress run. Writes follow the expected-state
//! protocol under the locks of the keys they touch (taken in key order):
//! record the pending states, write, record the committed states. Checked
//! reads hold the locks of the keys they check; iterator scans are checked
//! for consistency with gets at the same snapshot.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use strata::tools::util::sync::lock;
use strata::{DB, ReadOptions, Snapshot, WriteBatch, WriteOptions};

use super::expected::{
    ExpectedState, TraceRecord, TraceWriter, describe, key_bytes, next_state, parse_key,
    value_bytes, write_base,
};
use super::verify::{agrees, decode};
use super::{Config, Rng, VERIFICATION_FAILED};

/// What a run did.
pub struct Ran {
    pub ops: u64,
    pub writes: u64,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Put,
    Merge,
    Delete,
}

enum Write {
    /// One key, by put, merge or delete.
    Single(u64, Kind),
    /// Distinct keys in increasing order, in one batch.
    Batch(Vec<(u64, Kind)>),
    /// `delete_range` over keys `[from, to)`.
    Range(u64, u64),
}

struct Shared<'a> {
    db: &'a DB,
    exp: &'a ExpectedState,
    cfg: &'a Config,
    /// With the WAL off: the trace, also the lock that orders writes.
    trace: Option<Mutex<TraceWriter>>,
    stop: AtomicBool,
    failure: Mutex<Option<String>>,
    deadline: Option<Instant>,
    ops: AtomicU64,
    writes: AtomicU64,
}

fn fail(msg: String) -> String {
    format!("{VERIFICATION_FAILED}: {msg}")
}

pub fn run_ops(db: &DB, exp: &ExpectedState, cfg: &Config) -> Result<Ran, String> {
    let trace = if cfg.disable_wal {
        // The base first: a trace without its base is never left behind.
        write_base(&exp.base_path(), &exp.snapshot())?;
        Some(Mutex::new(TraceWriter::create(&exp.trace_path())?))
    } else {
        None
    };
    let sh = Shared {
        db,
        exp,
        cfg,
        trace,
        stop: AtomicBool::new(false),
        failure: Mutex::new(None),
        deadline: cfg.duration.map(|d| Instant::now() + d),
        ops: AtomicU64::new(0),
        writes: AtomicU64::new(0),
    };
    std::thread::scope(|s| {
        for tid in 0..cfg.threads {
            let sh = &sh;
            s.spawn(move || {
                if let Err(e) = thread_body(sh, tid as u64) {
                    sh.stop.store(true, Ordering::SeqCst);
                    lock(&sh.failure).get_or_insert(e);
                }
            });
        }
    });
    if let Some(e) = lock(&sh.failure).take() {
        return Err(e);
    }
    Ok(Ran {
        ops: sh.ops.load(Ordering::Relaxed),
        writes: sh.writes.load(Ordering::Relaxed),
    })
}

fn thread_body(sh: &Shared, tid: u64) -> Result<(), String> {
    let mut rng = Rng(sh.cfg.seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ (tid + 1) << 40);
    let mut snaps: VecDeque<(Snapshot, u64, u32)> = VecDeque::new();
    let mut i = 0u64;
    loop {
        if sh.stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        match sh.deadline {
            Some(d) if i % 64 == 0 && Instant::now() >= d => return Ok(()),
            None if i >= sh.cfg.ops_per_thread => return Ok(()),
            _ => {}
        }
        i += 1;
        one_op(sh, &mut rng, &mut snaps)?;
        sh.ops.fetch_add(1, Ordering::Relaxed);
    }
}

fn one_op(
    sh: &Shared,
    rng: &mut Rng,
    snaps: &mut VecDeque<(Snapshot, u64, u32)>,
) -> Result<(), String> {
    let n = sh.exp.max_key();
    if rng.one_in(sh.cfg.flush_one_in) {
        return flush(sh);
    }
    if rng.one_in(sh.cfg.compact_one_in) {
        let a = rng.below(n);
        let b = (a + 1 + rng.below(n / 4 + 1)).min(n);
        return sh
            .db
            .compact_range(Some(&key_bytes(a)), Some(&key_bytes(b)))
            .map_err(|e| format!("compact_range: {e}"));
    }
    let k = rng.below(n);
    match rng.below(100) {
        0..=29 => write(sh, rng, Write::Single(k, Kind::Put)),
        30..=37 => write(sh, rng, Write::Single(k, Kind::Merge)),
        38..=45 => write(sh, rng, Write::Single(k, Kind::Delete)),
        46..=47 if sh.cfg.use_plain_table => write(sh, rng, Write::Single(k, Kind::Delete)),
        46..=47 => {
            let end = (k + 1 + rng.below(8)).min(n);
            write(sh, rng, Write::Range(k, end))
        }
        48..=57 => {
            let mut keys: Vec<u64> = (0..2 + rng.below(4)).map(|_| rng.below(n)).collect();
            keys.sort_unstable();
            keys.dedup();
            let batch = keys
                .into_iter()
                .map(|k| {
                    let kind = match rng.below(4) {
                        0 => Kind::Delete,
                        1 => Kind::Merge,
                        _ => Kind::Put,
                    };
                    (k, kind)
                })
                .collect();
            write(sh, rng, Write::Batch(batch))
        }
        58..=74 => checked_get(sh, &[k], false),
        75..=81 => {
            let mut keys: Vec<u64> = (0..1 + rng.below(8)).map(|_| rng.below(n)).collect();
            keys.sort_unstable();
            keys.dedup();
            checked_get(sh, &keys, true)
        }
        82..=90 => scan(sh, rng, k),
        _ => snapshot_read(sh, k, snaps),
    }
}

fn write_options(sh: &Shared, rng: &mut Rng) -> WriteOptions {
    WriteOptions {
        sync: rng.one_in(sh.cfg.sync_one_in),
        disable_wal: sh.cfg.disable_wal,
        ..WriteOptions::default()
    }
}

fn write(sh: &Shared, rng: &mut Rng, w: Write) -> Result<(), String> {
    let exp = sh.exp;
    let keys: Vec<(u64, Kind)> = match &w {
        Write::Single(k, kind) => vec![(*k, *kind)],
        Write::Batch(kv) => kv.clone(),
        Write::Range(a, b) => (*a..*b).map(|k| (k, Kind::Delete)).collect(),
    };
    // Locks in key order (keys are increasing), so writers never deadlock.
    let _guards: Vec<_> = keys.iter().map(|(k, _)| exp.lock(*k)).collect();
    let new: Vec<(u64, u32)> = keys
        .iter()
        .map(|&(k, kind)| (k, next_state(exp.get(k).0, kind != Kind::Delete)))
        .collect();
    let mut trace = sh.trace.as_ref().map(lock);
    if let Some(t) = trace.as_mut() {
        t.append(&TraceRecord::Write(new.clone()))?;
    }
    for &(k, s) in &new {
        exp.begin(k, s)?;
    }
    let wo = write_options(sh, rng);
    let extra = sh.cfg.value_extra;
    let db = sh.db;
    let r = match &w {
        Write::Single(k, kind) => {
            let (key, v) = (key_bytes(*k), value_bytes(*k, new[0].1, extra));
            match kind {
                Kind::Put => db.put(&wo, &key, &v),
                Kind::Merge => db.merge(&wo, &key, &v),
                Kind::Delete => db.delete(&wo, &key),
            }
        }
        Write::Batch(kv) => {
            let mut b = WriteBatch::new();
            for (&(k, kind), &(_, s)) in kv.iter().zip(&new) {
                let key = key_bytes(k);
                match kind {
                    Kind::Put => b.put(&key, &value_bytes(k, s, extra)),
                    Kind::Merge => b.merge(&key, &value_bytes(k, s, extra)),
                    Kind::Delete => b.delete(&key),
                }
            }
            db.write(&wo, b)
        }
        Write::Range(a, b) => db.delete_range(&wo, &key_bytes(*a), &key_bytes(*b)),
    };
    match r {
        Ok(()) => {
            for &(k, s) in &new {
                exp.commit(k, s)?;
            }
            sh.writes.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
        Err(e) => {
            for &(k, _) in &new {
                exp.abort(k)?;
            }
            Err(format!("write failed: {e}"))
        }
    }
}

fn flush(sh: &Shared) -> Result<(), String> {
    // With the WAL off, writes stop during the flush, so every write the
    // trace holds before the marker is in a table.
    let mut trace = sh.trace.as_ref().map(lock);
    sh.db.flush().map_err(|e| format!("flush: {e}"))?;
    if let Some(t) = trace.as_mut() {
        t.append(&TraceRecord::Flush)?;
    }
    Ok(())
}

/// Gets (or one multi-get of) `keys`, increasing, checked under their locks.
fn checked_get(sh: &Shared, keys: &[u64], multi: bool) -> Result<(), String> {
    let _guards: Vec<_> = keys.iter().map(|&k| sh.exp.lock(k)).collect();
    let ro = ReadOptions::default();
    let bytes: Vec<Vec<u8>> = keys.iter().map(|&k| key_bytes(k)).collect();
    let values: Vec<Option<Vec<u8>>> = if multi {
        let refs: Vec<&[u8]> = bytes.iter().map(|k| k.as_slice()).collect();
        sh.db
            .multi_get(&ro, &refs)
            .into_iter()
            .collect::<Result<_, _>>()
            .map_err(|e| format!("multi_get: {e}"))?
    } else {
        vec![sh.db.get(&ro, &bytes[0]).map_err(|e| format!("get: {e}"))?]
    };
    let what = if multi { "multi_get" } else { "get" };
    for (&k, v) in keys.iter().zip(&values) {
        let got = decode(k, v.as_deref(), sh.cfg)?;
        let want = sh.exp.get(k).0;
        if !agrees(want, got) {
            return Err(fail(format!(
                "{what} key {k}: expected {}, found {}",
                describe(Some(want)),
                describe(got)
            )));
        }
    }
    Ok(())
}

/// A short forward scan from `k` (sometimes with an upper bound) at a
/// snapshot, then the same range backwards; both must agree with each other
/// and with gets at the snapshot, and see every key in between.
fn scan(sh: &Shared, rng: &mut Rng, k: u64) -> Result<(), String> {
    let snap = sh.db.snapshot();
    let n = sh.exp.max_key();
    let upper = rng.one_in(3).then(|| (k + 1 + rng.below(30)).min(n));
    let ro = ReadOptions {
        snapshot: Some(snap.sequence()),
        iterate_upper_bound: upper.map(key_bytes),
        ..ReadOptions::default()
    };
    let mut it = sh
        .db
        .new_iterator(&ro)
        .map_err(|e| format!("iterator: {e}"))?;
    it.seek(&key_bytes(k));
    let mut fwd: Vec<(u64, Vec<u8>)> = Vec::new();
    while it.valid() && fwd.len() < 12 {
        let key = parse_key(it.key())
            .filter(|&x| x < n)
            .ok_or_else(|| fail(format!("scan: unexpected key {:?}", it.key())))?;
        if fwd.last().is_some_and(|(p, _)| *p >= key) || key < k {
            return Err(fail(format!("scan from {k}: key {key} out of order")));
        }
        if upper.is_some_and(|u| key >= u) {
            return Err(fail(format!(
                "scan: key {key} at or past the upper bound {upper:?}"
            )));
        }
        decode(key, Some(it.value()), sh.cfg)?;
        fwd.push((key, it.value().to_vec()));
        it.next();
    }
    it.status().map_err(|e| format!("scan: {e}"))?;
    // Every key from k to the last one seen agrees with a get at the snapshot.
    let last = fwd.last().map_or(k, |(x, _)| *x);
    if last - k <= 64 {
        let get_ro = ReadOptions {
            snapshot: Some(snap.sequence()),
            ..ReadOptions::default()
        };
        let mut at = fwd.iter().peekable();
        for x in k..=last {
            let v = sh
                .db
                .get(&get_ro, &key_bytes(x))
                .map_err(|e| format!("get at snapshot: {e}"))?;
            let scanned = match at.peek() {
                Some((y, v)) if *y == x => {
                    at.next();
                    Some(v.clone())
                }
                _ => None,
            };
            if v != scanned {
                return Err(fail(format!(
                    "scan from {k} at a snapshot: key {x}: the scan has {}, a get has {}",
                    describe(decode(x, scanned.as_deref(), sh.cfg)?),
                    describe(decode(x, v.as_deref(), sh.cfg)?)
                )));
            }
        }
    }
    // Backwards from the last key seen down to k: the same entries.
    if let Some((last, _)) = fwd.last() {
        it.seek_for_prev(&key_bytes(*last));
        let mut back = Vec::new();
        while it.valid() {
            let key = parse_key(it.key()).unwrap_or(u64::MAX);
            if key < k || key == u64::MAX {
                break;
            }
            back.push((key, it.value().to_vec()));
            it.prev();
        }
        it.status().map_err(|e| format!("reverse scan: {e}"))?;
        back.reverse();
        if back != fwd {
            return Err(fail(format!(
                "scan from {k}: forward saw keys {:?}, backward {:?}",
                fwd.iter().map(|(x, _)| x).collect::<Vec<_>>(),
                back.iter().map(|(x, _)| x).collect::<Vec<_>>()
            )));
        }
    }
    Ok(())
}

/// Reads `k` at `snap` and checks it against state `want`.
fn check_at(sh: &Shared, snap: &Snapshot, k: u64, want: u32, what: &str) -> Result<(), String> {
    let ro = ReadOptions {
        snapshot: Some(snap.sequence()),
        ..ReadOptions::default()
    };
    let got = sh
        .db
        .get(&ro, &key_bytes(k))
        .map_err(|e| format!("get at snapshot: {e}"))?;
    let got = decode(k, got.as_deref(), sh.cfg)?;
    if agrees(want, got) {
        return Ok(());
    }
    Err(fail(format!(
        "get key {k} at {what}: expected {}, found {}",
        describe(Some(want)),
        describe(got)
    )))
}

/// Reads `k` at a new snapshot (checked under the key's lock), keeps the
/// snapshot a while, and re-reads an older one: it must not have changed.
fn snapshot_read(
    sh: &Shared,
    k: u64,
    snaps: &mut VecDeque<(Snapshot, u64, u32)>,
) -> Result<(), String> {
    {
        let _g = sh.exp.lock(k);
        let snap = sh.db.snapshot();
        let want = sh.exp.get(k).0;
        check_at(sh, &snap, k, want, "a new snapshot")?;
        snaps.push_back((snap, k, want));
    }
    if snaps.len() > 4 {
        if let Some((snap, k, want)) = snaps.pop_front() {
            check_at(sh, &snap, k, want, "an old snapshot (it changed)")?;
        }
    }
    Ok(())
}
