//! Iterators of the C API: over a database or column family, and over a
//! transaction's writes on top of the database. Keys and values returned
//! point into the iterator and stay valid until it moves.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_uchar};

use strata::DbIterator;
use strata::utilities::transactions::BaseDeltaIterator;

pub use crate::db::rocksdb_snapshot_t;
use crate::db::{cf_of, db_of, ro_of, rocksdb_column_family_handle_t, rocksdb_t};
use crate::ffi::{bytes, drop_raw, guard, guard_quiet, into_raw, put_out};
use crate::options::rocksdb_readoptions_t;

/// What the C iterator functions need of an iterator.
pub trait CIterator {
    fn valid(&self) -> bool;
    fn seek_to_first(&mut self);
    fn seek_to_last(&mut self);
    fn seek(&mut self, key: &[u8]);
    fn seek_for_prev(&mut self, key: &[u8]);
    fn next(&mut self);
    fn prev(&mut self);
    fn key(&self) -> &[u8];
    fn value(&self) -> &[u8];
    fn status(&self) -> strata::Result<()>;
    /// The database iterator itself, if this is one (for
    /// `rocksdb_writebatch_wi_create_iterator_with_base`).
    fn into_db_iterator(self: Box<Self>) -> Option<DbIterator> {
        None
    }
}

macro_rules! impl_c_iterator {
    ($t:ty, |$it:ident| $into_db:expr) => {
        impl CIterator for $t {
            fn valid(&self) -> bool {
                <$t>::valid(self)
            }
            fn seek_to_first(&mut self) {
                <$t>::seek_to_first(self)
            }
            fn seek_to_last(&mut self) {
                <$t>::seek_to_last(self)
            }
            fn seek(&mut self, key: &[u8]) {
                <$t>::seek(self, key)
            }
            fn seek_for_prev(&mut self, key: &[u8]) {
                <$t>::seek_for_prev(self, key)
            }
            fn next(&mut self) {
                <$t>::next(self)
            }
            fn prev(&mut self) {
                <$t>::prev(self)
            }
            fn key(&self) -> &[u8] {
                <$t>::key(self)
            }
            fn value(&self) -> &[u8] {
                <$t>::value(self)
            }
            fn status(&self) -> strata::Result<()> {
                <$t>::status(self)
            }
            fn into_db_iterator(self: Box<Self>) -> Option<DbIterator> {
                let $it = self;
                $into_db
            }
        }
    };
}

impl_c_iterator!(DbIterator, |it| Some(*it));
impl_c_iterator!(BaseDeltaIterator<'static>, |_it| None);

pub struct rocksdb_iterator_t {
    pub it: Box<dyn CIterator>,
}

impl rocksdb_iterator_t {
    /// A C iterator over `it`, not valid until its first seek (RocksDB's
    /// iterators start unpositioned; Strata's database iterators start at
    /// the first key).
    pub(crate) fn new(it: Box<dyn CIterator>) -> Self {
        rocksdb_iterator_t {
            it: Box::new(Unpositioned {
                it,
                positioned: false,
            }),
        }
    }
}

/// See [`rocksdb_iterator_t::new`].
struct Unpositioned {
    it: Box<dyn CIterator>,
    positioned: bool,
}

impl CIterator for Unpositioned {
    fn valid(&self) -> bool {
        self.positioned && self.it.valid()
    }
    fn seek_to_first(&mut self) {
        self.positioned = true;
        self.it.seek_to_first()
    }
    fn seek_to_last(&mut self) {
        self.positioned = true;
        self.it.seek_to_last()
    }
    fn seek(&mut self, key: &[u8]) {
        self.positioned = true;
        self.it.seek(key)
    }
    fn seek_for_prev(&mut self, key: &[u8]) {
        self.positioned = true;
        self.it.seek_for_prev(key)
    }
    fn next(&mut self) {
        self.it.next()
    }
    fn prev(&mut self) {
        self.it.prev()
    }
    fn key(&self) -> &[u8] {
        self.it.key()
    }
    fn value(&self) -> &[u8] {
        self.it.value()
    }
    fn status(&self) -> strata::Result<()> {
        self.it.status()
    }
    fn into_db_iterator(self: Box<Self>) -> Option<DbIterator> {
        self.it.into_db_iterator()
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_create_iterator(
    db: *mut rocksdb_t,
    options: *const rocksdb_readoptions_t,
) -> *mut rocksdb_iterator_t {
    // RocksDB's signature has no errptr: a failure to create is an
    // iterator that is not valid and reports the error in get_error.
    guard_quiet(std::ptr::null_mut(), || {
        let r = db_of(db).and_then(|d| ro_of(options).map(|ro| d.iter(&ro)));
        wrap_db_iter(r)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_create_iterator_cf(
    db: *mut rocksdb_t,
    options: *const rocksdb_readoptions_t,
    cf: *mut rocksdb_column_family_handle_t,
) -> *mut rocksdb_iterator_t {
    guard_quiet(std::ptr::null_mut(), || {
        let r = db_of(db).and_then(|d| {
            let ro = ro_of(options)?;
            Ok(d.iter_cf(&ro, cf_of(cf)?))
        });
        wrap_db_iter(r)
    })
}

/// An iterator that failed to open: never valid, its status the error.
struct FailedIterator(String);

impl CIterator for FailedIterator {
    fn valid(&self) -> bool {
        false
    }
    fn seek_to_first(&mut self) {}
    fn seek_to_last(&mut self) {}
    fn seek(&mut self, _key: &[u8]) {}
    fn seek_for_prev(&mut self, _key: &[u8]) {}
    fn next(&mut self) {}
    fn prev(&mut self) {}
    fn key(&self) -> &[u8] {
        &[]
    }
    fn value(&self) -> &[u8] {
        &[]
    }
    fn status(&self) -> strata::Result<()> {
        Err(strata::Error::InvalidArgument(self.0.clone()))
    }
}

pub(crate) fn wrap_db_iter(
    r: Result<strata::Result<DbIterator>, String>,
) -> *mut rocksdb_iterator_t {
    let it: Box<dyn CIterator> = match r {
        Ok(Ok(it)) => Box::new(it),
        Ok(Err(e)) => Box::new(FailedIterator(e.to_string())),
        Err(msg) => Box::new(FailedIterator(msg)),
    };
    into_raw(rocksdb_iterator_t::new(it))
}

pub(crate) fn wrap_failed(msg: String) -> *mut rocksdb_iterator_t {
    into_raw(rocksdb_iterator_t::new(Box::new(FailedIterator(msg))))
}

fn with_iter<T: Default>(it: *const rocksdb_iterator_t, f: impl FnOnce(&dyn CIterator) -> T) -> T {
    // SAFETY: NULL or a live iterator (C API contract).
    guard_quiet(T::default(), || {
        unsafe { it.as_ref() }.map_or(T::default(), |i| f(&*i.it))
    })
}

fn with_iter_mut(it: *mut rocksdb_iterator_t, f: impl FnOnce(&mut dyn CIterator)) {
    // SAFETY: NULL or a live iterator used by one thread (C API contract).
    guard_quiet((), || {
        if let Some(i) = unsafe { it.as_mut() } {
            f(&mut *i.it)
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_iter_destroy(it: *mut rocksdb_iterator_t) {
    // SAFETY: NULL or a live iterator, not used afterwards.
    guard_quiet((), || unsafe { drop_raw(it) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_iter_valid(it: *const rocksdb_iterator_t) -> c_uchar {
    with_iter(it, |i| i.valid() as c_uchar)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_iter_seek_to_first(it: *mut rocksdb_iterator_t) {
    with_iter_mut(it, |i| i.seek_to_first())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_iter_seek_to_last(it: *mut rocksdb_iterator_t) {
    with_iter_mut(it, |i| i.seek_to_last())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_iter_seek(
    it: *mut rocksdb_iterator_t,
    k: *const c_char,
    klen: usize,
) {
    // SAFETY: `klen` bytes at `k`.
    with_iter_mut(it, |i| i.seek(unsafe { bytes(k, klen) }))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_iter_seek_for_prev(
    it: *mut rocksdb_iterator_t,
    k: *const c_char,
    klen: usize,
) {
    // SAFETY: `klen` bytes at `k`.
    with_iter_mut(it, |i| i.seek_for_prev(unsafe { bytes(k, klen) }))
}

/// Moving an iterator that is not valid does nothing (RocksDB asserts).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_iter_next(it: *mut rocksdb_iterator_t) {
    with_iter_mut(it, |i| {
        if i.valid() {
            i.next()
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_iter_prev(it: *mut rocksdb_iterator_t) {
    with_iter_mut(it, |i| {
        if i.valid() {
            i.prev()
        }
    })
}

/// NULL (length 0) when the iterator is not valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_iter_key(
    it: *const rocksdb_iterator_t,
    klen: *mut usize,
) -> *const c_char {
    with_iter(it, |i| {
        let (p, n) = if i.valid() {
            (i.key().as_ptr() as *const c_char, i.key().len())
        } else {
            (std::ptr::null(), 0)
        };
        // SAFETY: NULL or writable.
        unsafe { put_out(klen, n) };
        Ptr(p)
    })
    .0
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_iter_value(
    it: *const rocksdb_iterator_t,
    vlen: *mut usize,
) -> *const c_char {
    with_iter(it, |i| {
        let (p, n) = if i.valid() {
            (i.value().as_ptr() as *const c_char, i.value().len())
        } else {
            (std::ptr::null(), 0)
        };
        // SAFETY: NULL or writable.
        unsafe { put_out(vlen, n) };
        Ptr(p)
    })
    .0
}

/// A pointer with a NULL default (for `with_iter`).
struct Ptr(*const c_char);

impl Default for Ptr {
    fn default() -> Self {
        Ptr(std::ptr::null())
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_iter_get_error(
    it: *const rocksdb_iterator_t,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        // SAFETY: NULL or a live iterator.
        match unsafe { it.as_ref() } {
            Some(i) => i.it.status().map_err(|e| e.to_string()),
            None => Err("Invalid argument: iterator is NULL".into()),
        }
    })
}
