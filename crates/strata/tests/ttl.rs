//! DBWithTTL through the public API: the value layout (RocksDB's 4-byte
//! timestamp suffix), expiry by compaction only, per-column-family TTLs,
//! merges and user compaction filters under the TTL wrappers, and
//! RocksDB's `ldb --ttl` reading and writing the same databases.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use strata::compaction_filter::{CompactionFilter, Decision};
use strata::merge_operator::StringAppendOperator;
use strata::options::{ColumnFamilyOptions, Options, ReadOptions, WriteOptions};
use strata::utilities::ttl::{Clock, DBWithTTL, MIN_TIMESTAMP};
use strata::{ColumnFamilyDescriptor, DB, Error};

const T0: u64 = 1_700_000_000;

fn opts() -> Options {
    let mut o = Options {
        create_if_missing: true,
        create_missing_column_families: true,
        ..Options::default()
    };
    o.cf.merge_operator = Some(Arc::new(StringAppendOperator::default()));
    o
}

fn clock(now: &Arc<AtomicU64>) -> Clock {
    let now = now.clone();
    Arc::new(move || now.load(Ordering::SeqCst))
}

fn wo() -> WriteOptions {
    WriteOptions::default()
}

fn ro() -> ReadOptions {
    ReadOptions::default()
}

#[test]
fn values_carry_a_timestamp_and_expire_only_at_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let now = Arc::new(AtomicU64::new(T0));
    let o = opts();
    let db = DBWithTTL::open_cf_with_clock(
        o.clone(),
        dir.path(),
        vec![ColumnFamilyDescriptor::new("default", o.cf.clone())],
        &[100],
        false,
        clock(&now),
    )
    .unwrap();
    db.put(&wo(), b"old", b"v1").unwrap();
    now.store(T0 + 90, Ordering::SeqCst);
    db.put(&wo(), b"new", b"v2").unwrap();
    db.merge(&wo(), b"new", b"m").unwrap();
    // The raw value is the value plus the little-endian timestamp.
    let raw = db.db().get(&ro(), b"old").unwrap().unwrap();
    assert_eq!(raw, [&b"v1"[..], &(T0 as u32).to_le_bytes()].concat());
    assert_eq!(db.get(&ro(), b"new").unwrap(), Some(b"v2,m".to_vec()));
    // Past the TTL, reads still return it (as RocksDB) until compaction.
    now.store(T0 + 150, Ordering::SeqCst);
    assert_eq!(db.get(&ro(), b"old").unwrap(), Some(b"v1".to_vec()));
    db.db().compact_range(None, None).unwrap();
    assert_eq!(
        db.get(&ro(), b"old").unwrap(),
        None,
        "expired and compacted"
    );
    assert_eq!(db.get(&ro(), b"new").unwrap(), Some(b"v2,m".to_vec()));
    let mut it = db.iter(&ro()).unwrap();
    it.seek_to_first();
    assert_eq!((it.key(), it.value()), (&b"new"[..], &b"v2,m"[..]));
    assert!(it.timestamp().unwrap() >= (T0 + 90) as u32);
    it.next();
    assert!(!it.valid());
    // A TTL change applies to later compactions.
    db.set_ttl(&db.db().default_cf(), 0).unwrap();
    now.store(T0 + 10_000, Ordering::SeqCst);
    db.db().compact_range(None, None).unwrap();
    assert_eq!(
        db.get(&ro(), b"new").unwrap(),
        Some(b"v2,m".to_vec()),
        "0 = forever"
    );
    // Batches are stamped too.
    let mut b = strata::WriteBatch::new();
    b.put(b"b1", b"x");
    b.merge(b"b1", b"y");
    b.delete(b"new");
    db.write(&wo(), b).unwrap();
    assert_eq!(db.get(&ro(), b"b1").unwrap(), Some(b"x,y".to_vec()));
    assert_eq!(db.get(&ro(), b"new").unwrap(), None);
    // A value without a timestamp is reported, not misread.
    db.db().put(&wo(), b"raw", b"ab").unwrap();
    assert!(matches!(
        db.get(&ro(), b"raw"),
        Err(Error::Corruption { .. })
    ));
    // A suffix older than the TTL feature is not a timestamp.
    let stale = [&b"abcd"[..], &(MIN_TIMESTAMP - 1).to_le_bytes()].concat();
    db.db().put(&wo(), b"raw", &stale).unwrap();
    let e = db.get(&ro(), b"raw").unwrap_err();
    assert!(e.to_string().contains("ttl feature release"), "{e}");
}

struct DropX;
impl CompactionFilter for DropX {
    fn name(&self) -> &str {
        "DropX"
    }
    fn filter(&self, _level: usize, _key: &[u8], value: &[u8]) -> Decision {
        match value {
            b"x" => Decision::Remove,
            b"up" => Decision::ChangeValue(b"UP".to_vec()),
            _ => Decision::Keep,
        }
    }
}

#[test]
fn column_families_have_their_own_ttl_and_user_filters_see_plain_values() {
    let dir = tempfile::tempdir().unwrap();
    let now = Arc::new(AtomicU64::new(T0));
    let o = opts();
    let mut filtered = o.cf.clone();
    filtered.compaction_filter = Some(Arc::new(DropX));
    let cfs = vec![
        ColumnFamilyDescriptor::new("default", o.cf.clone()),
        ColumnFamilyDescriptor::new("short", filtered),
    ];
    let mut db =
        DBWithTTL::open_cf_with_clock(o.clone(), dir.path(), cfs, &[1000, 10], false, clock(&now))
            .unwrap();
    let short = db.db().cf_handle("short").unwrap();
    db.put(&wo(), b"k", b"long-lived").unwrap();
    db.put_cf(&wo(), &short, b"k", b"short-lived").unwrap();
    db.put_cf(&wo(), &short, b"x", b"x").unwrap();
    db.put_cf(&wo(), &short, b"u", b"up").unwrap();
    db.db()
        .compact_range_cf_opt(&short, None, None, &Default::default())
        .unwrap();
    assert_eq!(
        db.get_cf(&ro(), &short, b"x").unwrap(),
        None,
        "user filter ran"
    );
    assert_eq!(
        db.get_cf(&ro(), &short, b"u").unwrap(),
        Some(b"UP".to_vec())
    );
    now.store(T0 + 100, Ordering::SeqCst);
    db.db()
        .compact_range_cf_opt(&short, None, None, &Default::default())
        .unwrap();
    db.db().compact_range(None, None).unwrap();
    assert_eq!(db.get_cf(&ro(), &short, b"k").unwrap(), None);
    assert_eq!(db.get(&ro(), b"k").unwrap(), Some(b"long-lived".to_vec()));
    let h = db
        .create_column_family_with_ttl("later", ColumnFamilyOptions::default(), 5)
        .unwrap();
    assert_eq!(db.get_ttl(&h), Some(5));
    db.put_cf(&wo(), &h, b"k", b"v").unwrap();
    now.store(T0 + 200, Ordering::SeqCst);
    db.db()
        .compact_range_cf_opt(&h, None, None, &Default::default())
        .unwrap();
    assert_eq!(db.get_cf(&ro(), &h, b"k").unwrap(), None);
    assert!(matches!(
        DBWithTTL::open_cf(o, dir.path(), vec![], &[1], false),
        Err(Error::InvalidArgument(_))
    ));
}

/// RocksDB 7.8.3's `ldb --ttl` does its work, then fails every command
/// with this message (its check reads the default `--column_family`
/// as a column family list): the output is right, the status is not.
fn ldb_ttl_ok(out: &std::process::Output) -> bool {
    out.status.success()
        || String::from_utf8_lossy(&out.stderr)
            .contains("ldb doesn't support TTL DB with multiple column families")
}

#[test]
fn rocksdb_ldb_ttl_reads_and_writes_strata_ttl_databases() {
    let Some(mut ldb) = common::rocksdb::ldb() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let db = DBWithTTL::open(opts(), &path, 0).unwrap();
        db.put(&wo(), b"a", b"alpha").unwrap();
        db.put(&wo(), b"b", b"beta").unwrap();
        db.db().flush().unwrap();
    }
    let out = ldb
        .arg(format!("--db={}", path.display()))
        .args(["--ttl", "scan"])
        .output()
        .unwrap();
    assert!(ldb_ttl_ok(&out), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "a : alpha\nb : beta\n"
    );
    let out = common::rocksdb::ldb()
        .unwrap()
        .arg(format!("--db={}", path.display()))
        .args(["--ttl", "put", "c", "gamma"])
        .output()
        .unwrap();
    assert!(ldb_ttl_ok(&out), "{}", String::from_utf8_lossy(&out.stderr));
    let db = DBWithTTL::open(opts(), &path, 0).unwrap();
    assert_eq!(db.get(&ro(), b"c").unwrap(), Some(b"gamma".to_vec()));
    // Without the TTL layer the suffix shows.
    let raw = db.db().get(&ro(), b"c").unwrap().unwrap();
    assert_eq!(raw.len(), b"gamma".len() + 4);
    drop(db);
    let db = DB::open(opts(), &path).unwrap();
    assert!(db.get(&ro(), b"a").unwrap().unwrap().starts_with(b"alpha"));
}
