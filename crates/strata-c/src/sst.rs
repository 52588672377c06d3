//! External table files: `SstFileWriter` and ingestion.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_uchar};

use strata::IngestExternalFileOptions;
use strata::SstFileWriter;

use crate::callbacks::rocksdb_comparator_t;
use crate::db::{cf_of, db_of, rocksdb_column_family_handle_t, rocksdb_t};
use crate::ffi::{bytes, cstr, drop_raw, guard, guard_quiet, handle_mut, into_raw, put_out, st};
use crate::options::rocksdb_options_t;

/// RocksDB's `EnvOptions` (nothing of it applies to Strata's files).
pub struct rocksdb_envoptions_t {
    _private: (),
}

#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_envoptions_create() -> *mut rocksdb_envoptions_t {
    into_raw(rocksdb_envoptions_t { _private: () })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_envoptions_destroy(o: *mut rocksdb_envoptions_t) {
    // SAFETY: NULL or from rocksdb_envoptions_create.
    guard_quiet((), || unsafe { drop_raw(o) })
}

enum WriterState {
    Created,
    Open(Box<SstFileWriter>),
    Finished(u64),
}

pub struct rocksdb_sstfilewriter_t {
    table: strata::TableOptions,
    state: WriterState,
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_sstfilewriter_create(
    _env: *const rocksdb_envoptions_t,
    io_options: *const rocksdb_options_t,
) -> *mut rocksdb_sstfilewriter_t {
    guard_quiet(std::ptr::null_mut(), || {
        // SAFETY: NULL (defaults) or live options.
        let cf = unsafe { io_options.as_ref() }
            .map(|o| o.opts.cf.clone())
            .unwrap_or_default();
        into_raw(rocksdb_sstfilewriter_t {
            table: cf.sst_file_writer_table_options(),
            state: WriterState::Created,
        })
    })
}

/// As RocksDB 7.8.3, the keys are ordered by `io_options`' comparator;
/// the `comparator` argument is not used.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_sstfilewriter_create_with_comparator(
    env: *const rocksdb_envoptions_t,
    io_options: *const rocksdb_options_t,
    _comparator: *const rocksdb_comparator_t,
) -> *mut rocksdb_sstfilewriter_t {
    // SAFETY: as rocksdb_sstfilewriter_create.
    unsafe { rocksdb_sstfilewriter_create(env, io_options) }
}

fn writer<'a>(w: *mut rocksdb_sstfilewriter_t) -> Result<&'a mut SstFileWriter, String> {
    // SAFETY: NULL or a live writer used by one thread.
    match &mut unsafe { handle_mut(w, "sst file writer") }?.state {
        WriterState::Open(w) => Ok(w),
        _ => Err("Invalid argument: File is not opened".into()),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_sstfilewriter_open(
    w: *mut rocksdb_sstfilewriter_t,
    name: *const c_char,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        // SAFETY: NULL or a live writer; `name` a C string.
        let w = unsafe { handle_mut(w, "sst file writer") }?;
        let name = unsafe { cstr(name, "file name") }?;
        w.state = WriterState::Open(Box::new(st(SstFileWriter::create(name, w.table.clone()))?));
        Ok(())
    })
}

// SAFETY (below): key/value pointers address their lengths for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_sstfilewriter_put(
    w: *mut rocksdb_sstfilewriter_t,
    key: *const c_char,
    keylen: usize,
    val: *const c_char,
    vallen: usize,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        st(writer(w)?.put(unsafe { bytes(key, keylen) }, unsafe { bytes(val, vallen) }))
    })
}

/// The older name of `rocksdb_sstfilewriter_put`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_sstfilewriter_add(
    w: *mut rocksdb_sstfilewriter_t,
    key: *const c_char,
    keylen: usize,
    val: *const c_char,
    vallen: usize,
    errptr: *mut *mut c_char,
) {
    // SAFETY: same contract.
    unsafe { rocksdb_sstfilewriter_put(w, key, keylen, val, vallen, errptr) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_sstfilewriter_merge(
    w: *mut rocksdb_sstfilewriter_t,
    key: *const c_char,
    keylen: usize,
    val: *const c_char,
    vallen: usize,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        st(writer(w)?.merge(unsafe { bytes(key, keylen) }, unsafe { bytes(val, vallen) }))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_sstfilewriter_delete(
    w: *mut rocksdb_sstfilewriter_t,
    key: *const c_char,
    keylen: usize,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        st(writer(w)?.delete(unsafe { bytes(key, keylen) }))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_sstfilewriter_delete_range(
    w: *mut rocksdb_sstfilewriter_t,
    begin_key: *const c_char,
    begin_keylen: usize,
    end_key: *const c_char,
    end_keylen: usize,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        st(
            writer(w)?.delete_range(unsafe { bytes(begin_key, begin_keylen) }, unsafe {
                bytes(end_key, end_keylen)
            }),
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_sstfilewriter_finish(
    w: *mut rocksdb_sstfilewriter_t,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        // SAFETY: NULL or a live writer.
        let w = unsafe { handle_mut(w, "sst file writer") }?;
        match std::mem::replace(&mut w.state, WriterState::Created) {
            WriterState::Open(sst) => {
                let info = st((*sst).finish())?;
                w.state = WriterState::Finished(info.file_size);
                Ok(())
            }
            other => {
                w.state = other;
                Err("Invalid argument: File is not opened".into())
            }
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_sstfilewriter_file_size(
    w: *mut rocksdb_sstfilewriter_t,
    file_size: *mut u64,
) {
    guard_quiet((), || {
        // SAFETY: NULL or a live writer; `file_size` NULL or writable.
        let n = match unsafe { w.as_ref() }.map(|w| &w.state) {
            Some(WriterState::Open(s)) => s.file_size(),
            Some(WriterState::Finished(n)) => *n,
            _ => 0,
        };
        unsafe { put_out(file_size, n) };
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_sstfilewriter_destroy(w: *mut rocksdb_sstfilewriter_t) {
    // SAFETY: NULL or a live writer, not used afterwards.
    guard_quiet((), || unsafe { drop_raw(w) })
}

pub struct rocksdb_ingestexternalfileoptions_t {
    opts: IngestExternalFileOptions,
}

#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_ingestexternalfileoptions_create()
-> *mut rocksdb_ingestexternalfileoptions_t {
    into_raw(rocksdb_ingestexternalfileoptions_t {
        opts: IngestExternalFileOptions::default(),
    })
}

macro_rules! ingest_flag {
    ($name:ident, $field:ident) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(o: *mut rocksdb_ingestexternalfileoptions_t, v: c_uchar) {
            guard_quiet((), || {
                // SAFETY: NULL or live options.
                if let Some(o) = unsafe { o.as_mut() } {
                    o.opts.$field = v != 0;
                }
            })
        }
    };
}

ingest_flag!(rocksdb_ingestexternalfileoptions_set_move_files, move_files);
ingest_flag!(
    rocksdb_ingestexternalfileoptions_set_snapshot_consistency,
    snapshot_consistency
);
ingest_flag!(
    rocksdb_ingestexternalfileoptions_set_allow_global_seqno,
    allow_global_seqno
);
ingest_flag!(
    rocksdb_ingestexternalfileoptions_set_allow_blocking_flush,
    allow_blocking_flush
);
ingest_flag!(
    rocksdb_ingestexternalfileoptions_set_ingest_behind,
    ingest_behind
);

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_ingestexternalfileoptions_destroy(
    o: *mut rocksdb_ingestexternalfileoptions_t,
) {
    // SAFETY: NULL or from rocksdb_ingestexternalfileoptions_create.
    guard_quiet((), || unsafe { drop_raw(o) })
}

/// # Safety
/// `file_list` holds `len` C strings.
unsafe fn paths(file_list: *const *const c_char, len: usize) -> Result<Vec<String>, String> {
    if file_list.is_null() && len > 0 {
        return Err("Invalid argument: file_list is NULL".into());
    }
    // SAFETY: `i < len` (caller's contract).
    (0..len)
        .map(|i| unsafe { cstr(*file_list.add(i), "file name") })
        .collect()
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_ingest_external_file(
    db: *mut rocksdb_t,
    file_list: *const *const c_char,
    list_len: usize,
    opt: *const rocksdb_ingestexternalfileoptions_t,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        let db = db_of(db)?;
        // SAFETY: NULL or live options; `file_list` holds `list_len` names.
        let o = unsafe { opt.as_ref() }.map(|o| o.opts).unwrap_or_default();
        let files = unsafe { paths(file_list, list_len) }?;
        st(db.ingest_external_file(&files, &o))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_ingest_external_file_cf(
    db: *mut rocksdb_t,
    handle: *mut rocksdb_column_family_handle_t,
    file_list: *const *const c_char,
    list_len: usize,
    opt: *const rocksdb_ingestexternalfileoptions_t,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        let db = db_of(db)?;
        // SAFETY: NULL or live options; `file_list` holds `list_len` names.
        let o = unsafe { opt.as_ref() }.map(|o| o.opts).unwrap_or_default();
        let files = unsafe { paths(file_list, list_len) }?;
        st(db.ingest_external_file_cf(cf_of(handle)?, &files, &o))
    })
}
