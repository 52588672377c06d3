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
