//! Compression options and the compression dictionary a table builds from
//! its own data blocks (RocksDB's `CompressionOptions` and
//! `BlockBasedTableBuilder::EnterUnbuffered`).
//!
//! With `max_dict_bytes > 0` a table holds its first data blocks back
//! (uncompressed) until they exceed the buffer limit or the table ends.
//! It then samples them, in RocksDB's order, into a dictionary: the raw
//! samples themselves, or a ZSTD dictionary trained on them
//! (`zstd_max_train_bytes > 0`), and compresses every data block against
//! it. The dictionary is stored in the `rocksdb.compression_dict` meta
//! block, which readers load before any data block.

use crate::error::{Error, Result};

/// RocksDB's `CompressionOptions::kDefaultCompressionLevel`: the codec's
/// own default.
pub const DEFAULT_COMPRESSION_LEVEL: i32 = 32767;

/// RocksDB's `CompressionOptions`, per column family (`compression_opts`)
/// and for the bottommost level (`bottommost_compression_opts`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompressionOptions {
    /// Zlib's window bits. Stored and reported; Strata's Zlib blocks
    /// always use RocksDB's default (-14), the only window RocksDB's reader
    /// accepts.
    pub window_bits: i32,
    /// Codec level; [`DEFAULT_COMPRESSION_LEVEL`] takes the codec's default.
    pub level: i32,
    /// Zlib's strategy. Stored and reported; Strata's Zlib uses the default.
    pub strategy: i32,
    /// Largest compression dictionary per table; 0 (the default) builds
    /// none.
    pub max_dict_bytes: u32,
    /// With a nonzero value, sample this many bytes and train a ZSTD
    /// dictionary on them (or finalize one, see `use_zstd_dict_trainer`);
    /// 0 uses `max_dict_bytes` of raw samples as the dictionary.
    pub zstd_max_train_bytes: u32,
    /// RocksDB compresses with this many threads. Stored and reported;
    /// Strata compresses on the job's thread.
    pub parallel_threads: u32,
    /// For `bottommost_compression_opts`: whether they apply at all.
    pub enabled: bool,
    /// Cap on the data held back to build the dictionary; 0 holds back up
    /// to the target file size (everything for flushes).
    pub max_dict_buffer_bytes: u64,
    /// Train with ZSTD's trainer (`ZDICT_trainFromBuffer`); otherwise
    /// finalize the raw samples (`ZDICT_finalizeDictionary`).
    pub use_zstd_dict_trainer: bool,
}

impl Default for CompressionOptions {
    fn default() -> Self {
        CompressionOptions {
            window_bits: -14,
            level: DEFAULT_COMPRESSION_LEVEL,
            strategy: 0,
            max_dict_bytes: 0,
            zstd_max_train_bytes: 0,
            parallel_threads: 1,
            enabled: false,
            max_dict_buffer_bytes: 0,
            use_zstd_dict_trainer: true,
        }
    }
}

impl CompressionOptions {
    /// The codec level to compress with (`None`: the codec's default).
    pub fn codec_level(&self) -> Option<i32> {
        (self.level != DEFAULT_COMPRESSION_LEVEL).then_some(self.level)
    }

    /// The `rocksdb.compression_options` table property
    /// (RocksDB's `CompressionOptionsToString`).
    pub fn to_property_string(&self) -> String {
        format!(
            "window_bits={}; level={}; strategy={}; max_dict_bytes={}; zstd_max_train_bytes={}; \
             enabled={}; max_dict_buffer_bytes={}; use_zstd_dict_trainer={}; ",
            self.window_bits,
            self.level,
            self.strategy,
            self.max_dict_bytes,
            self.zstd_max_train_bytes,
            u8::from(self.enabled),
            self.max_dict_buffer_bytes,
            u8::from(self.use_zstd_dict_trainer),
        )
    }

    /// The OPTIONS file's form, in the order RocksDB 7.8.3 writes it.
    pub fn to_options_string(&self) -> String {
        format!(
            "{{max_dict_buffer_bytes={};enabled={};max_dict_bytes={};parallel_threads={};\
             zstd_max_train_bytes={};level={};use_zstd_dict_trainer={};strategy={};window_bits={};}}",
            self.max_dict_buffer_bytes,
            self.enabled,
            self.max_dict_bytes,
            self.parallel_threads,
            self.zstd_max_train_bytes,
            self.level,
            self.use_zstd_dict_trainer,
            self.strategy,
            self.window_bits,
        )
    }

    /// Parses an OPTIONS-file value: the struct form `{name=value;...}`
    /// (names not given keep their values) or RocksDB's older
    /// colon-separated form `window_bits:level:strategy[:max_dict_bytes
    /// [:zstd_max_train_bytes[:parallel_threads]:enabled[:max_dict_buffer_bytes
    /// [:use_zstd_dict_trainer]]]]` (RocksDB's `ParseCompressionOptions`).
    pub fn parse_into(&mut self, name: &str, value: &str) -> Result<()> {
        let bad =
            || Error::InvalidArgument(format!("unable to parse the specified CF option {name}"));
        let int = |v: &str| v.trim().parse::<i64>().map_err(|_| bad());
        let boolean = |v: &str| match v.trim() {
            "true" | "1" => Ok(true),
            "false" | "0" => Ok(false),
            _ => Err(bad()),
        };
        let u32_of = |v: &str| int(v).and_then(|n| u32::try_from(n).map_err(|_| bad()));
        let i32_of = |v: &str| int(v).and_then(|n| i32::try_from(n).map_err(|_| bad()));
        let value = value.trim();
        if value.contains('=') {
            let body = value.trim_start_matches('{').trim_end_matches('}');
            for kv in body.split(';').filter(|kv| !kv.trim().is_empty()) {
                let (k, v) = kv.split_once('=').ok_or_else(bad)?;
                match k.trim() {
                    "window_bits" => self.window_bits = i32_of(v)?,
                    "level" => self.level = i32_of(v)?,
                    "strategy" => self.strategy = i32_of(v)?,
                    "max_dict_bytes" => self.max_dict_bytes = u32_of(v)?,
                    "zstd_max_train_bytes" => self.zstd_max_train_bytes = u32_of(v)?,
                    "parallel_threads" => self.parallel_threads = u32_of(v)?,
                    "enabled" => self.enabled = boolean(v)?,
                    "max_dict_buffer_bytes" => {
                        self.max_dict_buffer_bytes = v.trim().parse().map_err(|_| bad())?
                    }
                    "use_zstd_dict_trainer" => self.use_zstd_dict_trainer = boolean(v)?,
                    // Options of later RocksDB releases are ignored, as
                    // RocksDB ignores unknown options in OPTIONS files.
                    _ => {}
                }
            }
            return Ok(());
        }
        let fields: Vec<&str> = value.split(':').collect();
        if fields.len() < 3 || fields.len() > 9 {
            return Err(bad());
        }
        self.window_bits = i32_of(fields[0])?;
        self.level = i32_of(fields[1])?;
        self.strategy = i32_of(fields[2])?;
        let mut rest = &fields[3..];
        if let [d, tail @ ..] = rest {
            self.max_dict_bytes = u32_of(d)?;
            rest = tail;
        }
        if let [z, tail @ ..] = rest {
            self.zstd_max_train_bytes = u32_of(z)?;
            rest = tail;
        }
        // parallel_threads precedes `enabled` but was added later: a last
        // field here is `enabled`.
        if let [p, tail @ ..] = rest {
            if tail.is_empty() {
                self.enabled = boolean(p)?;
            } else {
                self.parallel_threads = u32_of(p)?;
            }
            rest = tail;
        }
        if let [e, tail @ ..] = rest {
            self.enabled = boolean(e)?;
            rest = tail;
        }
        if let [b, tail @ ..] = rest {
            self.max_dict_buffer_bytes = b.trim().parse().map_err(|_| bad())?;
            rest = tail;
        }
        if let [t, tail @ ..] = rest {
            self.use_zstd_dict_trainer = boolean(t)?;
            rest = tail;
        }
        if !rest.is_empty() {
            return Err(bad());
        }
        Ok(())
    }

    /// How much uncompressed data a table holds back before building its
    /// dictionary (RocksDB's `buffer_limit`; 0: no limit).
    pub fn buffer_limit(&self, target_file_size: u64) -> u64 {
        match (target_file_size, self.max_dict_buffer_bytes) {
            (0, b) => b,
            (t, 0) => t,
            (t, b) => t.min(b),
        }
    }
}

/// RocksDB's prime stride through the held-back blocks: it is coprime with
/// every block count, so sampling visits each block at most once.
const PRIME_GENERATOR: u64 = 545_055_921_143;

/// Builds a table's compression dictionary from its held-back data blocks,
/// as RocksDB's `EnterUnbuffered`: samples are taken from the middle block
/// onward, striding by a prime, until `zstd_max_train_bytes` (or, for raw
/// dictionaries, `max_dict_bytes`) are gathered. An empty result means no
/// dictionary (no blocks, or ZSTD could not train on the samples).
pub fn build_dictionary(blocks: &[Vec<u8>], opts: &CompressionOptions) -> Vec<u8> {
    let n = blocks.len();
    if n == 0 || opts.max_dict_bytes == 0 {
        return Vec::new();
    }
    let sample_bytes = if opts.zstd_max_train_bytes > 0 {
        opts.zstd_max_train_bytes
    } else {
        opts.max_dict_bytes
    } as usize;
    let stride = (PRIME_GENERATOR % n as u64) as usize;
    let mut samples = Vec::with_capacity(sample_bytes.min(blocks.iter().map(Vec::len).sum()));
    let mut lens = Vec::new();
    let mut idx = n / 2;
    for _ in 0..n {
        if samples.len() >= sample_bytes {
            break;
        }
        let take = (sample_bytes - samples.len()).min(blocks[idx].len());
        samples.extend_from_slice(&blocks[idx][..take]);
        lens.push(take);
        idx += stride;
        if idx >= n {
            idx -= n;
        }
    }
    if opts.zstd_max_train_bytes == 0 {
        return samples;
    }
    let max = opts.max_dict_bytes as usize;
    if opts.use_zstd_dict_trainer {
        let mut dict = Vec::with_capacity(max);
        match zstd::zstd_safe::train_from_buffer(&mut dict, &samples, &lens) {
            Ok(_) => dict,
            Err(_) => Vec::new(),
        }
    } else {
        finalize_dictionary(&samples, &lens, max, opts.codec_level().unwrap_or(3))
    }
}

/// ZSTD's `ZDICT_finalizeDictionary` over the first `max` sample bytes as
/// content (RocksDB's `ZSTD_FinalizeDictionary`); empty on failure.
fn finalize_dictionary(samples: &[u8], lens: &[usize], max: usize, level: i32) -> Vec<u8> {
    if samples.is_empty() || lens.is_empty() {
        return Vec::new();
    }
    let content = &samples[..samples.len().min(max)];
    let mut dict = vec![0u8; max];
    let params = zstd_sys::ZDICT_params_t {
        compressionLevel: level,
        notificationLevel: 0,
        dictID: 0,
    };
    // SAFETY: `dict` is writable for `max` bytes; `content` and `samples`
    // are readable for their lengths; `lens` holds `lens.len()` sizes that
    // sum to `samples.len()` (build_dictionary appends exactly those
    // bytes), as ZDICT requires; zstd does not keep any pointer after the
    // call returns.
    let n = unsafe {
        zstd_sys::ZDICT_finalizeDictionary(
            dict.as_mut_ptr().cast(),
            max,
            content.as_ptr().cast(),
            content.len(),
            samples.as_ptr().cast(),
            lens.as_ptr(),
            lens.len() as u32,
            params,
        )
    };
    // SAFETY: ZDICT_isError only inspects the returned code.
    if unsafe { zstd_sys::ZDICT_isError(n) } != 0 || n > max {
        return Vec::new();
    }
    dict.truncate(n);
    dict
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_match_rocksdb() {
        let o = CompressionOptions::default();
        assert_eq!(
            o.to_property_string(),
            "window_bits=-14; level=32767; strategy=0; max_dict_bytes=0; zstd_max_train_bytes=0; \
             enabled=0; max_dict_buffer_bytes=0; use_zstd_dict_trainer=1; "
        );
        // RocksDB 7.8.3's OPTIONS file line for db_bench
        // --compression_max_dict_bytes=16384 --compression_zstd_max_train_bytes=65536.
        let rocks = "{max_dict_buffer_bytes=0;enabled=false;max_dict_bytes=16384;parallel_threads=1;zstd_max_train_bytes=65536;level=32767;use_zstd_dict_trainer=true;strategy=0;window_bits=-14;}";
        let mut p = CompressionOptions::default();
        p.parse_into("compression_opts", rocks).unwrap();
        assert_eq!(p.max_dict_bytes, 16384);
        assert_eq!(p.zstd_max_train_bytes, 65536);
        assert_eq!(p.to_options_string(), rocks);
    }

    #[test]
    fn colon_form_as_rocksdb_parses_it() {
        let mut o = CompressionOptions::default();
        o.parse_into("compression_opts", "-15:4:1:1024").unwrap();
        assert_eq!(
            (o.window_bits, o.level, o.strategy, o.max_dict_bytes),
            (-15, 4, 1, 1024)
        );
        // Six fields: the sixth is `enabled`, not parallel_threads.
        let mut o = CompressionOptions::default();
        o.parse_into("bottommost_compression_opts", "0:6:0:0:4:true")
            .unwrap();
        assert_eq!(
            (
                o.level,
                o.zstd_max_train_bytes,
                o.enabled,
                o.parallel_threads
            ),
            (6, 4, true, 1)
        );
        // Seven: parallel_threads, then enabled.
        let mut o = CompressionOptions::default();
        o.parse_into("compression_opts", "0:6:0:0:4:3:true:100:false")
            .unwrap();
        assert_eq!(o.parallel_threads, 3);
        assert!(o.enabled && !o.use_zstd_dict_trainer);
        assert_eq!(o.max_dict_buffer_bytes, 100);
        for bad in [
            "",
            "1:2",
            "a:b:c",
            "0:0:0:0:0:0:true:0:true:extra",
            "{level=x}",
        ] {
            assert!(
                CompressionOptions::default()
                    .parse_into("compression_opts", bad)
                    .is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn buffer_limit_is_rocksdbs() {
        let mut o = CompressionOptions::default();
        assert_eq!(o.buffer_limit(0), 0);
        assert_eq!(o.buffer_limit(64 << 20), 64 << 20);
        o.max_dict_buffer_bytes = 1 << 20;
        assert_eq!(o.buffer_limit(0), 1 << 20);
        assert_eq!(o.buffer_limit(64 << 20), 1 << 20);
    }

    fn blocks(n: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| {
                (0..1000u32)
                    .flat_map(|j| {
                        format!("key{:06}value{}", i * 1000 + j as usize, j % 7).into_bytes()
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn raw_dictionary_samples_from_the_middle_by_prime_stride() {
        let b: Vec<Vec<u8>> = (0..5u8).map(|i| vec![i; 100]).collect();
        let o = CompressionOptions {
            max_dict_bytes: 250,
            ..Default::default()
        };
        // 545055921143 % 5 = 3: blocks 2, 0, 3 (50 bytes of it).
        let d = build_dictionary(&b, &o);
        let mut want = vec![2u8; 100];
        want.extend([0u8; 100]);
        want.extend([3u8; 50]);
        assert_eq!(d, want);
        assert!(build_dictionary(&[], &o).is_empty());
    }

    #[test]
    fn trained_and_finalized_dictionaries_are_zstd_dictionaries() {
        let b = blocks(40);
        for trainer in [true, false] {
            let o = CompressionOptions {
                max_dict_bytes: 4096,
                zstd_max_train_bytes: 200_000,
                use_zstd_dict_trainer: trainer,
                ..Default::default()
            };
            let d = build_dictionary(&b, &o);
            assert!(
                !d.is_empty() && d.len() <= 4096,
                "trainer={trainer}: {}",
                d.len()
            );
            // The ZSTD dictionary magic.
            assert_eq!(&d[..4], &[0x37, 0xa4, 0x30, 0xec], "trainer={trainer}");
        }
        // Too little to train on: no dictionary, not an error.
        let o = CompressionOptions {
            max_dict_bytes: 4096,
            zstd_max_train_bytes: 100,
            ..Default::default()
        };
        assert!(build_dictionary(&b[..1], &o).is_empty());
    }
}
