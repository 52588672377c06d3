//! Writes a CuckooTable file (RocksDB's `CuckooTableBuilder`), or, when
//! the entries do not fit the format, the same entries as a block-based
//! table (see the module comment of `table::cuckoo`).
//!
//! Invariants: entries arrive in strictly increasing internal-key order
//! (checked); nothing is written before `finish`, which picks the format
//! from the whole set of entries, so no entry is ever dropped.

use std::cmp::Ordering;

use super::hash::CuckooHasher;
use super::layout::{EMPTY, LayoutParams, make_hash_table};
use super::{
    CUCKOO_BLOCK_SIZE_PROPERTY, CuckooTableOptions, EMPTY_KEY_PROPERTY, HASH_TABLE_SIZE_PROPERTY,
    IDENTITY_AS_FIRST_HASH_PROPERTY, IS_LAST_LEVEL_PROPERTY, MAX_NUM_HASH_FUNC,
    NUM_HASH_FUNC_PROPERTY, USE_MODULE_HASH_PROPERTY, USER_KEY_LENGTH_PROPERTY,
    VALUE_LENGTH_PROPERTY,
};
use crate::error::{Error, Result};
use crate::format::dbformat::{
    InternalKeyComparator, ValueType, extract_user_key, make_internal_key, parse_internal_key,
};
use crate::fs::WritableFile;
use crate::table::block_builder::BlockBuilder;
use crate::table::factory::TableIdentity;
use crate::table::footer::{BlockHandle, Footer, TableKind};
use crate::table::options::TableOptions;
use crate::table::table_builder::{BlockBasedTableBuilder, TableInfo};
use crate::table::table_properties::{PROPERTIES_BLOCK, TableProperties};
use crate::util::checksum::ChecksumType;

/// Builds one CuckooTable file (or its block-based stand-in).
pub struct CuckooTableBuilder {
    opts: TableOptions,
    copts: CuckooTableOptions,
    icmp: InternalKeyComparator,
    file: Box<dyn WritableFile>,
    /// Every point entry, in order: internal key and value.
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    tombstones: Vec<(Vec<u8>, Vec<u8>, u64)>,
    /// Key and value bytes buffered.
    bytes: u64,
    identity: Option<(String, String, String, u64)>,
    user_props: Vec<(String, Vec<u8>)>,
}

impl std::fmt::Debug for CuckooTableBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CuckooTableBuilder")
            .field("entries", &self.entries.len())
            .field("tombstones", &self.tombstones.len())
            .finish()
    }
}

/// A cuckoo file's contents, decided at finish.
struct Plan {
    last_level: bool,
    /// Stored key length (user key for a last-level file, else internal).
    key_size: usize,
    user_key_size: usize,
    value_size: usize,
    /// Entry indexes in hash-table order: puts, then deletions.
    order: Vec<usize>,
    table_size: u64,
    num_hash_func: u32,
    buckets: Vec<u32>,
    /// Contents of an empty bucket (`key_size + value_size` bytes).
    empty_bucket: Vec<u8>,
    num_deletions: u64,
}

impl CuckooTableBuilder {
    /// Starts a table written to `file`, which must be empty.
    /// REQUIRES: `opts.cuckoo` is set.
    pub fn new(opts: TableOptions, file: Box<dyn WritableFile>) -> Result<CuckooTableBuilder> {
        let copts = opts.cuckoo.clone().unwrap_or_default();
        copts.validate().map_err(Error::InvalidArgument)?;
        Ok(CuckooTableBuilder {
            icmp: InternalKeyComparator::new(opts.comparator.clone()),
            opts,
            copts,
            file,
            entries: Vec::new(),
            tombstones: Vec::new(),
            bytes: 0,
            identity: None,
            user_props: Vec::new(),
        })
    }

    /// Sets properties that identify the writer.
    pub fn set_identity(&mut self, id: &TableIdentity<'_>, file_number: u64) {
        self.identity = Some((
            id.db_id.to_string(),
            id.session_id.to_string(),
            id.host_id.to_string(),
            file_number,
        ));
    }

    pub fn add_user_property(&mut self, name: &str, value: Vec<u8>) {
        self.user_props.push((name.to_string(), value));
    }

    /// Adds a point entry. REQUIRES: `ikey` is greater than every key
    /// added before.
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        if parse_internal_key(ikey).is_none() {
            return Err(Error::InvalidArgument(
                "table key is not a valid internal key".into(),
            ));
        }
        if let Some((last, _)) = self.entries.last()
            && self.icmp.compare(last, ikey) != Ordering::Less
        {
            return Err(Error::InvalidArgument(
                "keys must be added to a table in strictly increasing order".into(),
            ));
        }
        self.bytes += (ikey.len() + value.len()) as u64;
        self.entries.push((ikey.to_vec(), value.to_vec()));
        Ok(())
    }

    /// Buffers a range tombstone; the table is then written block-based
    /// (a CuckooTable cannot hold one).
    pub fn add_range_tombstone(&mut self, begin: &[u8], end: &[u8], seq: u64) -> Result<()> {
        self.tombstones.push((begin.to_vec(), end.to_vec(), seq));
        Ok(())
    }

    pub fn num_entries(&self) -> u64 {
        self.entries.len() as u64
    }

    /// The file size the entries will take (RocksDB's `FileSize`
    /// estimate: bytes over the table ratio).
    pub fn estimated_file_size(&self) -> u64 {
        (self.bytes as f64 / self.copts.hash_table_ratio) as u64
    }

    /// The user key of the last entry added.
    pub fn last_user_key(&self) -> &[u8] {
        self.entries
            .last()
            .map_or(&[][..], |(k, _)| extract_user_key(k))
    }

    /// Writes the table, syncs if asked, and closes the file. The result's
    /// `block_based_fallback` says why, if the table is block-based.
    pub fn finish(self, sync: bool) -> Result<TableInfo> {
        match self.plan() {
            Ok(plan) => self.write_cuckoo(plan, sync),
            Err(reason) => self.write_block_based(reason, sync),
        }
    }

    /// Decides the cuckoo layout, or why there is none.
    fn plan(&self) -> std::result::Result<Plan, String> {
        if !self.tombstones.is_empty() {
            return Err("the table has range tombstones".into());
        }
        let n = self.entries.len();
        if n as u64 >= u64::from(EMPTY - 1) {
            return Err(format!(
                "{n} entries (a CuckooTable holds fewer than 2^31 - 1)"
            ));
        }
        let ucmp = self.opts.comparator.clone();
        let mut last_level = false;
        let (mut key_size, mut value_size) = (0usize, None::<usize>);
        let mut user_key_size = 0;
        let (mut puts, mut dels) = (Vec::new(), Vec::new());
        let mut prev_user: Option<&[u8]> = None;
        for (i, (k, v)) in self.entries.iter().enumerate() {
            let Some(p) = parse_internal_key(k) else {
                return Err("an entry's key is not an internal key".into());
            };
            if i == 0 {
                last_level = p.sequence == 0;
                key_size = if last_level {
                    p.user_key.len()
                } else {
                    k.len()
                };
                user_key_size = p.user_key.len();
            }
            let size = if last_level {
                p.user_key.len()
            } else {
                k.len()
            };
            if size != key_size {
                return Err(format!(
                    "keys have different sizes ({key_size} and {size} bytes)"
                ));
            }
            if last_level && p.sequence != 0 {
                return Err(
                    "the first key has sequence number 0 (user keys only) but another has \
                     a sequence number"
                        .into(),
                );
            }
            if prev_user.is_some_and(|u| ucmp.compare(u, p.user_key) == Ordering::Equal) {
                return Err("a user key has several entries".into());
            }
            prev_user = Some(p.user_key);
            match p.value_type {
                ValueType::Value => {
                    if *value_size.get_or_insert(v.len()) != v.len() {
                        return Err(format!(
                            "values have different sizes ({} and {} bytes)",
                            value_size.unwrap_or(0),
                            v.len()
                        ));
                    }
                    puts.push(i);
                }
                ValueType::Deletion if last_level => {
                    return Err(
                        "a deletion in a file of sequence number 0 keys would read as a value"
                            .into(),
                    );
                }
                ValueType::Deletion => dels.push(i),
                t => {
                    return Err(format!(
                        "a {t:?} entry (a CuckooTable holds puts and deletions)"
                    ));
                }
            }
        }
        if self.copts.identity_as_first_hash && n > 0 && user_key_size < 8 {
            return Err(format!(
                "identity_as_first_hash needs user keys of at least 8 bytes, not \
                 {user_key_size}"
            ));
        }
        let value_size = value_size.unwrap_or(0);
        let num_deletions = dels.len() as u64;
        let mut order = puts;
        order.extend(dels);
        let ratio = self.copts.hash_table_ratio;
        let block = self.copts.cuckoo_block_size.max(1);
        let mut table_size: u64 = if self.copts.use_module_hash { 0 } else { 2 };
        if !self.copts.use_module_hash {
            for i in 1..=n as u64 {
                if (table_size as f64) < i as f64 / ratio {
                    table_size *= 2;
                }
            }
        }
        if n == 0 {
            return Ok(Plan {
                last_level,
                key_size,
                user_key_size,
                value_size,
                order,
                table_size,
                num_hash_func: 2,
                buckets: Vec::new(),
                empty_bucket: Vec::new(),
                num_deletions,
            });
        }
        if self.copts.use_module_hash {
            table_size = (n as f64 / ratio) as u64;
        }
        let user_key = |idx: u32| extract_user_key(&self.entries[order[idx as usize]].0);
        let layout = make_hash_table(
            n as u32,
            user_key,
            |a, b| ucmp.compare(a, b),
            LayoutParams {
                hasher: CuckooHasher {
                    table_size,
                    use_module_hash: self.copts.use_module_hash,
                    identity_as_first_hash: self.copts.identity_as_first_hash,
                },
                cuckoo_block_size: block,
                max_search_depth: self.copts.max_search_depth,
                max_num_hash_func: MAX_NUM_HASH_FUNC,
            },
        )?;
        let users = self.entries.iter().map(|(k, _)| extract_user_key(k));
        let smallest = users.clone().min().unwrap_or_default();
        let largest = users.max().unwrap_or_default();
        let unused = unused_user_key(smallest, largest)
            .ok_or_else(|| "no unused key is left to mark empty buckets".to_string())?;
        let mut empty_bucket = if last_level {
            unused
        } else {
            make_internal_key(&unused, 0, ValueType::Value)
        };
        empty_bucket.resize(key_size + value_size, b'a');
        Ok(Plan {
            last_level,
            key_size,
            user_key_size,
            value_size,
            order,
            table_size,
            num_hash_func: layout.num_hash_func,
            buckets: layout.buckets,
            empty_bucket,
            num_deletions,
        })
    }

    fn write_cuckoo(mut self, plan: Plan, sync: bool) -> Result<TableInfo> {
        let bucket_size = plan.key_size + plan.value_size;
        let filler = vec![b'a'; plan.value_size];
        let mut offset = 0u64;
        let mut buf = Vec::with_capacity(1 << 20);
        for &b in &plan.buckets {
            if b == EMPTY {
                buf.extend_from_slice(&plan.empty_bucket);
            } else {
                let (k, v) = &self.entries[plan.order[b as usize]];
                let p = parse_internal_key(k);
                let deletion = p
                    .as_ref()
                    .is_some_and(|p| p.value_type == ValueType::Deletion);
                buf.extend_from_slice(if plan.last_level {
                    extract_user_key(k)
                } else {
                    k
                });
                buf.extend_from_slice(if deletion { &filler } else { v });
            }
            debug_assert_eq!(buf.len() % bucket_size.max(1), 0);
            if buf.len() >= 1 << 20 {
                self.file.append(&buf)?;
                offset += buf.len() as u64;
                buf.clear();
            }
        }
        self.file.append(&buf)?;
        offset += buf.len() as u64;
        debug_assert_eq!(offset, (plan.buckets.len() * bucket_size) as u64);
        let n = self.entries.len() as u64;
        let mut props = TableProperties {
            num_data_blocks: 1,
            num_entries: n,
            num_deletions: plan.num_deletions,
            fixed_key_len: plan.key_size as u64,
            raw_key_size: n * plan.key_size as u64,
            raw_value_size: n * plan.value_size as u64,
            data_size: offset,
            ..TableProperties::for_new_table(&self.opts)
        };
        if let Some((db, session, host, number)) = &self.identity {
            props.db_id = db.as_bytes().to_vec();
            props.db_session_id = session.as_bytes().to_vec();
            props.db_host_id = host.as_bytes().to_vec();
            props.orig_file_number = *number;
        }
        for (name, v) in std::mem::take(&mut self.user_props) {
            props.user_collected.insert(name.into_bytes(), v);
        }
        let mut user = |name: &str, v: Vec<u8>| {
            props.user_collected.insert(name.as_bytes().to_vec(), v);
        };
        user(
            VALUE_LENGTH_PROPERTY,
            (plan.value_size as u64).to_le_bytes().to_vec(),
        );
        let mut empty_key = plan.empty_bucket.clone();
        empty_key.truncate(plan.key_size);
        user(EMPTY_KEY_PROPERTY, empty_key);
        user(
            NUM_HASH_FUNC_PROPERTY,
            plan.num_hash_func.to_le_bytes().to_vec(),
        );
        user(
            HASH_TABLE_SIZE_PROPERTY,
            plan.table_size.to_le_bytes().to_vec(),
        );
        user(IS_LAST_LEVEL_PROPERTY, vec![u8::from(plan.last_level)]);
        user(
            CUCKOO_BLOCK_SIZE_PROPERTY,
            self.copts.cuckoo_block_size.max(1).to_le_bytes().to_vec(),
        );
        user(
            IDENTITY_AS_FIRST_HASH_PROPERTY,
            vec![u8::from(self.copts.identity_as_first_hash)],
        );
        user(
            USE_MODULE_HASH_PROPERTY,
            vec![u8::from(self.copts.use_module_hash)],
        );
        user(
            USER_KEY_LENGTH_PROPERTY,
            (plan.user_key_size as u32).to_le_bytes().to_vec(),
        );
        let props_block = props.encode_block();
        let props_handle = BlockHandle::new(offset, props_block.len() as u64);
        self.file.append(&props_block)?;
        offset += props_block.len() as u64;
        let mut metaindex = BlockBuilder::new(1);
        metaindex.add(PROPERTIES_BLOCK.as_bytes(), &props_handle.encode());
        let metaindex_raw = metaindex.finish().to_vec();
        let metaindex_handle = BlockHandle::new(offset, metaindex_raw.len() as u64);
        self.file.append(&metaindex_raw)?;
        offset += metaindex_raw.len() as u64;
        // RocksDB writes format_version 1 with no checksums (FooterBuilder
        // with kCuckooTableMagicNumber): a 53-byte footer.
        let footer = Footer {
            kind: TableKind::Cuckoo,
            checksum_type: ChecksumType::NoChecksum,
            metaindex_handle,
            index_handle: BlockHandle::default(),
            format_version: 1,
            offset,
            base_context_checksum: 0,
        };
        let enc = footer.encode();
        self.file.append(&enc)?;
        offset += enc.len() as u64;
        if sync {
            self.file.sync()?;
        }
        self.file.close()?;
        let mut info = TableInfo {
            file_size: offset,
            num_entries: n,
            smallest_seqno: u64::MAX,
            ..Default::default()
        };
        for (k, _) in &self.entries {
            if let Some(p) = parse_internal_key(k) {
                info.smallest_seqno = info.smallest_seqno.min(p.sequence);
                info.largest_seqno = info.largest_seqno.max(p.sequence);
            }
        }
        if info.smallest_seqno == u64::MAX {
            info.smallest_seqno = 0;
        }
        if let (Some((first, _)), Some((last, _))) = (self.entries.first(), self.entries.last()) {
            info.smallest_key = first.clone();
            info.largest_key = last.clone();
        }
        info.properties = props;
        Ok(info)
    }

    /// Writes the entries as a block-based table with the same options.
    fn write_block_based(self, reason: String, sync: bool) -> Result<TableInfo> {
        let mut opts = self.opts;
        opts.cuckoo = None;
        opts.plain = None;
        let mut b = BlockBasedTableBuilder::new(opts, self.file)?;
        if let Some((db, session, host, number)) = &self.identity {
            b.set_identity(
                &TableIdentity {
                    db_id: db,
                    session_id: session,
                    host_id: host,
                },
                *number,
            );
        }
        for (name, v) in self.user_props {
            b.add_user_property(&name, v);
        }
        for (k, v) in &self.entries {
            b.add(k, v)?;
        }
        for (begin, end, seq) in &self.tombstones {
            b.add_range_tombstone(begin, end, *seq)?;
        }
        let mut info = b.finish(sync)?;
        info.block_based_fallback = Some(reason);
        Ok(info)
    }
}

/// A key of the same length absent from a file whose user keys lie in
/// `[smallest, largest]` (bytewise), found as RocksDB finds it: bytes of
/// `smallest` decremented from the last one until the key sorts below it
/// (each decrement is kept), else bytes of `largest` incremented likewise.
pub fn unused_user_key(smallest: &[u8], largest: &[u8]) -> Option<Vec<u8>> {
    let mut k = smallest.to_vec();
    for pos in (0..k.len()).rev() {
        k[pos] = k[pos].wrapping_sub(1);
        if k.as_slice() < smallest {
            return Some(k);
        }
    }
    let mut k = largest.to_vec();
    for pos in (0..k.len()).rev() {
        k[pos] = k[pos].wrapping_add(1);
        if k.as_slice() > largest {
            return Some(k);
        }
    }
    None
}
