//! WAL tailing: `rocksdb_get_updates_since` and its iterator of batches.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_uchar};

use strata::db::TransactionLogIterator;

use crate::batch::rocksdb_writebatch_t;
use crate::db::{db_of, rocksdb_t};
use crate::ffi::{drop_raw, guard, guard_quiet, into_raw, put_out, st};

/// RocksDB's `TransactionLogIterator::ReadOptions` (checksums are always
/// verified here).
pub struct rocksdb_wal_readoptions_t {
    _private: (),
}

pub struct rocksdb_wal_iterator_t {
    it: TransactionLogIterator,
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_get_updates_since(
    db: *mut rocksdb_t,
    seq_number: u64,
    _options: *const rocksdb_wal_readoptions_t,
    errptr: *mut *mut c_char,
) -> *mut rocksdb_wal_iterator_t {
    guard(errptr, std::ptr::null_mut(), || {
        let it = st(db_of(db)?.get_updates_since(seq_number))?;
        Ok(into_raw(rocksdb_wal_iterator_t { it }))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_wal_iter_next(it: *mut rocksdb_wal_iterator_t) {
    guard_quiet((), || {
        // SAFETY: NULL or a live iterator.
        if let Some(i) = unsafe { it.as_mut() } {
            i.it.next()
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_wal_iter_valid(it: *const rocksdb_wal_iterator_t) -> c_uchar {
    // SAFETY: NULL or a live iterator.
    guard_quiet(0, || {
        unsafe { it.as_ref() }.is_some_and(|i| i.it.valid()) as c_uchar
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_wal_iter_status(
    it: *const rocksdb_wal_iterator_t,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        // SAFETY: NULL or a live iterator.
        match unsafe { it.as_ref() } {
            Some(i) => st(i.it.status()),
            None => Err("Invalid argument: iterator is NULL".into()),
        }
    })
}

/// The current batch (a new batch the caller destroys) and its first
/// sequence number; NULL when the iterator is not valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_wal_iter_get_batch(
    it: *const rocksdb_wal_iterator_t,
    seq: *mut u64,
) -> *mut rocksdb_writebatch_t {
    guard_quiet(std::ptr::null_mut(), || {
        // SAFETY: NULL or a live iterator; `seq` NULL or writable.
        match unsafe { it.as_ref() }.filter(|i| i.it.valid()) {
            Some(i) => {
                let b = i.it.get_batch();
                unsafe { put_out(seq, b.sequence) };
                into_raw(rocksdb_writebatch_t::new(b.write_batch))
            }
            None => std::ptr::null_mut(),
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_wal_iter_destroy(it: *const rocksdb_wal_iterator_t) {
    // SAFETY: NULL or a live iterator.
    guard_quiet((), || unsafe {
        drop_raw(it as *mut rocksdb_wal_iterator_t)
    })
}
