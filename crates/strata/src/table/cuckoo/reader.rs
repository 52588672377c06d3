//! Opens and reads a CuckooTable file (RocksDB's `CuckooTableReader`).
//!
//! The whole file is read into memory (or mapped, with `allow_mmap_reads`)
//! at open. One pass over the buckets checks them against the properties
//! and sorts the occupied ones by key, once per table (RocksDB sorts at
//! each iterator's first move); iterators walk that order both ways, and
//! point lookups probe the hash table as RocksDB's `Get` does.
//!
//! Invariants: the data section is exactly `num_buckets * bucket_len`
//! bytes, so every bucket index below `num_buckets` (hashes are below
//! `table_size`, blocks end before `num_buckets`) is in bounds; every
//! occupied bucket of an internal-key file holds a parseable Put or Delete
//! key; damage found at open is `Corruption`, never a panic.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use super::hash::CuckooHasher;
use super::{
    CUCKOO_BLOCK_SIZE_PROPERTY, EMPTY_KEY_PROPERTY, HASH_TABLE_SIZE_PROPERTY,
    IDENTITY_AS_FIRST_HASH_PROPERTY, IS_LAST_LEVEL_PROPERTY, MAX_NUM_HASH_FUNC,
    NUM_HASH_FUNC_PROPERTY, USE_MODULE_HASH_PROPERTY, USER_KEY_LENGTH_PROPERTY,
    VALUE_LENGTH_PROPERTY,
};
use crate::error::{Error, Result};
use crate::format::dbformat::{
    InternalKeyComparator, ValueType, extract_user_key, parse_internal_key,
};
use crate::format::iterator::InternalIterator;
use crate::fs::RandomAccessFile;
use crate::table::footer::{BlockHandle, Footer, TableKind};
use crate::table::options::TableOptions;
use crate::table::plain::reader::{TableBytes, block_bytes, read_meta};
use crate::table::table_properties::TableProperties;

/// The shape of a table's hash table, from its properties.
#[derive(Clone, Debug)]
struct Geometry {
    /// Buckets hold user keys only (sequence 0, Put).
    last_level: bool,
    key_len: usize,
    user_key_len: usize,
    value_len: usize,
    bucket_len: usize,
    num_buckets: usize,
    block_size: u64,
    num_hash_func: u32,
    /// `None`: lookups use the sorted order (an identity-hash file with
    /// keys under 8 bytes, which RocksDB hashes from bytes past the key).
    hasher: Option<CuckooHasher>,
    /// Contents of an empty bucket's key (`key_len` bytes).
    unused_key: Vec<u8>,
}

impl Geometry {
    fn bucket<'d>(&self, data: &'d [u8], b: usize) -> &'d [u8] {
        let start = b * self.bucket_len;
        data.get(start..start + self.bucket_len).unwrap_or_default()
    }

    fn stored_key<'d>(&self, data: &'d [u8], b: usize) -> &'d [u8] {
        self.bucket(data, b).get(..self.key_len).unwrap_or_default()
    }

    fn user_key<'d>(&self, data: &'d [u8], b: usize) -> &'d [u8] {
        self.bucket(data, b)
            .get(..self.user_key_len)
            .unwrap_or_default()
    }

    /// The internal key of bucket `b` into `out`.
    fn internal_key(&self, data: &[u8], b: usize, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(self.stored_key(data, b));
        if self.last_level {
            // Sequence 0, Put: the trailer (0 << 8) | kTypeValue.
            out.extend_from_slice(&u64::from(ValueType::Value as u8).to_le_bytes());
        }
    }

    fn value<'d>(&self, data: &'d [u8], b: usize) -> &'d [u8] {
        self.bucket(data, b)
            .get(self.key_len..self.key_len + self.value_len)
            .unwrap_or_default()
    }

    /// The occupied buckets, sorted by internal key; checks each and their
    /// count.
    fn scan(
        &self,
        data: &[u8],
        icmp: &InternalKeyComparator,
        num_entries: u64,
        name: &str,
    ) -> Result<Vec<u32>> {
        let mut sorted = Vec::with_capacity((num_entries as usize).min(self.num_buckets));
        for b in 0..self.num_buckets {
            let key = self.stored_key(data, b);
            if key == self.unused_key.as_slice() {
                continue;
            }
            if !self.last_level {
                match parse_internal_key(key) {
                    Some(p) if matches!(p.value_type, ValueType::Value | ValueType::Deletion) => {}
                    _ => {
                        return Err(Error::corruption(
                            name,
                            (b * self.bucket_len) as u64,
                            "CuckooTable bucket holds no valid Put or Delete key",
                        ));
                    }
                }
            }
            sorted.push(b as u32);
        }
        if sorted.len() as u64 != num_entries {
            return Err(Error::corruption(
                name,
                0,
                format!(
                    "CuckooTable has {} occupied buckets but {num_entries} entries",
                    sorted.len()
                ),
            ));
        }
        let ucmp = icmp.user_comparator();
        if self.last_level {
            sorted.sort_by(|&a, &b| {
                ucmp.compare(
                    self.user_key(data, a as usize),
                    self.user_key(data, b as usize),
                )
            });
        } else {
            sorted.sort_by(|&a, &b| {
                icmp.compare(
                    self.stored_key(data, a as usize),
                    self.stored_key(data, b as usize),
                )
            });
        }
        Ok(sorted)
    }

    /// RocksDB's `Get` probe: the bucket holding `user_key`, if the hash
    /// table has it. REQUIRES: `self.hasher` is set.
    fn probe(
        &self,
        data: &[u8],
        hasher: &CuckooHasher,
        icmp: &InternalKeyComparator,
        user_key: &[u8],
    ) -> Option<usize> {
        if user_key.len() != self.user_key_len {
            return None;
        }
        let ucmp = icmp.user_comparator();
        let unused = self.unused_key.get(..self.user_key_len).unwrap_or_default();
        for f in 0..self.num_hash_func {
            let start = hasher.hash(user_key, f);
            for b in start..start + self.block_size {
                let b = b as usize;
                debug_assert!(b < self.num_buckets);
                let k = self.user_key(data, b);
                if ucmp.compare(k, unused) == Ordering::Equal {
                    return None;
                }
                if ucmp.compare(k, user_key) == Ordering::Equal {
                    return Some(b);
                }
            }
        }
        None
    }
}

/// An open CuckooTable.
pub struct CuckooTable {
    file: Arc<dyn RandomAccessFile>,
    name: Arc<str>,
    file_size: u64,
    footer: Footer,
    meta: BTreeMap<String, BlockHandle>,
    props: TableProperties,
    /// The buckets (the file's first `data_size` bytes).
    data: TableBytes,
    icmp: InternalKeyComparator,
    geo: Geometry,
    /// Occupied buckets in internal-key order.
    sorted: Vec<u32>,
}

impl std::fmt::Debug for CuckooTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CuckooTable")
            .field("name", &self.name)
            .field("file_size", &self.file_size)
            .field("entries", &self.sorted.len())
            .finish()
    }
}

/// A property of at least `len` bytes.
fn prop<'p>(props: &'p TableProperties, name: &str, key: &str, len: usize) -> Result<&'p [u8]> {
    match props.user_property(key) {
        Some(v) if v.len() >= len => Ok(v),
        Some(v) => Err(Error::corruption(
            name,
            0,
            format!("CuckooTable property {key} has {} bytes", v.len()),
        )),
        None => Err(Error::corruption(
            name,
            0,
            format!("CuckooTable property {key} not found"),
        )),
    }
}

fn u32_prop(props: &TableProperties, name: &str, key: &str) -> Result<u32> {
    let v = prop(props, name, key, 4)?;
    Ok(u32::from_le_bytes([v[0], v[1], v[2], v[3]]))
}

fn bool_prop(props: &TableProperties, name: &str, key: &str) -> Result<bool> {
    Ok(prop(props, name, key, 1)?[0] != 0)
}

impl CuckooTable {
    /// Opens the CuckooTable in `file` whose footer is `footer`.
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        name: &str,
        file_size: u64,
        opts: &TableOptions,
        footer: Footer,
    ) -> Result<CuckooTable> {
        debug_assert_eq!(footer.kind, TableKind::Cuckoo);
        let size = usize::try_from(file_size).map_err(|_| {
            Error::NotSupported(format!("{name}: CuckooTable of {file_size} bytes"))
        })?;
        let mapped = file
            .mapped()
            .filter(|m| (**m).as_ref().len() as u64 == file_size);
        let mut read = Vec::new();
        let bytes: &[u8] = match &mapped {
            Some(m) => (**m).as_ref(),
            None => {
                read = crate::fs::read_exact_at(&*file, name, 0, size)?;
                &read
            }
        };
        let name: Arc<str> = Arc::from(name);
        let (meta, props) = read_meta(&name, &footer, |h| Ok(Arc::from(block_bytes(bytes, h))))?;
        let geo = geometry(&props, &name)?;
        let data_len = geo.num_buckets * geo.bucket_len;
        let first_meta = meta
            .values()
            .map(|h| h.offset)
            .chain([footer.metaindex_handle.offset])
            .min()
            .unwrap_or(footer.offset);
        if props.data_size != data_len as u64 || data_len as u64 > first_meta {
            return Err(Error::corruption(
                &*name,
                0,
                format!(
                    "CuckooTable data size {} does not match {} buckets of {} bytes before \
                     the meta blocks at {first_meta}",
                    props.data_size, geo.num_buckets, geo.bucket_len
                ),
            ));
        }
        let icmp = InternalKeyComparator::new(opts.comparator.clone());
        let sorted = geo.scan(&bytes[..data_len], &icmp, props.num_entries, &name)?;
        Ok(CuckooTable {
            file,
            name,
            file_size,
            footer,
            meta,
            props,
            data: match mapped {
                Some(m) => TableBytes::Mapped(m, data_len),
                None => {
                    read.truncate(data_len);
                    TableBytes::Owned(read)
                }
            },
            icmp,
            geo,
            sorted,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    pub fn footer(&self) -> &Footer {
        &self.footer
    }

    pub fn properties(&self) -> &TableProperties {
        &self.props
    }

    pub fn meta_blocks(&self) -> &BTreeMap<String, BlockHandle> {
        &self.meta
    }

    /// Whether buckets hold user keys only (a RocksDB "last level" file).
    pub fn is_last_level(&self) -> bool {
        self.geo.last_level
    }

    /// Hash functions the table uses.
    pub fn num_hash_func(&self) -> u32 {
        self.geo.num_hash_func
    }

    /// The hash table bytes (for comparing layouts).
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// Bytes held in memory: the data (unless mapped) and the sorted order.
    pub fn memory_usage(&self) -> u64 {
        let data = match &self.data {
            TableBytes::Owned(b) => b.len(),
            TableBytes::Mapped(..) => 0,
        };
        (data + self.sorted.len() * 4) as u64
    }

    /// The point entry of `user_key`, if any: its internal key and value.
    fn find(&self, user_key: &[u8]) -> Option<usize> {
        match &self.geo.hasher {
            Some(h) => self.geo.probe(&self.data, h, &self.icmp, user_key),
            None => {
                let ucmp = self.icmp.user_comparator();
                let i = self.sorted.partition_point(|&b| {
                    ucmp.compare(self.geo.user_key(&self.data, b as usize), user_key)
                        == Ordering::Less
                });
                let b = *self.sorted.get(i)? as usize;
                (ucmp.compare(self.geo.user_key(&self.data, b), user_key) == Ordering::Equal)
                    .then_some(b)
            }
        }
    }

    /// The entry for the internal key `target`: the table's entry of its
    /// user key if that entry is visible at `target`'s sequence number.
    pub fn get(&self, target: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
        let b = self.find(extract_user_key(target))?;
        let mut key = Vec::new();
        self.geo.internal_key(&self.data, b, &mut key);
        (self.icmp.compare(&key, target) != Ordering::Less)
            .then(|| (key, self.geo.value(&self.data, b).to_vec()))
    }

    /// Approximate file offset where entries at or after `ikey` begin:
    /// the data size scaled by the entries before it.
    pub fn approximate_offset_of(&self, ikey: &[u8]) -> u64 {
        let n = self.sorted.len() as u64;
        if n == 0 {
            return 0;
        }
        let i = self.lower_bound(ikey) as u64;
        self.props.data_size / n * i + self.props.data_size % n * i / n
    }

    /// Index in `sorted` of the first entry at or after `target`.
    fn lower_bound(&self, target: &[u8]) -> usize {
        let mut key = Vec::new();
        self.sorted.partition_point(|&b| {
            self.geo.internal_key(&self.data, b as usize, &mut key);
            self.icmp.compare(&key, target) == Ordering::Less
        })
    }

    /// Re-reads the data and checks it: every bucket against the
    /// properties (as at open), and every entry reachable by its hash
    /// probe (CuckooTable stores no checksums: this is the check there is).
    pub fn verify(&self) -> Result<()> {
        let bytes = crate::fs::read_exact_at(&*self.file, &self.name, 0, self.data.len())?;
        let sorted = self
            .geo
            .scan(&bytes, &self.icmp, self.props.num_entries, &self.name)?;
        if let Some(h) = &self.geo.hasher {
            for &b in &sorted {
                let b = b as usize;
                let key = self.geo.user_key(&bytes, b);
                if self.geo.probe(&bytes, h, &self.icmp, key) != Some(b) {
                    return Err(Error::corruption(
                        &*self.name,
                        (b * self.geo.bucket_len) as u64,
                        "CuckooTable entry is not where its hash leads",
                    ));
                }
            }
        }
        Ok(())
    }

    /// An iterator over all entries in internal-key order.
    pub fn iter(self: &Arc<Self>) -> CuckooTableIter {
        Self::iter_on(Arc::clone(self))
    }

    /// An iterator that borrows the table.
    pub fn lookup_iter(&self) -> CuckooTableIter<&CuckooTable> {
        Self::iter_on(self)
    }

    fn iter_on<T: std::ops::Deref<Target = CuckooTable>>(table: T) -> CuckooTableIter<T> {
        CuckooTableIter {
            pos: table.sorted.len(),
            table,
            key: Vec::new(),
        }
    }
}

/// The table's geometry from its properties, checked.
fn geometry(props: &TableProperties, name: &str) -> Result<Geometry> {
    let bad = |msg: String| Error::corruption(name, 0, msg);
    let num_hash_func = u32_prop(props, name, NUM_HASH_FUNC_PROPERTY)?;
    let user_key_len = u32_prop(props, name, USER_KEY_LENGTH_PROPERTY)? as usize;
    let value_len = u32_prop(props, name, VALUE_LENGTH_PROPERTY)? as usize;
    let table_size = {
        let v = prop(props, name, HASH_TABLE_SIZE_PROPERTY, 8)?;
        let mut b = [0u8; 8];
        b.copy_from_slice(&v[..8]);
        u64::from_le_bytes(b)
    };
    let last_level = bool_prop(props, name, IS_LAST_LEVEL_PROPERTY)?;
    let identity = bool_prop(props, name, IDENTITY_AS_FIRST_HASH_PROPERTY)?;
    let use_module_hash = bool_prop(props, name, USE_MODULE_HASH_PROPERTY)?;
    let block_size = u32_prop(props, name, CUCKOO_BLOCK_SIZE_PROPERTY)?;
    let key_len = usize::try_from(props.fixed_key_len)
        .map_err(|_| bad(format!("bad fixed key length {}", props.fixed_key_len)))?;
    let unused_key = prop(props, name, EMPTY_KEY_PROPERTY, 0)?.to_vec();
    let empty = Geometry {
        last_level,
        key_len,
        user_key_len,
        value_len,
        bucket_len: 0,
        num_buckets: 0,
        block_size: 1,
        num_hash_func: 0,
        hasher: None,
        unused_key: Vec::new(),
    };
    if props.num_entries == 0 {
        // RocksDB writes no buckets for an empty table.
        return Ok(empty);
    }
    if key_len != user_key_len + if last_level { 0 } else { 8 } || key_len == 0 {
        return Err(bad(format!(
            "CuckooTable key length {key_len} does not fit user keys of {user_key_len} bytes"
        )));
    }
    if unused_key.len() != key_len {
        return Err(bad(format!(
            "CuckooTable empty-bucket key has {} bytes, not {key_len}",
            unused_key.len()
        )));
    }
    if num_hash_func == 0 || num_hash_func > MAX_NUM_HASH_FUNC {
        return Err(bad(format!(
            "CuckooTable uses {num_hash_func} hash functions"
        )));
    }
    if block_size == 0 {
        return Err(bad("CuckooTable cuckoo block size is 0".into()));
    }
    if table_size == 0 || (!use_module_hash && !table_size.is_power_of_two()) {
        return Err(bad(format!("CuckooTable hash table size {table_size}")));
    }
    let bucket_len = key_len + value_len;
    let num_buckets = table_size
        .checked_add(u64::from(block_size) - 1)
        .filter(|&n| n < u64::from(u32::MAX))
        .and_then(|n| usize::try_from(n).ok())
        .filter(|n| n.checked_mul(bucket_len).is_some())
        .ok_or_else(|| bad(format!("CuckooTable hash table size {table_size}")))?;
    let hasher = (!identity || user_key_len >= 8).then_some(CuckooHasher {
        table_size,
        use_module_hash,
        identity_as_first_hash: identity,
    });
    Ok(Geometry {
        bucket_len,
        num_buckets,
        block_size: u64::from(block_size),
        num_hash_func,
        hasher,
        unused_key,
        ..empty
    })
}

/// An iterator over a CuckooTable in internal-key order (both
/// directions). `T` holds the table: an `Arc` or a reference.
pub struct CuckooTableIter<T: std::ops::Deref<Target = CuckooTable> = Arc<CuckooTable>> {
    table: T,
    /// Index in the table's sorted order; `sorted.len()`: invalid.
    pos: usize,
    key: Vec<u8>,
}

impl<T: std::ops::Deref<Target = CuckooTable>> std::fmt::Debug for CuckooTableIter<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CuckooTableIter")
            .field("table", &self.table.name)
            .field("pos", &self.pos)
            .finish()
    }
}

impl<T: std::ops::Deref<Target = CuckooTable>> CuckooTableIter<T> {
    fn set(&mut self, pos: usize) {
        self.pos = pos;
        let t: &CuckooTable = &self.table;
        if let Some(&b) = t.sorted.get(pos) {
            t.geo.internal_key(&t.data, b as usize, &mut self.key);
        } else {
            self.pos = t.sorted.len();
        }
    }
}

impl<T: std::ops::Deref<Target = CuckooTable> + Send> InternalIterator for CuckooTableIter<T> {
    fn valid(&self) -> bool {
        self.pos < self.table.sorted.len()
    }

    fn seek_to_first(&mut self) {
        self.set(0);
    }

    fn seek_to_last(&mut self) {
        let n = self.table.sorted.len();
        self.set(n.wrapping_sub(1));
    }

    fn seek(&mut self, target: &[u8]) {
        let i = self.table.lower_bound(target);
        self.set(i);
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        let i = self.table.lower_bound(target);
        self.set(i);
        if !self.valid() || self.table.icmp.compare(&self.key, target) == Ordering::Greater {
            self.set(i.wrapping_sub(1));
        }
    }

    fn next(&mut self) {
        debug_assert!(self.valid());
        self.set(self.pos + 1);
    }

    fn prev(&mut self) {
        debug_assert!(self.valid());
        self.set(self.pos.wrapping_sub(1));
    }

    fn key(&self) -> &[u8] {
        debug_assert!(self.valid());
        &self.key
    }

    fn value(&self) -> &[u8] {
        debug_assert!(self.valid());
        let t: &CuckooTable = &self.table;
        t.sorted
            .get(self.pos)
            .map_or(&[][..], |&b| t.geo.value(&t.data, b as usize))
    }

    fn status(&self) -> Result<()> {
        Ok(())
    }
}
