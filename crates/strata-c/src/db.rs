//! The database handle and its operations: open (read-write, read-only,
//! with column families), close, destroy and repair, writes, reads
//! (get, pinned get, multi-get), snapshots, column families, flush and
//! compaction, properties, live files, file deletions and WAL tailing.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_uchar};

use std::sync::Arc;
use strata::db::{BottommostLevelCompaction, CompactRangeOptions, LiveFileMetaData, WalFileType};

use strata::db::SecondaryDB;
use strata::{ColumnFamilyDescriptor, ColumnFamilyHandle, DB, Snapshot, WriteBatch};

use crate::batch::rocksdb_writebatch_t;
use crate::ffi::{
    bytes, cstr, drop_raw, guard, guard_quiet, handle, into_raw, malloc_array, malloc_bytes,
    malloc_cstr, put_out, set_error, st,
};
use crate::options::{
    rocksdb_compactoptions_t, rocksdb_flushoptions_t, rocksdb_options_t, rocksdb_readoptions_t,
    rocksdb_writeoptions_t,
};

/// An open database, or a transaction database's base database (which the
/// transaction database owns: `rocksdb_*_close_base_db` frees the handle
/// only).
pub struct rocksdb_t {
    db: DbRef,
}

enum DbRef {
    Owned(DB),
    Base(*const DB),
    /// A secondary instance: its current view changes when it catches up.
    Secondary(Box<SecondaryDB>),
}

/// The database a call works on: borrowed from its handle, or for a
/// secondary instance the view current when the call started (held until
/// the call ends, so that a concurrent catch-up cannot free it).
pub(crate) enum DbAccess<'a> {
    Borrowed(&'a DB),
    View(Arc<DB>),
}

impl std::ops::Deref for DbAccess<'_> {
    type Target = DB;

    fn deref(&self) -> &DB {
        match self {
            DbAccess::Borrowed(db) => db,
            DbAccess::View(db) => db,
        }
    }
}

impl rocksdb_t {
    pub fn new(db: DB) -> rocksdb_t {
        rocksdb_t {
            db: DbRef::Owned(db),
        }
    }

    /// A handle on a database owned elsewhere.
    ///
    /// # Safety
    /// `db` outlives the handle (the C API's rule for base databases).
    pub unsafe fn borrowed(db: *const DB) -> rocksdb_t {
        rocksdb_t {
            db: DbRef::Base(db),
        }
    }

    pub(crate) fn db(&self) -> DbAccess<'_> {
        match &self.db {
            DbRef::Owned(db) => DbAccess::Borrowed(db),
            // SAFETY: `borrowed`'s contract: the owner outlives the handle.
            DbRef::Base(p) => DbAccess::Borrowed(unsafe { &**p }),
            DbRef::Secondary(s) => DbAccess::View(s.db()),
        }
    }
}

/// A column family handle (its id and name; valid while the database is
/// open).
pub struct rocksdb_column_family_handle_t {
    pub cf: ColumnFamilyHandle,
}

/// A snapshot: its sequence number, and the database's snapshot it holds
/// (NULL for a transaction's snapshot, which the transaction owns and the
/// caller frees with `rocksdb_free`, as in RocksDB).
#[repr(C)]
pub struct rocksdb_snapshot_t {
    /// `None`: no snapshot (see `rocksdb_create_snapshot`).
    pub seq: Option<u64>,
    owner: *mut Snapshot,
}

impl rocksdb_snapshot_t {
    /// A malloc'd snapshot record holding no database snapshot.
    pub fn malloc_unowned(seq: u64) -> *mut rocksdb_snapshot_t {
        let p = malloc_array::<rocksdb_snapshot_t>(1);
        if !p.is_null() {
            // SAFETY: a fresh block sized for one record.
            unsafe {
                p.write(rocksdb_snapshot_t {
                    seq: Some(seq),
                    owner: std::ptr::null_mut(),
                })
            };
        }
        p
    }
}

/// A value read with `rocksdb_get_pinned` (Strata copies values out of
/// blocks, so the pin is the copy).
pub struct rocksdb_pinnableslice_t {
    pub value: Vec<u8>,
}

/// RocksDB's `LiveFileMetaData` list.
pub struct rocksdb_livefiles_t {
    files: Vec<LiveFileMetaData>,
    names: Vec<std::ffi::CString>,
    cf_names: Vec<std::ffi::CString>,
}

pub(crate) fn cf_of<'a>(
    cf: *const rocksdb_column_family_handle_t,
) -> Result<&'a ColumnFamilyHandle, String> {
    // SAFETY: NULL or a live handle (C API contract).
    unsafe { handle(cf, "column family handle") }.map(|h| &h.cf)
}

pub(crate) fn db_of<'a>(db: *const rocksdb_t) -> Result<DbAccess<'a>, String> {
    // SAFETY: NULL or a live handle (C API contract).
    unsafe { handle(db, "db") }.map(|d| d.db())
}

pub(crate) fn ro_of(o: *const rocksdb_readoptions_t) -> Result<strata::ReadOptions, String> {
    // SAFETY: NULL or live read options.
    unsafe { handle(o, "read options") }.map(|o| o.opts.clone())
}

pub(crate) fn wo_of<'a>(
    o: *const rocksdb_writeoptions_t,
) -> Result<&'a strata::WriteOptions, String> {
    // SAFETY: NULL or live write options.
    unsafe { handle(o, "write options") }.map(|o| &o.opts)
}

/// The options a database or column family is opened or created with
/// (see [`rocksdb_options_t::engine`]).
pub(crate) fn options_of(o: *const rocksdb_options_t) -> Result<strata::Options, String> {
    // SAFETY: NULL or live options.
    unsafe { handle(o, "options") }?.engine()
}

/// The options as set, for calls that open nothing (destroy, repair,
/// listing column families).
pub(crate) fn set_options_of<'a>(
    o: *const rocksdb_options_t,
) -> Result<&'a strata::Options, String> {
    // SAFETY: NULL or live options.
    unsafe { handle(o, "options") }.map(|o| &o.opts)
}

/// Hands a read result out as RocksDB does: the value malloc'd with its
/// length, NULL with length 0 when the key is absent.
pub(crate) fn out_value(v: Option<Vec<u8>>, vallen: *mut usize) -> *mut c_char {
    match v {
        Some(v) => {
            // SAFETY: `vallen` NULL or writable (C API contract).
            unsafe { put_out(vallen, v.len()) };
            malloc_bytes(&v)
        }
        None => {
            // SAFETY: as above.
            unsafe { put_out(vallen, 0) };
            std::ptr::null_mut()
        }
    }
}

/// The column families of an open call as Strata descriptors.
///
/// # Safety
/// The arrays hold `n` valid entries.
pub(crate) unsafe fn descriptors(
    n: c_int,
    names: *const *const c_char,
    opts: *const *const rocksdb_options_t,
) -> Result<Vec<ColumnFamilyDescriptor>, String> {
    if n < 0 || (n > 0 && (names.is_null() || opts.is_null())) {
        return Err("Invalid argument: column family arrays are NULL".into());
    }
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..n as usize {
        // SAFETY: `i < n` entries (caller's contract).
        let name = unsafe { cstr(*names.add(i), "column family name") }?;
        let o = options_of(unsafe { *opts.add(i) })?;
        out.push(ColumnFamilyDescriptor::new(name, o.cf));
    }
    Ok(out)
}

/// The C arguments of an open with column families, checked: the options,
/// the path, the descriptors and their names (in order, for
/// [`hand_out_cfs`]).
pub(crate) struct CfOpen {
    pub opts: strata::Options,
    pub name: String,
    pub descs: Vec<ColumnFamilyDescriptor>,
    pub names: Vec<String>,
}

/// Reads the arguments every `*_open_column_families` call takes.
///
/// # Safety
/// `name` is NULL or a C string; the arrays hold `n` valid entries.
pub(crate) unsafe fn cf_open_args(
    options: *const rocksdb_options_t,
    name: *const c_char,
    n: c_int,
    names: *const *const c_char,
    opts: *const *const rocksdb_options_t,
) -> Result<CfOpen, String> {
    let o = options_of(options)?;
    // SAFETY: per the contract.
    let name = unsafe { cstr(name, "db name") }?;
    let descs = unsafe { descriptors(n, names, opts) }?;
    let names = descs.iter().map(|d| d.name.clone()).collect();
    Ok(CfOpen {
        opts: o,
        name,
        descs,
        names,
    })
}

/// Writes the handles of `names` (in order) into the caller's array.
///
/// # Safety
/// `handles` has room for `names.len()` pointers.
pub(crate) unsafe fn hand_out_cfs(
    db: &DB,
    names: &[String],
    handles: *mut *mut rocksdb_column_family_handle_t,
) -> Result<(), String> {
    if handles.is_null() && !names.is_empty() {
        return Err("Invalid argument: column_family_handles is NULL".into());
    }
    for (i, name) in names.iter().enumerate() {
        let cf = db
            .cf_handle(name)
            .ok_or_else(|| format!("Invalid argument: column family not found: {name}"))?;
        // SAFETY: room for `names.len()` pointers (caller's contract).
        unsafe { *handles.add(i) = into_raw(rocksdb_column_family_handle_t { cf }) };
    }
    Ok(())
}

// ---- open, close, destroy, repair ----

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_open(
    options: *const rocksdb_options_t,
    name: *const c_char,
    errptr: *mut *mut c_char,
) -> *mut rocksdb_t {
    guard(errptr, std::ptr::null_mut(), || {
        let o = options_of(options)?;
        // SAFETY: a C string (C API contract).
        let name = unsafe { cstr(name, "db name") }?;
        Ok(into_raw(rocksdb_t::new(st(DB::open(o, name))?)))
    })
}

const WAL_EXISTS: &str = "Corruption: The db was opened in readonly mode with error_if_wal_file_existsflag but a WAL file already exists";

fn check_no_wal(db: &DB, error_if_wal_file_exists: c_uchar) -> Result<(), String> {
    if error_if_wal_file_exists != 0
        && st(db.sorted_wal_files())?
            .iter()
            .any(|w| w.file_type == WalFileType::Alive)
    {
        return Err(WAL_EXISTS.into());
    }
    Ok(())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_open_for_read_only(
    options: *const rocksdb_options_t,
    name: *const c_char,
    error_if_wal_file_exists: c_uchar,
    errptr: *mut *mut c_char,
) -> *mut rocksdb_t {
    guard(errptr, std::ptr::null_mut(), || {
        let o = options_of(options)?;
        // SAFETY: a C string (C API contract).
        let name = unsafe { cstr(name, "db name") }?;
        let db = st(DB::open_read_only(o, name))?;
        check_no_wal(&db, error_if_wal_file_exists)?;
        Ok(into_raw(rocksdb_t::new(db)))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_open_column_families(
    options: *const rocksdb_options_t,
    name: *const c_char,
    num_column_families: c_int,
    column_family_names: *const *const c_char,
    column_family_options: *const *const rocksdb_options_t,
    column_family_handles: *mut *mut rocksdb_column_family_handle_t,
    errptr: *mut *mut c_char,
) -> *mut rocksdb_t {
    guard(errptr, std::ptr::null_mut(), || {
        // SAFETY: a C string and arrays of `num_column_families` entries
        // (C API contract).
        let a = unsafe {
            cf_open_args(
                options,
                name,
                num_column_families,
                column_family_names,
                column_family_options,
            )
        }?;
        let db = st(DB::open_cf(a.opts, a.name, a.descs))?;
        // SAFETY: room for one handle per name.
        unsafe { hand_out_cfs(&db, &a.names, column_family_handles) }?;
        Ok(into_raw(rocksdb_t::new(db)))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_open_for_read_only_column_families(
    options: *const rocksdb_options_t,
    name: *const c_char,
    num_column_families: c_int,
    column_family_names: *const *const c_char,
    column_family_options: *const *const rocksdb_options_t,
    column_family_handles: *mut *mut rocksdb_column_family_handle_t,
    error_if_wal_file_exists: c_uchar,
    errptr: *mut *mut c_char,
) -> *mut rocksdb_t {
    guard(errptr, std::ptr::null_mut(), || {
        // SAFETY: a C string and arrays of `num_column_families` entries
        // (C API contract).
        let a = unsafe {
            cf_open_args(
                options,
                name,
                num_column_families,
                column_family_names,
                column_family_options,
            )
        }?;
        let db = st(DB::open_cf_read_only(a.opts, a.name, a.descs))?;
        check_no_wal(&db, error_if_wal_file_exists)?;
        // SAFETY: room for one handle per name.
        unsafe { hand_out_cfs(&db, &a.names, column_family_handles) }?;
        Ok(into_raw(rocksdb_t::new(db)))
    })
}

/// Opens a secondary instance of the database at `name` (RocksDB's
/// `DB::OpenAsSecondary`): a read-only view of what the primary holds,
/// refreshed by `rocksdb_try_catch_up_with_primary`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_open_as_secondary(
    options: *const rocksdb_options_t,
    name: *const c_char,
    secondary_path: *const c_char,
    errptr: *mut *mut c_char,
) -> *mut rocksdb_t {
    guard(errptr, std::ptr::null_mut(), || {
        let o = options_of(options)?;
        // SAFETY: C strings (C API contract).
        let name = unsafe { cstr(name, "db name") }?;
        let secondary = unsafe { cstr(secondary_path, "secondary path") }?;
        let sec = st(SecondaryDB::open(o, name, secondary))?;
        Ok(into_raw(rocksdb_t {
            db: DbRef::Secondary(Box::new(sec)),
        }))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_open_as_secondary_column_families(
    options: *const rocksdb_options_t,
    name: *const c_char,
    secondary_path: *const c_char,
    num_column_families: c_int,
    column_family_names: *const *const c_char,
    column_family_options: *const *const rocksdb_options_t,
    column_family_handles: *mut *mut rocksdb_column_family_handle_t,
    errptr: *mut *mut c_char,
) -> *mut rocksdb_t {
    guard(errptr, std::ptr::null_mut(), || {
        // SAFETY: a C string and arrays of `num_column_families` entries
        // (C API contract).
        let a = unsafe {
            cf_open_args(
                options,
                name,
                num_column_families,
                column_family_names,
                column_family_options,
            )
        }?;
        // SAFETY: a C string (C API contract).
        let secondary = unsafe { cstr(secondary_path, "secondary path") }?;
        let sec = st(SecondaryDB::open_cf(a.opts, a.name, secondary, a.descs))?;
        // SAFETY: room for one handle per name.
        unsafe { hand_out_cfs(&sec.db(), &a.names, column_family_handles) }?;
        Ok(into_raw(rocksdb_t {
            db: DbRef::Secondary(Box::new(sec)),
        }))
    })
}

/// Makes what the primary holds now visible to a secondary instance; on
/// any other database, NotSupported (as RocksDB).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_try_catch_up_with_primary(
    db: *mut rocksdb_t,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        // SAFETY: NULL or a live handle (C API contract).
        let h = unsafe { handle(db.cast_const(), "db") }?;
        match &h.db {
            DbRef::Secondary(s) => st(s.try_catch_up_with_primary()),
            _ => Err("Not implemented: Supported only by secondary instance".into()),
        }
    })
}

/// Closes the database (waits for background work) and frees the handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_close(db: *mut rocksdb_t) {
    // SAFETY: NULL or from an open call, not used afterwards.
    guard_quiet((), || unsafe { drop_raw(db) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_destroy_db(
    options: *const rocksdb_options_t,
    name: *const c_char,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        let o = set_options_of(options)?;
        // SAFETY: a C string (C API contract).
        let name = unsafe { cstr(name, "db name") }?;
        st(strata::db::destroy_db(o, name))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_repair_db(
    options: *const rocksdb_options_t,
    name: *const c_char,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        let o = set_options_of(options)?;
        // SAFETY: a C string (C API contract).
        let name = unsafe { cstr(name, "db name") }?;
        st(strata::db::repair_db(o, name))
    })
}

/// Frees what this library malloc'd for the caller.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_free(ptr: *mut std::ffi::c_void) {
    // SAFETY: NULL or a malloc'd block this library handed out.
    unsafe { crate::ffi::c_free(ptr) }
}

// ---- column families ----

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_list_column_families(
    options: *const rocksdb_options_t,
    name: *const c_char,
    lencf: *mut usize,
    errptr: *mut *mut c_char,
) -> *mut *mut c_char {
    guard(errptr, std::ptr::null_mut(), || {
        let o = set_options_of(options)?;
        // SAFETY: a C string (C API contract).
        let name = unsafe { cstr(name, "db name") }?;
        let names = st(DB::list_column_families(o, name))?;
        let arr = malloc_array::<*mut c_char>(names.len());
        for (i, n) in names.iter().enumerate() {
            // SAFETY: `arr` holds `names.len()` pointers.
            unsafe { *arr.add(i) = malloc_cstr(n) };
        }
        // SAFETY: NULL or writable.
        unsafe { put_out(lencf, names.len()) };
        Ok(arr)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_list_column_families_destroy(list: *mut *mut c_char, len: usize) {
    if list.is_null() {
        return;
    }
    for i in 0..len {
        // SAFETY: `list` came from rocksdb_list_column_families with `len`
        // malloc'd entries.
        unsafe { crate::ffi::c_free(*list.add(i) as *mut _) };
    }
    // SAFETY: the malloc'd array itself.
    unsafe { crate::ffi::c_free(list as *mut _) };
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_create_column_family(
    db: *mut rocksdb_t,
    column_family_options: *const rocksdb_options_t,
    column_family_name: *const c_char,
    errptr: *mut *mut c_char,
) -> *mut rocksdb_column_family_handle_t {
    guard(errptr, std::ptr::null_mut(), || {
        let db = db_of(db)?;
        let o = options_of(column_family_options)?;
        // SAFETY: a C string (C API contract).
        let name = unsafe { cstr(column_family_name, "column family name") }?;
        let cf = st(db.create_column_family(&name, o.cf))?;
        Ok(into_raw(rocksdb_column_family_handle_t { cf }))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_drop_column_family(
    db: *mut rocksdb_t,
    handle: *mut rocksdb_column_family_handle_t,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        st(db_of(db)?.drop_column_family(cf_of(handle)?))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_column_family_handle_destroy(
    h: *mut rocksdb_column_family_handle_t,
) {
    // SAFETY: NULL or a handle this library made.
    guard_quiet((), || unsafe { drop_raw(h) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_column_family_handle_get_id(
    h: *mut rocksdb_column_family_handle_t,
) -> u32 {
    guard_quiet(0, || cf_of(h).map(|c| c.id).unwrap_or(0))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_column_family_handle_get_name(
    h: *mut rocksdb_column_family_handle_t,
    name_len: *mut usize,
) -> *mut c_char {
    guard_quiet(std::ptr::null_mut(), || match cf_of(h) {
        Ok(c) => {
            // SAFETY: NULL or writable.
            unsafe { put_out(name_len, c.name.len()) };
            malloc_bytes(c.name.as_bytes())
        }
        Err(_) => std::ptr::null_mut(),
    })
}

// ---- writes ----

macro_rules! write_fn {
    ($name:ident, ($($arg:ident: $ty:ty),*), |$db:ident, $wo:ident| $body:expr) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            db: *mut rocksdb_t,
            options: *const rocksdb_writeoptions_t,
            $($arg: $ty,)*
            errptr: *mut *mut c_char,
        ) {
            guard(errptr, (), || {
                let $db = db_of(db)?;
                let $wo = wo_of(options)?;
                st($body)
            })
        }
    };
}

// SAFETY (every function below): key/value pointers address `len` bytes
// for the call (C API contract); `bytes` treats NULL as empty.
write_fn!(rocksdb_put, (key: *const c_char, keylen: usize, val: *const c_char, vallen: usize),
    |d, wo| d.put(wo, unsafe { bytes(key, keylen) }, unsafe { bytes(val, vallen) }));
write_fn!(rocksdb_put_cf, (cf: *mut rocksdb_column_family_handle_t, key: *const c_char, keylen: usize, val: *const c_char, vallen: usize),
    |d, wo| d.put_cf(wo, cf_of(cf)?, unsafe { bytes(key, keylen) }, unsafe { bytes(val, vallen) }));
write_fn!(rocksdb_delete, (key: *const c_char, keylen: usize),
    |d, wo| d.delete(wo, unsafe { bytes(key, keylen) }));
write_fn!(rocksdb_delete_cf, (cf: *mut rocksdb_column_family_handle_t, key: *const c_char, keylen: usize),
    |d, wo| d.delete_cf(wo, cf_of(cf)?, unsafe { bytes(key, keylen) }));
write_fn!(rocksdb_singledelete, (key: *const c_char, keylen: usize),
    |d, wo| d.single_delete(wo, unsafe { bytes(key, keylen) }));
write_fn!(rocksdb_singledelete_cf, (cf: *mut rocksdb_column_family_handle_t, key: *const c_char, keylen: usize),
    |d, wo| d.single_delete_cf(wo, cf_of(cf)?, unsafe { bytes(key, keylen) }));
write_fn!(rocksdb_delete_range_cf, (cf: *mut rocksdb_column_family_handle_t, start_key: *const c_char, start_key_len: usize, end_key: *const c_char, end_key_len: usize),
    |d, wo| d.delete_range_cf(wo, cf_of(cf)?, unsafe { bytes(start_key, start_key_len) }, unsafe { bytes(end_key, end_key_len) }));
write_fn!(rocksdb_merge, (key: *const c_char, keylen: usize, val: *const c_char, vallen: usize),
    |d, wo| d.merge(wo, unsafe { bytes(key, keylen) }, unsafe { bytes(val, vallen) }));
write_fn!(rocksdb_merge_cf, (cf: *mut rocksdb_column_family_handle_t, key: *const c_char, keylen: usize, val: *const c_char, vallen: usize),
    |d, wo| d.merge_cf(wo, cf_of(cf)?, unsafe { bytes(key, keylen) }, unsafe { bytes(val, vallen) }));
write_fn!(rocksdb_write, (batch: *mut rocksdb_writebatch_t),
    |d, wo| d.write(wo, batch_copy(batch)?));

/// The batch to hand to a write (the caller keeps and reuses its own).
pub(crate) fn batch_copy(batch: *const rocksdb_writebatch_t) -> Result<WriteBatch, String> {
    // SAFETY: NULL or a live batch.
    Ok(unsafe { handle(batch, "write batch") }?.batch.clone())
}

// ---- reads ----

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_get(
    db: *mut rocksdb_t,
    options: *const rocksdb_readoptions_t,
    key: *const c_char,
    keylen: usize,
    vallen: *mut usize,
    errptr: *mut *mut c_char,
) -> *mut c_char {
    guard(errptr, std::ptr::null_mut(), || {
        // SAFETY: `keylen` bytes at `key`.
        let v = st(db_of(db)?.get(&ro_of(options)?, unsafe { bytes(key, keylen) }))?;
        Ok(out_value(v, vallen))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_get_cf(
    db: *mut rocksdb_t,
    options: *const rocksdb_readoptions_t,
    cf: *mut rocksdb_column_family_handle_t,
    key: *const c_char,
    keylen: usize,
    vallen: *mut usize,
    errptr: *mut *mut c_char,
) -> *mut c_char {
    guard(errptr, std::ptr::null_mut(), || {
        // SAFETY: `keylen` bytes at `key`.
        let v = st(db_of(db)?.get_cf(&ro_of(options)?, cf_of(cf)?, unsafe { bytes(key, keylen) }))?;
        Ok(out_value(v, vallen))
    })
}

/// NULL (and no error) when the key is absent, as RocksDB.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_get_pinned(
    db: *mut rocksdb_t,
    options: *const rocksdb_readoptions_t,
    key: *const c_char,
    keylen: usize,
    errptr: *mut *mut c_char,
) -> *mut rocksdb_pinnableslice_t {
    guard(errptr, std::ptr::null_mut(), || {
        // SAFETY: `keylen` bytes at `key`.
        let v = st(db_of(db)?.get(&ro_of(options)?, unsafe { bytes(key, keylen) }))?;
        Ok(v.map_or(std::ptr::null_mut(), |value| {
            into_raw(rocksdb_pinnableslice_t { value })
        }))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_get_pinned_cf(
    db: *mut rocksdb_t,
    options: *const rocksdb_readoptions_t,
    cf: *mut rocksdb_column_family_handle_t,
    key: *const c_char,
    keylen: usize,
    errptr: *mut *mut c_char,
) -> *mut rocksdb_pinnableslice_t {
    guard(errptr, std::ptr::null_mut(), || {
        // SAFETY: `keylen` bytes at `key`.
        let v = st(db_of(db)?.get_cf(&ro_of(options)?, cf_of(cf)?, unsafe { bytes(key, keylen) }))?;
        Ok(v.map_or(std::ptr::null_mut(), |value| {
            into_raw(rocksdb_pinnableslice_t { value })
        }))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_pinnableslice_value(
    v: *const rocksdb_pinnableslice_t,
    vlen: *mut usize,
) -> *const c_char {
    guard_quiet(std::ptr::null(), || {
        // SAFETY: NULL or a live pinned value; `vlen` NULL or writable.
        match unsafe { v.as_ref() } {
            Some(v) => {
                unsafe { put_out(vlen, v.value.len()) };
                v.value.as_ptr() as *const c_char
            }
            None => {
                unsafe { put_out(vlen, 0) };
                std::ptr::null()
            }
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_pinnableslice_destroy(v: *mut rocksdb_pinnableslice_t) {
    // SAFETY: NULL or a pinned value this library made.
    guard_quiet((), || unsafe { drop_raw(v) })
}

/// Hands multi-get results out: per key a malloc'd value (or NULL) and
/// length, and a malloc'd error (or NULL).
///
/// # Safety
/// The three output arrays have `results.len()` entries.
pub(crate) unsafe fn out_multi(
    results: Vec<strata::Result<Option<Vec<u8>>>>,
    values_list: *mut *mut c_char,
    values_list_sizes: *mut usize,
    errs: *mut *mut c_char,
) {
    for (i, r) in results.into_iter().enumerate() {
        // SAFETY: each array has an entry `i` (caller's contract).
        unsafe {
            if !errs.is_null() {
                *errs.add(i) = std::ptr::null_mut();
            }
            let (v, n, e) = match r {
                Ok(Some(v)) => (malloc_bytes(&v), v.len(), None),
                Ok(None) => (std::ptr::null_mut(), 0, None),
                Err(e) => (std::ptr::null_mut(), 0, Some(e.to_string())),
            };
            put_out(values_list.add(i), v);
            put_out(values_list_sizes.add(i), n);
            if let (Some(e), false) = (e, errs.is_null()) {
                set_error(errs.add(i), &e);
            }
        }
    }
}

/// Collects the caller's key arrays.
///
/// # Safety
/// `keys_list` and `keys_list_sizes` hold `n` entries.
pub(crate) unsafe fn key_list<'a>(
    n: usize,
    keys_list: *const *const c_char,
    keys_list_sizes: *const usize,
) -> Vec<&'a [u8]> {
    (0..n)
        // SAFETY: `i < n` (caller's contract).
        .map(|i| unsafe { bytes(*keys_list.add(i), *keys_list_sizes.add(i)) })
        .collect()
}

/// All keys read at one sequence number (a consistent view).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_multi_get(
    db: *mut rocksdb_t,
    options: *const rocksdb_readoptions_t,
    num_keys: usize,
    keys_list: *const *const c_char,
    keys_list_sizes: *const usize,
    values_list: *mut *mut c_char,
    values_list_sizes: *mut usize,
    errs: *mut *mut c_char,
) {
    guard_quiet((), || {
        let (Ok(db), Ok(ro)) = (db_of(db), ro_of(options)) else {
            return;
        };
        // SAFETY: arrays of `num_keys` entries (C API contract).
        let keys = unsafe { key_list(num_keys, keys_list, keys_list_sizes) };
        let r = db.multi_get(&ro, &keys);
        unsafe { out_multi(r, values_list, values_list_sizes, errs) };
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_multi_get_cf(
    db: *mut rocksdb_t,
    options: *const rocksdb_readoptions_t,
    column_families: *const *const rocksdb_column_family_handle_t,
    num_keys: usize,
    keys_list: *const *const c_char,
    keys_list_sizes: *const usize,
    values_list: *mut *mut c_char,
    values_list_sizes: *mut usize,
    errs: *mut *mut c_char,
) {
    guard_quiet((), || {
        let (Ok(db), Ok(ro)) = (db_of(db), ro_of(options)) else {
            return;
        };
        // SAFETY: arrays of `num_keys` entries (C API contract).
        let Some(cfs) = (unsafe { cf_list(column_families, num_keys) }) else {
            return;
        };
        let keys = unsafe { key_list(num_keys, keys_list, keys_list_sizes) };
        let r = multi_get_across(&db, ro, &cfs, &keys);
        unsafe { out_multi(r, values_list, values_list_sizes, errs) };
    })
}

/// Column family handles from the caller's array (`None` if any is NULL).
///
/// # Safety
/// `cfs` holds `n` handles.
pub(crate) unsafe fn cf_list(
    cfs: *const *const rocksdb_column_family_handle_t,
    n: usize,
) -> Option<Vec<ColumnFamilyHandle>> {
    if cfs.is_null() && n > 0 {
        return None;
    }
    // SAFETY: `i < n` (caller's contract).
    (0..n)
        .map(|i| cf_of(unsafe { *cfs.add(i) }).ok().cloned())
        .collect()
}

/// `keys[i]` of `cfs[i]`, every read at one sequence number: the caller's
/// snapshot, or one taken now.
pub(crate) fn multi_get_across(
    db: &DB,
    mut ro: strata::ReadOptions,
    cfs: &[ColumnFamilyHandle],
    keys: &[&[u8]],
) -> Vec<strata::Result<Option<Vec<u8>>>> {
    let snap = db.snapshot();
    ro.snapshot.get_or_insert(snap.sequence());
    cfs.iter()
        .zip(keys)
        .map(|(cf, k)| db.get_cf(&ro, cf, k))
        .collect()
}

/// Whether the key may exist: Strata answers exactly (a full read), which
/// RocksDB's contract allows (it may also say "maybe" for absent keys).
/// With `value` non-NULL a found value is handed out (malloc'd) and
/// `*value_found` set. User timestamps are not supported: a timestamp
/// makes the answer "no".
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_key_may_exist(
    db: *mut rocksdb_t,
    options: *const rocksdb_readoptions_t,
    key: *const c_char,
    key_len: usize,
    value: *mut *mut c_char,
    val_len: *mut usize,
    timestamp: *const c_char,
    timestamp_len: usize,
    value_found: *mut c_uchar,
) -> c_uchar {
    // SAFETY: as rocksdb_key_may_exist_cf with the default column family.
    guard_quiet(0, || {
        let Ok(d) = db_of(db) else { return 0 };
        let mut cf = rocksdb_column_family_handle_t { cf: d.default_cf() };
        unsafe {
            rocksdb_key_may_exist_cf(
                db,
                options,
                &mut cf,
                key,
                key_len,
                value,
                val_len,
                timestamp,
                timestamp_len,
                value_found,
            )
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_key_may_exist_cf(
    db: *mut rocksdb_t,
    options: *const rocksdb_readoptions_t,
    cf: *mut rocksdb_column_family_handle_t,
    key: *const c_char,
    key_len: usize,
    value: *mut *mut c_char,
    val_len: *mut usize,
    timestamp: *const c_char,
    timestamp_len: usize,
    value_found: *mut c_uchar,
) -> c_uchar {
    guard_quiet(0, || {
        // SAFETY: out-pointers NULL or writable (C API contract).
        unsafe { put_out(value_found, 0) };
        if !timestamp.is_null() && timestamp_len > 0 {
            return 0;
        }
        let (Ok(db), Ok(ro), Ok(cf)) = (db_of(db), ro_of(options), cf_of(cf)) else {
            return 0;
        };
        // SAFETY: `key_len` bytes at `key`.
        match db.key_may_exist_cf(&ro, cf, unsafe { bytes(key, key_len) }) {
            (true, Some(v)) => {
                if !value.is_null() {
                    // SAFETY: writable out-pointers.
                    unsafe {
                        *value = malloc_bytes(&v);
                        put_out(val_len, v.len());
                        put_out(value_found, 1);
                    }
                }
                1
            }
            (may, _) => c_uchar::from(may),
        }
    })
}

/// One iterator per column family, all at one sequence number.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_create_iterators(
    db: *mut rocksdb_t,
    opts: *mut rocksdb_readoptions_t,
    column_families: *mut *mut rocksdb_column_family_handle_t,
    iterators: *mut *mut crate::iterator::rocksdb_iterator_t,
    size: usize,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        let db = db_of(db)?;
        let mut ro = ro_of(opts)?;
        if size > 0 && (column_families.is_null() || iterators.is_null()) {
            return Err("Invalid argument: column family or iterator array is NULL".into());
        }
        let snap = db.snapshot();
        ro.snapshot.get_or_insert(snap.sequence());
        let mut made = Vec::with_capacity(size);
        for i in 0..size {
            // SAFETY: arrays of `size` entries (C API contract).
            let cf = cf_of(unsafe { *column_families.add(i) })?;
            made.push(st(db.iter_cf(&ro, cf))?);
        }
        for (i, it) in made.into_iter().enumerate() {
            // SAFETY: room for `size` iterator pointers.
            unsafe {
                *iterators.add(i) = into_raw(crate::iterator::rocksdb_iterator_t::new(Box::new(it)))
            };
        }
        Ok(())
    })
}

/// Keys of one column family read at one sequence number into pinned
/// values (NULL where absent) and errors (NULL where none).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_batched_multi_get_cf(
    db: *mut rocksdb_t,
    options: *const rocksdb_readoptions_t,
    cf: *mut rocksdb_column_family_handle_t,
    num_keys: usize,
    keys_list: *const *const c_char,
    keys_list_sizes: *const usize,
    values: *mut *mut rocksdb_pinnableslice_t,
    errs: *mut *mut c_char,
    _sorted_input: bool,
) {
    guard_quiet((), || {
        let (Ok(db), Ok(ro), Ok(cf)) = (db_of(db), ro_of(options), cf_of(cf)) else {
            return;
        };
        if values.is_null() {
            return;
        }
        // SAFETY: arrays of `num_keys` entries (C API contract).
        let keys = unsafe { key_list(num_keys, keys_list, keys_list_sizes) };
        let r = db.multi_get_cf(&ro, cf, &keys);
        for (i, r) in r.into_iter().enumerate() {
            // SAFETY: the output arrays have `num_keys` entries.
            unsafe {
                if !errs.is_null() {
                    *errs.add(i) = std::ptr::null_mut();
                }
                *values.add(i) = std::ptr::null_mut();
                match r {
                    Ok(Some(value)) => *values.add(i) = into_raw(rocksdb_pinnableslice_t { value }),
                    Ok(None) => {}
                    Err(e) => {
                        if !errs.is_null() {
                            set_error(errs.add(i), &e.to_string());
                        }
                    }
                }
            }
        }
    })
}

// ---- snapshots ----

#[unsafe(no_mangle)]
/// Without snapshot support (a column family with in-place updates), as
/// RocksDB: a snapshot object that names no snapshot, so reads with it see
/// the latest data.
pub unsafe extern "C" fn rocksdb_create_snapshot(db: *mut rocksdb_t) -> *const rocksdb_snapshot_t {
    guard_quiet(std::ptr::null(), || match db_of(db) {
        Ok(db) if !db.snapshots_supported() => into_raw(rocksdb_snapshot_t {
            seq: None,
            owner: std::ptr::null_mut(),
        }),
        Ok(db) => new_snapshot(db.snapshot()),
        Err(_) => std::ptr::null(),
    })
}

pub(crate) fn new_snapshot(s: Snapshot) -> *const rocksdb_snapshot_t {
    into_raw(rocksdb_snapshot_t {
        seq: Some(s.sequence()),
        owner: into_raw(s),
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_release_snapshot(
    _db: *mut rocksdb_t,
    snapshot: *const rocksdb_snapshot_t,
) {
    guard_quiet((), || {
        if snapshot.is_null() {
            return;
        }
        // SAFETY: from rocksdb_create_snapshot, released once.
        let s = unsafe { Box::from_raw(snapshot as *mut rocksdb_snapshot_t) };
        unsafe { drop_raw(s.owner) };
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_get_latest_sequence_number(db: *mut rocksdb_t) -> u64 {
    guard_quiet(0, || {
        db_of(db).map(|d| d.latest_sequence_number()).unwrap_or(0)
    })
}

// ---- flush, compaction, WAL ----

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_flush(
    db: *mut rocksdb_t,
    _options: *const rocksdb_flushoptions_t,
    errptr: *mut *mut c_char,
) {
    // Strata's flush always waits for the tables to be written.
    guard(errptr, (), || st(db_of(db)?.flush()))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_flush_cf(
    db: *mut rocksdb_t,
    _options: *const rocksdb_flushoptions_t,
    cf: *mut rocksdb_column_family_handle_t,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || st(db_of(db)?.flush_cf(cf_of(cf)?)))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_flush_wal(
    db: *mut rocksdb_t,
    sync: c_uchar,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || st(db_of(db)?.flush_wal(sync != 0)))
}

/// `(start, limit)`; NULL for either end is unbounded.
///
/// # Safety
/// Non-NULL pointers address their lengths.
unsafe fn range<'a>(
    s: *const c_char,
    sl: usize,
    l: *const c_char,
    ll: usize,
) -> (Option<&'a [u8]>, Option<&'a [u8]>) {
    // SAFETY: the caller's contract.
    unsafe {
        (
            (!s.is_null()).then(|| bytes(s, sl)),
            (!l.is_null()).then(|| bytes(l, ll)),
        )
    }
}

fn compact(
    db: &DB,
    cf: &ColumnFamilyHandle,
    r: (Option<&[u8]>, Option<&[u8]>),
    o: Option<&rocksdb_compactoptions_t>,
) {
    let bottommost = o.map_or(1, |o| o.bottommost_level_compaction);
    let opts = CompactRangeOptions {
        bottommost_level_compaction: match bottommost {
            0 => BottommostLevelCompaction::Skip,
            1 => BottommostLevelCompaction::IfHaveCompactionFilter,
            _ => BottommostLevelCompaction::Force,
        },
        change_level: o.is_some_and(|o| o.change_level),
        target_level: o.map_or(-1, |o| o.target_level),
        ..CompactRangeOptions::default()
    };
    // RocksDB's C compact_range reports no error.
    let _ = db.compact_range_cf_opt(cf, r.0, r.1, &opts);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_compact_range(
    db: *mut rocksdb_t,
    start_key: *const c_char,
    start_key_len: usize,
    limit_key: *const c_char,
    limit_key_len: usize,
) {
    guard_quiet((), || {
        if let Ok(db) = db_of(db) {
            // SAFETY: the keys address their lengths.
            let r = unsafe { range(start_key, start_key_len, limit_key, limit_key_len) };
            compact(&db, &db.default_cf(), r, None);
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_compact_range_cf(
    db: *mut rocksdb_t,
    cf: *mut rocksdb_column_family_handle_t,
    start_key: *const c_char,
    start_key_len: usize,
    limit_key: *const c_char,
    limit_key_len: usize,
) {
    guard_quiet((), || {
        if let (Ok(db), Ok(cf)) = (db_of(db), cf_of(cf)) {
            // SAFETY: the keys address their lengths.
            let r = unsafe { range(start_key, start_key_len, limit_key, limit_key_len) };
            compact(&db, cf, r, None);
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_compact_range_opt(
    db: *mut rocksdb_t,
    opt: *mut rocksdb_compactoptions_t,
    start_key: *const c_char,
    start_key_len: usize,
    limit_key: *const c_char,
    limit_key_len: usize,
) {
    guard_quiet((), || {
        // SAFETY: NULL or live objects.
        if let (Ok(db), Some(o)) = (db_of(db), unsafe { opt.as_ref() }) {
            let r = unsafe { range(start_key, start_key_len, limit_key, limit_key_len) };
            compact(&db, &db.default_cf(), r, Some(o));
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_compact_range_cf_opt(
    db: *mut rocksdb_t,
    cf: *mut rocksdb_column_family_handle_t,
    opt: *mut rocksdb_compactoptions_t,
    start_key: *const c_char,
    start_key_len: usize,
    limit_key: *const c_char,
    limit_key_len: usize,
) {
    guard_quiet((), || {
        // SAFETY: NULL or live objects.
        if let (Ok(db), Ok(cf), Some(o)) = (db_of(db), cf_of(cf), unsafe { opt.as_ref() }) {
            let r = unsafe { range(start_key, start_key_len, limit_key, limit_key_len) };
            compact(&db, cf, r, Some(o));
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_disable_file_deletions(
    db: *mut rocksdb_t,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || st(db_of(db)?.disable_file_deletions()))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_enable_file_deletions(
    db: *mut rocksdb_t,
    force: c_uchar,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        st(db_of(db)?.enable_file_deletions(force != 0))
    })
}

// ---- properties ----

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_property_value(
    db: *mut rocksdb_t,
    propname: *const c_char,
) -> *mut c_char {
    guard_quiet(std::ptr::null_mut(), || {
        // SAFETY: a C string (C API contract).
        let (Ok(db), Ok(name)) = (db_of(db), unsafe { cstr(propname, "property") }) else {
            return std::ptr::null_mut();
        };
        db.property(&name)
            .map_or(std::ptr::null_mut(), |v| malloc_cstr(&v))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_property_value_cf(
    db: *mut rocksdb_t,
    cf: *mut rocksdb_column_family_handle_t,
    propname: *const c_char,
) -> *mut c_char {
    guard_quiet(std::ptr::null_mut(), || {
        // SAFETY: a C string (C API contract).
        let (Ok(db), Ok(cf), Ok(name)) =
            (db_of(db), cf_of(cf), unsafe { cstr(propname, "property") })
        else {
            return std::ptr::null_mut();
        };
        db.property_cf(cf, &name)
            .map_or(std::ptr::null_mut(), |v| malloc_cstr(&v))
    })
}

fn property_int(v: Option<String>, out_val: *mut u64) -> c_int {
    match v.and_then(|s| s.trim().parse::<u64>().ok()) {
        Some(n) => {
            // SAFETY: NULL or writable.
            unsafe { put_out(out_val, n) };
            0
        }
        None => -1,
    }
}

/// 0 and the value for an integer property; -1 otherwise.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_property_int(
    db: *mut rocksdb_t,
    propname: *const c_char,
    out_val: *mut u64,
) -> c_int {
    guard_quiet(-1, || {
        // SAFETY: a C string (C API contract).
        let (Ok(db), Ok(name)) = (db_of(db), unsafe { cstr(propname, "property") }) else {
            return -1;
        };
        property_int(db.property(&name), out_val)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_property_int_cf(
    db: *mut rocksdb_t,
    cf: *mut rocksdb_column_family_handle_t,
    propname: *const c_char,
    out_val: *mut u64,
) -> c_int {
    guard_quiet(-1, || {
        // SAFETY: a C string (C API contract).
        let (Ok(db), Ok(cf), Ok(name)) =
            (db_of(db), cf_of(cf), unsafe { cstr(propname, "property") })
        else {
            return -1;
        };
        property_int(db.property_cf(cf, &name), out_val)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_approximate_sizes(
    db: *mut rocksdb_t,
    num_ranges: c_int,
    range_start_key: *const *const c_char,
    range_start_key_len: *const usize,
    range_limit_key: *const *const c_char,
    range_limit_key_len: *const usize,
    sizes: *mut u64,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        let db = db_of(db)?;
        if num_ranges > 0
            && (sizes.is_null()
                || range_start_key.is_null()
                || range_start_key_len.is_null()
                || range_limit_key.is_null()
                || range_limit_key_len.is_null())
        {
            return Err("Invalid argument: range arrays are NULL".into());
        }
        let cf = db.default_cf();
        for i in 0..num_ranges.max(0) as usize {
            // SAFETY: arrays of `num_ranges` entries (C API contract).
            unsafe {
                let s = bytes(*range_start_key.add(i), *range_start_key_len.add(i));
                let l = bytes(*range_limit_key.add(i), *range_limit_key_len.add(i));
                *sizes.add(i) = st(db.approximate_size(&cf, s, l))?;
            }
        }
        Ok(())
    })
}

// ---- live files ----

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_livefiles(db: *mut rocksdb_t) -> *const rocksdb_livefiles_t {
    guard_quiet(std::ptr::null(), || {
        let Ok(db) = db_of(db) else {
            return std::ptr::null();
        };
        let files = db.live_files_metadata();
        let c = |s: &str| std::ffi::CString::new(s.replace('\0', "")).unwrap_or_default();
        let names = files.iter().map(|f| c(&f.name)).collect();
        let cf_names = files.iter().map(|f| c(&f.column_family_name)).collect();
        into_raw(rocksdb_livefiles_t {
            files,
            names,
            cf_names,
        })
    })
}

fn live<'a>(
    lf: *const rocksdb_livefiles_t,
    index: c_int,
) -> Option<(&'a rocksdb_livefiles_t, usize)> {
    // SAFETY: NULL or a live list.
    let lf = unsafe { lf.as_ref() }?;
    let i = usize::try_from(index)
        .ok()
        .filter(|i| *i < lf.files.len())?;
    Some((lf, i))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_livefiles_count(lf: *const rocksdb_livefiles_t) -> c_int {
    // SAFETY: NULL or a live list.
    guard_quiet(0, || {
        unsafe { lf.as_ref() }.map_or(0, |l| l.files.len() as c_int)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_livefiles_name(
    lf: *const rocksdb_livefiles_t,
    index: c_int,
) -> *const c_char {
    guard_quiet(std::ptr::null(), || {
        live(lf, index).map_or(std::ptr::null(), |(l, i)| l.names[i].as_ptr())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_livefiles_column_family_name(
    lf: *const rocksdb_livefiles_t,
    index: c_int,
) -> *const c_char {
    guard_quiet(std::ptr::null(), || {
        live(lf, index).map_or(std::ptr::null(), |(l, i)| l.cf_names[i].as_ptr())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_livefiles_level(
    lf: *const rocksdb_livefiles_t,
    index: c_int,
) -> c_int {
    guard_quiet(-1, || {
        live(lf, index).map_or(-1, |(l, i)| l.files[i].level as c_int)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_livefiles_size(
    lf: *const rocksdb_livefiles_t,
    index: c_int,
) -> usize {
    guard_quiet(0, || {
        live(lf, index).map_or(0, |(l, i)| l.files[i].size as usize)
    })
}

/// File `index`'s smallest or largest key (its length into `size`).
unsafe fn live_key(
    lf: *const rocksdb_livefiles_t,
    index: c_int,
    size: *mut usize,
    pick: fn(&strata::db::LiveFileMetaData) -> &[u8],
) -> *const c_char {
    guard_quiet(std::ptr::null(), || match live(lf, index) {
        Some((l, i)) => {
            let k = pick(&l.files[i]);
            // SAFETY: NULL or writable.
            unsafe { put_out(size, k.len()) };
            k.as_ptr() as *const c_char
        }
        None => std::ptr::null(),
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_livefiles_smallestkey(
    lf: *const rocksdb_livefiles_t,
    index: c_int,
    size: *mut usize,
) -> *const c_char {
    // SAFETY: as `live_key` requires (the C API contract).
    unsafe { live_key(lf, index, size, |f| &f.smallest_key) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_livefiles_largestkey(
    lf: *const rocksdb_livefiles_t,
    index: c_int,
    size: *mut usize,
) -> *const c_char {
    // SAFETY: as `live_key` requires (the C API contract).
    unsafe { live_key(lf, index, size, |f| &f.largest_key) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_livefiles_entries(
    lf: *const rocksdb_livefiles_t,
    index: c_int,
) -> u64 {
    guard_quiet(0, || {
        live(lf, index).map_or(0, |(l, i)| l.files[i].num_entries)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_livefiles_deletions(
    lf: *const rocksdb_livefiles_t,
    index: c_int,
) -> u64 {
    guard_quiet(0, || {
        live(lf, index).map_or(0, |(l, i)| l.files[i].num_deletions)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_livefiles_destroy(lf: *const rocksdb_livefiles_t) {
    // SAFETY: NULL or from rocksdb_livefiles.
    guard_quiet((), || unsafe { drop_raw(lf as *mut rocksdb_livefiles_t) })
}

// ---- manual compaction pause, background work, compaction hints ----

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_disable_manual_compaction(db: *mut rocksdb_t) {
    guard_quiet((), || {
        if let Ok(db) = db_of(db) {
            db.disable_manual_compaction();
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_enable_manual_compaction(db: *mut rocksdb_t) {
    guard_quiet((), || {
        if let Ok(db) = db_of(db) {
            db.enable_manual_compaction();
        }
    })
}

/// RocksDB's C signature reports nothing: a failure to flush writes that
/// skipped the WAL surfaces again at close.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_cancel_all_background_work(db: *mut rocksdb_t, wait: c_uchar) {
    guard_quiet((), || {
        if let Ok(db) = db_of(db) {
            let _ = db.cancel_all_background_work(wait != 0);
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_suggest_compact_range(
    db: *mut rocksdb_t,
    start_key: *const c_char,
    start_key_len: usize,
    limit_key: *const c_char,
    limit_key_len: usize,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        let db = db_of(db)?;
        // SAFETY: the keys address their lengths.
        let r = unsafe { range(start_key, start_key_len, limit_key, limit_key_len) };
        st(db.suggest_compact_range_cf(&db.default_cf(), r.0, r.1))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_suggest_compact_range_cf(
    db: *mut rocksdb_t,
    cf: *mut rocksdb_column_family_handle_t,
    start_key: *const c_char,
    start_key_len: usize,
    limit_key: *const c_char,
    limit_key_len: usize,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        let db = db_of(db)?;
        // SAFETY: the keys address their lengths.
        let r = unsafe { range(start_key, start_key_len, limit_key, limit_key_len) };
        st(db.suggest_compact_range_cf(cf_of(cf)?, r.0, r.1))
    })
}
