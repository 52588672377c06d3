//! Column family metadata (RocksDB's `GetColumnFamilyMetaData`): sizes and
//! file counts by level and each table's name, size and key range. The
//! level and file objects handed out are copies the caller destroys.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int};

use strata::db::LiveFileMetaData;

use crate::db::{cf_of, db_of, rocksdb_column_family_handle_t, rocksdb_t};
use crate::ffi::{drop_raw, guard_quiet, into_raw, malloc_bytes, malloc_cstr, put_out};

pub struct rocksdb_column_family_metadata_t {
    name: String,
    levels: Vec<rocksdb_level_metadata_t>,
}

#[derive(Clone)]
pub struct rocksdb_level_metadata_t {
    level: usize,
    files: Vec<rocksdb_sst_file_metadata_t>,
}

#[derive(Clone)]
pub struct rocksdb_sst_file_metadata_t {
    file: LiveFileMetaData,
}

fn metadata(
    db: &strata::DB,
    cf: &strata::ColumnFamilyHandle,
) -> Option<rocksdb_column_family_metadata_t> {
    let n = db.number_levels(cf).ok()?;
    let mut levels: Vec<rocksdb_level_metadata_t> = (0..n)
        .map(|level| rocksdb_level_metadata_t {
            level,
            files: Vec::new(),
        })
        .collect();
    for f in db.live_files_metadata() {
        if f.column_family_name == cf.name
            && let Some(l) = levels.get_mut(f.level)
        {
            l.files.push(rocksdb_sst_file_metadata_t { file: f });
        }
    }
    Some(rocksdb_column_family_metadata_t {
        name: cf.name.clone(),
        levels,
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_get_column_family_metadata(
    db: *mut rocksdb_t,
) -> *mut rocksdb_column_family_metadata_t {
    guard_quiet(std::ptr::null_mut(), || {
        let Ok(d) = db_of(db) else {
            return std::ptr::null_mut();
        };
        metadata(&d, &d.default_cf()).map_or(std::ptr::null_mut(), into_raw)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_get_column_family_metadata_cf(
    db: *mut rocksdb_t,
    cf: *mut rocksdb_column_family_handle_t,
) -> *mut rocksdb_column_family_metadata_t {
    guard_quiet(std::ptr::null_mut(), || {
        let (Ok(d), Ok(cf)) = (db_of(db), cf_of(cf)) else {
            return std::ptr::null_mut();
        };
        metadata(&d, cf).map_or(std::ptr::null_mut(), into_raw)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_column_family_metadata_destroy(
    m: *mut rocksdb_column_family_metadata_t,
) {
    // SAFETY: NULL or from rocksdb_get_column_family_metadata*.
    guard_quiet((), || unsafe { drop_raw(m) })
}

fn cf_meta<'a>(
    m: *mut rocksdb_column_family_metadata_t,
) -> Option<&'a rocksdb_column_family_metadata_t> {
    // SAFETY: NULL or live metadata (C API contract).
    unsafe { m.as_ref() }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_column_family_metadata_get_size(
    m: *mut rocksdb_column_family_metadata_t,
) -> u64 {
    guard_quiet(0, || {
        cf_meta(m).map_or(0, |m| {
            m.levels
                .iter()
                .flat_map(|l| &l.files)
                .map(|f| f.file.size)
                .sum()
        })
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_column_family_metadata_get_file_count(
    m: *mut rocksdb_column_family_metadata_t,
) -> usize {
    guard_quiet(0, || {
        cf_meta(m).map_or(0, |m| m.levels.iter().map(|l| l.files.len()).sum())
    })
}

/// The column family's name, malloc'd.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_column_family_metadata_get_name(
    m: *mut rocksdb_column_family_metadata_t,
) -> *mut c_char {
    guard_quiet(std::ptr::null_mut(), || {
        cf_meta(m).map_or(std::ptr::null_mut(), |m| malloc_cstr(&m.name))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_column_family_metadata_get_level_count(
    m: *mut rocksdb_column_family_metadata_t,
) -> usize {
    guard_quiet(0, || cf_meta(m).map_or(0, |m| m.levels.len()))
}

/// Level `i`'s metadata (a copy to destroy); NULL past the last level.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_column_family_metadata_get_level_metadata(
    m: *mut rocksdb_column_family_metadata_t,
    i: usize,
) -> *mut rocksdb_level_metadata_t {
    guard_quiet(std::ptr::null_mut(), || {
        cf_meta(m)
            .and_then(|m| m.levels.get(i))
            .map_or(std::ptr::null_mut(), |l| into_raw(l.clone()))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_level_metadata_destroy(l: *mut rocksdb_level_metadata_t) {
    // SAFETY: NULL or from rocksdb_column_family_metadata_get_level_metadata.
    guard_quiet((), || unsafe { drop_raw(l) })
}

fn level<'a>(l: *mut rocksdb_level_metadata_t) -> Option<&'a rocksdb_level_metadata_t> {
    // SAFETY: NULL or live level metadata.
    unsafe { l.as_ref() }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_level_metadata_get_level(
    l: *mut rocksdb_level_metadata_t,
) -> c_int {
    guard_quiet(-1, || level(l).map_or(-1, |l| l.level as c_int))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_level_metadata_get_size(l: *mut rocksdb_level_metadata_t) -> u64 {
    guard_quiet(0, || {
        level(l).map_or(0, |l| l.files.iter().map(|f| f.file.size).sum())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_level_metadata_get_file_count(
    l: *mut rocksdb_level_metadata_t,
) -> usize {
    guard_quiet(0, || level(l).map_or(0, |l| l.files.len()))
}

/// Table `i` of the level (a copy to destroy); NULL past the last.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_level_metadata_get_sst_file_metadata(
    l: *mut rocksdb_level_metadata_t,
    i: usize,
) -> *mut rocksdb_sst_file_metadata_t {
    guard_quiet(std::ptr::null_mut(), || {
        level(l)
            .and_then(|l| l.files.get(i))
            .map_or(std::ptr::null_mut(), |f| into_raw(f.clone()))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_sst_file_metadata_destroy(f: *mut rocksdb_sst_file_metadata_t) {
    // SAFETY: NULL or from rocksdb_level_metadata_get_sst_file_metadata.
    guard_quiet((), || unsafe { drop_raw(f) })
}

fn sst<'a>(f: *mut rocksdb_sst_file_metadata_t) -> Option<&'a LiveFileMetaData> {
    // SAFETY: NULL or live file metadata.
    unsafe { f.as_ref() }.map(|f| &f.file)
}

/// The file's name relative to the database directory (`000012.sst`),
/// malloc'd.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_sst_file_metadata_get_relative_filename(
    f: *mut rocksdb_sst_file_metadata_t,
) -> *mut c_char {
    guard_quiet(std::ptr::null_mut(), || {
        sst(f).map_or(std::ptr::null_mut(), |f| {
            malloc_cstr(f.name.trim_start_matches('/'))
        })
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_sst_file_metadata_get_size(
    f: *mut rocksdb_sst_file_metadata_t,
) -> u64 {
    guard_quiet(0, || sst(f).map_or(0, |f| f.size))
}

/// The smallest user key, malloc'd, with its length.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_sst_file_metadata_get_smallestkey(
    f: *mut rocksdb_sst_file_metadata_t,
    len: *mut usize,
) -> *mut c_char {
    guard_quiet(std::ptr::null_mut(), || match sst(f) {
        Some(f) => {
            // SAFETY: NULL or writable.
            unsafe { put_out(len, f.smallest_key.len()) };
            malloc_bytes(&f.smallest_key)
        }
        None => std::ptr::null_mut(),
    })
}

/// The largest user key, malloc'd, with its length.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_sst_file_metadata_get_largestkey(
    f: *mut rocksdb_sst_file_metadata_t,
    len: *mut usize,
) -> *mut c_char {
    guard_quiet(std::ptr::null_mut(), || match sst(f) {
        Some(f) => {
            // SAFETY: NULL or writable.
            unsafe { put_out(len, f.largest_key.len()) };
            malloc_bytes(&f.largest_key)
        }
        None => std::ptr::null_mut(),
    })
}
