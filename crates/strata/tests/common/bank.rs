//! The bank-transfer invariant's accounts, and RocksDB's `ldb dump_wal` of
//! a database's WAL, shared by the transaction tests.

/// Accounts and the balance each starts with: transfers keep the total.
pub const ACCOUNTS: usize = 20;
pub const START: u64 = 1000;

pub fn account(i: usize) -> Vec<u8> {
    format!("acct{i:03}").into_bytes()
}

/// A balance as stored (decimal text); panics if absent.
pub fn parse(v: Option<Vec<u8>>) -> u64 {
    String::from_utf8(v.unwrap()).unwrap().parse().unwrap()
}

/// RocksDB's `ldb dump_wal --print_value` of the (first) WAL in `db`:
/// whether it succeeded, and stdout then stderr. `None` without `ldb`.
pub fn ldb_dump_wal(db: &std::path::Path) -> Option<(bool, String, String)> {
    let ldb = super::rocksdb::ldb()?;
    let wal = std::fs::read_dir(db)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "log"))
        .expect("a WAL");
    let out = { ldb }
        .arg("dump_wal")
        .arg(format!("--walfile={}", wal.display()))
        .arg("--print_value")
        .output()
        .unwrap();
    Some((
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}
