//! The machine's host name, which RocksDB records in every table it
//! writes (`rocksdb.creating.host.identity`) unless `DBOptions::db_host_id`
//! says otherwise.

use std::sync::OnceLock;

/// `DBOptions::db_host_id`'s default: record the host name (RocksDB's
/// `kHostnameForDbHostId`).
pub const HOSTNAME_FOR_DB_HOST_ID: &str = "__hostname__";

/// The host name (the kernel's node name, what `gethostname` returns), or
/// empty where it cannot be read (RocksDB then records none either).
pub fn host_name() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|s| s.trim_end_matches('\n').to_string())
            .unwrap_or_default()
    })
}

/// What a table records for `db_host_id`: the host name for
/// [`HOSTNAME_FOR_DB_HOST_ID`], else the option's own text.
pub fn resolve_db_host_id(db_host_id: &str) -> &str {
    if db_host_id == HOSTNAME_FOR_DB_HOST_ID {
        host_name()
    } else {
        db_host_id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_the_host_name_and_anything_else_is_kept() {
        let name = resolve_db_host_id(HOSTNAME_FOR_DB_HOST_ID);
        assert!(!name.ends_with('\n'));
        if cfg!(target_os = "linux") {
            assert!(!name.is_empty());
        }
        assert_eq!(resolve_db_host_id("rack-7"), "rack-7");
        assert_eq!(resolve_db_host_id(""), "");
    }
}
