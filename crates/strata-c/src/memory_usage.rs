//! Memory reports over several databases and caches
//! (`rocksdb_approximate_memory_usage_*`, RocksDB's
//! `MemoryUtil::GetApproximateMemoryUsageByType`), and memory allocators
//! (`rocksdb_jemalloc_nodump_allocator_create`: Strata is not built with
//! jemalloc and says so, as a RocksDB built without it does).

#![allow(non_camel_case_types)]

use std::collections::HashSet;
use std::ffi::c_char;
use std::sync::Arc;

use strata::{BlockCache, DB};

use crate::db::{db_of, rocksdb_t};
use crate::ffi::{drop_raw, guard, guard_quiet, into_raw};
use crate::options::rocksdb_cache_t;

/// The databases and caches a report covers (borrowed: they must outlive
/// the reports made from them, as in RocksDB).
#[derive(Default)]
pub struct rocksdb_memory_consumers_t {
    dbs: Vec<*const rocksdb_t>,
    caches: Vec<Arc<BlockCache>>,
}

/// One report (bytes).
pub struct rocksdb_memory_usage_t {
    mem_table_total: u64,
    mem_table_unflushed: u64,
    mem_table_readers_total: u64,
    cache_total: u64,
}

/// The allocator RocksDB would hand to a cache: never made by Strata.
pub struct rocksdb_memory_allocator_t {
    _private: (),
}

#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_memory_consumers_create() -> *mut rocksdb_memory_consumers_t {
    into_raw(rocksdb_memory_consumers_t::default())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_memory_consumers_add_db(
    consumers: *mut rocksdb_memory_consumers_t,
    db: *mut rocksdb_t,
) {
    guard_quiet((), || {
        // SAFETY: NULL or live consumers.
        if let (Some(c), false) = (unsafe { consumers.as_mut() }, db.is_null()) {
            c.dbs.push(db);
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_memory_consumers_add_cache(
    consumers: *mut rocksdb_memory_consumers_t,
    cache: *mut rocksdb_cache_t,
) {
    guard_quiet((), || {
        // SAFETY: NULL or live consumers and cache.
        if let (Some(c), Some(cache)) = unsafe { (consumers.as_mut(), cache.as_ref()) } {
            c.caches.push(Arc::clone(&cache.cache));
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_memory_consumers_destroy(
    consumers: *mut rocksdb_memory_consumers_t,
) {
    // SAFETY: NULL or from rocksdb_memory_consumers_create.
    guard_quiet((), || unsafe { drop_raw(consumers) })
}

/// The sum of an integer property over every column family of `db`.
fn sum_property(db: &DB, name: &str) -> u64 {
    db.column_families()
        .iter()
        .filter_map(|cf| db.cf_handle(cf))
        .filter_map(|h| db.property_cf(&h, name))
        .filter_map(|v| v.parse::<u64>().ok())
        .sum()
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_approximate_memory_usage_create(
    consumers: *mut rocksdb_memory_consumers_t,
    errptr: *mut *mut c_char,
) -> *mut rocksdb_memory_usage_t {
    guard(errptr, std::ptr::null_mut(), || {
        // SAFETY: NULL or live consumers.
        let c = unsafe { consumers.as_ref() }
            .ok_or_else(|| "Invalid argument: memory consumers are NULL".to_string())?;
        let mut usage = rocksdb_memory_usage_t {
            mem_table_total: 0,
            mem_table_unflushed: 0,
            mem_table_readers_total: 0,
            cache_total: 0,
        };
        for &db in &c.dbs {
            let db = db_of(db)?;
            usage.mem_table_total += sum_property(&db, "rocksdb.size-all-mem-tables");
            usage.mem_table_unflushed += sum_property(&db, "rocksdb.cur-size-all-mem-tables");
            usage.mem_table_readers_total +=
                sum_property(&db, "rocksdb.estimate-table-readers-mem");
        }
        // A cache shared by several consumers counts once.
        let mut seen = HashSet::new();
        for cache in &c.caches {
            if seen.insert(Arc::as_ptr(cache)) {
                usage.cache_total += cache.usage();
            }
        }
        Ok(into_raw(usage))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_approximate_memory_usage_destroy(
    usage: *mut rocksdb_memory_usage_t,
) {
    // SAFETY: NULL or from rocksdb_approximate_memory_usage_create.
    guard_quiet((), || unsafe { drop_raw(usage) })
}

macro_rules! usage_getter {
    ($name:ident, $field:ident) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(usage: *mut rocksdb_memory_usage_t) -> u64 {
            // SAFETY: NULL or a live report.
            guard_quiet(0, || unsafe { usage.as_ref() }.map_or(0, |u| u.$field))
        }
    };
}

usage_getter!(
    rocksdb_approximate_memory_usage_get_mem_table_total,
    mem_table_total
);
usage_getter!(
    rocksdb_approximate_memory_usage_get_mem_table_unflushed,
    mem_table_unflushed
);
usage_getter!(
    rocksdb_approximate_memory_usage_get_mem_table_readers_total,
    mem_table_readers_total
);
usage_getter!(
    rocksdb_approximate_memory_usage_get_cache_total,
    cache_total
);

/// RocksDB's answer when built without jemalloc: `Not implemented: ...`
/// and no allocator.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_jemalloc_nodump_allocator_create(
    errptr: *mut *mut c_char,
) -> *mut rocksdb_memory_allocator_t {
    guard(errptr, std::ptr::null_mut(), || {
        Err("Not implemented: JemallocNodumpAllocator: Strata is not built with jemalloc".into())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_memory_allocator_destroy(a: *mut rocksdb_memory_allocator_t) {
    // SAFETY: NULL (no allocator is ever made).
    guard_quiet((), || unsafe { drop_raw(a) })
}
