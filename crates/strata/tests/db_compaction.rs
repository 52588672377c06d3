//! Compaction through the public API: leveled shape after sustained
//! writes, manual and file-level compaction, the compaction filter,
//! universal and FIFO styles, deletion-triggered space reclamation, file
//! management calls, flow control counters, the LOG, shared Envs, and
//! iterators keeping compacted-away files alive.

use std::collections::BTreeMap;
use std::sync::Arc;

use strata::compaction_filter::{CompactionFilter, Decision, TtlCompactionFilter};
use strata::db::{BottommostLevelCompaction, CompactRangeOptions};
use strata::fs::FileSystem;
use strata::fs::mem::MemFileSystem;
use strata::options::{CompactionStyle, Options, ReadOptions, WriteOptions};
use strata::{DB, Env};

fn opts(fs: &MemFileSystem) -> Options {
    let mut o = Options {
        create_if_missing: true,
        fs: Some(Arc::new(fs.clone())),
        ..Options::default()
    };
    o.cf.write_buffer_size = 16 << 10;
    o.cf.target_file_size_base = 16 << 10;
    o.cf.max_bytes_for_level_base = 64 << 10;
    o.cf.level0_file_num_compaction_trigger = 2;
    o.cf.compression = strata::CompressionType::None;
    o
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

fn value(i: u64, round: u64) -> Vec<u8> {
    format!("value-{i}-{round}-{}", "x".repeat(60)).into_bytes()
}

fn scan(db: &DB) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    let mut out = BTreeMap::new();
    while it.valid() {
        out.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status().unwrap();
    out
}

fn sst_bytes(fs: &MemFileSystem, dir: &str) -> u64 {
    fs.children(std::path::Path::new(dir))
        .unwrap()
        .iter()
        .filter(|n| n.ends_with(".sst"))
        .map(|n| fs.file_size(&std::path::Path::new(dir).join(n)).unwrap())
        .sum()
}

fn levels(db: &DB) -> Vec<usize> {
    let mut per = vec![0; 7];
    for f in db.live_files_metadata() {
        per[f.level] += 1;
    }
    per
}

#[test]
fn leveled_compaction_keeps_the_tree_in_shape() {
    let fs = MemFileSystem::new();
    let db = DB::open(opts(&fs), "/db").unwrap();
    let wo = WriteOptions::default();
    let mut model = BTreeMap::new();
    for round in 0..4 {
        for i in 0..3000u64 {
            let k = (i * 7919 + round * 13) % 3000;
            db.put(&wo, &key(k), &value(k, round)).unwrap();
            model.insert(key(k), value(k, round));
        }
    }
    db.wait_for_compactions().unwrap();
    let shape = levels(&db);
    assert!(shape[0] < 4, "L0 not compacted: {shape:?}");
    assert!(shape.iter().skip(1).sum::<usize>() > 0, "{shape:?}");
    let stats = db.level_stats();
    assert!(
        stats.iter().skip(1).map(|l| l.count).sum::<u64>() > 0,
        "{stats:?}"
    );
    assert_eq!(scan(&db), model);
    // Levels >= 1 do not overlap.
    let mut files = db.live_files_metadata();
    files.sort_by(|a, b| (a.level, &a.smallest_key).cmp(&(b.level, &b.smallest_key)));
    for w in files.windows(2) {
        if w[0].level == w[1].level && w[0].level > 0 {
            assert!(w[0].largest_key < w[1].smallest_key, "{w:?}");
        }
    }
    let stats_text = db.property("rocksdb.stats").unwrap();
    assert!(
        stats_text.contains("** Compaction Stats [default] **"),
        "{stats_text}"
    );
    assert!(stats_text.contains("Sum"), "{stats_text}");
    db.close().unwrap();
    let db = DB::open(opts(&fs), "/db").unwrap();
    assert_eq!(scan(&db), model);
}

#[test]
fn manual_compaction_reaches_the_bottom_and_drops_garbage() {
    let fs = MemFileSystem::new();
    let mut o = opts(&fs);
    o.cf.disable_auto_compactions = true;
    let db = DB::open(o, "/db").unwrap();
    let wo = WriteOptions::default();
    for round in 0..3 {
        for i in 0..2000u64 {
            db.put(&wo, &key(i), &value(i, round)).unwrap();
        }
        db.flush().unwrap();
    }
    for i in 0..1000u64 {
        db.delete(&wo, &key(i)).unwrap();
    }
    db.delete_range(&wo, &key(1500), &key(1600)).unwrap();
    let before = sst_bytes(&fs, "/db");
    let want = scan(&db);
    let force = CompactRangeOptions {
        bottommost_level_compaction: BottommostLevelCompaction::Force,
        ..Default::default()
    };
    db.compact_range_cf_opt(&db.default_cf(), None, None, &force)
        .unwrap();
    let after = sst_bytes(&fs, "/db");
    assert_eq!(scan(&db), want);
    assert_eq!(want.len(), 900);
    assert!(after * 3 < before, "before {before} after {after}");
    let shape = levels(&db);
    assert_eq!(shape[0], 0, "{shape:?}");
    assert_eq!(
        shape[6],
        shape.iter().sum::<usize>(),
        "all data on the last level: {shape:?}"
    );
    // Nothing older than the live data: no deletions survive the bottom.
    let meta = db.live_files_metadata();
    assert!(meta.iter().all(|f| !f.marked_for_compaction));
}

#[test]
fn snapshots_survive_compaction() {
    let fs = MemFileSystem::new();
    let db = DB::open(opts(&fs), "/db").unwrap();
    let wo = WriteOptions::default();
    for i in 0..1500u64 {
        db.put(&wo, &key(i), &value(i, 0)).unwrap();
    }
    let snap = db.snapshot();
    let old = scan(&db);
    for i in 0..1500u64 {
        if i % 2 == 0 {
            db.delete(&wo, &key(i)).unwrap();
        } else {
            db.put(&wo, &key(i), &value(i, 1)).unwrap();
        }
    }
    let force = CompactRangeOptions {
        bottommost_level_compaction: BottommostLevelCompaction::Force,
        ..Default::default()
    };
    db.compact_range_cf_opt(&db.default_cf(), None, None, &force)
        .unwrap();
    let ro = ReadOptions {
        snapshot: Some(snap.sequence()),
        ..Default::default()
    };
    let mut it = db.iter(&ro).unwrap();
    let mut got = BTreeMap::new();
    while it.valid() {
        got.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    assert_eq!(got, old);
    assert_eq!(db.get(&ro, &key(2)).unwrap(), Some(value(2, 0)));
    assert_eq!(db.get(&ReadOptions::default(), &key(2)).unwrap(), None);
    assert_eq!(scan(&db).len(), 750);
}

struct DropOdd;

impl CompactionFilter for DropOdd {
    fn name(&self) -> &str {
        "DropOdd"
    }
    fn filter(&self, _level: usize, key: &[u8], value: &[u8]) -> Decision {
        let last = key.last().copied().unwrap_or(0);
        if last % 2 == 1 {
            Decision::Remove
        } else if value.starts_with(b"upper:") {
            Decision::ChangeValue(value.to_ascii_uppercase())
        } else {
            Decision::Keep
        }
    }
}

#[test]
fn compaction_filter_removes_and_changes_values() {
    let fs = MemFileSystem::new();
    let mut o = opts(&fs);
    o.cf.compaction_filter = Some(Arc::new(DropOdd));
    let db = DB::open(o, "/db").unwrap();
    let wo = WriteOptions::default();
    for i in 0..200u64 {
        db.put(&wo, &key(i), format!("upper:{i}").as_bytes())
            .unwrap();
    }
    db.compact_range(None, None).unwrap();
    let got = scan(&db);
    assert_eq!(got.len(), 100);
    assert_eq!(got.get(&key(4)).unwrap(), b"UPPER:4");
    assert!(!got.contains_key(&key(5)));
    // The LOG names the filter among the options.
    let log = String::from_utf8(fs.read_file(std::path::Path::new("/db/LOG")).unwrap()).unwrap();
    assert!(log.contains("Options.compaction_filter: DropOdd"), "{log}");
}

#[test]
fn ttl_filter_expires_old_values() {
    let fs = MemFileSystem::new();
    let mut o = opts(&fs);
    o.cf.compaction_filter = Some(Arc::new(TtlCompactionFilter {
        ttl_seconds: 100,
        now: Arc::new(|| 10_000),
    }));
    let db = DB::open(o, "/db").unwrap();
    let wo = WriteOptions::default();
    db.put(&wo, b"fresh", &TtlCompactionFilter::stamp(b"v", 9_950))
        .unwrap();
    db.put(&wo, b"stale", &TtlCompactionFilter::stamp(b"v", 9_000))
        .unwrap();
    db.compact_range(None, None).unwrap();
    assert!(db.get(&ReadOptions::default(), b"fresh").unwrap().is_some());
    assert_eq!(db.get(&ReadOptions::default(), b"stale").unwrap(), None);
}

#[test]
fn universal_compaction_bounds_sorted_runs() {
    let fs = MemFileSystem::new();
    let mut o = opts(&fs);
    o.cf.compaction_style = CompactionStyle::Universal;
    o.cf.level0_file_num_compaction_trigger = 4;
    let db = DB::open(o, "/db").unwrap();
    let wo = WriteOptions::default();
    let mut model = BTreeMap::new();
    for round in 0..5 {
        for i in 0..2000u64 {
            let k = (i * 31 + round) % 2000;
            db.put(&wo, &key(k), &value(k, round)).unwrap();
            model.insert(key(k), value(k, round));
        }
    }
    db.wait_for_compactions().unwrap();
    let shape = levels(&db);
    let runs = shape[0] + shape.iter().skip(1).filter(|&&n| n > 0).count();
    assert!(runs <= 4, "{shape:?}");
    assert!(shape[6] > 0, "{shape:?}");
    assert_eq!(scan(&db), model);
    db.compact_range(None, None).unwrap();
    let shape = levels(&db);
    assert_eq!(shape.iter().sum::<usize>(), shape[6], "{shape:?}");
    assert_eq!(scan(&db), model);
}

#[test]
fn fifo_deletes_the_oldest_files_past_the_size_limit() {
    let fs = MemFileSystem::new();
    let mut o = opts(&fs);
    o.cf.compaction_style = CompactionStyle::Fifo;
    o.cf.num_levels = 1;
    o.cf.fifo.max_table_files_size = 64 << 10;
    let db = DB::open(o, "/db").unwrap();
    let wo = WriteOptions::default();
    for i in 0..5000u64 {
        db.put(&wo, &key(i), &value(i, 0)).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let total: u64 = db.live_files_metadata().iter().map(|f| f.size).sum();
    assert!(total <= 64 << 10, "{total}");
    // The newest keys survive, the oldest are gone.
    assert!(
        db.get(&ReadOptions::default(), &key(4999))
            .unwrap()
            .is_some()
    );
    assert_eq!(db.get(&ReadOptions::default(), &key(0)).unwrap(), None);
}

/// A database of 6,000 keys, flushed and compacted, and its table bytes.
fn filled(fs: &MemFileSystem) -> (DB, u64) {
    let db = DB::open(opts(fs), "/db").unwrap();
    let wo = WriteOptions::default();
    for i in 0..6000u64 {
        db.put(&wo, &key(i), &value(i, 0)).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let full = sst_bytes(fs, "/db");
    (db, full)
}

#[test]
fn deletes_reclaim_space_without_manual_compaction() {
    let fs = MemFileSystem::new();
    let (db, full) = filled(&fs);
    let wo = WriteOptions::default();
    for i in 0..6000u64 {
        if i % 10 != 0 {
            db.delete(&wo, &key(i)).unwrap();
        }
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let after = sst_bytes(&fs, "/db");
    assert_eq!(scan(&db).len(), 600);
    assert!(
        after * 3 < full,
        "full {full} bytes, after deleting 90%: {after}"
    );
}

/// Polls `done` every 50 ms for up to `secs` seconds; the seconds it took.
fn within(secs: u64, mut done: impl FnMut() -> bool) -> Option<f64> {
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(secs) {
        if done() {
            return Some(start.elapsed().as_secs_f64());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    done().then(|| start.elapsed().as_secs_f64())
}

#[test]
fn range_deletes_reclaim_space_without_manual_compaction() {
    let fs = MemFileSystem::new();
    let (db, full) = filled(&fs);
    let wo = WriteOptions::default();
    // 90% of the keys, in six range deletions.
    for b in 0..6u64 {
        db.delete_range(&wo, &key(b * 1000 + 100), &key(b * 1000 + 1000))
            .unwrap();
    }
    db.put(&wo, b"unrelated", b"v").unwrap();
    db.flush().unwrap();
    // No manual compaction: the flushed table's tombstones cover most of
    // the tree below, so it is marked for compaction and pushed down.
    let took = within(10, || {
        db.wait_for_compactions().unwrap();
        sst_bytes(&fs, "/db") * 4 < full
    });
    let after = sst_bytes(&fs, "/db");
    assert!(
        took.is_some(),
        "full {full} bytes, after range-deleting 90%: {after}; levels {:?}",
        levels(&db)
    );
    eprintln!("range deletes: {full} -> {after} table bytes in {took:?} s");
    let got = scan(&db);
    assert_eq!(got.len(), 601);
    assert!(got.contains_key(&key(5099)) && !got.contains_key(&key(5100)));
}

#[test]
fn releasing_a_snapshot_lets_bottommost_files_drop_what_it_kept() {
    let fs = MemFileSystem::new();
    let db = DB::open(opts(&fs), "/db").unwrap();
    let wo = WriteOptions::default();
    for i in 0..6000u64 {
        db.put(&wo, &key(i), &value(i, 0)).unwrap();
    }
    let snap = db.snapshot();
    for i in 0..6000u64 {
        if i % 10 != 0 {
            db.delete(&wo, &key(i)).unwrap();
        }
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let kept = sst_bytes(&fs, "/db");
    // The snapshot still reads every key: compactions kept them.
    let ro = ReadOptions {
        snapshot: Some(snap.sequence()),
        ..ReadOptions::default()
    };
    assert!(db.get(&ro, &key(1)).unwrap().is_some());
    drop(snap);
    // The release alone schedules the rewrite of the bottommost files.
    let took = within(10, || {
        db.wait_for_compactions().unwrap();
        sst_bytes(&fs, "/db") * 3 < kept
    });
    assert!(
        took.is_some(),
        "{kept} bytes under the snapshot, {} after its release",
        sst_bytes(&fs, "/db")
    );
    eprintln!(
        "snapshot release: {kept} -> {} table bytes in {took:?} s",
        sst_bytes(&fs, "/db")
    );
    assert_eq!(scan(&db).len(), 600);
    // Rewritten files carry sequence number 0: nothing is due any more.
    let files = db.live_files_metadata();
    assert!(files.iter().all(|f| f.largest_seqno == 0), "{files:?}");
    let log = String::from_utf8(fs.read_file(std::path::Path::new("/db/LOG")).unwrap()).unwrap();
    assert!(log.contains("(BottommostFiles,"), "{log}");
}

#[test]
fn ttl_pushes_old_data_down_without_writes() {
    let fs = MemFileSystem::new();
    let mut o = opts(&fs);
    o.cf.level0_file_num_compaction_trigger = 4;
    o.cf.ttl = 1;
    let db = DB::open(o, "/db").unwrap();
    let wo = WriteOptions::default();
    for i in 0..2000u64 {
        db.put(&wo, &key(i), &value(i, 0)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.put(&wo, &key(5), b"newer").unwrap();
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    assert_eq!(levels(&db)[0], 1, "one L0 file, under the trigger");
    // No write, flush or manual compaction from here: the compaction
    // timer finds the file's data older than the ttl.
    let took = within(10, || levels(&db)[0] == 0);
    assert!(took.is_some(), "levels {:?}", levels(&db));
    assert_eq!(
        db.get(&ReadOptions::default(), &key(5)).unwrap(),
        Some(b"newer".to_vec())
    );
    let log = String::from_utf8(fs.read_file(std::path::Path::new("/db/LOG")).unwrap()).unwrap();
    assert!(log.contains("(Ttl,"), "{log}");
    assert!(log.contains("Options.ttl: 1"), "{log}");
}

/// Drops values starting with `stale` once `on` is set.
struct DropStale(Arc<std::sync::atomic::AtomicBool>);

impl CompactionFilter for DropStale {
    fn name(&self) -> &str {
        "DropStale"
    }
    fn filter(&self, _level: usize, _key: &[u8], value: &[u8]) -> Decision {
        if self.0.load(std::sync::atomic::Ordering::Relaxed) && value.starts_with(b"stale") {
            Decision::Remove
        } else {
            Decision::Keep
        }
    }
}

fn periodic_compaction_reruns_the_filter(style: CompactionStyle) {
    let fs = MemFileSystem::new();
    let mut o = opts(&fs);
    o.cf.compaction_style = style;
    o.cf.periodic_compaction_seconds = 1;
    let on = Arc::new(std::sync::atomic::AtomicBool::new(false));
    o.cf.compaction_filter = Some(Arc::new(DropStale(Arc::clone(&on))));
    let db = DB::open(o, "/db").unwrap();
    let wo = WriteOptions::default();
    for i in 0..1000u64 {
        let v = if i % 2 == 0 { "stale" } else { "fresh" };
        db.put(&wo, &key(i), v.as_bytes()).unwrap();
    }
    db.compact_range(None, None).unwrap();
    assert_eq!(scan(&db).len(), 1000);
    on.store(true, std::sync::atomic::Ordering::Relaxed);
    // Only a periodic compaction can run the filter again now.
    let took = within(10, || scan(&db).len() == 500);
    assert!(took.is_some(), "{} keys left", scan(&db).len());
    let log = String::from_utf8(fs.read_file(std::path::Path::new("/db/LOG")).unwrap()).unwrap();
    assert!(log.contains("(PeriodicCompaction,"), "{log}");
}

#[test]
fn periodic_compaction_reruns_the_filter_leveled() {
    periodic_compaction_reruns_the_filter(CompactionStyle::Level);
}

#[test]
fn periodic_compaction_reruns_the_filter_universal() {
    periodic_compaction_reruns_the_filter(CompactionStyle::Universal);
}

#[test]
fn ttl_and_periodic_compaction_take_rocksdb_defaults() {
    use strata::options::ColumnFamilyOptions;
    let month = 30 * 24 * 60 * 60;
    let d = ColumnFamilyOptions::default().sanitized();
    assert_eq!((d.ttl, d.periodic_compaction_seconds), (month, 0));
    let f = ColumnFamilyOptions {
        compaction_filter: Some(Arc::new(DropStale(Default::default()))),
        ..Default::default()
    }
    .sanitized();
    assert_eq!((f.ttl, f.periodic_compaction_seconds), (month, month));
    let u = ColumnFamilyOptions {
        compaction_style: CompactionStyle::Universal,
        ttl: 100,
        periodic_compaction_seconds: 500,
        ..Default::default()
    };
    assert_eq!(u.sanitized().periodic_compaction_seconds, 100);
    let mut fifo = ColumnFamilyOptions {
        compaction_style: CompactionStyle::Fifo,
        ..Default::default()
    };
    let s = fifo.clone().sanitized();
    assert_eq!((s.ttl, s.fifo.ttl_seconds), (month, month));
    fifo.fifo.ttl_seconds = 60;
    assert_eq!(fifo.sanitized().ttl, 60);
    // PlainTable: off by default, refused when asked for.
    let fs = MemFileSystem::new();
    let mut o = opts(&fs);
    o.cf.table_factory = strata::options::TableFactory::Plain(Default::default());
    let db = DB::open(o.clone(), "/plain").unwrap();
    drop(db);
    o.cf.ttl = 10;
    let e = DB::open(o, "/plain").unwrap_err();
    assert!(
        e.to_string()
            .contains("TTL is only supported in Block-Based Table format"),
        "{e}"
    );
}

/// `(level, filter bytes, entries)` of every live table.
fn filter_bytes_per_entry(fs: &MemFileSystem, db: &DB) -> Vec<(usize, u64, u64)> {
    use strata::fs::FileSystem;
    db.live_files_metadata()
        .iter()
        .map(|f| {
            let path = std::path::Path::new(&f.db_path).join(f.name.trim_start_matches('/'));
            let file = fs.new_random_access_file(&path).unwrap();
            let t = strata::tools::table::Table::open(
                file,
                &path.to_string_lossy(),
                f.size,
                &strata::TableOptions::default(),
            )
            .unwrap();
            let p = t.properties();
            (f.level, p.filter_size, p.num_entries)
        })
        .collect()
}

/// Filter bytes per entry over the tables of the last level (`bottom`)
/// or of the levels above it.
fn filter_density(per: &[(usize, u64, u64)], bottom: bool) -> f64 {
    let last = per.iter().map(|(l, _, _)| *l).max().unwrap();
    let (bytes, entries) = per
        .iter()
        .filter(|(l, _, _)| (*l == last) == bottom)
        .fold((0, 0), |(b, e), (_, fb, fe)| (b + fb, e + fe));
    bytes as f64 / entries.max(1) as f64
}

/// 6,000 keys written in a scattered order and compacted to the last
/// level while 300 others wait in L0, then 600 of the 6,000 overwritten
/// and flushed: tables on the last level (written there, so sized for
/// it) and in L0 above it. Compactions
/// are manual, so the shape does not depend on when background work runs
/// (with automatic compactions, a table could reach the last level by a
/// trivial move from above and keep the upper levels' filter).
fn filter_tree(fs: &MemFileSystem, tune: impl FnOnce(&mut Options)) -> DB {
    let mut o = opts(fs);
    o.cf.disable_auto_compactions = true;
    // Last-level tables of thousands of keys, so filter sizes are not
    // lost in their rounding to 64-byte lines.
    o.cf.target_file_size_base = 256 << 10;
    tune(&mut o);
    let db = DB::open(o, "/db").unwrap();
    let wo = WriteOptions::default();
    for i in 0..6000u64 {
        let k = i * 7919 % 6000;
        db.put(&wo, &key(k), &value(k, 0)).unwrap();
    }
    db.flush().unwrap();
    // 300 keys of their own range stay above the compaction in L0, so the
    // last level is written with another run in the tree.
    for i in 0..300u64 {
        db.put(&wo, format!("zz{i:04}").as_bytes(), &value(i, 0))
            .unwrap();
    }
    db.flush().unwrap();
    db.compact_range(Some(b"a"), Some(b"z")).unwrap();
    for i in 0..600u64 {
        let k = i * 7919 % 600 * 10;
        db.put(&wo, &key(k), &value(k, 1)).unwrap();
    }
    db.flush().unwrap();
    db
}

#[test]
fn optimize_filters_for_hits_leaves_the_bottom_without_filters() {
    let fs = MemFileSystem::new();
    let db = filter_tree(&fs, |o| o.cf.optimize_filters_for_hits = true);
    let per = filter_bytes_per_entry(&fs, &db);
    let last = per.iter().map(|(l, _, _)| *l).max().unwrap();
    assert!(per.iter().any(|(l, _, _)| *l < last), "{per:?}");
    for (level, bytes, _) in &per {
        if *level == last {
            assert_eq!(*bytes, 0, "a bottom table has a filter: {per:?}");
        } else {
            assert!(*bytes > 0, "an upper table lost its filter: {per:?}");
        }
    }
    // Every key is still found, absent ones are still absent.
    assert_eq!(scan(&db).len(), 6300);
    assert_eq!(db.get(&ReadOptions::default(), b"absent").unwrap(), None);
    assert_eq!(
        db.get(&ReadOptions::default(), &key(10)).unwrap(),
        Some(value(10, 1))
    );
}

#[test]
fn level_scaled_filters_give_upper_levels_more_bits() {
    let fs = MemFileSystem::new();
    let db = filter_tree(&fs, |o| o.cf.level_scaled_filters = true);
    let scaled = filter_bytes_per_entry(&fs, &db);
    assert_eq!(scan(&db).len(), 6300);
    assert_eq!(db.get(&ReadOptions::default(), b"absent").unwrap(), None);
    let fs2 = MemFileSystem::new();
    let uniform = filter_bytes_per_entry(&fs2, &filter_tree(&fs2, |_| {}));
    // Fewer bits on the last level, more above it, than the uniform 10.
    let (sb, ub) = (
        filter_density(&scaled, true),
        filter_density(&uniform, true),
    );
    let (su, uu) = (
        filter_density(&scaled, false),
        filter_density(&uniform, false),
    );
    assert!(sb < ub, "bottom: scaled {sb} vs uniform {ub}");
    assert!(su > uu + 0.4, "upper: scaled {su} vs uniform {uu}");
    // The formula keeps the uniform filter memory: bits per key weighted
    // by run size average 10, and smaller runs get more.
    let o = strata::options::ColumnFamilyOptions {
        level_scaled_filters: true,
        ..Default::default()
    };
    let runs = [1_000_000u64, 40_000_000, 400_000_000, 3_000_000];
    let bits: Vec<f64> = runs
        .iter()
        .map(|&n| o.bloom_bits_for_output(n, &runs, false).unwrap())
        .collect();
    let total: f64 = runs.iter().map(|&n| n as f64).sum();
    let mean: f64 = runs
        .iter()
        .zip(&bits)
        .map(|(&n, b)| n as f64 * b)
        .sum::<f64>()
        / total;
    assert!((mean - 10.0).abs() < 1e-9, "{bits:?}: {mean}");
    assert!(bits[2] < 10.0 && bits[1] > bits[2] && bits[0] > bits[3] && bits[3] > bits[1]);
    // A run ten times larger gets ln(10)/ln(2)^2 bits fewer.
    let step = 10f64.ln() / 2f64.ln().powi(2);
    assert!((bits[1] - bits[2] - step).abs() < 1e-9);
    // Uniform by default; none at the bottom under optimize_filters_for_hits.
    let d = strata::options::ColumnFamilyOptions::default();
    assert_eq!(d.bloom_bits_for_output(1, &runs, true), Some(10.0));
    let h = strata::options::ColumnFamilyOptions {
        optimize_filters_for_hits: true,
        ..Default::default()
    };
    assert_eq!(h.bloom_bits_for_output(1, &runs, true), None);
    assert_eq!(h.bloom_bits_for_output(1, &runs, false), Some(10.0));
}

#[test]
fn file_deletions_can_be_paused_and_live_files_listed() {
    let fs = MemFileSystem::new();
    let mut o = opts(&fs);
    o.cf.disable_auto_compactions = true;
    let db = DB::open(o, "/db").unwrap();
    let wo = WriteOptions::default();
    for round in 0..2 {
        for i in 0..500u64 {
            db.put(&wo, &key(i), &value(i, round)).unwrap();
        }
        db.flush().unwrap();
    }
    let (names, manifest_size) = db.live_files(false).unwrap();
    assert!(manifest_size > 0);
    assert!(names.contains(&"/CURRENT".to_string()));
    let tables: Vec<String> = names
        .iter()
        .filter(|n| n.ends_with(".sst"))
        .cloned()
        .collect();
    assert!(tables.len() >= 2, "{names:?}");
    db.disable_file_deletions().unwrap();
    db.compact_range(None, None).unwrap();
    for t in &tables {
        assert!(
            fs.file_exists(&std::path::Path::new("/db").join(&t[1..])),
            "{t} deleted while deletions were disabled"
        );
    }
    db.enable_file_deletions(false).unwrap();
    for t in &tables {
        assert!(
            !fs.file_exists(&std::path::Path::new("/db").join(&t[1..])),
            "{t} kept after deletions were enabled"
        );
    }
    let wals = db.sorted_wal_files().unwrap();
    assert!(!wals.is_empty());
    db.put(&wo, b"zz", b"1").unwrap();
    let wals = db.sorted_wal_files().unwrap();
    let last = wals.last().unwrap();
    assert!(last.size > 0 && last.start_sequence > 0, "{wals:?}");
}

#[test]
fn compact_files_and_delete_file_follow_rocksdb_rules() {
    let fs = MemFileSystem::new();
    let mut o = opts(&fs);
    o.cf.disable_auto_compactions = true;
    let db = DB::open(o, "/db").unwrap();
    let wo = WriteOptions::default();
    for round in 0..3 {
        for i in (round * 100)..(round * 100 + 100) {
            db.put(&wo, &key(i), &value(i, round)).unwrap();
        }
        db.flush().unwrap();
    }
    let l0: Vec<u64> = db
        .live_files_metadata()
        .iter()
        .map(|f| f.file_number)
        .collect();
    assert_eq!(l0.len(), 3);
    // Bad inputs are refused clearly.
    let cf = db.default_cf();
    assert!(db.compact_files(&cf, &[999_999], 1).is_err());
    assert!(db.compact_files(&cf, &l0, 9).is_err());
    assert!(db.compact_files(&cf, &[], 1).is_err());
    let newest = *l0.iter().max().unwrap();
    let err = db.delete_file(&format!("{newest:06}.sst")).unwrap_err();
    assert!(err.to_string().contains("not the oldest"), "{err}");
    let oldest = *l0.iter().min().unwrap();
    // The two newest L0 files go to L2 (they do not overlap the oldest).
    let mut two = l0.clone();
    two.sort_unstable();
    db.compact_files(&cf, &two[1..], 2).unwrap();
    let meta = db.live_files_metadata();
    assert!(meta.iter().any(|f| f.level == 2), "{meta:?}");
    assert!(meta.iter().any(|f| f.level == 0), "{meta:?}");
    assert_eq!(scan(&db).len(), 300);
    // The oldest L0 file is not on the last level now: L2 has files.
    let err = db.delete_file(&format!("/{oldest:06}.sst")).unwrap_err();
    assert!(err.to_string().contains("not in last level"), "{err}");
    // A last-level file may be deleted: its keys are gone.
    let l2 = meta.iter().find(|f| f.level == 2).unwrap().clone();
    db.delete_file(&l2.name).unwrap();
    assert_eq!(
        db.get(&ReadOptions::default(), &l2.smallest_key).unwrap(),
        None
    );
    assert!(db.delete_file("nonsense").is_err());
}

#[test]
fn writes_slow_down_before_they_stop() {
    let fs = MemFileSystem::new();
    let mut o = opts(&fs);
    o.cf.write_buffer_size = 4 << 10;
    o.cf.level0_file_num_compaction_trigger = 2;
    o.cf.level0_slowdown_writes_trigger = 2;
    o.cf.level0_stop_writes_trigger = 1000;
    o.delayed_write_rate = 1 << 20;
    // The only compaction thread is busy until the writes are done, so
    // level 0 reaches the slowdown trigger whatever the scheduling: every
    // write group after the second flush is delayed.
    let env = strata::Env::new(1, 1, 1 << 20).unwrap();
    let (release, blocked) = std::sync::mpsc::channel::<()>();
    env.low_priority.schedule(move || {
        let _ = blocked.recv();
    });
    o.env = Some(env);
    let db = DB::open(o, "/db").unwrap();
    let wo = WriteOptions::default();
    for i in 0..400u64 {
        db.put(&wo, &key(i), &value(i, 0)).unwrap();
    }
    release.send(()).unwrap();
    db.wait_for_compactions().unwrap();
    let s = db.stall_stats();
    assert!(s.delays > 0, "{s:?}");
    assert!(s.max_stall_micros > 0, "{s:?}");
    let text = db.property("rocksdb.stats").unwrap();
    assert!(text.contains("Stalls:"), "{text}");
    assert_eq!(scan(&db).len(), 400);
}

#[test]
fn log_file_records_flushes_and_compactions() {
    let fs = MemFileSystem::new();
    let db = DB::open(opts(&fs), "/db").unwrap();
    let wo = WriteOptions::default();
    for i in 0..3000u64 {
        db.put(&wo, &key(i), &value(i, 0)).unwrap();
    }
    db.wait_for_compactions().unwrap();
    db.close().unwrap();
    let log = String::from_utf8(fs.read_file(std::path::Path::new("/db/LOG")).unwrap()).unwrap();
    assert!(log.contains("Options.write_buffer_size: 16384"), "{log}");
    assert!(log.contains("flush of"), "{log}");
    assert!(
        log.contains("compaction") || log.contains("trivial move"),
        "{log}"
    );
    // Reopening moves the old LOG aside.
    let db = DB::open(opts(&fs), "/db").unwrap();
    drop(db);
    let names = fs.children(std::path::Path::new("/db")).unwrap();
    assert!(names.iter().any(|n| n.starts_with("LOG.old.")), "{names:?}");
}

#[test]
fn two_databases_share_one_env() {
    let env = Env::new(1, 1, 1 << 20).unwrap();
    let fs = MemFileSystem::new();
    let mut a = opts(&fs);
    a.env = Some(Arc::clone(&env));
    let mut b = opts(&fs);
    b.env = Some(Arc::clone(&env));
    let da = DB::open(a, "/a").unwrap();
    let db = DB::open(b, "/b").unwrap();
    let wo = WriteOptions::default();
    for i in 0..2000u64 {
        da.put(&wo, &key(i), b"a").unwrap();
        db.put(&wo, &key(i), b"b").unwrap();
    }
    da.wait_for_compactions().unwrap();
    db.wait_for_compactions().unwrap();
    assert_eq!(
        da.get(&ReadOptions::default(), &key(7)).unwrap().unwrap(),
        b"a"
    );
    assert_eq!(
        db.get(&ReadOptions::default(), &key(7)).unwrap().unwrap(),
        b"b"
    );
    drop(da);
    drop(db);
    assert_eq!(Arc::strong_count(&env), 1);
}

#[test]
fn an_open_iterator_keeps_compacted_files_readable() {
    let fs = MemFileSystem::new();
    let mut o = opts(&fs);
    o.cf.disable_auto_compactions = true;
    let db = DB::open(o, "/db").unwrap();
    let wo = WriteOptions::default();
    for round in 0..3 {
        for i in 0..400u64 {
            db.put(&wo, &key(i), &value(i, round)).unwrap();
        }
        db.flush().unwrap();
    }
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    let force = CompactRangeOptions {
        bottommost_level_compaction: BottommostLevelCompaction::Force,
        ..Default::default()
    };
    db.compact_range_cf_opt(&db.default_cf(), None, None, &force)
        .unwrap();
    let mut n = 0;
    while it.valid() {
        assert_eq!(it.value(), value(n, 2).as_slice());
        n += 1;
        it.next();
    }
    it.status().unwrap();
    assert_eq!(n, 400);
    drop(it);
    // Once the iterator is gone the next cleanup removes the old files.
    db.put(&wo, b"x", b"y").unwrap();
    db.flush().unwrap();
    let live: Vec<String> = db.live_files(false).unwrap().0;
    let on_disk: Vec<String> = fs
        .children(std::path::Path::new("/db"))
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".sst"))
        .map(|n| format!("/{n}"))
        .collect();
    for f in &on_disk {
        assert!(live.contains(f), "{f} is obsolete but still on disk");
    }
}

#[test]
fn each_column_family_keeps_its_own_number_of_levels() {
    let fs = MemFileSystem::new();
    let db = DB::open(opts(&fs), "/db").unwrap();
    let mut small = opts(&fs).cf;
    small.num_levels = 3;
    let cf = db.create_column_family("small", small.clone()).unwrap();
    let wo = WriteOptions::default();
    for i in 0..6000u64 {
        db.put_cf(&wo, &cf, &key(i), &value(i, 0)).unwrap();
    }
    db.wait_for_compactions().unwrap();
    drop(db);
    let mut o = opts(&fs);
    o.create_missing_column_families = false;
    let db = DB::open_cf(
        o.clone(),
        "/db",
        vec![
            strata::ColumnFamilyDescriptor::new("default", o.cf.clone()),
            strata::ColumnFamilyDescriptor::new("small", small),
        ],
    )
    .unwrap();
    let files = db.live_files_metadata();
    assert!(
        files
            .iter()
            .any(|f| f.column_family_name == "small" && f.level > 0),
        "{files:?}"
    );
    assert!(
        files
            .iter()
            .all(|f| f.column_family_name != "small" || f.level < 3),
        "{files:?}"
    );
    let cf = db.cf_handle("small").unwrap();
    let stats = db.property_cf(&cf, "rocksdb.stats").unwrap();
    assert!(
        stats.contains("[small]") && !stats.contains("[default]"),
        "{stats}"
    );
}

#[test]
fn fifo_options_are_sanitized_like_rocksdb() {
    let fs = MemFileSystem::new();
    let mut o = opts(&fs);
    o.cf.compaction_style = CompactionStyle::Fifo;
    // num_levels stays at its default of 7: RocksDB forces 1 for FIFO.
    o.cf.level0_slowdown_writes_trigger = 1;
    o.cf.level0_stop_writes_trigger = 0;
    let db = DB::open(o, "/db").unwrap();
    for i in 0..500u64 {
        db.put(&WriteOptions::default(), &key(i), b"v").unwrap();
    }
    db.flush().unwrap();
    assert!(db.live_files_metadata().iter().all(|f| f.level == 0));
}

#[test]
fn concurrent_manual_compactions_do_not_collide() {
    // Found by `strata crash_test`: two threads' compact_range picked the
    // same files and the second failed with "Cannot delete table file ...
    // since it is not in the LSM tree". Manual compactions now run one at a
    // time (as they wait for automatic ones).
    for style in [CompactionStyle::Universal, CompactionStyle::Level] {
        let fs = MemFileSystem::new();
        let mut o = opts(&fs);
        o.cf.compaction_style = style;
        let db = Arc::new(DB::open(o, "/db").unwrap());
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let db = Arc::clone(&db);
                s.spawn(move || {
                    for round in 0..6u64 {
                        for i in 0..150u64 {
                            let k = t * 1000 + i;
                            db.put(&WriteOptions::default(), &key(k), &value(k, round))
                                .unwrap();
                        }
                        db.compact_range(None, None)
                            .unwrap_or_else(|e| panic!("{style:?}: compact_range: {e}"));
                    }
                });
            }
        });
        let want: BTreeMap<Vec<u8>, Vec<u8>> = (0..4u64)
            .flat_map(|t| (0..150u64).map(move |i| t * 1000 + i))
            .map(|k| (key(k), value(k, 5)))
            .collect();
        assert!(scan(&db) == want, "{style:?}: wrong contents");
        db.verify_checksums().unwrap();
    }
}

#[test]
fn disjoint_level0_files_move_down_together_unchanged() {
    // A sequential load leaves level-0 files with disjoint key ranges: the
    // level-0 compaction moves them all without rewriting them (RocksDB's
    // trivial move of non-overlapping L0 files). Overlapping ones are
    // merged.
    for overlapping in [false, true] {
        let fs = MemFileSystem::new();
        let mut o = opts(&fs);
        o.cf.level0_file_num_compaction_trigger = 3;
        o.cf.max_bytes_for_level_base = 64 << 20;
        // Only the explicit flushes make tables.
        o.cf.write_buffer_size = 4 << 20;
        o.cf.target_file_size_base = 4 << 20;
        let db = DB::open(o, "/db").unwrap();
        let wo = WriteOptions::default();
        let mut model = BTreeMap::new();
        for run in 0..3u64 {
            for i in 0..200u64 {
                let k = if overlapping {
                    i * 3 + run
                } else {
                    run * 1000 + i
                };
                db.put(&wo, &key(k), &value(k, run)).unwrap();
                model.insert(key(k), value(k, run));
            }
            db.flush().unwrap();
        }
        db.wait_for_compactions().unwrap();
        assert_eq!(levels(&db)[0], 0, "overlapping={overlapping}");
        // The output level: the base level (the last one with dynamic
        // level sizes).
        let stats = db.level_stats();
        let out = stats.iter().skip(1).find(|l| l.count > 0).unwrap();
        if overlapping {
            assert!(out.bytes_written > 0 && out.bytes_moved == 0, "{out:?}");
        } else {
            assert_eq!((out.count, out.files_read), (1, 3), "{out:?}");
            assert!(out.bytes_written == 0 && out.bytes_moved > 0, "{out:?}");
        }
        assert_eq!(scan(&db), model);
        db.close().unwrap();
    }
}

#[test]
fn an_empty_range_deletion_is_not_flushed() {
    // `delete_range(k, k)` deletes nothing. Written to a table as is, its
    // start (`k@seq`) would sort after its end sentinel (`k@max`): the
    // file's bounds would be inverted and overlap checks would skip it,
    // so a later compaction could write an overlapping file in its level
    // (the model test found this as "L6 has overlapping ranges").
    let fs = MemFileSystem::new();
    let db = DB::open(opts(&fs), "/db").unwrap();
    let wo = WriteOptions::default();
    db.delete_range(&wo, b"k2", b"k2").unwrap();
    db.flush().unwrap();
    assert!(db.live_files_metadata().is_empty(), "a file of nothing");
    db.put(&wo, b"k5", b"v").unwrap();
    db.delete_range(&wo, b"k2", b"k2").unwrap();
    db.flush().unwrap();
    let f = &db.live_files_metadata()[0];
    assert_eq!(
        (f.smallest_key.as_slice(), f.largest_key.as_slice()),
        (&b"k5"[..], &b"k5"[..])
    );
    for i in 0..10u8 {
        db.put(&wo, &[b'k', b'0' + i], b"x").unwrap();
    }
    db.delete_range(&wo, b"k7", b"k7").unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(scan(&db).len(), 10);
    assert_eq!(levels(&db).iter().sum::<usize>(), 1);
}

#[test]
fn compression_per_level_picks_each_tables_codec_as_rocksdb() {
    use strata::CompressionType;
    let fs = MemFileSystem::new();
    let mut o = opts(&fs);
    o.cf.disable_auto_compactions = true;
    o.cf.level_compaction_dynamic_level_bytes = false;
    // L0 uncompressed, the base level (L1) snappy, everything deeper zstd.
    o.cf.compression_per_level = vec![
        CompressionType::None,
        CompressionType::Snappy,
        CompressionType::Zstd,
    ];
    let db = DB::open(o.clone(), "/db").unwrap();
    let wo = WriteOptions::default();
    for i in 0..400u32 {
        db.put(&wo, format!("key{i:05}").as_bytes(), &[b'v'; 200])
            .unwrap();
    }
    db.flush().unwrap();
    let codec_at = |db: &DB, level: usize| -> Vec<String> {
        live_tables(&fs, db, &o.cf)
            .iter()
            .filter(|(l, _, _)| *l == level)
            .map(|(_, t, _)| String::from_utf8_lossy(&t.properties().compression_name).into_owned())
            .collect()
    };
    let l0 = codec_at(&db, 0);
    assert!(
        !l0.is_empty() && l0.iter().all(|c| c == "NoCompression"),
        "{l0:?}"
    );
    // Into L1 (the base level): entry 1; then on down to L2: entry 2.
    let cf = db.default_cf();
    db.compact_files(
        &cf,
        &db.live_files_metadata()
            .iter()
            .map(|f| f.file_number)
            .collect::<Vec<_>>(),
        1,
    )
    .unwrap();
    let l1 = codec_at(&db, 1);
    assert!(!l1.is_empty() && l1.iter().all(|c| c == "Snappy"), "{l1:?}");
    db.compact_files(
        &cf,
        &db.live_files_metadata()
            .iter()
            .map(|f| f.file_number)
            .collect::<Vec<_>>(),
        3,
    )
    .unwrap();
    let l3 = codec_at(&db, 3);
    assert!(
        !l3.is_empty() && l3.iter().all(|c| c == "ZSTD"),
        "{l3:?} (entry 2, the last, for deeper levels)"
    );
    // Live-file metadata carries the tables' entry counts.
    let files = db.live_files_metadata();
    assert_eq!(files.iter().map(|f| f.num_entries).sum::<u64>(), 400);
    assert_eq!(files.iter().map(|f| f.num_deletions).sum::<u64>(), 0);
    assert_eq!(
        db.get(&ReadOptions::default(), b"key00123").unwrap(),
        Some(vec![b'v'; 200])
    );
    drop(db);
    // The OPTIONS file carries the list (RocksDB's `a:b:c` form) and it is
    // read back.
    let (newest, text) = newest_options_file(&fs);
    assert!(
        text.contains("compression_per_level=kNoCompression:kSnappyCompression:kZSTD"),
        "{text}"
    );
    let parsed = strata::db::options_parser::parse(&newest, &text).unwrap();
    let mut back = strata::ColumnFamilyOptions::default();
    parsed.apply_cf("default", &mut back).unwrap();
    assert_eq!(back.compression_per_level, o.cf.compression_per_level);
}

/// RocksDB's `bottommost_compression` and `bottommost_compression_opts`:
/// outputs into the last non-empty level take them; flushes and outputs
/// above data take `compression` with `compression_opts`; every table
/// carries its dictionary and says which options made it.
#[test]
fn bottommost_compression_and_dictionaries_as_rocksdb() {
    use strata::{CompressionOptions, CompressionType};
    let fs = MemFileSystem::new();
    let mut o = opts(&fs);
    o.cf.disable_auto_compactions = true;
    o.cf.level_compaction_dynamic_level_bytes = false;
    // Room for the ZSTD trainer: blocks are held up to the target size.
    o.cf.target_file_size_base = 1 << 20;
    o.cf.write_buffer_size = 1 << 20;
    o.cf.compression = CompressionType::Lz4;
    o.cf.compression_opts.max_dict_bytes = 4096;
    o.cf.bottommost_compression = Some(CompressionType::Zstd);
    o.cf.bottommost_compression_opts = CompressionOptions {
        enabled: true,
        max_dict_bytes: 2048,
        zstd_max_train_bytes: 1 << 16,
        ..CompressionOptions::default()
    };
    let db = DB::open(o.clone(), "/db").unwrap();
    let wo = WriteOptions::default();
    let fill = |from: u32| {
        for i in from..from + 2000 {
            let v = format!("value-{}-some-shared-text-{}", i % 17, i);
            db.put(&wo, format!("key{i:05}").as_bytes(), v.as_bytes())
                .unwrap();
        }
        db.flush().unwrap();
    };
    // (codec, compression options property, has a dictionary) per table.
    let tables_at = |db: &DB, level: usize| -> Vec<(String, String, bool)> {
        live_tables(&fs, db, &o.cf)
            .iter()
            .filter(|(l, _, _)| *l == level)
            .map(|(_, t, _)| {
                let p = t.properties();
                (
                    String::from_utf8_lossy(&p.compression_name).into_owned(),
                    String::from_utf8_lossy(&p.compression_options).into_owned(),
                    t.meta_blocks().contains_key("rocksdb.compression_dict"),
                )
            })
            .collect()
    };
    let upper = |t: &[(String, String, bool)]| {
        !t.is_empty()
            && t.iter().all(|(c, p, d)| {
                c == "LZ4" && p.contains("max_dict_bytes=4096;") && p.contains("enabled=0;") && *d
            })
    };
    let bottom = |t: &[(String, String, bool)]| {
        !t.is_empty()
            && t.iter().all(|(c, p, d)| {
                c == "ZSTD"
                    && p.contains("max_dict_bytes=2048; zstd_max_train_bytes=65536; enabled=1;")
                    && *d
            })
    };
    fill(0);
    // A flush never takes the bottommost settings.
    let l0 = tables_at(&db, 0);
    assert!(upper(&l0), "{l0:?}");
    let cf = db.default_cf();
    let all = |db: &DB| -> Vec<u64> {
        db.live_files_metadata()
            .iter()
            .map(|f| f.file_number)
            .collect()
    };
    db.compact_files(&cf, &all(&db), 3).unwrap();
    let l3 = tables_at(&db, 3);
    assert!(bottom(&l3), "{l3:?}");
    // Above data in L3, a compaction output is not at the bottom.
    fill(2000);
    let l0: Vec<u64> = db
        .live_files_metadata()
        .iter()
        .filter(|f| f.level == 0)
        .map(|f| f.file_number)
        .collect();
    db.compact_files(&cf, &l0, 1).unwrap();
    let l1 = tables_at(&db, 1);
    assert!(upper(&l1), "{l1:?}");
    for i in (0..4000u32).step_by(97) {
        let v = format!("value-{}-some-shared-text-{}", i % 17, i);
        assert_eq!(
            db.get(&ReadOptions::default(), format!("key{i:05}").as_bytes())
                .unwrap(),
            Some(v.into_bytes())
        );
    }
    drop(db);
    // The OPTIONS file carries all three in RocksDB's form and reads back.
    let (newest, text) = newest_options_file(&fs);
    assert!(text.contains("  bottommost_compression=kZSTD\n"), "{text}");
    assert!(
        text.contains(
            "  compression_opts={max_dict_buffer_bytes=0;enabled=false;max_dict_bytes=4096;"
        ),
        "{text}"
    );
    let parsed = strata::db::options_parser::parse(&newest, &text).unwrap();
    let mut back = strata::ColumnFamilyOptions::default();
    parsed.apply_cf("default", &mut back).unwrap();
    assert_eq!(back.bottommost_compression, o.cf.bottommost_compression);
    assert_eq!(back.compression_opts, o.cf.compression_opts);
    assert_eq!(
        back.bottommost_compression_opts,
        o.cf.bottommost_compression_opts
    );
    // RocksDB's check: training needs a dictionary size.
    let mut bad = opts(&fs);
    bad.cf.compression_opts.zstd_max_train_bytes = 1 << 16;
    let e = DB::open(bad, "/other").err().unwrap();
    assert!(
        e.to_string()
            .contains("should be nonzero if we're using zstd's dictionary generator"),
        "{e}"
    );
}

/// RocksDB's Ribbon filter policy with `bloom_before_level`: flushes
/// (level -1) keep Bloom filters under 0, every file is Ribbon under -1;
/// the property and the OPTIONS file name the policy, which reads back.
#[test]
fn ribbon_filters_by_level_as_rocksdb() {
    use strata::FilterPolicy;
    for before in [0, -1] {
        let fs = MemFileSystem::new();
        let mut o = opts(&fs);
        o.cf.disable_auto_compactions = true;
        // Tables of thousands of keys: RocksDB (and Strata) write Bloom
        // instead of Ribbon for filters Bloom stores in less space.
        o.cf.write_buffer_size = 1 << 20;
        o.cf.target_file_size_base = 1 << 20;
        o.cf.bloom_bits_per_key = Some(10.0);
        o.cf.filter_policy = FilterPolicy::Ribbon {
            bloom_before_level: before,
        };
        let db = DB::open(o.clone(), "/db").unwrap();
        let wo = WriteOptions::default();
        for i in 0..3000u64 {
            db.put(&wo, &key(i), &value(i, 0)).unwrap();
        }
        db.flush().unwrap();
        // (level, filter trailer marker, policy property) per table.
        let filters = |db: &DB| -> Vec<(usize, u8, String)> {
            live_tables(&fs, db, &o.cf)
                .iter()
                .map(|(level, t, bytes)| {
                    let h = t.meta_blocks()["fullfilter.rocksdb.BuiltinBloomFilter"];
                    let marker = bytes[(h.offset + h.size) as usize - 5];
                    let name = String::from_utf8_lossy(&t.properties().filter_policy_name);
                    (*level, marker, name.into_owned())
                })
                .collect()
        };
        // 0xff: FastLocalBloom's marker; 0xfe: Standard128 Ribbon's.
        let flushed = filters(&db);
        let want = if before == 0 { 0xff } else { 0xfe };
        assert!(
            !flushed.is_empty() && flushed.iter().all(|f| f.1 == want && f.2 == "ribbonfilter"),
            "before {before}: {flushed:?}"
        );
        // Overlapping tables, so the compaction rewrites (no trivial move).
        for i in (0..3000u64).step_by(2) {
            db.put(&wo, &key(i), &value(i, 0)).unwrap();
        }
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        let compacted = filters(&db);
        assert!(
            !compacted.is_empty() && compacted.iter().all(|f| f.0 > 0 && f.1 == 0xfe),
            "before {before}: {compacted:?}"
        );
        for i in (0..3000u64).step_by(101) {
            assert_eq!(
                db.get(&ReadOptions::default(), &key(i)).unwrap(),
                Some(value(i, 0))
            );
        }
        drop(db);
        let (newest, text) = newest_options_file(&fs);
        assert!(
            text.contains(&format!("  filter_policy=ribbonfilter:10:{before}\n")),
            "{text}"
        );
        let parsed = strata::db::options_parser::parse(&newest, &text).unwrap();
        let mut back = strata::ColumnFamilyOptions::default();
        parsed.apply_cf("default", &mut back).unwrap();
        assert_eq!(back.filter_policy, o.cf.filter_policy);
        assert_eq!(back.bloom_bits_per_key, Some(10.0));
    }
}

/// Every live table of `/db`: its level, its reader and its bytes.
fn live_tables(
    fs: &MemFileSystem,
    db: &DB,
    o: &strata::ColumnFamilyOptions,
) -> Vec<(usize, strata::tools::table::Table, Vec<u8>)> {
    db.live_files_metadata()
        .iter()
        .map(|f| {
            let path = format!("/db{}", f.name);
            let p = std::path::Path::new(&path);
            let file = fs.new_random_access_file(p).unwrap();
            let t = strata::tools::table::Table::open(
                file,
                &path,
                f.size,
                &o.table_options(0, "default"),
            )
            .unwrap();
            (f.level, t, fs.read_file(p).unwrap())
        })
        .collect()
}

/// The name and text of the newest OPTIONS file of `/db`.
fn newest_options_file(fs: &MemFileSystem) -> (String, String) {
    let newest = fs
        .children(std::path::Path::new("/db"))
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with("OPTIONS-"))
        .max()
        .unwrap();
    let text = String::from_utf8(
        fs.read_file(std::path::Path::new(&format!("/db/{newest}")))
            .unwrap(),
    )
    .unwrap();
    (newest, text)
}

fn files_per_level(db: &DB) -> Vec<usize> {
    (0..db.number_levels(&db.default_cf()).unwrap())
        .map(|l| {
            db.property(&format!("rocksdb.num-files-at-level{l}"))
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect()
}

#[test]
fn compact_range_change_level_moves_the_result_as_rocksdb_refits() {
    // RocksDB's CompactRangeOptions::change_level: after the compaction
    // the files of the level the data ended in move to target_level (or,
    // with -1, to the smallest empty level above that holds them); moves
    // across non-empty levels and FIFO are refused.
    let fs = MemFileSystem::new();
    let mut o = opts(&fs);
    o.cf.disable_auto_compactions = true;
    o.cf.max_bytes_for_level_base = 64 << 20;
    let db = DB::open(o.clone(), "/db").unwrap();
    let w = WriteOptions::default();
    for round in 0..3 {
        for i in 0..600 {
            db.put(&w, &key(i), &value(i, round)).unwrap();
        }
        db.flush().unwrap();
    }
    let want = scan(&db);
    // Data in L0 and L3 (compact_files puts a file deep).
    let l0 = db.live_files_metadata();
    let deep = l0.iter().map(|m| m.file_number).max().unwrap();
    db.compact_files(&db.default_cf(), &[deep], 3).unwrap();
    let cro = |target_level| CompactRangeOptions {
        change_level: true,
        target_level,
        ..Default::default()
    };
    db.compact_range_cf_opt(&db.default_cf(), None, None, &cro(-1))
        .unwrap();
    // Everything went to L3 (the deepest level holding data), then up to
    // L1: the smallest empty level whose target holds it.
    let levels = files_per_level(&db);
    assert!(levels[1] > 0, "{levels:?}");
    assert!(
        levels.iter().enumerate().all(|(l, &n)| (l == 1) == (n > 0)),
        "{levels:?}"
    );
    assert_eq!(scan(&db), want);
    db.compact_range_cf_opt(&db.default_cf(), None, None, &cro(5))
        .unwrap();
    let levels = files_per_level(&db);
    assert!(
        levels.iter().enumerate().all(|(l, &n)| (l == 5) == (n > 0)),
        "{levels:?}"
    );
    // L5 in the way from L2 down to L6: refused, nothing moved.
    db.put(&w, b"zz", b"1").unwrap();
    db.flush().unwrap();
    db.compact_files(
        &db.default_cf(),
        &[db.live_files_metadata()
            .iter()
            .find(|m| m.level == 0)
            .unwrap()
            .file_number],
        2,
    )
    .unwrap();
    let e = db
        .compact_range_cf_opt(&db.default_cf(), Some(b"zz"), Some(b"zz"), &cro(6))
        .unwrap_err();
    assert!(matches!(e, strata::Error::NotSupported(_)), "{e}");
    let e = db
        .compact_range_cf_opt(&db.default_cf(), None, None, &cro(9))
        .unwrap_err();
    assert!(matches!(e, strata::Error::InvalidArgument(_)), "{e}");
    drop(db);
    // Reopened: the moves are in the MANIFEST.
    let db = DB::open(o, "/db").unwrap();
    let mut want = want;
    want.insert(b"zz".to_vec(), b"1".to_vec());
    assert_eq!(scan(&db), want);
    drop(db);
    let fifo = MemFileSystem::new();
    let mut o = opts(&fifo);
    o.cf.compaction_style = CompactionStyle::Fifo;
    let db = DB::open(o, "/db").unwrap();
    let e = db
        .compact_range_cf_opt(&db.default_cf(), None, None, &cro(0))
        .unwrap_err();
    assert!(matches!(e, strata::Error::InvalidArgument(_)), "{e}");
}

/// The table files in `/db` that no live version names.
fn unreferenced_tables(db: &DB, fs: &MemFileSystem) -> Vec<String> {
    let live: Vec<String> = db
        .live_files_metadata()
        .iter()
        .map(|f| f.name.trim_start_matches('/').to_string())
        .collect();
    fs.children(std::path::Path::new("/db"))
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".sst") && !live.contains(n))
        .collect()
}

#[test]
fn releasing_an_iterator_deletes_the_files_only_it_kept() {
    let fs = MemFileSystem::new();
    let (db, _) = filled(&fs);
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    let force = CompactRangeOptions {
        bottommost_level_compaction: BottommostLevelCompaction::Force,
        ..CompactRangeOptions::default()
    };
    db.compact_range_cf_opt(&db.default_cf(), None, None, &force)
        .unwrap();
    db.wait_for_compactions().unwrap();
    // The iterator's version still names the compacted-away files.
    let kept = unreferenced_tables(&db, &fs);
    assert!(!kept.is_empty(), "the iterator's files were deleted");
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.next();
    }
    it.status().unwrap();
    assert_eq!(n, 6000);
    // No flush or compaction follows: the release alone purges them.
    drop(it);
    let took = within(10, || unreferenced_tables(&db, &fs).is_empty());
    assert!(
        took.is_some(),
        "still on disk: {:?}",
        unreferenced_tables(&db, &fs)
    );
    assert_eq!(scan(&db).len(), 6000);
}

#[test]
fn a_flush_racing_compactions_leaves_no_obsolete_files() {
    // The flush of a range deletion over the whole tree pushes it down at
    // once; whichever job finishes last, nothing obsolete stays on disk.
    for _ in 0..20 {
        let fs = MemFileSystem::new();
        let (db, _) = filled(&fs);
        let wo = WriteOptions::default();
        db.delete_range(&wo, &key(0), &key(5000)).unwrap();
        db.flush().unwrap();
        let took = within(10, || {
            db.wait_for_compactions().unwrap();
            unreferenced_tables(&db, &fs).is_empty()
        });
        assert!(
            took.is_some(),
            "still on disk: {:?}",
            unreferenced_tables(&db, &fs)
        );
    }
}

#[test]
fn suggested_ranges_are_marked_above_the_last_level_and_then_compacted() {
    let fs = MemFileSystem::new();
    let mut o = opts(&fs);
    o.cf.disable_auto_compactions = true;
    let wo = WriteOptions::default();
    let db = DB::open(o.clone(), "/db").unwrap();
    for i in 0..200u64 {
        db.put(&wo, &key(i), &value(i, 0)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    for i in 0..200u64 {
        db.put(&wo, &key(i), &value(i, 1)).unwrap();
    }
    db.flush().unwrap();
    let marked = |db: &DB| -> Vec<(usize, bool)> {
        let mut m: Vec<_> = db
            .live_files_metadata()
            .iter()
            .map(|f| (f.level, f.marked_for_compaction))
            .collect();
        m.sort();
        m.dedup();
        m
    };
    let bottom = db
        .live_files_metadata()
        .iter()
        .map(|f| f.level)
        .max()
        .unwrap();
    assert!(bottom > 0);
    // A range no file overlaps marks nothing.
    db.suggest_compact_range_cf(&db.default_cf(), Some(b"zz"), None)
        .unwrap();
    assert_eq!(marked(&db), vec![(0, false), (bottom, false)]);
    // The L0 files overlapping the range are marked, the others and the
    // last level's are not; the mark is in the MANIFEST.
    db.suggest_compact_range_cf(&db.default_cf(), Some(&key(10)), Some(&key(20)))
        .unwrap();
    for f in db.live_files_metadata() {
        let overlaps = f.smallest_key.as_slice() <= key(20).as_slice()
            && f.largest_key.as_slice() >= key(10).as_slice();
        assert_eq!(
            f.marked_for_compaction,
            f.level == 0 && overlaps,
            "{} on L{}",
            f.name,
            f.level
        );
    }
    assert!(marked(&db).contains(&(0, true)));
    let before = marked(&db);
    db.close().unwrap();
    let db = DB::open(o.clone(), "/db").unwrap();
    assert_eq!(marked(&db), before);
    db.close().unwrap();
    o.cf.disable_auto_compactions = false;
    let db = DB::open(o, "/db").unwrap();
    // Reopened with compactions on: the marked file is compacted away.
    db.wait_for_compactions().unwrap();
    assert!(
        marked(&db).iter().all(|&(level, m)| level > 0 && !m),
        "{:?}",
        marked(&db)
    );
    for i in (0..200u64).step_by(17) {
        assert_eq!(
            db.get(&ReadOptions::default(), &key(i)).unwrap(),
            Some(value(i, 1))
        );
    }
}

#[test]
fn paused_manual_compactions_answer_incomplete_until_resumed() {
    let fs = MemFileSystem::new();
    let mut o = opts(&fs);
    o.cf.disable_auto_compactions = true;
    let db = DB::open(o, "/db").unwrap();
    let wo = WriteOptions::default();
    for round in 0..2 {
        for i in 0..100u64 {
            db.put(&wo, &key(i), &value(i, round)).unwrap();
        }
        db.flush().unwrap();
    }
    let l0 = |db: &DB| db.property("rocksdb.num-files-at-level0").unwrap();
    db.disable_manual_compaction();
    db.disable_manual_compaction();
    let err = db.compact_range(None, None).unwrap_err();
    assert!(
        err.to_string().contains("Manual compaction paused"),
        "{err}"
    );
    db.enable_manual_compaction();
    // Calls nest: one disable is still in force.
    assert!(db.compact_range(None, None).is_err());
    assert_eq!(l0(&db), "2");
    db.enable_manual_compaction();
    db.compact_range(None, None).unwrap();
    assert_eq!(l0(&db), "0");
}

#[test]
fn cancelled_background_work_leaves_reads_and_flushes_unlogged_writes() {
    let fs = MemFileSystem::new();
    let db = DB::open(opts(&fs), "/db").unwrap();
    let unlogged = WriteOptions {
        disable_wal: true,
        ..WriteOptions::default()
    };
    db.put(&unlogged, b"k", b"only in the memtable").unwrap();
    db.cancel_all_background_work(true).unwrap();
    // The write that skipped the WAL was flushed to a table.
    assert_eq!(
        db.property("rocksdb.num-files-at-level0").as_deref(),
        Some("1")
    );
    assert_eq!(
        db.get(&ReadOptions::default(), b"k").unwrap().as_deref(),
        Some(&b"only in the memtable"[..])
    );
    db.close().unwrap();
    let db = DB::open(opts(&fs), "/db").unwrap();
    assert_eq!(
        db.get(&ReadOptions::default(), b"k").unwrap().as_deref(),
        Some(&b"only in the memtable"[..])
    );
}

/// Counts the filters it makes and what each was told.
struct CountingFactory {
    made: std::sync::Mutex<Vec<strata::compaction_filter::CompactionFilterContext>>,
}

impl strata::compaction_filter::CompactionFilterFactory for CountingFactory {
    fn name(&self) -> &str {
        "CountingFactory"
    }
    fn create_compaction_filter(
        &self,
        context: &strata::compaction_filter::CompactionFilterContext,
    ) -> Option<strata::compaction_filter::CompactionFilterRef> {
        self.made.lock().unwrap().push(*context);
        Some(Arc::new(DropOdd))
    }
}

#[test]
fn a_filter_factory_makes_one_filter_per_compaction() {
    let fs = MemFileSystem::new();
    let factory = Arc::new(CountingFactory {
        made: std::sync::Mutex::new(Vec::new()),
    });
    let mut o = opts(&fs);
    o.cf.disable_auto_compactions = true;
    o.cf.compaction_filter_factory = Some(factory.clone());
    let db = DB::open(o, "/db").unwrap();
    let wo = WriteOptions::default();
    for i in 0..100u64 {
        db.put(&wo, &key(i), &value(i, 0)).unwrap();
    }
    db.flush().unwrap();
    // Flushes filter nothing (as in RocksDB).
    assert!(factory.made.lock().unwrap().is_empty());
    assert!(db.get(&ReadOptions::default(), &key(1)).unwrap().is_some());
    db.compact_range(None, None).unwrap();
    let made = factory.made.lock().unwrap().clone();
    assert_eq!(made.len(), 1, "{made:?}");
    assert!(made[0].is_manual_compaction && made[0].is_full_compaction);
    for i in 0..100u64 {
        assert_eq!(
            db.get(&ReadOptions::default(), &key(i)).unwrap().is_some(),
            i % 2 == 0,
            "key {i}"
        );
    }
    // The OPTIONS file names the factory.
    let options_file = fs
        .file_names()
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("OPTIONS-"))
        .max()
        .unwrap();
    let text = String::from_utf8(fs.read_file(&options_file).unwrap()).unwrap();
    assert!(
        text.contains("compaction_filter_factory=CountingFactory"),
        "{text}"
    );
}
