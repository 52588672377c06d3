//! Compression settings of `rocksdb_options_t` beyond the codec: RocksDB's
//! `compression_opts` (level, dictionary sizes, trainer), the bottommost
//! codec and `bottommost_compression_opts`, with RocksDB 7.8.3's C
//! signatures.

use std::ffi::{c_int, c_uchar};

use strata::CompressionOptions;

use crate::ffi::guard_quiet;
use crate::options::{compression_from_c, compression_to_c, rocksdb_options_t};

/// RocksDB's `kDisableCompressionOption`: no bottommost codec.
const DISABLE_COMPRESSION_OPTION: c_int = 0xff;

/// Runs `f` on the options behind `opt` unless it is NULL.
fn with_opts(opt: *mut rocksdb_options_t, f: impl FnOnce(&mut rocksdb_options_t)) {
    guard_quiet((), || {
        // SAFETY: NULL or a live options object (C API contract).
        if let Some(o) = unsafe { opt.as_mut() } {
            f(o);
        }
    })
}

/// Window bits, level, strategy and dictionary size (RocksDB's
/// `compression_opts`); a negative size keeps the current one.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_set_compression_options(
    opt: *mut rocksdb_options_t,
    w_bits: c_int,
    level: c_int,
    strategy: c_int,
    max_dict_bytes: c_int,
) {
    with_opts(opt, |o| {
        set_basic(
            &mut o.opts.cf.compression_opts,
            w_bits,
            level,
            strategy,
            max_dict_bytes,
        )
    })
}

/// The same for outputs at the bottom, and whether those options apply.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_set_bottommost_compression_options(
    opt: *mut rocksdb_options_t,
    w_bits: c_int,
    level: c_int,
    strategy: c_int,
    max_dict_bytes: c_int,
    enabled: c_uchar,
) {
    with_opts(opt, |o| {
        let b = &mut o.opts.cf.bottommost_compression_opts;
        set_basic(b, w_bits, level, strategy, max_dict_bytes);
        b.enabled = enabled != 0;
    })
}

fn set_basic(
    c: &mut CompressionOptions,
    w_bits: c_int,
    level: c_int,
    strategy: c_int,
    dict: c_int,
) {
    c.window_bits = w_bits;
    c.level = level;
    c.strategy = strategy;
    if let Ok(d) = u32::try_from(dict) {
        c.max_dict_bytes = d;
    }
}

setter!(
    rocksdb_options_t,
    rocksdb_options_set_compression_options_zstd_max_train_bytes,
    c_int,
    |o, v| {
        if let Ok(n) = u32::try_from(v) {
            o.opts.cf.compression_opts.zstd_max_train_bytes = n;
        }
    }
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_compression_options_zstd_max_train_bytes,
    c_int,
    |o| o
        .opts
        .cf
        .compression_opts
        .zstd_max_train_bytes
        .min(i32::MAX as u32) as c_int
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_compression_options_use_zstd_dict_trainer,
    c_uchar,
    |o, v| o.opts.cf.compression_opts.use_zstd_dict_trainer = v != 0
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_compression_options_use_zstd_dict_trainer,
    c_uchar,
    |o| c_uchar::from(o.opts.cf.compression_opts.use_zstd_dict_trainer)
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_compression_options_parallel_threads,
    c_int,
    |o, v| {
        if let Ok(n) = u32::try_from(v) {
            o.opts.cf.compression_opts.parallel_threads = n;
        }
    }
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_compression_options_parallel_threads,
    c_int,
    |o| o
        .opts
        .cf
        .compression_opts
        .parallel_threads
        .min(i32::MAX as u32) as c_int
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_compression_options_max_dict_buffer_bytes,
    u64,
    |o, v| o.opts.cf.compression_opts.max_dict_buffer_bytes = v
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_compression_options_max_dict_buffer_bytes,
    u64,
    |o| o.opts.cf.compression_opts.max_dict_buffer_bytes
);

/// ZSTD training bytes for outputs at the bottom, and whether the
/// bottommost options apply.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_set_bottommost_compression_options_zstd_max_train_bytes(
    opt: *mut rocksdb_options_t,
    zstd_max_train_bytes: c_int,
    enabled: c_uchar,
) {
    with_opts(opt, |o| {
        let b = &mut o.opts.cf.bottommost_compression_opts;
        if let Ok(n) = u32::try_from(zstd_max_train_bytes) {
            b.zstd_max_train_bytes = n;
        }
        b.enabled = enabled != 0;
    })
}

/// Trainer or finalizer for outputs at the bottom, and whether the
/// bottommost options apply.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_set_bottommost_compression_options_use_zstd_dict_trainer(
    opt: *mut rocksdb_options_t,
    use_zstd_dict_trainer: c_uchar,
    enabled: c_uchar,
) {
    with_opts(opt, |o| {
        let b = &mut o.opts.cf.bottommost_compression_opts;
        b.use_zstd_dict_trainer = use_zstd_dict_trainer != 0;
        b.enabled = enabled != 0;
    })
}

getter!(
    rocksdb_options_t,
    rocksdb_options_get_bottommost_compression_options_use_zstd_dict_trainer,
    c_uchar,
    |o| c_uchar::from(o.opts.cf.bottommost_compression_opts.use_zstd_dict_trainer)
);

/// Dictionary buffer cap for outputs at the bottom, and whether the
/// bottommost options apply.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_set_bottommost_compression_options_max_dict_buffer_bytes(
    opt: *mut rocksdb_options_t,
    max_dict_buffer_bytes: u64,
    enabled: c_uchar,
) {
    with_opts(opt, |o| {
        let b = &mut o.opts.cf.bottommost_compression_opts;
        b.max_dict_buffer_bytes = max_dict_buffer_bytes;
        b.enabled = enabled != 0;
    })
}

setter!(
    rocksdb_options_t,
    rocksdb_options_set_bottommost_compression,
    c_int,
    |o, v| {
        // kDisableCompressionOption turns the bottommost codec off; an
        // unknown code keeps the current setting (as for the codec).
        if v == DISABLE_COMPRESSION_OPTION {
            o.opts.cf.bottommost_compression = None;
        } else if let Some(c) = compression_from_c(v) {
            o.opts.cf.bottommost_compression = Some(c);
        }
    }
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_bottommost_compression,
    c_int,
    |o| o
        .opts
        .cf
        .bottommost_compression
        .map_or(DISABLE_COMPRESSION_OPTION, compression_to_c)
);
