//! `rocksdb_perfcontext_*`: the calling thread's read counters (RocksDB's
//! thread-local `PerfContext`). The handle names the thread's context; it
//! holds nothing itself.
//!
//! Metrics Strata counts: `rocksdb_bloom_sst_hit_count` (44) and
//! `rocksdb_bloom_sst_miss_count` (45). Others answer 0, and
//! `rocksdb_perfcontext_report` says which are counted.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_uchar};

use strata::perf_context;

use crate::ffi::{drop_raw, guard_quiet, into_raw, malloc_cstr};

pub struct rocksdb_perfcontext_t {
    _private: (),
}

/// RocksDB's `rocksdb_perfcontext_*` metric numbers Strata counts.
const BLOOM_SST_HIT_COUNT: c_int = 44;
const BLOOM_SST_MISS_COUNT: c_int = 45;

#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_perfcontext_create() -> *mut rocksdb_perfcontext_t {
    into_raw(rocksdb_perfcontext_t { _private: () })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_perfcontext_destroy(context: *mut rocksdb_perfcontext_t) {
    // SAFETY: NULL or from rocksdb_perfcontext_create.
    guard_quiet((), || unsafe { drop_raw(context) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_perfcontext_reset(_context: *mut rocksdb_perfcontext_t) {
    guard_quiet((), perf_context::reset)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_perfcontext_metric(
    _context: *mut rocksdb_perfcontext_t,
    metric: c_int,
) -> u64 {
    guard_quiet(0, || {
        let p = perf_context::get();
        match metric {
            BLOOM_SST_HIT_COUNT => p.bloom_sst_hit_count,
            BLOOM_SST_MISS_COUNT => p.bloom_sst_miss_count,
            _ => 0,
        }
    })
}

/// The counters as RocksDB's `PerfContext::ToString` lays them out
/// (`name = value, ...`), `exclude_zero_counters` leaving zeros out;
/// malloc'd.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_perfcontext_report(
    _context: *mut rocksdb_perfcontext_t,
    exclude_zero_counters: c_uchar,
) -> *mut c_char {
    guard_quiet(std::ptr::null_mut(), || {
        let p = perf_context::get();
        let all = [
            ("bloom_sst_hit_count", p.bloom_sst_hit_count),
            ("bloom_sst_miss_count", p.bloom_sst_miss_count),
        ];
        let text: Vec<String> = all
            .iter()
            .filter(|(_, v)| exclude_zero_counters == 0 || *v != 0)
            .map(|(n, v)| format!("{n} = {v}"))
            .collect();
        malloc_cstr(&text.join(", "))
    })
}
