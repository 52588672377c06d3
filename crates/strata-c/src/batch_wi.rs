//! WriteBatchWithIndex (`rocksdb_writebatch_wi_*`): a write batch that can
//! be read back, alone or on top of the database, before it is written.
//! Keys are ordered bytewise (the default column family's order).

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_uchar, c_void};

use strata::bytewise;
use strata::utilities::transactions::WriteBatchWithIndex;

use crate::batch::{DeletedCb, PutCb};
use crate::db::{db_of, out_value, ro_of, rocksdb_t, wo_of};
use crate::ffi::{bytes, drop_raw, guard, guard_quiet, into_raw, st};
use crate::options::rocksdb_options_t;

pub struct rocksdb_writebatch_wi_t {
    wbwi: WriteBatchWithIndex,
}

fn with_wbwi(b: *mut rocksdb_writebatch_wi_t, f: impl FnOnce(&mut WriteBatchWithIndex)) {
    guard_quiet((), || {
        // SAFETY: NULL or a live batch used by one thread (C API contract).
        if let Some(b) = unsafe { b.as_mut() } {
            f(&mut b.wbwi)
        }
    })
}

/// `reserved_bytes` is a capacity hint; `overwrite_keys` keeps only the
/// newest entry of a key (RocksDB's `overwrite_key`).
#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_writebatch_wi_create(
    _reserved_bytes: usize,
    overwrite_keys: c_uchar,
) -> *mut rocksdb_writebatch_wi_t {
    into_raw(rocksdb_writebatch_wi_t {
        wbwi: WriteBatchWithIndex::new(bytewise(), overwrite_keys != 0),
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_wi_destroy(b: *mut rocksdb_writebatch_wi_t) {
    // SAFETY: NULL or a live batch, not used afterwards.
    guard_quiet((), || unsafe { drop_raw(b) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_wi_clear(b: *mut rocksdb_writebatch_wi_t) {
    with_wbwi(b, |w| w.clear())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_wi_count(b: *mut rocksdb_writebatch_wi_t) -> c_int {
    // SAFETY: NULL or a live batch.
    guard_quiet(0, || {
        unsafe { b.as_ref() }.map_or(0, |b| b.wbwi.count() as c_int)
    })
}

// SAFETY (below): key/value pointers address their lengths for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_wi_put(
    b: *mut rocksdb_writebatch_wi_t,
    key: *const c_char,
    klen: usize,
    val: *const c_char,
    vlen: usize,
) {
    with_wbwi(b, |w| {
        w.put(unsafe { bytes(key, klen) }, unsafe { bytes(val, vlen) })
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_wi_delete(
    b: *mut rocksdb_writebatch_wi_t,
    key: *const c_char,
    klen: usize,
) {
    with_wbwi(b, |w| w.delete(unsafe { bytes(key, klen) }))
}

/// One put of the concatenated key parts and value parts.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_wi_putv(
    b: *mut rocksdb_writebatch_wi_t,
    num_keys: c_int,
    keys_list: *const *const c_char,
    keys_list_sizes: *const usize,
    num_values: c_int,
    values_list: *const *const c_char,
    values_list_sizes: *const usize,
) {
    // SAFETY: arrays of the given lengths (C API contract).
    let k = unsafe { crate::batch::concat(num_keys, keys_list, keys_list_sizes) };
    let v = unsafe { crate::batch::concat(num_values, values_list, values_list_sizes) };
    with_wbwi(b, |w| w.put(&k, &v))
}

/// As `rocksdb_writebatch_iterate`, over the batch's records in order.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_wi_iterate(
    b: *mut rocksdb_writebatch_wi_t,
    state: *mut c_void,
    put: Option<PutCb>,
    deleted: Option<DeletedCb>,
) {
    guard_quiet((), || {
        // SAFETY: NULL or a live batch; the callbacks are the caller's.
        if let Some(b) = unsafe { b.as_ref() } {
            unsafe { crate::batch::iterate(b.wbwi.write_batch(), state, put, deleted) }
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_wi_set_save_point(b: *mut rocksdb_writebatch_wi_t) {
    with_wbwi(b, |w| w.set_save_point())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_wi_rollback_to_save_point(
    b: *mut rocksdb_writebatch_wi_t,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        // SAFETY: NULL or a live batch.
        let b = unsafe { b.as_mut() }.ok_or("Invalid argument: write batch is NULL")?;
        st(b.wbwi.rollback_to_save_point())
    })
}

/// The batch's value of `key` (NULL if the batch does not set it); merges
/// on a base in the batch use `options`' merge operator.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_wi_get_from_batch(
    b: *mut rocksdb_writebatch_wi_t,
    options: *const rocksdb_options_t,
    key: *const c_char,
    keylen: usize,
    vallen: *mut usize,
    errptr: *mut *mut c_char,
) -> *mut c_char {
    guard(errptr, std::ptr::null_mut(), || {
        // SAFETY: NULL or live objects; `keylen` bytes at `key`.
        let b = unsafe { b.as_ref() }.ok_or("Invalid argument: write batch is NULL")?;
        let merge = unsafe { options.as_ref() }.and_then(|o| o.opts.cf.merge_operator.clone());
        let v = st(b
            .wbwi
            .get_from_batch(0, unsafe { bytes(key, keylen) }, merge.as_deref()))?;
        Ok(out_value(v, vallen))
    })
}

/// `key` through the batch, then the database.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_wi_get_from_batch_and_db(
    b: *mut rocksdb_writebatch_wi_t,
    db: *mut rocksdb_t,
    options: *const crate::options::rocksdb_readoptions_t,
    key: *const c_char,
    keylen: usize,
    vallen: *mut usize,
    errptr: *mut *mut c_char,
) -> *mut c_char {
    guard(errptr, std::ptr::null_mut(), || {
        // SAFETY: NULL or live objects; `keylen` bytes at `key`.
        let b = unsafe { b.as_ref() }.ok_or("Invalid argument: write batch is NULL")?;
        let v = st(b
            .wbwi
            .get_from_batch_and_db(&*db_of(db)?, &ro_of(options)?, None, unsafe {
                bytes(key, keylen)
            }))?;
        Ok(out_value(v, vallen))
    })
}

/// Writes the batch (which stays as it is).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_write_writebatch_wi(
    db: *mut rocksdb_t,
    options: *const crate::options::rocksdb_writeoptions_t,
    b: *mut rocksdb_writebatch_wi_t,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        // SAFETY: NULL or a live batch.
        let b = unsafe { b.as_ref() }.ok_or("Invalid argument: write batch is NULL")?;
        st(db_of(db)?.write(wo_of(options)?, b.wbwi.write_batch().clone()))
    })
}

/// An iterator over `base_iterator` (a database iterator, which this call
/// takes over and frees) overlaid with the batch's writes as they are now
/// (RocksDB's `NewIteratorWithBase`). A base that is not a database
/// iterator gives an iterator that reports the error.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_wi_create_iterator_with_base(
    wbwi: *mut rocksdb_writebatch_wi_t,
    base_iterator: *mut crate::iterator::rocksdb_iterator_t,
) -> *mut crate::iterator::rocksdb_iterator_t {
    guard_quiet(std::ptr::null_mut(), || {
        // SAFETY: NULL or an iterator of this library, now ours to free.
        let base = (!base_iterator.is_null()).then(|| unsafe { Box::from_raw(base_iterator) });
        // SAFETY: NULL or a live batch.
        let r = match (
            unsafe { wbwi.as_ref() },
            base.and_then(|b| b.it.into_db_iterator()),
        ) {
            (Some(b), Some(base)) => Ok(b.wbwi.iter_with_base(base, 0, None)),
            (None, _) => Err("Invalid argument: write batch is NULL".to_string()),
            (_, None) => Err("Invalid argument: base_iterator is not a database iterator".into()),
        };
        match r {
            Ok(it) => into_raw(crate::iterator::rocksdb_iterator_t::new(Box::new(it))),
            Err(msg) => crate::iterator::wrap_failed(msg),
        }
    })
}
