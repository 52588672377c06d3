//! Transactions: `TransactionDB` (pessimistic, WriteCommitted, with
//! two-phase commit) and `OptimisticTransactionDB`, their transactions,
//! and options. A transaction borrows its database: as in RocksDB, destroy
//! every transaction before closing the database.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_uchar};

use strata::utilities::transactions::{
    OptimisticTransactionDB, OptimisticTransactionOptions, Transaction, TransactionDB,
    TransactionDBOptions, TransactionOptions,
};

use crate::backup::rocksdb_checkpoint_t;
use crate::batch::rocksdb_writebatch_t;
use crate::db::{
    batch_copy, cf_list, cf_of, cf_open_args, hand_out_cfs, key_list, multi_get_across,
    new_snapshot, options_of, out_multi, out_value, ro_of, rocksdb_column_family_handle_t,
    rocksdb_pinnableslice_t, rocksdb_snapshot_t, rocksdb_t, wo_of,
};
use crate::ffi::{
    bytes, cstr, drop_raw, guard, guard_quiet, handle, handle_mut, into_raw, malloc_array, put_out,
    st,
};
use crate::iterator::{rocksdb_iterator_t, wrap_db_iter, wrap_failed};
use crate::options::{
    rocksdb_flushoptions_t, rocksdb_options_t, rocksdb_readoptions_t, rocksdb_writeoptions_t,
};

pub struct rocksdb_transactiondb_t {
    tdb: TransactionDB,
}

pub struct rocksdb_optimistictransactiondb_t {
    odb: OptimisticTransactionDB,
}

pub struct rocksdb_transaction_t {
    txn: Transaction<'static>,
}

pub struct rocksdb_transactiondb_options_t {
    opts: TransactionDBOptions,
}

pub struct rocksdb_transaction_options_t {
    opts: TransactionOptions,
}

pub struct rocksdb_optimistictransaction_options_t {
    opts: OptimisticTransactionOptions,
}

fn tdb_of<'a>(t: *const rocksdb_transactiondb_t) -> Result<&'a TransactionDB, String> {
    // SAFETY: NULL or a live transaction database (C API contract).
    unsafe { handle(t, "transaction db") }.map(|t| &t.tdb)
}

fn txn_of<'a>(t: *mut rocksdb_transaction_t) -> Result<&'a mut Transaction<'static>, String> {
    // SAFETY: NULL or a live transaction used by one thread.
    unsafe { handle_mut(t, "transaction") }.map(|t| &mut t.txn)
}

/// Stores a new transaction in `old_txn` (reusing it, as RocksDB) or a new
/// handle.
fn hand_out_txn(
    txn: Transaction<'static>,
    old_txn: *mut rocksdb_transaction_t,
) -> *mut rocksdb_transaction_t {
    if old_txn.is_null() {
        into_raw(rocksdb_transaction_t { txn })
    } else {
        // SAFETY: a live transaction handle the caller hands back for reuse;
        // the old transaction is dropped (rolled back) first.
        unsafe { (*old_txn).txn = txn };
        old_txn
    }
}

// ---- options ----

#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_transactiondb_options_create() -> *mut rocksdb_transactiondb_options_t {
    into_raw(rocksdb_transactiondb_options_t {
        opts: TransactionDBOptions::default(),
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transactiondb_options_destroy(
    o: *mut rocksdb_transactiondb_options_t,
) {
    // SAFETY: NULL or live options.
    guard_quiet((), || unsafe { drop_raw(o) })
}

macro_rules! opt_set {
    ($ty:ty, $name:ident, $vty:ty, |$o:ident, $v:ident| $body:expr) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(o: *mut $ty, $v: $vty) {
            guard_quiet((), || {
                // SAFETY: NULL or live options.
                if let Some($o) = unsafe { o.as_mut() } {
                    $body;
                }
            })
        }
    };
}

opt_set!(
    rocksdb_transactiondb_options_t,
    rocksdb_transactiondb_options_set_max_num_locks,
    i64,
    |o, v| o.opts.max_num_locks = v
);
opt_set!(
    rocksdb_transactiondb_options_t,
    rocksdb_transactiondb_options_set_num_stripes,
    usize,
    |o, v| o.opts.num_stripes = v.max(1)
);
opt_set!(
    rocksdb_transactiondb_options_t,
    rocksdb_transactiondb_options_set_transaction_lock_timeout,
    i64,
    |o, v| o.opts.transaction_lock_timeout = v
);
opt_set!(
    rocksdb_transactiondb_options_t,
    rocksdb_transactiondb_options_set_default_lock_timeout,
    i64,
    |o, v| o.opts.default_lock_timeout = v
);

#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_transaction_options_create() -> *mut rocksdb_transaction_options_t {
    into_raw(rocksdb_transaction_options_t {
        opts: TransactionOptions::default(),
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_options_destroy(
    o: *mut rocksdb_transaction_options_t,
) {
    // SAFETY: NULL or live options.
    guard_quiet((), || unsafe { drop_raw(o) })
}

opt_set!(
    rocksdb_transaction_options_t,
    rocksdb_transaction_options_set_set_snapshot,
    c_uchar,
    |o, v| o.opts.set_snapshot = v != 0
);
opt_set!(
    rocksdb_transaction_options_t,
    rocksdb_transaction_options_set_deadlock_detect,
    c_uchar,
    |o, v| o.opts.deadlock_detect = v != 0
);
opt_set!(
    rocksdb_transaction_options_t,
    rocksdb_transaction_options_set_lock_timeout,
    i64,
    |o, v| o.opts.lock_timeout = v
);
opt_set!(
    rocksdb_transaction_options_t,
    rocksdb_transaction_options_set_expiration,
    i64,
    |o, v| o.opts.expiration = v
);
opt_set!(
    rocksdb_transaction_options_t,
    rocksdb_transaction_options_set_deadlock_detect_depth,
    i64,
    |o, v| o.opts.deadlock_detect_depth = v
);
opt_set!(
    rocksdb_transaction_options_t,
    rocksdb_transaction_options_set_max_write_batch_size,
    usize,
    |o, v| o.opts.max_write_batch_size = v
);
opt_set!(
    rocksdb_transaction_options_t,
    rocksdb_transaction_options_set_skip_prepare,
    c_uchar,
    |o, v| o.opts.skip_prepare = v != 0
);

#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_optimistictransaction_options_create()
-> *mut rocksdb_optimistictransaction_options_t {
    into_raw(rocksdb_optimistictransaction_options_t {
        opts: OptimisticTransactionOptions::default(),
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_optimistictransaction_options_destroy(
    o: *mut rocksdb_optimistictransaction_options_t,
) {
    // SAFETY: NULL or live options.
    guard_quiet((), || unsafe { drop_raw(o) })
}

opt_set!(
    rocksdb_optimistictransaction_options_t,
    rocksdb_optimistictransaction_options_set_set_snapshot,
    c_uchar,
    |o, v| o.opts.set_snapshot = v != 0
);

// ---- TransactionDB ----

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transactiondb_open(
    options: *const rocksdb_options_t,
    txn_db_options: *const rocksdb_transactiondb_options_t,
    name: *const c_char,
    errptr: *mut *mut c_char,
) -> *mut rocksdb_transactiondb_t {
    guard(errptr, std::ptr::null_mut(), || {
        let o = options_of(options)?;
        // SAFETY: live options and a C string.
        let t = unsafe { handle(txn_db_options, "transaction db options") }?;
        let name = unsafe { cstr(name, "db name") }?;
        let tdb = st(TransactionDB::open(o, t.opts.clone(), name))?;
        Ok(into_raw(rocksdb_transactiondb_t { tdb }))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transactiondb_open_column_families(
    options: *const rocksdb_options_t,
    txn_db_options: *const rocksdb_transactiondb_options_t,
    name: *const c_char,
    num_column_families: c_int,
    column_family_names: *const *const c_char,
    column_family_options: *const *const rocksdb_options_t,
    column_family_handles: *mut *mut rocksdb_column_family_handle_t,
    errptr: *mut *mut c_char,
) -> *mut rocksdb_transactiondb_t {
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
        // SAFETY: NULL or live options.
        let t = unsafe { handle(txn_db_options, "transaction db options") }?;
        let tdb = st(TransactionDB::open_cf(
            a.opts,
            t.opts.clone(),
            a.name,
            a.descs,
        ))?;
        unsafe { hand_out_cfs(tdb.db(), &a.names, column_family_handles) }?;
        Ok(into_raw(rocksdb_transactiondb_t { tdb }))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transactiondb_close(t: *mut rocksdb_transactiondb_t) {
    // SAFETY: NULL or a live transaction db with no live transactions.
    guard_quiet((), || unsafe { drop_raw(t) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transactiondb_create_column_family(
    t: *mut rocksdb_transactiondb_t,
    column_family_options: *const rocksdb_options_t,
    column_family_name: *const c_char,
    errptr: *mut *mut c_char,
) -> *mut rocksdb_column_family_handle_t {
    guard(errptr, std::ptr::null_mut(), || {
        let o = options_of(column_family_options)?;
        // SAFETY: a C string.
        let name = unsafe { cstr(column_family_name, "column family name") }?;
        let cf = st(tdb_of(t)?.db().create_column_family(&name, o.cf))?;
        Ok(into_raw(rocksdb_column_family_handle_t { cf }))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_begin(
    t: *mut rocksdb_transactiondb_t,
    write_options: *const rocksdb_writeoptions_t,
    txn_options: *const rocksdb_transaction_options_t,
    old_txn: *mut rocksdb_transaction_t,
) -> *mut rocksdb_transaction_t {
    guard_quiet(std::ptr::null_mut(), || {
        let (Ok(tdb), Ok(wo)) = (tdb_of(t), wo_of(write_options)) else {
            return std::ptr::null_mut();
        };
        // SAFETY: NULL or live options.
        let topts = unsafe { txn_options.as_ref() }
            .map(|o| o.opts.clone())
            .unwrap_or_default();
        // SAFETY: the C API's rule: a transaction is destroyed before its
        // database is closed, so the database outlives this borrow.
        let tdb: &'static TransactionDB = unsafe { &*(tdb as *const TransactionDB) };
        hand_out_txn(tdb.begin_transaction(*wo, topts), old_txn)
    })
}

/// The transactions recovery found prepared (after a crash), as a malloc'd
/// array the caller frees with `rocksdb_free`, each transaction destroyed
/// with `rocksdb_transaction_destroy`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transactiondb_get_prepared_transactions(
    t: *mut rocksdb_transactiondb_t,
    cnt: *mut usize,
) -> *mut *mut rocksdb_transaction_t {
    guard_quiet(std::ptr::null_mut(), || {
        // SAFETY: NULL or writable.
        unsafe { put_out(cnt, 0) };
        let Ok(tdb) = tdb_of(t) else {
            return std::ptr::null_mut();
        };
        // SAFETY: as rocksdb_transaction_begin.
        let tdb: &'static TransactionDB = unsafe { &*(tdb as *const TransactionDB) };
        let Ok(txns) = tdb.get_all_prepared_transactions() else {
            return std::ptr::null_mut();
        };
        if txns.is_empty() {
            return std::ptr::null_mut();
        }
        let arr = malloc_array::<*mut rocksdb_transaction_t>(txns.len());
        let n = txns.len();
        for (i, txn) in txns.into_iter().enumerate() {
            // SAFETY: `arr` holds `n` pointers.
            unsafe { *arr.add(i) = into_raw(rocksdb_transaction_t { txn }) };
        }
        unsafe { put_out(cnt, n) };
        arr
    })
}

// SAFETY (below): key/value pointers address their lengths for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transactiondb_put(
    t: *mut rocksdb_transactiondb_t,
    options: *const rocksdb_writeoptions_t,
    key: *const c_char,
    klen: usize,
    val: *const c_char,
    vlen: usize,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        st(
            tdb_of(t)?.put(wo_of(options)?, unsafe { bytes(key, klen) }, unsafe {
                bytes(val, vlen)
            }),
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transactiondb_put_cf(
    t: *mut rocksdb_transactiondb_t,
    options: *const rocksdb_writeoptions_t,
    cf: *mut rocksdb_column_family_handle_t,
    key: *const c_char,
    klen: usize,
    val: *const c_char,
    vlen: usize,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        st(tdb_of(t)?.put_cf(
            wo_of(options)?,
            cf_of(cf)?,
            unsafe { bytes(key, klen) },
            unsafe { bytes(val, vlen) },
        ))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transactiondb_delete(
    t: *mut rocksdb_transactiondb_t,
    options: *const rocksdb_writeoptions_t,
    key: *const c_char,
    klen: usize,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        st(tdb_of(t)?.delete(wo_of(options)?, unsafe { bytes(key, klen) }))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transactiondb_delete_cf(
    t: *mut rocksdb_transactiondb_t,
    options: *const rocksdb_writeoptions_t,
    cf: *mut rocksdb_column_family_handle_t,
    key: *const c_char,
    klen: usize,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        st(tdb_of(t)?.delete_cf(wo_of(options)?, cf_of(cf)?, unsafe { bytes(key, klen) }))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transactiondb_merge(
    t: *mut rocksdb_transactiondb_t,
    options: *const rocksdb_writeoptions_t,
    key: *const c_char,
    klen: usize,
    val: *const c_char,
    vlen: usize,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        st(
            tdb_of(t)?.merge(wo_of(options)?, unsafe { bytes(key, klen) }, unsafe {
                bytes(val, vlen)
            }),
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transactiondb_write(
    t: *mut rocksdb_transactiondb_t,
    options: *const rocksdb_writeoptions_t,
    batch: *mut rocksdb_writebatch_t,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        st(tdb_of(t)?.write(wo_of(options)?, batch_copy(batch)?))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transactiondb_get(
    t: *mut rocksdb_transactiondb_t,
    options: *const rocksdb_readoptions_t,
    key: *const c_char,
    klen: usize,
    vlen: *mut usize,
    errptr: *mut *mut c_char,
) -> *mut c_char {
    guard(errptr, std::ptr::null_mut(), || {
        let v = st(tdb_of(t)?.get(&ro_of(options)?, unsafe { bytes(key, klen) }))?;
        Ok(out_value(v, vlen))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transactiondb_get_cf(
    t: *mut rocksdb_transactiondb_t,
    options: *const rocksdb_readoptions_t,
    cf: *mut rocksdb_column_family_handle_t,
    key: *const c_char,
    klen: usize,
    vlen: *mut usize,
    errptr: *mut *mut c_char,
) -> *mut c_char {
    guard(errptr, std::ptr::null_mut(), || {
        let v = st(tdb_of(t)?
            .db()
            .get_cf(&ro_of(options)?, cf_of(cf)?, unsafe { bytes(key, klen) }))?;
        Ok(out_value(v, vlen))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transactiondb_create_iterator(
    t: *mut rocksdb_transactiondb_t,
    options: *const rocksdb_readoptions_t,
) -> *mut rocksdb_iterator_t {
    guard_quiet(std::ptr::null_mut(), || {
        wrap_db_iter(tdb_of(t).and_then(|t| Ok(t.db().iter(&ro_of(options)?))))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transactiondb_create_snapshot(
    t: *mut rocksdb_transactiondb_t,
) -> *const rocksdb_snapshot_t {
    guard_quiet(std::ptr::null(), || {
        tdb_of(t).map_or(std::ptr::null(), |t| new_snapshot(t.db().snapshot()))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transactiondb_release_snapshot(
    _t: *mut rocksdb_transactiondb_t,
    snapshot: *const rocksdb_snapshot_t,
) {
    // SAFETY: from rocksdb_transactiondb_create_snapshot, released once.
    unsafe { crate::db::rocksdb_release_snapshot(std::ptr::null_mut(), snapshot) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transactiondb_flush(
    t: *mut rocksdb_transactiondb_t,
    _options: *const rocksdb_flushoptions_t,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || st(tdb_of(t)?.db().flush()))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transactiondb_checkpoint_object_create(
    t: *mut rocksdb_transactiondb_t,
    errptr: *mut *mut c_char,
) -> *mut rocksdb_checkpoint_t {
    guard(errptr, std::ptr::null_mut(), || {
        let db = tdb_of(t)?.db();
        st(strata::utilities::checkpoint::Checkpoint::new(db))?;
        Ok(into_raw(rocksdb_checkpoint_t { db }))
    })
}

// ---- OptimisticTransactionDB ----

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_optimistictransactiondb_open(
    options: *const rocksdb_options_t,
    name: *const c_char,
    errptr: *mut *mut c_char,
) -> *mut rocksdb_optimistictransactiondb_t {
    guard(errptr, std::ptr::null_mut(), || {
        let o = options_of(options)?;
        // SAFETY: a C string.
        let name = unsafe { cstr(name, "db name") }?;
        let odb = st(OptimisticTransactionDB::open(o, name))?;
        Ok(into_raw(rocksdb_optimistictransactiondb_t { odb }))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_optimistictransactiondb_close(
    t: *mut rocksdb_optimistictransactiondb_t,
) {
    // SAFETY: NULL or a live database with no live transactions.
    guard_quiet((), || unsafe { drop_raw(t) })
}

/// A handle on the database under the optimistic one; free it with
/// `rocksdb_optimistictransactiondb_close_base_db` (the database stays
/// open).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_optimistictransactiondb_get_base_db(
    t: *mut rocksdb_optimistictransactiondb_t,
) -> *mut rocksdb_t {
    guard_quiet(std::ptr::null_mut(), || {
        // SAFETY: NULL or a live database, which outlives the base handle
        // (C API contract).
        match unsafe { t.as_ref() } {
            Some(t) => into_raw(unsafe { rocksdb_t::borrowed(t.odb.db()) }),
            None => std::ptr::null_mut(),
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_optimistictransactiondb_close_base_db(base_db: *mut rocksdb_t) {
    // SAFETY: a base handle; dropping it leaves the database open.
    guard_quiet((), || unsafe { drop_raw(base_db) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_optimistictransaction_begin(
    t: *mut rocksdb_optimistictransactiondb_t,
    write_options: *const rocksdb_writeoptions_t,
    otxn_options: *const rocksdb_optimistictransaction_options_t,
    old_txn: *mut rocksdb_transaction_t,
) -> *mut rocksdb_transaction_t {
    guard_quiet(std::ptr::null_mut(), || {
        // SAFETY: NULL or live objects.
        let (Some(t), Ok(wo)) = (unsafe { t.as_ref() }, wo_of(write_options)) else {
            return std::ptr::null_mut();
        };
        let o = unsafe { otxn_options.as_ref() }
            .map(|o| o.opts.clone())
            .unwrap_or_default();
        // SAFETY: as rocksdb_transaction_begin.
        let odb: &'static OptimisticTransactionDB =
            unsafe { &*(&t.odb as *const OptimisticTransactionDB) };
        hand_out_txn(odb.begin_transaction(*wo, o), old_txn)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_optimistictransactiondb_write(
    t: *mut rocksdb_optimistictransactiondb_t,
    options: *const rocksdb_writeoptions_t,
    batch: *mut rocksdb_writebatch_t,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        // SAFETY: NULL or a live database.
        let t = unsafe { handle(t, "optimistic transaction db") }?;
        st(t.odb.db().write(wo_of(options)?, batch_copy(batch)?))
    })
}

// ---- transactions ----

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_destroy(t: *mut rocksdb_transaction_t) {
    // SAFETY: NULL or a live transaction (an open one is rolled back).
    guard_quiet((), || unsafe { drop_raw(t) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_set_name(
    t: *mut rocksdb_transaction_t,
    name: *const c_char,
    name_len: usize,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        // SAFETY: `name_len` bytes at `name`.
        let name = String::from_utf8_lossy(unsafe { bytes(name, name_len) }).into_owned();
        st(txn_of(t)?.set_name(&name))
    })
}

/// The name (malloc'd, not NUL-terminated) or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_get_name(
    t: *mut rocksdb_transaction_t,
    name_len: *mut usize,
) -> *mut c_char {
    guard_quiet(std::ptr::null_mut(), || {
        let name = txn_of(t).ok().and_then(|t| t.name().map(str::to_string));
        out_value(name.map(String::into_bytes), name_len)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_prepare(
    t: *mut rocksdb_transaction_t,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || st(txn_of(t)?.prepare()))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_commit(
    t: *mut rocksdb_transaction_t,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || st(txn_of(t)?.commit()))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_rollback(
    t: *mut rocksdb_transaction_t,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || st(txn_of(t)?.rollback()))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_set_savepoint(t: *mut rocksdb_transaction_t) {
    guard_quiet((), || {
        if let Ok(t) = txn_of(t) {
            t.set_save_point()
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_rollback_to_savepoint(
    t: *mut rocksdb_transaction_t,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || st(txn_of(t)?.rollback_to_save_point()))
}

/// The transaction's snapshot (malloc'd; free it with `rocksdb_free`, as
/// in RocksDB), or NULL without one.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_get_snapshot(
    t: *mut rocksdb_transaction_t,
) -> *const rocksdb_snapshot_t {
    guard_quiet(std::ptr::null(), || {
        match txn_of(t).ok().and_then(|t| t.snapshot()) {
            Some(seq) => rocksdb_snapshot_t::malloc_unowned(seq),
            None => std::ptr::null(),
        }
    })
}

/// A transaction write: `(txn, arguments..., errptr)`, the body given the
/// transaction (as `write_fn!` does for the database's writes).
macro_rules! txn_fn {
    ($name:ident, ($($arg:ident: $ty:ty),*), |$t:ident| $body:expr) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            t: *mut rocksdb_transaction_t,
            $($arg: $ty,)*
            errptr: *mut *mut c_char,
        ) {
            guard(errptr, (), || {
                let $t = txn_of(t)?;
                st($body)
            })
        }
    };
}

// SAFETY (every function below): key/value pointers address `len` bytes
// for the call (C API contract); `bytes` treats NULL as empty.
txn_fn!(rocksdb_transaction_put, (key: *const c_char, klen: usize, val: *const c_char, vlen: usize),
    |t| t.put(unsafe { bytes(key, klen) }, unsafe { bytes(val, vlen) }));
txn_fn!(rocksdb_transaction_put_cf, (cf: *mut rocksdb_column_family_handle_t, key: *const c_char, klen: usize, val: *const c_char, vlen: usize),
    |t| t.put_cf(cf_of(cf)?, unsafe { bytes(key, klen) }, unsafe { bytes(val, vlen) }));
txn_fn!(rocksdb_transaction_merge, (key: *const c_char, klen: usize, val: *const c_char, vlen: usize),
    |t| t.merge(unsafe { bytes(key, klen) }, unsafe { bytes(val, vlen) }));
txn_fn!(rocksdb_transaction_merge_cf, (cf: *mut rocksdb_column_family_handle_t, key: *const c_char, klen: usize, val: *const c_char, vlen: usize),
    |t| t.merge_cf(cf_of(cf)?, unsafe { bytes(key, klen) }, unsafe { bytes(val, vlen) }));
txn_fn!(rocksdb_transaction_delete, (key: *const c_char, klen: usize),
    |t| t.delete(unsafe { bytes(key, klen) }));
txn_fn!(rocksdb_transaction_delete_cf, (cf: *mut rocksdb_column_family_handle_t, key: *const c_char, klen: usize),
    |t| t.delete_cf(cf_of(cf)?, unsafe { bytes(key, klen) }));

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_get(
    t: *mut rocksdb_transaction_t,
    options: *const rocksdb_readoptions_t,
    key: *const c_char,
    klen: usize,
    vlen: *mut usize,
    errptr: *mut *mut c_char,
) -> *mut c_char {
    guard(errptr, std::ptr::null_mut(), || {
        let v = st(txn_of(t)?.get(&ro_of(options)?, unsafe { bytes(key, klen) }))?;
        Ok(out_value(v, vlen))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_get_cf(
    t: *mut rocksdb_transaction_t,
    options: *const rocksdb_readoptions_t,
    cf: *mut rocksdb_column_family_handle_t,
    key: *const c_char,
    klen: usize,
    vlen: *mut usize,
    errptr: *mut *mut c_char,
) -> *mut c_char {
    guard(errptr, std::ptr::null_mut(), || {
        let v = st(txn_of(t)?.get_cf(&ro_of(options)?, cf_of(cf)?, unsafe { bytes(key, klen) }))?;
        Ok(out_value(v, vlen))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_get_pinned(
    t: *mut rocksdb_transaction_t,
    options: *const rocksdb_readoptions_t,
    key: *const c_char,
    klen: usize,
    errptr: *mut *mut c_char,
) -> *mut rocksdb_pinnableslice_t {
    guard(errptr, std::ptr::null_mut(), || {
        let v = st(txn_of(t)?.get(&ro_of(options)?, unsafe { bytes(key, klen) }))?;
        Ok(v.map_or(std::ptr::null_mut(), |value| {
            into_raw(rocksdb_pinnableslice_t { value })
        }))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_get_for_update(
    t: *mut rocksdb_transaction_t,
    options: *const rocksdb_readoptions_t,
    key: *const c_char,
    klen: usize,
    vlen: *mut usize,
    exclusive: c_uchar,
    errptr: *mut *mut c_char,
) -> *mut c_char {
    guard(errptr, std::ptr::null_mut(), || {
        let v = st(txn_of(t)?.get_for_update(
            &ro_of(options)?,
            unsafe { bytes(key, klen) },
            exclusive != 0,
        ))?;
        Ok(out_value(v, vlen))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_get_for_update_cf(
    t: *mut rocksdb_transaction_t,
    options: *const rocksdb_readoptions_t,
    cf: *mut rocksdb_column_family_handle_t,
    key: *const c_char,
    klen: usize,
    vlen: *mut usize,
    exclusive: c_uchar,
    errptr: *mut *mut c_char,
) -> *mut c_char {
    guard(errptr, std::ptr::null_mut(), || {
        let v = st(txn_of(t)?.get_for_update_cf(
            &ro_of(options)?,
            cf_of(cf)?,
            unsafe { bytes(key, klen) },
            exclusive != 0,
        ))?;
        Ok(out_value(v, vlen))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_multi_get(
    t: *mut rocksdb_transaction_t,
    options: *const rocksdb_readoptions_t,
    num_keys: usize,
    keys_list: *const *const c_char,
    keys_list_sizes: *const usize,
    values_list: *mut *mut c_char,
    values_list_sizes: *mut usize,
    errs: *mut *mut c_char,
) {
    guard_quiet((), || {
        let (Ok(t), Ok(ro)) = (txn_of(t), ro_of(options)) else {
            return;
        };
        // SAFETY: arrays of `num_keys` entries (C API contract).
        let keys = unsafe { key_list(num_keys, keys_list, keys_list_sizes) };
        let r = t.multi_get(&ro, &keys);
        unsafe { out_multi(r, values_list, values_list_sizes, errs) };
    })
}

/// An iterator over the database with this transaction's writes (as they
/// are when it is created) on top.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_create_iterator(
    t: *mut rocksdb_transaction_t,
    options: *const rocksdb_readoptions_t,
) -> *mut rocksdb_iterator_t {
    guard_quiet(std::ptr::null_mut(), || {
        txn_iter(t, options, std::ptr::null_mut())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_create_iterator_cf(
    t: *mut rocksdb_transaction_t,
    options: *const rocksdb_readoptions_t,
    cf: *mut rocksdb_column_family_handle_t,
) -> *mut rocksdb_iterator_t {
    guard_quiet(std::ptr::null_mut(), || txn_iter(t, options, cf))
}

fn txn_iter(
    t: *mut rocksdb_transaction_t,
    options: *const rocksdb_readoptions_t,
    cf: *mut rocksdb_column_family_handle_t,
) -> *mut rocksdb_iterator_t {
    let r = (|| {
        let t = txn_of(t)?;
        let ro = ro_of(options)?;
        let cf = if cf.is_null() { None } else { Some(cf_of(cf)?) };
        st(t.iter_detached_cf(&ro, cf))
    })();
    match r {
        Ok(it) => into_raw(rocksdb_iterator_t::new(Box::new(it))),
        Err(msg) => wrap_failed(msg),
    }
}

// ---- more TransactionDB and transaction reads ----

fn pinned(v: Option<Vec<u8>>) -> *mut rocksdb_pinnableslice_t {
    v.map_or(std::ptr::null_mut(), |value| {
        into_raw(rocksdb_pinnableslice_t { value })
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transactiondb_get_pinned(
    t: *mut rocksdb_transactiondb_t,
    options: *const rocksdb_readoptions_t,
    key: *const c_char,
    klen: usize,
    errptr: *mut *mut c_char,
) -> *mut rocksdb_pinnableslice_t {
    guard(errptr, std::ptr::null_mut(), || {
        // SAFETY: `klen` bytes at `key`.
        Ok(pinned(st(
            tdb_of(t)?.get(&ro_of(options)?, unsafe { bytes(key, klen) })
        )?))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transactiondb_get_pinned_cf(
    t: *mut rocksdb_transactiondb_t,
    options: *const rocksdb_readoptions_t,
    cf: *mut rocksdb_column_family_handle_t,
    key: *const c_char,
    keylen: usize,
    errptr: *mut *mut c_char,
) -> *mut rocksdb_pinnableslice_t {
    guard(errptr, std::ptr::null_mut(), || {
        // SAFETY: `keylen` bytes at `key`.
        Ok(pinned(st(tdb_of(t)?.db().get_cf(
            &ro_of(options)?,
            cf_of(cf)?,
            unsafe { bytes(key, keylen) },
        ))?))
    })
}

/// All keys read at one sequence number.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transactiondb_multi_get(
    t: *mut rocksdb_transactiondb_t,
    options: *const rocksdb_readoptions_t,
    num_keys: usize,
    keys_list: *const *const c_char,
    keys_list_sizes: *const usize,
    values_list: *mut *mut c_char,
    values_list_sizes: *mut usize,
    errs: *mut *mut c_char,
) {
    guard_quiet((), || {
        let (Ok(t), Ok(ro)) = (tdb_of(t), ro_of(options)) else {
            return;
        };
        // SAFETY: arrays of `num_keys` entries (C API contract).
        let keys = unsafe { key_list(num_keys, keys_list, keys_list_sizes) };
        let r = t.db().multi_get(&ro, &keys);
        unsafe { out_multi(r, values_list, values_list_sizes, errs) };
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transactiondb_multi_get_cf(
    t: *mut rocksdb_transactiondb_t,
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
        let (Ok(t), Ok(ro)) = (tdb_of(t), ro_of(options)) else {
            return;
        };
        // SAFETY: arrays of `num_keys` entries (C API contract).
        let Some(cfs) = (unsafe { cf_list(column_families, num_keys) }) else {
            return;
        };
        let keys = unsafe { key_list(num_keys, keys_list, keys_list_sizes) };
        let r = multi_get_across(t.db(), ro, &cfs, &keys);
        unsafe { out_multi(r, values_list, values_list_sizes, errs) };
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transactiondb_flush_cf(
    t: *mut rocksdb_transactiondb_t,
    _options: *const rocksdb_flushoptions_t,
    cf: *mut rocksdb_column_family_handle_t,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || st(tdb_of(t)?.db().flush_cf(cf_of(cf)?)))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transactiondb_flush_wal(
    t: *mut rocksdb_transactiondb_t,
    sync: c_uchar,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || st(tdb_of(t)?.db().flush_wal(sync != 0)))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_get_pinned_cf(
    t: *mut rocksdb_transaction_t,
    options: *const rocksdb_readoptions_t,
    cf: *mut rocksdb_column_family_handle_t,
    key: *const c_char,
    klen: usize,
    errptr: *mut *mut c_char,
) -> *mut rocksdb_pinnableslice_t {
    guard(errptr, std::ptr::null_mut(), || {
        // SAFETY: `klen` bytes at `key`.
        Ok(pinned(st(txn_of(t)?.get_cf(
            &ro_of(options)?,
            cf_of(cf)?,
            unsafe { bytes(key, klen) },
        ))?))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_get_pinned_for_update(
    t: *mut rocksdb_transaction_t,
    options: *const rocksdb_readoptions_t,
    key: *const c_char,
    klen: usize,
    exclusive: c_uchar,
    errptr: *mut *mut c_char,
) -> *mut rocksdb_pinnableslice_t {
    guard(errptr, std::ptr::null_mut(), || {
        // SAFETY: `klen` bytes at `key`.
        Ok(pinned(st(txn_of(t)?.get_for_update(
            &ro_of(options)?,
            unsafe { bytes(key, klen) },
            exclusive != 0,
        ))?))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_get_pinned_for_update_cf(
    t: *mut rocksdb_transaction_t,
    options: *const rocksdb_readoptions_t,
    cf: *mut rocksdb_column_family_handle_t,
    key: *const c_char,
    klen: usize,
    exclusive: c_uchar,
    errptr: *mut *mut c_char,
) -> *mut rocksdb_pinnableslice_t {
    guard(errptr, std::ptr::null_mut(), || {
        // SAFETY: `klen` bytes at `key`.
        Ok(pinned(st(txn_of(t)?.get_for_update_cf(
            &ro_of(options)?,
            cf_of(cf)?,
            unsafe { bytes(key, klen) },
            exclusive != 0,
        ))?))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_multi_get_cf(
    t: *mut rocksdb_transaction_t,
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
        let (Ok(t), Ok(ro)) = (txn_of(t), ro_of(options)) else {
            return;
        };
        // SAFETY: arrays of `num_keys` entries (C API contract).
        let (Some(cfs), keys) = (unsafe { cf_list(column_families, num_keys) }, unsafe {
            key_list(num_keys, keys_list, keys_list_sizes)
        }) else {
            return;
        };
        let r = cfs
            .iter()
            .zip(keys.iter())
            .map(|(cf, k)| t.get_cf(&ro, cf, k))
            .collect();
        unsafe { out_multi(r, values_list, values_list_sizes, errs) };
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_optimistictransactiondb_open_column_families(
    options: *const rocksdb_options_t,
    name: *const c_char,
    num_column_families: c_int,
    column_family_names: *const *const c_char,
    column_family_options: *const *const rocksdb_options_t,
    column_family_handles: *mut *mut rocksdb_column_family_handle_t,
    errptr: *mut *mut c_char,
) -> *mut rocksdb_optimistictransactiondb_t {
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
        let odb = st(OptimisticTransactionDB::open_cf(
            a.opts,
            a.name,
            a.descs,
            strata::utilities::transactions::OccValidationPolicy::default(),
        ))?;
        unsafe { hand_out_cfs(odb.db(), &a.names, column_family_handles) }?;
        Ok(into_raw(rocksdb_optimistictransactiondb_t { odb }))
    })
}
