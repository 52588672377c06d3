//! Helpers shared by the integration tests (each test binary includes the
//! parts it uses with `mod common;`).
#![allow(dead_code)]

pub mod bank;
pub mod figures;
pub mod history;
pub mod rocksdb;

/// Every key and value of `db`'s default column family, in order (the
/// iterator's status checked).
pub fn scan_all(db: &strata::DB) -> std::collections::BTreeMap<Vec<u8>, Vec<u8>> {
    let mut it = db.iter(&strata::ReadOptions::default()).unwrap();
    let mut out = std::collections::BTreeMap::new();
    it.seek_to_first();
    while it.valid() {
        out.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status().unwrap();
    out
}

/// `rounds` rounds of `per_round` puts over `key_space` keys
/// (`key000000`...), each round flushed, then one full compaction; values
/// `v<round>-<i>-` followed by `value_len(i)` bytes. Returns what the
/// database holds.
pub fn fill_in_flushed_rounds(
    db: &strata::DB,
    rounds: u64,
    per_round: u64,
    key_space: u64,
    value_len: impl Fn(u64) -> usize,
) -> std::collections::BTreeMap<Vec<u8>, Vec<u8>> {
    let mut model = std::collections::BTreeMap::new();
    let w = strata::WriteOptions::default();
    for round in 0..rounds {
        for i in 0..per_round {
            let k = format!("key{:06}", (i * 7919 + round * 13) % key_space).into_bytes();
            let v = format!("v{round}-{i}-{}", "x".repeat(value_len(i))).into_bytes();
            db.put(&w, &k, &v).unwrap();
            model.insert(k, v);
        }
        db.flush().unwrap();
    }
    db.compact_range(None, None).unwrap();
    model
}

/// `db` holds exactly `model`: a full scan, gets of every `step`-th key,
/// and every table's checksums.
pub fn assert_holds(
    db: &strata::DB,
    model: &std::collections::BTreeMap<Vec<u8>, Vec<u8>>,
    step: usize,
) {
    assert_eq!(&scan_all(db), model);
    for (k, v) in model.iter().step_by(step) {
        assert_eq!(
            db.get(&strata::ReadOptions::default(), k).unwrap().as_ref(),
            Some(v)
        );
    }
    db.verify_checksums().unwrap();
}
