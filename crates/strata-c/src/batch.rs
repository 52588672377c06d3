//! Write batches of the C API: RocksDB's `WriteBatch` with column
//! families, vectored puts, save points, iteration by callbacks, and its
//! serialized form (`rocksdb_writebatch_data` / `create_from`).

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_void};

use strata::BatchRecord;
use strata::WriteBatch;

use crate::db::{cf_of, rocksdb_column_family_handle_t};
use crate::ffi::{bytes, drop_raw, guard, guard_quiet, into_raw, put_out};

pub struct rocksdb_writebatch_t {
    pub batch: WriteBatch,
    /// (bytes, count) at each open save point.
    save_points: Vec<(usize, u32)>,
}

impl rocksdb_writebatch_t {
    pub fn new(batch: WriteBatch) -> Self {
        rocksdb_writebatch_t {
            batch,
            save_points: Vec::new(),
        }
    }
}

fn with_batch(b: *mut rocksdb_writebatch_t, f: impl FnOnce(&mut WriteBatch)) {
    guard_quiet((), || {
        // SAFETY: NULL or a live batch used by one thread (C API contract).
        if let Some(b) = unsafe { b.as_mut() } {
            f(&mut b.batch)
        }
    })
}

fn cf_id(cf: *const rocksdb_column_family_handle_t) -> Option<u32> {
    cf_of(cf).ok().map(|c| c.id)
}

#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_writebatch_create() -> *mut rocksdb_writebatch_t {
    into_raw(rocksdb_writebatch_t::new(WriteBatch::new()))
}

/// A batch from its serialized form; NULL if the bytes are not a batch.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_create_from(
    rep: *const c_char,
    size: usize,
) -> *mut rocksdb_writebatch_t {
    guard_quiet(std::ptr::null_mut(), || {
        // SAFETY: `size` bytes at `rep`.
        match WriteBatch::from_bytes(unsafe { bytes(rep, size) }.to_vec()) {
            Ok(b) => into_raw(rocksdb_writebatch_t::new(b)),
            Err(_) => std::ptr::null_mut(),
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_destroy(b: *mut rocksdb_writebatch_t) {
    // SAFETY: NULL or a live batch, not used afterwards.
    guard_quiet((), || unsafe { drop_raw(b) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_clear(b: *mut rocksdb_writebatch_t) {
    guard_quiet((), || {
        // SAFETY: NULL or a live batch.
        if let Some(b) = unsafe { b.as_mut() } {
            b.batch.clear();
            b.save_points.clear();
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_count(b: *mut rocksdb_writebatch_t) -> c_int {
    // SAFETY: NULL or a live batch.
    guard_quiet(0, || {
        unsafe { b.as_ref() }.map_or(0, |b| b.batch.count() as c_int)
    })
}

// SAFETY (every function below): pointers address their lengths for the
// call (C API contract); `bytes` treats NULL as empty.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_put(
    b: *mut rocksdb_writebatch_t,
    key: *const c_char,
    klen: usize,
    val: *const c_char,
    vlen: usize,
) {
    with_batch(b, |w| {
        w.put(unsafe { bytes(key, klen) }, unsafe { bytes(val, vlen) })
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_put_cf(
    b: *mut rocksdb_writebatch_t,
    cf: *mut rocksdb_column_family_handle_t,
    key: *const c_char,
    klen: usize,
    val: *const c_char,
    vlen: usize,
) {
    if let Some(id) = cf_id(cf) {
        with_batch(b, |w| {
            w.put_cf(id, unsafe { bytes(key, klen) }, unsafe { bytes(val, vlen) })
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_merge(
    b: *mut rocksdb_writebatch_t,
    key: *const c_char,
    klen: usize,
    val: *const c_char,
    vlen: usize,
) {
    with_batch(b, |w| {
        w.merge(unsafe { bytes(key, klen) }, unsafe { bytes(val, vlen) })
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_merge_cf(
    b: *mut rocksdb_writebatch_t,
    cf: *mut rocksdb_column_family_handle_t,
    key: *const c_char,
    klen: usize,
    val: *const c_char,
    vlen: usize,
) {
    if let Some(id) = cf_id(cf) {
        with_batch(b, |w| {
            w.merge_cf(id, unsafe { bytes(key, klen) }, unsafe { bytes(val, vlen) })
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_delete(
    b: *mut rocksdb_writebatch_t,
    key: *const c_char,
    klen: usize,
) {
    with_batch(b, |w| w.delete(unsafe { bytes(key, klen) }))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_delete_cf(
    b: *mut rocksdb_writebatch_t,
    cf: *mut rocksdb_column_family_handle_t,
    key: *const c_char,
    klen: usize,
) {
    if let Some(id) = cf_id(cf) {
        with_batch(b, |w| w.delete_cf(id, unsafe { bytes(key, klen) }))
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_singledelete(
    b: *mut rocksdb_writebatch_t,
    key: *const c_char,
    klen: usize,
) {
    with_batch(b, |w| w.single_delete(unsafe { bytes(key, klen) }))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_singledelete_cf(
    b: *mut rocksdb_writebatch_t,
    cf: *mut rocksdb_column_family_handle_t,
    key: *const c_char,
    klen: usize,
) {
    if let Some(id) = cf_id(cf) {
        with_batch(b, |w| w.single_delete_cf(id, unsafe { bytes(key, klen) }))
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_delete_range(
    b: *mut rocksdb_writebatch_t,
    start_key: *const c_char,
    start_key_len: usize,
    end_key: *const c_char,
    end_key_len: usize,
) {
    with_batch(b, |w| {
        w.delete_range(unsafe { bytes(start_key, start_key_len) }, unsafe {
            bytes(end_key, end_key_len)
        })
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_delete_range_cf(
    b: *mut rocksdb_writebatch_t,
    cf: *mut rocksdb_column_family_handle_t,
    start_key: *const c_char,
    start_key_len: usize,
    end_key: *const c_char,
    end_key_len: usize,
) {
    if let Some(id) = cf_id(cf) {
        with_batch(b, |w| {
            w.delete_range_cf(id, unsafe { bytes(start_key, start_key_len) }, unsafe {
                bytes(end_key, end_key_len)
            })
        })
    }
}

/// The concatenation of `n` slices (RocksDB's `SliceParts`).
///
/// # Safety
/// The arrays hold `n` entries.
pub(crate) unsafe fn concat(n: c_int, list: *const *const c_char, sizes: *const usize) -> Vec<u8> {
    let mut out = Vec::new();
    if list.is_null() || sizes.is_null() {
        return out;
    }
    for i in 0..n.max(0) as usize {
        // SAFETY: `i < n` (caller's contract).
        out.extend_from_slice(unsafe { bytes(*list.add(i), *sizes.add(i)) });
    }
    out
}

/// One put whose key and value are each the concatenation of the parts.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_putv(
    b: *mut rocksdb_writebatch_t,
    num_keys: c_int,
    keys_list: *const *const c_char,
    keys_list_sizes: *const usize,
    num_values: c_int,
    values_list: *const *const c_char,
    values_list_sizes: *const usize,
) {
    let k = unsafe { concat(num_keys, keys_list, keys_list_sizes) };
    let v = unsafe { concat(num_values, values_list, values_list_sizes) };
    with_batch(b, |w| w.put(&k, &v))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_putv_cf(
    b: *mut rocksdb_writebatch_t,
    cf: *mut rocksdb_column_family_handle_t,
    num_keys: c_int,
    keys_list: *const *const c_char,
    keys_list_sizes: *const usize,
    num_values: c_int,
    values_list: *const *const c_char,
    values_list_sizes: *const usize,
) {
    let k = unsafe { concat(num_keys, keys_list, keys_list_sizes) };
    let v = unsafe { concat(num_values, values_list, values_list_sizes) };
    if let Some(id) = cf_id(cf) {
        with_batch(b, |w| w.put_cf(id, &k, &v))
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_deletev(
    b: *mut rocksdb_writebatch_t,
    num_keys: c_int,
    keys_list: *const *const c_char,
    keys_list_sizes: *const usize,
) {
    let k = unsafe { concat(num_keys, keys_list, keys_list_sizes) };
    with_batch(b, |w| w.delete(&k))
}

/// One range deletion whose begin and end keys are each the concatenation
/// of the parts.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_delete_rangev(
    b: *mut rocksdb_writebatch_t,
    num_keys: c_int,
    start_keys_list: *const *const c_char,
    start_keys_list_sizes: *const usize,
    end_keys_list: *const *const c_char,
    end_keys_list_sizes: *const usize,
) {
    // SAFETY: arrays of `num_keys` entries (C API contract).
    let s = unsafe { concat(num_keys, start_keys_list, start_keys_list_sizes) };
    let e = unsafe { concat(num_keys, end_keys_list, end_keys_list_sizes) };
    with_batch(b, |w| w.delete_range(&s, &e))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_put_log_data(
    b: *mut rocksdb_writebatch_t,
    blob: *const c_char,
    len: usize,
) {
    with_batch(b, |w| w.put_log_data(unsafe { bytes(blob, len) }))
}

pub(crate) type PutCb =
    unsafe extern "C" fn(*mut c_void, *const c_char, usize, *const c_char, usize);
pub(crate) type DeletedCb = unsafe extern "C" fn(*mut c_void, *const c_char, usize);

/// Calls `put` for each put and `deleted` for each delete of the default
/// column family, in order; as RocksDB's C handler, other default-family
/// records are skipped and a record of another column family ends the
/// walk.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_iterate(
    b: *mut rocksdb_writebatch_t,
    state: *mut c_void,
    put: Option<PutCb>,
    deleted: Option<DeletedCb>,
) {
    guard_quiet((), || {
        // SAFETY: NULL or a live batch; the callbacks are the caller's.
        if let Some(b) = unsafe { b.as_ref() } {
            unsafe { iterate(&b.batch, state, put, deleted) }
        }
    })
}

/// The walk of `rocksdb_writebatch_iterate` (also the indexed batch's).
///
/// # Safety
/// The callbacks take the pointers they get for the call only.
pub(crate) unsafe fn iterate(
    batch: &WriteBatch,
    state: *mut c_void,
    put: Option<PutCb>,
    deleted: Option<DeletedCb>,
) {
    for r in batch.iter() {
        let Ok(r) = r else { return };
        // SAFETY: the callbacks get pointers valid for the call.
        match r {
            BatchRecord::Put { cf: 0, key, value } => {
                if let Some(f) = put {
                    unsafe {
                        f(
                            state,
                            key.as_ptr() as *const c_char,
                            key.len(),
                            value.as_ptr() as *const c_char,
                            value.len(),
                        )
                    }
                }
            }
            BatchRecord::Delete { cf: 0, key } => {
                if let Some(f) = deleted {
                    unsafe { f(state, key.as_ptr() as *const c_char, key.len()) }
                }
            }
            // Another column family's record ends the walk.
            _ if record_cf(&r) != 0 => return,
            _ => {}
        }
    }
}

fn record_cf(r: &BatchRecord<'_>) -> u32 {
    match r {
        BatchRecord::Put { cf, .. }
        | BatchRecord::Delete { cf, .. }
        | BatchRecord::SingleDelete { cf, .. }
        | BatchRecord::Merge { cf, .. }
        | BatchRecord::DeleteRange { cf, .. } => *cf,
        _ => 0,
    }
}

/// The serialized batch (valid until the batch changes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_data(
    b: *mut rocksdb_writebatch_t,
    size: *mut usize,
) -> *const c_char {
    guard_quiet(std::ptr::null(), || {
        // SAFETY: NULL or a live batch; `size` NULL or writable.
        match unsafe { b.as_ref() } {
            Some(b) => {
                unsafe { put_out(size, b.batch.data().len()) };
                b.batch.data().as_ptr() as *const c_char
            }
            None => std::ptr::null(),
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_set_save_point(b: *mut rocksdb_writebatch_t) {
    guard_quiet((), || {
        // SAFETY: NULL or a live batch.
        if let Some(b) = unsafe { b.as_mut() } {
            b.save_points.push((b.batch.data().len(), b.batch.count()));
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_rollback_to_save_point(
    b: *mut rocksdb_writebatch_t,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        // SAFETY: NULL or a live batch.
        let b = unsafe { b.as_mut() }.ok_or("Invalid argument: write batch is NULL")?;
        let (len, count) = b.save_points.pop().ok_or("NotFound: ")?;
        b.batch.truncate(len, count);
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_pop_save_point(
    b: *mut rocksdb_writebatch_t,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        // SAFETY: NULL or a live batch.
        let b = unsafe { b.as_mut() }.ok_or("Invalid argument: write batch is NULL")?;
        b.save_points
            .pop()
            .map(|_| ())
            .ok_or_else(|| "NotFound: ".to_string())
    })
}
