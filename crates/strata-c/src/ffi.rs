//! The C boundary's conventions, in one place:
//!
//! - Errors go out through `char** errptr` as RocksDB's C API does: a
//!   malloc'd NUL-terminated message (`Status::ToString()` text), replacing
//!   (and freeing) one already there; success leaves it untouched.
//! - Values handed to the caller (gets, property values, names) are
//!   malloc'd, so the caller frees them with `free` or `rocksdb_free`.
//! - No panic crosses the boundary: every exported function runs its body
//!   under [`guard`], which turns a panic into an error message (or into the
//!   function's neutral result where the C signature has no `errptr`).
//! - NULL where RocksDB takes a length-delimited buffer of length 0 is an
//!   empty slice; a NULL handle is an `Invalid argument` error, never a
//!   dereference.

use std::ffi::{CStr, c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};

unsafe extern "C" {
    fn malloc(size: usize) -> *mut c_void;
    fn free(ptr: *mut c_void);
}

/// Frees memory this library handed out with malloc (RocksDB's
/// `rocksdb_free`).
///
/// # Safety
/// `ptr` is NULL or came from this library as a malloc'd buffer.
pub unsafe fn c_free(ptr: *mut c_void) {
    // SAFETY: the caller passes NULL or a pointer from `malloc`.
    unsafe { free(ptr) }
}

/// A malloc'd copy of `bytes` (not NUL-terminated; never NULL, even for an
/// empty value, so "found, empty" differs from "not found").
pub fn malloc_bytes(bytes: &[u8]) -> *mut c_char {
    // SAFETY: malloc returns NULL or a block of at least max(len, 1) bytes;
    // we copy `len` bytes into it and never read past them.
    unsafe {
        let p = malloc(bytes.len().max(1)) as *mut u8;
        if p.is_null() {
            return std::ptr::null_mut();
        }
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len());
        p as *mut c_char
    }
}

/// A malloc'd NUL-terminated copy of `s` (an interior NUL cuts it short,
/// as C would read it).
pub fn malloc_cstr(s: &str) -> *mut c_char {
    let bytes = s.as_bytes();
    let n = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    // SAFETY: a block of n + 1 bytes; n copied, then the terminator.
    unsafe {
        let p = malloc(n + 1) as *mut u8;
        if p.is_null() {
            return std::ptr::null_mut();
        }
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, n);
        *p.add(n) = 0;
        p as *mut c_char
    }
}

/// A malloc'd array of `n` elements of `T`, zeroed; for arrays the caller
/// frees with `free` (column family lists).
pub fn malloc_array<T>(n: usize) -> *mut T {
    let bytes = std::mem::size_of::<T>().saturating_mul(n.max(1));
    // SAFETY: a block of `bytes` bytes, zeroed before use.
    unsafe {
        let p = malloc(bytes) as *mut u8;
        if !p.is_null() {
            std::ptr::write_bytes(p, 0, bytes);
        }
        p as *mut T
    }
}

/// Stores `msg` in `*errptr` as RocksDB's `SaveError` does (a message
/// already there is freed and replaced). A NULL `errptr` drops it.
///
/// # Safety
/// `errptr` is NULL or points to a `char*` that is NULL or malloc'd.
pub unsafe fn set_error(errptr: *mut *mut c_char, msg: &str) {
    if errptr.is_null() {
        return;
    }
    // SAFETY: non-NULL `errptr` points to a valid `char*` (caller's contract).
    unsafe {
        if !(*errptr).is_null() {
            free(*errptr as *mut c_void);
        }
        *errptr = malloc_cstr(msg);
    }
}

/// The error text of a Strata error (RocksDB's `Status::ToString` forms).
pub fn error_text(e: &strata::Error) -> String {
    e.to_string()
}

/// Runs `body`, reporting an `Err` or a panic through `errptr` and
/// returning `fallback` then.
pub fn guard<T>(
    errptr: *mut *mut c_char,
    fallback: T,
    body: impl FnOnce() -> Result<T, String>,
) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(v)) => v,
        Ok(Err(msg)) => {
            // SAFETY: `errptr` comes from the C caller under RocksDB's
            // contract (NULL or a valid `char**`).
            unsafe { set_error(errptr, &msg) };
            fallback
        }
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown".into());
            // SAFETY: as above.
            unsafe {
                set_error(
                    errptr,
                    &format!("Corruption: strata internal panic: {what}"),
                )
            };
            fallback
        }
    }
}

/// [`guard`] for functions whose C signature has no `errptr`: a panic
/// returns `fallback`.
pub fn guard_quiet<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

/// Turns a Strata result into the boundary's `Result<_, String>`.
pub fn st<T>(r: strata::Result<T>) -> Result<T, String> {
    r.map_err(|e| error_text(&e))
}

/// `len` bytes at `ptr` (NULL or length 0: empty).
///
/// # Safety
/// Non-NULL `ptr` points to `len` readable bytes that outlive the use.
pub unsafe fn bytes<'a>(ptr: *const c_char, len: usize) -> &'a [u8] {
    if ptr.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: the caller's contract above.
        unsafe { std::slice::from_raw_parts(ptr as *const u8, len) }
    }
}

/// A NUL-terminated C string as UTF-8 (lossy); NULL is an error.
///
/// # Safety
/// Non-NULL `ptr` points to a NUL-terminated string.
pub unsafe fn cstr(ptr: *const c_char, what: &str) -> Result<String, String> {
    if ptr.is_null() {
        return Err(format!("Invalid argument: {what} is NULL"));
    }
    // SAFETY: the caller's contract above.
    Ok(unsafe { CStr::from_ptr(ptr) }
        .to_string_lossy()
        .into_owned())
}

/// A shared reference to the object behind a handle; NULL is an error.
///
/// # Safety
/// Non-NULL `ptr` points to a live `T` created by this library.
pub unsafe fn handle<'a, T>(ptr: *const T, what: &str) -> Result<&'a T, String> {
    if ptr.is_null() {
        Err(format!("Invalid argument: {what} is NULL"))
    } else {
        // SAFETY: the caller's contract above.
        Ok(unsafe { &*ptr })
    }
}

/// A mutable reference to the object behind a handle; NULL is an error.
///
/// # Safety
/// Non-NULL `ptr` points to a live `T` created by this library that no one
/// else uses for the duration (RocksDB's C API has the same rule).
pub unsafe fn handle_mut<'a, T>(ptr: *mut T, what: &str) -> Result<&'a mut T, String> {
    if ptr.is_null() {
        Err(format!("Invalid argument: {what} is NULL"))
    } else {
        // SAFETY: the caller's contract above.
        Ok(unsafe { &mut *ptr })
    }
}

/// Moves `v` to the heap and hands the C caller its pointer.
pub fn into_raw<T>(v: T) -> *mut T {
    Box::into_raw(Box::new(v))
}

/// Takes back and drops what [`into_raw`] handed out (NULL: nothing).
///
/// # Safety
/// `ptr` is NULL or came from [`into_raw`] and is not used afterwards.
pub unsafe fn drop_raw<T>(ptr: *mut T) {
    if !ptr.is_null() {
        // SAFETY: the caller's contract above.
        drop(unsafe { Box::from_raw(ptr) });
    }
}

/// Writes `v` through an optional out-pointer.
///
/// # Safety
/// `out` is NULL or valid for a write of `T`.
pub unsafe fn put_out<T>(out: *mut T, v: T) {
    if !out.is_null() {
        // SAFETY: the caller's contract above.
        unsafe { *out = v };
    }
}
