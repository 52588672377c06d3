//! User callbacks from C: comparators, merge operators, compaction filters
//! and prefix extractors, each a Strata trait object around the caller's
//! `state` pointer and function pointers. The `destructor(state)` runs
//! exactly once, when the last user of the callbacks (options, open
//! databases, the caller's handle) lets go; RocksDB's C API requires the
//! callbacks to be thread-safe, and so does Strata.

#![allow(non_camel_case_types)]

use std::cmp::Ordering;
use std::ffi::{CStr, c_char, c_int, c_uchar, c_void};
use std::sync::Arc;

use strata::Comparator;
use strata::compaction_filter::{CompactionFilter, Decision};
use strata::merge_operator::MergeOperator;
use strata::{FixedPrefix, SliceTransform};

use crate::ffi::{c_free, drop_raw, guard_quiet, into_raw};

type Destructor = Option<unsafe extern "C" fn(*mut c_void)>;
type NameFn = Option<unsafe extern "C" fn(*mut c_void) -> *const c_char>;

/// The caller's state pointer and its destructor.
struct State {
    state: *mut c_void,
    destructor: Destructor,
}

// SAFETY: RocksDB's C API requires callback state to be usable from any
// thread (callbacks run on background threads); we only pass the pointer
// back to the caller's functions.
unsafe impl Send for State {}
// SAFETY: as above.
unsafe impl Sync for State {}

impl Drop for State {
    fn drop(&mut self) {
        if let Some(d) = self.destructor {
            // SAFETY: the caller's destructor, called once with its state.
            let _ = std::panic::catch_unwind(|| unsafe { d(self.state) });
        }
    }
}

/// The callbacks' name, read once (RocksDB asks each time; the name of a
/// comparator or operator is stored in files, so it cannot change).
fn read_name(name: NameFn, state: *mut c_void, what: &str) -> String {
    match name {
        // SAFETY: the caller's name function returns NULL or a C string.
        Some(f) => {
            let p = unsafe { f(state) };
            if p.is_null() {
                what.to_string()
            } else {
                // SAFETY: non-NULL: a NUL-terminated string (C API contract).
                unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
            }
        }
        None => what.to_string(),
    }
}

// ---- comparator ----

struct CComparator {
    st: State,
    compare: unsafe extern "C" fn(*mut c_void, *const c_char, usize, *const c_char, usize) -> c_int,
    name: String,
}

impl Comparator for CComparator {
    fn name(&self) -> &str {
        &self.name
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        // SAFETY: both slices are valid for the call; the callback only
        // reads them.
        let r = unsafe {
            (self.compare)(
                self.st.state,
                a.as_ptr() as *const c_char,
                a.len(),
                b.as_ptr() as *const c_char,
                b.len(),
            )
        };
        r.cmp(&0)
    }
}

pub struct rocksdb_comparator_t {
    pub comparator: Arc<dyn Comparator>,
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_comparator_create(
    state: *mut c_void,
    destructor: Destructor,
    compare: Option<
        unsafe extern "C" fn(*mut c_void, *const c_char, usize, *const c_char, usize) -> c_int,
    >,
    name: NameFn,
) -> *mut rocksdb_comparator_t {
    guard_quiet(std::ptr::null_mut(), || {
        let st = State { state, destructor };
        let Some(compare) = compare else {
            return std::ptr::null_mut();
        };
        let name = read_name(name, state, "strata.CComparator");
        into_raw(rocksdb_comparator_t {
            comparator: Arc::new(CComparator { st, compare, name }),
        })
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_comparator_destroy(c: *mut rocksdb_comparator_t) {
    // SAFETY: NULL or from rocksdb_comparator_create.
    guard_quiet((), || unsafe { drop_raw(c) })
}

// ---- merge operator ----

type FullMergeFn = unsafe extern "C" fn(
    *mut c_void,
    *const c_char,
    usize,
    *const c_char,
    usize,
    *const *const c_char,
    *const usize,
    c_int,
    *mut c_uchar,
    *mut usize,
) -> *mut c_char;
type PartialMergeFn = unsafe extern "C" fn(
    *mut c_void,
    *const c_char,
    usize,
    *const *const c_char,
    *const usize,
    c_int,
    *mut c_uchar,
    *mut usize,
) -> *mut c_char;
type DeleteValueFn = unsafe extern "C" fn(*mut c_void, *const c_char, usize);

struct CMergeOperator {
    st: State,
    full_merge: FullMergeFn,
    delete_value: Option<DeleteValueFn>,
    name: String,
}

impl MergeOperator for CMergeOperator {
    fn name(&self) -> &str {
        &self.name
    }
    fn full_merge(
        &self,
        key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>> {
        let ptrs: Vec<*const c_char> = operands
            .iter()
            .map(|o| o.as_ptr() as *const c_char)
            .collect();
        let lens: Vec<usize> = operands.iter().map(|o| o.len()).collect();
        let (ep, el) = match existing {
            Some(e) => (e.as_ptr() as *const c_char, e.len()),
            None => (std::ptr::null(), 0),
        };
        let mut success: c_uchar = 0;
        let mut len: usize = 0;
        // SAFETY: every pointer is valid for the call; the callback returns
        // a buffer of `len` bytes it allocated (or NULL).
        let out = unsafe {
            (self.full_merge)(
                self.st.state,
                key.as_ptr() as *const c_char,
                key.len(),
                ep,
                el,
                ptrs.as_ptr(),
                lens.as_ptr(),
                operands.len() as c_int,
                &mut success,
                &mut len,
            )
        };
        let value = if out.is_null() {
            Vec::new()
        } else {
            // SAFETY: `out` holds `len` bytes (C API contract).
            unsafe { std::slice::from_raw_parts(out as *const u8, len) }.to_vec()
        };
        if !out.is_null() {
            match self.delete_value {
                // SAFETY: handing the caller's buffer back to its deleter.
                Some(d) => unsafe { d(self.st.state, out, len) },
                // SAFETY: without a deleter, RocksDB frees it with free().
                None => unsafe { c_free(out as *mut c_void) },
            }
        }
        (success != 0).then_some(value)
    }
}

pub struct rocksdb_mergeoperator_t {
    pub op: Arc<dyn MergeOperator>,
}

/// `partial_merge` is accepted and not called: Strata combines operands
/// only with `full_merge` (a correct, if less eager, strategy RocksDB also
/// falls back to).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_mergeoperator_create(
    state: *mut c_void,
    destructor: Destructor,
    full_merge: Option<FullMergeFn>,
    _partial_merge: Option<PartialMergeFn>,
    delete_value: Option<DeleteValueFn>,
    name: NameFn,
) -> *mut rocksdb_mergeoperator_t {
    guard_quiet(std::ptr::null_mut(), || {
        let st = State { state, destructor };
        let Some(full_merge) = full_merge else {
            return std::ptr::null_mut();
        };
        let name = read_name(name, state, "strata.CMergeOperator");
        into_raw(rocksdb_mergeoperator_t {
            op: Arc::new(CMergeOperator {
                st,
                full_merge,
                delete_value,
                name,
            }),
        })
    })
}

/// Destroys a merge operator that was not handed to options.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_mergeoperator_destroy(m: *mut rocksdb_mergeoperator_t) {
    // SAFETY: NULL or from rocksdb_mergeoperator_create, not handed over.
    guard_quiet((), || unsafe { drop_raw(m) })
}

// ---- compaction filter ----

type FilterFn = unsafe extern "C" fn(
    *mut c_void,
    c_int,
    *const c_char,
    usize,
    *const c_char,
    usize,
    *mut *mut c_char,
    *mut usize,
    *mut c_uchar,
) -> c_uchar;

struct CCompactionFilter {
    st: State,
    filter: FilterFn,
    name: String,
}

impl CompactionFilter for CCompactionFilter {
    fn name(&self) -> &str {
        &self.name
    }
    fn filter(&self, level: usize, key: &[u8], value: &[u8]) -> Decision {
        let mut new_value: *mut c_char = std::ptr::null_mut();
        let mut new_len: usize = 0;
        let mut changed: c_uchar = 0;
        // SAFETY: key and value are valid for the call; out-pointers are
        // ours.
        let remove = unsafe {
            (self.filter)(
                self.st.state,
                level as c_int,
                key.as_ptr() as *const c_char,
                key.len(),
                value.as_ptr() as *const c_char,
                value.len(),
                &mut new_value,
                &mut new_len,
                &mut changed,
            )
        };
        if remove != 0 {
            Decision::Remove
        } else if changed != 0 {
            // As RocksDB: the new value is copied and stays the caller's.
            let v = if new_value.is_null() {
                Vec::new()
            } else {
                // SAFETY: `new_value` holds `new_len` bytes (C API contract).
                unsafe { std::slice::from_raw_parts(new_value as *const u8, new_len) }.to_vec()
            };
            Decision::ChangeValue(v)
        } else {
            Decision::Keep
        }
    }
}

pub struct rocksdb_compactionfilter_t {
    pub filter: Arc<dyn CompactionFilter>,
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_compactionfilter_create(
    state: *mut c_void,
    destructor: Destructor,
    filter: Option<FilterFn>,
    name: NameFn,
) -> *mut rocksdb_compactionfilter_t {
    guard_quiet(std::ptr::null_mut(), || {
        let st = State { state, destructor };
        let Some(filter) = filter else {
            return std::ptr::null_mut();
        };
        let name = read_name(name, state, "strata.CCompactionFilter");
        into_raw(rocksdb_compactionfilter_t {
            filter: Arc::new(CCompactionFilter { st, filter, name }),
        })
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_compactionfilter_destroy(f: *mut rocksdb_compactionfilter_t) {
    // SAFETY: NULL or from rocksdb_compactionfilter_create.
    guard_quiet((), || unsafe { drop_raw(f) })
}

// ---- compaction filter factories ----

/// What a factory's callback is told of the compaction (RocksDB's
/// `CompactionFilter::Context`), valid during the callback.
pub struct rocksdb_compactionfiltercontext_t {
    context: strata::compaction_filter::CompactionFilterContext,
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_compactionfiltercontext_is_full_compaction(
    context: *mut rocksdb_compactionfiltercontext_t,
) -> c_uchar {
    // SAFETY: NULL or the context of a running callback.
    guard_quiet(0, || {
        unsafe { context.as_ref() }.map_or(0, |c| c_uchar::from(c.context.is_full_compaction))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_compactionfiltercontext_is_manual_compaction(
    context: *mut rocksdb_compactionfiltercontext_t,
) -> c_uchar {
    // SAFETY: NULL or the context of a running callback.
    guard_quiet(0, || {
        unsafe { context.as_ref() }.map_or(0, |c| c_uchar::from(c.context.is_manual_compaction))
    })
}

type CreateFilterFn = unsafe extern "C" fn(
    *mut c_void,
    *mut rocksdb_compactionfiltercontext_t,
) -> *mut rocksdb_compactionfilter_t;

struct CCompactionFilterFactory {
    st: State,
    create: CreateFilterFn,
    name: String,
}

impl strata::compaction_filter::CompactionFilterFactory for CCompactionFilterFactory {
    fn name(&self) -> &str {
        &self.name
    }
    fn create_compaction_filter(
        &self,
        context: &strata::compaction_filter::CompactionFilterContext,
    ) -> Option<Arc<dyn CompactionFilter>> {
        let mut c = rocksdb_compactionfiltercontext_t { context: *context };
        // SAFETY: the caller's callback with its state; the context lives
        // through the call.
        let f = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe {
            (self.create)(self.st.state, &mut c)
        }))
        .ok()?;
        if f.is_null() {
            return None;
        }
        // SAFETY: a filter from rocksdb_compactionfilter_create, handed
        // over (RocksDB deletes it when the compaction ends: the filter's
        // destructor runs when the compaction drops it).
        let f = unsafe { Box::from_raw(f) };
        Some(Arc::clone(&f.filter))
    }
}

/// A compaction filter factory (RocksDB takes ownership of it when set on
/// options; `destructor(state)` runs when the last user drops it).
pub struct rocksdb_compactionfilterfactory_t {
    pub factory: Arc<dyn strata::compaction_filter::CompactionFilterFactory>,
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_compactionfilterfactory_create(
    state: *mut c_void,
    destructor: Destructor,
    create_compaction_filter: Option<CreateFilterFn>,
    name: NameFn,
) -> *mut rocksdb_compactionfilterfactory_t {
    guard_quiet(std::ptr::null_mut(), || {
        let st = State { state, destructor };
        let Some(create) = create_compaction_filter else {
            return std::ptr::null_mut();
        };
        let name = read_name(name, state, "strata.CCompactionFilterFactory");
        into_raw(rocksdb_compactionfilterfactory_t {
            factory: Arc::new(CCompactionFilterFactory { st, create, name }),
        })
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_compactionfilterfactory_destroy(
    f: *mut rocksdb_compactionfilterfactory_t,
) {
    // SAFETY: NULL or from rocksdb_compactionfilterfactory_create.
    guard_quiet((), || unsafe { drop_raw(f) })
}

// ---- prefix extractors ----

type TransformFn =
    unsafe extern "C" fn(*mut c_void, *const c_char, usize, *mut usize) -> *mut c_char;
type InDomainFn = unsafe extern "C" fn(*mut c_void, *const c_char, usize) -> c_uchar;

struct CSliceTransform {
    st: State,
    transform: TransformFn,
    in_domain: InDomainFn,
    name: String,
}

impl SliceTransform for CSliceTransform {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn transform<'a>(&self, key: &'a [u8]) -> &'a [u8] {
        let mut len = 0usize;
        // SAFETY: `key` is valid for the call.
        let p = unsafe {
            (self.transform)(
                self.st.state,
                key.as_ptr() as *const c_char,
                key.len(),
                &mut len,
            )
        } as *const u8;
        // RocksDB's contract: the prefix lies inside the key. Anything else
        // is read as the key's first `len` bytes when they are equal, and
        // as the whole key otherwise (never a dangling slice).
        let start = key.as_ptr() as usize;
        let at = p as usize;
        if at >= start && at.saturating_add(len) <= start + key.len() {
            &key[at - start..at - start + len]
        } else if len <= key.len()
            && !p.is_null()
            // SAFETY: the callback returned `len` readable bytes at `p`.
            && unsafe { std::slice::from_raw_parts(p, len) } == &key[..len]
        {
            &key[..len]
        } else {
            key
        }
    }
    fn in_domain(&self, key: &[u8]) -> bool {
        // SAFETY: `key` is valid for the call.
        unsafe { (self.in_domain)(self.st.state, key.as_ptr() as *const c_char, key.len()) != 0 }
    }
}

/// Every key is its own prefix (RocksDB's `NewNoopTransform`).
struct NoopTransform;

impl SliceTransform for NoopTransform {
    fn name(&self) -> String {
        "rocksdb.Noop".into()
    }
    fn transform<'a>(&self, key: &'a [u8]) -> &'a [u8] {
        key
    }
    fn in_domain(&self, _key: &[u8]) -> bool {
        true
    }
}

pub struct rocksdb_slicetransform_t {
    pub transform: Arc<dyn SliceTransform>,
}

/// `in_range` is accepted and not called (RocksDB no longer calls it
/// either).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_slicetransform_create(
    state: *mut c_void,
    destructor: Destructor,
    transform: Option<TransformFn>,
    in_domain: Option<InDomainFn>,
    _in_range: Option<InDomainFn>,
    name: NameFn,
) -> *mut rocksdb_slicetransform_t {
    guard_quiet(std::ptr::null_mut(), || {
        let st = State { state, destructor };
        let (Some(transform), Some(in_domain)) = (transform, in_domain) else {
            return std::ptr::null_mut();
        };
        let name = read_name(name, state, "strata.CSliceTransform");
        into_raw(rocksdb_slicetransform_t {
            transform: Arc::new(CSliceTransform {
                st,
                transform,
                in_domain,
                name,
            }),
        })
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_slicetransform_create_fixed_prefix(
    n: usize,
) -> *mut rocksdb_slicetransform_t {
    into_raw(rocksdb_slicetransform_t {
        transform: Arc::new(FixedPrefix(n)),
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_slicetransform_create_noop() -> *mut rocksdb_slicetransform_t {
    into_raw(rocksdb_slicetransform_t {
        transform: Arc::new(NoopTransform),
    })
}

/// Destroys a prefix extractor that was not handed to options.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_slicetransform_destroy(t: *mut rocksdb_slicetransform_t) {
    // SAFETY: NULL or from a rocksdb_slicetransform_create*, not handed over.
    guard_quiet((), || unsafe { drop_raw(t) })
}
