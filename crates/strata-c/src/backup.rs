//! Checkpoints and the backup engine (RocksDB 7.8.3's backup directory
//! layout, so `ldb restore` restores what this makes and back), and the
//! background-thread environment.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_uchar};
use std::path::Path;
use std::sync::Arc;

use strata::Env;
use strata::utilities::backup::{
    BackupEngine, BackupEngineOptions, BackupInfo, RestoreOptions, ShareFilesNaming,
};
use strata::utilities::checkpoint::Checkpoint;

use crate::db::{DbAccess, db_of, rocksdb_t};
use crate::ffi::{cstr, drop_raw, guard, guard_quiet, handle, handle_mut, into_raw, st};
use crate::options::rocksdb_options_t;

// ---- checkpoints ----

/// A checkpoint maker bound to an open database (which must outlive it).
pub struct rocksdb_checkpoint_t {
    pub(crate) db: *const strata::DB,
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_checkpoint_object_create(
    db: *mut rocksdb_t,
    errptr: *mut *mut c_char,
) -> *mut rocksdb_checkpoint_t {
    guard(errptr, std::ptr::null_mut(), || {
        let db = match db_of(db)? {
            DbAccess::Borrowed(db) => db,
            // Its view may be freed by a catch-up while the object lives.
            DbAccess::View(_) => {
                return Err("Not implemented: checkpoint of a secondary instance".into());
            }
        };
        st(Checkpoint::new(db))?;
        Ok(into_raw(rocksdb_checkpoint_t { db }))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_checkpoint_create(
    cp: *mut rocksdb_checkpoint_t,
    checkpoint_dir: *const c_char,
    log_size_for_flush: u64,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        // SAFETY: NULL or a live checkpoint object whose database is open
        // (C API contract); `checkpoint_dir` a C string.
        let cp = unsafe { handle(cp, "checkpoint") }?;
        let db = unsafe { &*cp.db };
        let dir = unsafe { cstr(checkpoint_dir, "checkpoint_dir") }?;
        st(st(Checkpoint::new(db))?.create_checkpoint(Path::new(&dir), log_size_for_flush))?;
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_checkpoint_object_destroy(cp: *mut rocksdb_checkpoint_t) {
    // SAFETY: NULL or a live checkpoint object.
    guard_quiet((), || unsafe { drop_raw(cp) })
}

// ---- environment ----

/// Background threads (flushes: high priority; compactions: low).
pub struct rocksdb_env_t {
    pub env: Arc<Env>,
    /// See `rocksdb_env_set_bottom_priority_background_threads`.
    pub bottom_priority_threads: std::sync::atomic::AtomicI32,
}

#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_create_default_env() -> *mut rocksdb_env_t {
    guard_quiet(std::ptr::null_mut(), || match Env::new(1, 1, 8 << 20) {
        Ok(env) => into_raw(rocksdb_env_t {
            env,
            bottom_priority_threads: std::sync::atomic::AtomicI32::new(0),
        }),
        Err(_) => std::ptr::null_mut(),
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_env_set_background_threads(env: *mut rocksdb_env_t, n: c_int) {
    guard_quiet((), || {
        // SAFETY: NULL or a live env.
        if let Some(e) = unsafe { env.as_ref() } {
            let _ = e.env.low_priority.set_background_threads(n.max(1) as usize);
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_env_set_high_priority_background_threads(
    env: *mut rocksdb_env_t,
    n: c_int,
) {
    guard_quiet((), || {
        // SAFETY: NULL or a live env.
        if let Some(e) = unsafe { env.as_ref() } {
            let _ = e
                .env
                .high_priority
                .set_background_threads(n.max(1) as usize);
        }
    })
}

/// Threads for compactions (RocksDB's low-priority pool).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_env_set_low_priority_background_threads(
    env: *mut rocksdb_env_t,
    n: c_int,
) {
    // SAFETY: as rocksdb_env_set_background_threads (the same pool).
    unsafe { rocksdb_env_set_background_threads(env, n) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_env_get_low_priority_background_threads(
    env: *mut rocksdb_env_t,
) -> c_int {
    // SAFETY: as rocksdb_env_get_background_threads (the same pool).
    unsafe { rocksdb_env_get_background_threads(env) }
}

/// Creates the directory (and its parents) if it does not exist.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_create_dir_if_missing(
    _env: *mut rocksdb_env_t,
    path: *const c_char,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        // SAFETY: a C string.
        let path = unsafe { cstr(path, "path") }?;
        std::fs::create_dir_all(&path)
            .map_err(|e| format!("IO error: While mkdir if missing: {path}: {e}"))
    })
}

/// Threads for compactions (RocksDB's low-priority pool).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_env_get_background_threads(env: *mut rocksdb_env_t) -> c_int {
    // SAFETY: NULL or a live env.
    guard_quiet(0, || {
        unsafe { env.as_ref() }.map_or(0, |e| e.env.low_priority.num_threads() as c_int)
    })
}

/// Threads for flushes (RocksDB's high-priority pool).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_env_get_high_priority_background_threads(
    env: *mut rocksdb_env_t,
) -> c_int {
    // SAFETY: NULL or a live env.
    guard_quiet(0, || {
        unsafe { env.as_ref() }.map_or(0, |e| e.env.high_priority.num_threads() as c_int)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_env_destroy(env: *mut rocksdb_env_t) {
    // SAFETY: NULL or a live env (databases using it keep their share).
    guard_quiet((), || unsafe { drop_raw(env) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_set_env(
    opt: *mut rocksdb_options_t,
    env: *mut rocksdb_env_t,
) {
    guard_quiet((), || {
        // SAFETY: NULL or live objects.
        if let Some(o) = unsafe { opt.as_mut() } {
            o.opts.env = unsafe { env.as_ref() }.map(|e| e.env.clone());
        }
    })
}

// ---- backup engine ----

pub struct rocksdb_backup_engine_t {
    engine: BackupEngine,
}

pub struct rocksdb_backup_engine_options_t {
    opts: BackupEngineOptions,
}

pub struct rocksdb_restore_options_t {
    opts: RestoreOptions,
}

pub struct rocksdb_backup_engine_info_t {
    infos: Vec<BackupInfo>,
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_open(
    _options: *const rocksdb_options_t,
    path: *const c_char,
    errptr: *mut *mut c_char,
) -> *mut rocksdb_backup_engine_t {
    guard(errptr, std::ptr::null_mut(), || {
        // SAFETY: a C string.
        let path = unsafe { cstr(path, "backup path") }?;
        let engine = st(BackupEngine::open(BackupEngineOptions::new(path)))?;
        Ok(into_raw(rocksdb_backup_engine_t { engine }))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_open_opts(
    options: *const rocksdb_backup_engine_options_t,
    _env: *mut rocksdb_env_t,
    errptr: *mut *mut c_char,
) -> *mut rocksdb_backup_engine_t {
    guard(errptr, std::ptr::null_mut(), || {
        // SAFETY: NULL or live options.
        let o = unsafe { handle(options, "backup engine options") }?;
        let engine = st(BackupEngine::open(o.opts.clone()))?;
        Ok(into_raw(rocksdb_backup_engine_t { engine }))
    })
}

fn engine<'a>(be: *mut rocksdb_backup_engine_t) -> Result<&'a mut BackupEngine, String> {
    // SAFETY: NULL or a live engine used by one thread (C API contract).
    unsafe { handle_mut(be, "backup engine") }.map(|b| &mut b.engine)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_create_new_backup(
    be: *mut rocksdb_backup_engine_t,
    db: *mut rocksdb_t,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        st(engine(be)?.create_new_backup(&*db_of(db)?, false)).map(|_| ())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_create_new_backup_flush(
    be: *mut rocksdb_backup_engine_t,
    db: *mut rocksdb_t,
    flush_before_backup: c_uchar,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        st(engine(be)?.create_new_backup(&*db_of(db)?, flush_before_backup != 0)).map(|_| ())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_purge_old_backups(
    be: *mut rocksdb_backup_engine_t,
    num_backups_to_keep: u32,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        st(engine(be)?.purge_old_backups(num_backups_to_keep as usize))
    })
}

/// Sizes only (RocksDB's C call does not verify checksums).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_verify_backup(
    be: *mut rocksdb_backup_engine_t,
    backup_id: u32,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        st(engine(be)?.verify_backup(backup_id, false))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_restore_db_from_latest_backup(
    be: *mut rocksdb_backup_engine_t,
    db_dir: *const c_char,
    wal_dir: *const c_char,
    restore_options: *const rocksdb_restore_options_t,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        // SAFETY: C strings and NULL or live options.
        let db_dir = unsafe { cstr(db_dir, "db_dir") }?;
        let wal_dir = unsafe { cstr(wal_dir, "wal_dir") }?;
        let o = unsafe { restore_options.as_ref() }
            .map(|o| o.opts)
            .unwrap_or_default();
        st(engine(be)?.restore_db_from_latest_backup(&o, Path::new(&db_dir), Path::new(&wal_dir)))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_restore_db_from_backup(
    be: *mut rocksdb_backup_engine_t,
    db_dir: *const c_char,
    wal_dir: *const c_char,
    restore_options: *const rocksdb_restore_options_t,
    backup_id: u32,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        // SAFETY: C strings and NULL or live options.
        let db_dir = unsafe { cstr(db_dir, "db_dir") }?;
        let wal_dir = unsafe { cstr(wal_dir, "wal_dir") }?;
        let o = unsafe { restore_options.as_ref() }
            .map(|o| o.opts)
            .unwrap_or_default();
        st(engine(be)?.restore_db_from_backup(
            &o,
            backup_id,
            Path::new(&db_dir),
            Path::new(&wal_dir),
        ))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_get_backup_info(
    be: *mut rocksdb_backup_engine_t,
) -> *const rocksdb_backup_engine_info_t {
    guard_quiet(std::ptr::null(), || match engine(be) {
        Ok(e) => into_raw(rocksdb_backup_engine_info_t {
            infos: e.get_backup_info(false),
        }),
        Err(_) => std::ptr::null(),
    })
}

fn info<'a>(i: *const rocksdb_backup_engine_info_t, index: c_int) -> Option<&'a BackupInfo> {
    // SAFETY: NULL or a live info list.
    let i = unsafe { i.as_ref() }?;
    i.infos.get(usize::try_from(index).ok()?)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_info_count(
    i: *const rocksdb_backup_engine_info_t,
) -> c_int {
    // SAFETY: NULL or a live info list.
    guard_quiet(0, || {
        unsafe { i.as_ref() }.map_or(0, |i| i.infos.len() as c_int)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_info_timestamp(
    i: *const rocksdb_backup_engine_info_t,
    index: c_int,
) -> i64 {
    guard_quiet(0, || info(i, index).map_or(0, |b| b.timestamp))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_info_backup_id(
    i: *const rocksdb_backup_engine_info_t,
    index: c_int,
) -> u32 {
    guard_quiet(0, || info(i, index).map_or(0, |b| b.backup_id))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_info_size(
    i: *const rocksdb_backup_engine_info_t,
    index: c_int,
) -> u64 {
    guard_quiet(0, || info(i, index).map_or(0, |b| b.size))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_info_number_files(
    i: *const rocksdb_backup_engine_info_t,
    index: c_int,
) -> u32 {
    guard_quiet(0, || info(i, index).map_or(0, |b| b.number_files))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_info_destroy(
    i: *const rocksdb_backup_engine_info_t,
) {
    // SAFETY: NULL or a live info list.
    guard_quiet((), || unsafe {
        drop_raw(i as *mut rocksdb_backup_engine_info_t)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_close(be: *mut rocksdb_backup_engine_t) {
    // SAFETY: NULL or a live engine, not used afterwards.
    guard_quiet((), || unsafe { drop_raw(be) })
}

#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_restore_options_create() -> *mut rocksdb_restore_options_t {
    into_raw(rocksdb_restore_options_t {
        opts: RestoreOptions::default(),
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_restore_options_set_keep_log_files(
    o: *mut rocksdb_restore_options_t,
    v: c_int,
) {
    guard_quiet((), || {
        // SAFETY: NULL or live options.
        if let Some(o) = unsafe { o.as_mut() } {
            o.opts.keep_log_files = v != 0;
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_restore_options_destroy(o: *mut rocksdb_restore_options_t) {
    // SAFETY: NULL or live options.
    guard_quiet((), || unsafe { drop_raw(o) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_options_create(
    backup_dir: *const c_char,
) -> *mut rocksdb_backup_engine_options_t {
    guard_quiet(std::ptr::null_mut(), || {
        // SAFETY: a C string.
        match unsafe { cstr(backup_dir, "backup_dir") } {
            Ok(d) => into_raw(rocksdb_backup_engine_options_t {
                opts: BackupEngineOptions::new(d),
            }),
            Err(_) => std::ptr::null_mut(),
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_options_set_backup_dir(
    o: *mut rocksdb_backup_engine_options_t,
    backup_dir: *const c_char,
) {
    guard_quiet((), || {
        // SAFETY: NULL or live options; a C string.
        if let (Some(o), Ok(d)) = (unsafe { o.as_mut() }, unsafe {
            cstr(backup_dir, "backup_dir")
        }) {
            o.opts.backup_dir = d.into();
        }
    })
}

macro_rules! be_opt {
    ($name:ident, $vty:ty, |$o:ident, $v:ident| $body:expr) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(o: *mut rocksdb_backup_engine_options_t, $v: $vty) {
            guard_quiet((), || {
                // SAFETY: NULL or live options.
                if let Some($o) = unsafe { o.as_mut() } {
                    $body;
                }
            })
        }
    };
}

be_opt!(
    rocksdb_backup_engine_options_set_share_table_files,
    c_uchar,
    |o, v| o.opts.share_table_files = v != 0
);
be_opt!(rocksdb_backup_engine_options_set_sync, c_uchar, |o, v| o
    .opts
    .sync =
    v != 0);
be_opt!(
    rocksdb_backup_engine_options_set_destroy_old_data,
    c_uchar,
    |o, v| o.opts.destroy_old_data = v != 0
);
be_opt!(
    rocksdb_backup_engine_options_set_backup_log_files,
    c_uchar,
    |o, v| o.opts.backup_log_files = v != 0
);
be_opt!(
    rocksdb_backup_engine_options_set_backup_rate_limit,
    u64,
    |o, v| o.opts.backup_rate_limit = v
);
be_opt!(
    rocksdb_backup_engine_options_set_restore_rate_limit,
    u64,
    |o, v| o.opts.restore_rate_limit = v
);
be_opt!(
    rocksdb_backup_engine_options_set_max_background_operations,
    c_int,
    |o, v| o.opts.max_background_operations = v.max(1) as usize
);
be_opt!(
    rocksdb_backup_engine_options_set_callback_trigger_interval_size,
    u64,
    |o, v| o.opts.callback_trigger_interval_size = v.max(1)
);
be_opt!(
    rocksdb_backup_engine_options_set_max_valid_backups_to_open,
    c_int,
    |o, v| o.opts.max_valid_backups_to_open = if v < 0 { usize::MAX } else { v as usize }
);

macro_rules! be_get {
    ($name:ident, $rty:ty, |$o:ident| $body:expr) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(o: *mut rocksdb_backup_engine_options_t) -> $rty {
            guard_quiet(Default::default(), || {
                // SAFETY: NULL or live options.
                unsafe { o.as_ref() }.map_or(Default::default(), |$o| $body)
            })
        }
    };
}

be_get!(
    rocksdb_backup_engine_options_get_share_table_files,
    c_uchar,
    |o| o.opts.share_table_files as c_uchar
);
be_get!(
    rocksdb_backup_engine_options_get_sync,
    c_uchar,
    |o| o.opts.sync as c_uchar
);
be_get!(
    rocksdb_backup_engine_options_get_destroy_old_data,
    c_uchar,
    |o| o.opts.destroy_old_data as c_uchar
);
be_get!(
    rocksdb_backup_engine_options_get_backup_log_files,
    c_uchar,
    |o| o.opts.backup_log_files as c_uchar
);
be_get!(
    rocksdb_backup_engine_options_get_backup_rate_limit,
    u64,
    |o| o.opts.backup_rate_limit
);
be_get!(
    rocksdb_backup_engine_options_get_restore_rate_limit,
    u64,
    |o| o.opts.restore_rate_limit
);
be_get!(
    rocksdb_backup_engine_options_get_max_background_operations,
    c_int,
    |o| o.opts.max_background_operations as c_int
);
be_get!(
    rocksdb_backup_engine_options_get_callback_trigger_interval_size,
    u64,
    |o| o.opts.callback_trigger_interval_size
);
be_get!(
    rocksdb_backup_engine_options_get_max_valid_backups_to_open,
    c_int,
    |o| o.opts.max_valid_backups_to_open.min(c_int::MAX as usize) as c_int
);

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_options_destroy(
    o: *mut rocksdb_backup_engine_options_t,
) {
    // SAFETY: NULL or live options.
    guard_quiet((), || unsafe { drop_raw(o) })
}

/// RocksDB's `ShareFilesNaming` bits: 1 legacy (crc32c and size), 2 the
/// db session id, with `1 << 31` adding the size.
const NAMING_LEGACY: u32 = 1;
const NAMING_SESSION_ID: u32 = 2;
const NAMING_FLAG_FILE_SIZE: u32 = 1 << 31;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_options_set_share_files_with_checksum_naming(
    options: *mut rocksdb_backup_engine_options_t,
    val: c_int,
) {
    guard_quiet((), || {
        // SAFETY: NULL or live options.
        let Some(o) = (unsafe { options.as_mut() }) else {
            return;
        };
        let bits = val as u32;
        o.opts.share_files_with_checksum_naming = match bits & !NAMING_FLAG_FILE_SIZE {
            NAMING_LEGACY => ShareFilesNaming::LegacyCrc32cAndFileSize,
            NAMING_SESSION_ID => ShareFilesNaming::UseDbSessionId {
                include_file_size: bits & NAMING_FLAG_FILE_SIZE != 0,
            },
            // Not a naming RocksDB has: unchanged.
            _ => return,
        };
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_options_get_share_files_with_checksum_naming(
    options: *mut rocksdb_backup_engine_options_t,
) -> c_int {
    guard_quiet(0, || {
        // SAFETY: NULL or live options.
        unsafe { options.as_ref() }.map_or(0, |o| {
            (match o.opts.share_files_with_checksum_naming {
                ShareFilesNaming::LegacyCrc32cAndFileSize => NAMING_LEGACY,
                ShareFilesNaming::UseDbSessionId { include_file_size } => {
                    NAMING_SESSION_ID
                        | if include_file_size {
                            NAMING_FLAG_FILE_SIZE
                        } else {
                            0
                        }
                }
            }) as c_int
        })
    })
}

/// RocksDB's bottom-priority pool runs bottommost compactions when it has
/// threads. Strata runs every compaction in its low-priority pool; the
/// count is kept for the getter.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_env_set_bottom_priority_background_threads(
    env: *mut rocksdb_env_t,
    n: c_int,
) {
    guard_quiet((), || {
        // SAFETY: NULL or a live env.
        if let Some(e) = unsafe { env.as_ref() } {
            e.bottom_priority_threads
                .store(n, std::sync::atomic::Ordering::Relaxed);
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_env_get_bottom_priority_background_threads(
    env: *mut rocksdb_env_t,
) -> c_int {
    guard_quiet(0, || {
        // SAFETY: NULL or a live env.
        unsafe { env.as_ref() }.map_or(0, |e| {
            e.bottom_priority_threads
                .load(std::sync::atomic::Ordering::Relaxed)
        })
    })
}
