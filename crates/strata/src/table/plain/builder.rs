//! Writes a PlainTable file (RocksDB's `PlainTableBuilder`): entries,
//! then with `store_index_in_file` the bloom and the hash index, then
//! properties, meta-index and a legacy footer. Meta blocks carry no
//! trailer (no compression type, no checksum), as in RocksDB.
//!
//! Invariants: keys arrive in strictly increasing internal-key order
//! (checked); the file never exceeds 2^31 - 1 bytes (offsets are 31-bit;
//! a larger table fails with `NotSupported` instead of wrapping).

use std::cmp::Ordering;

use super::bloom::PlainBloom;
use super::index::{INDEX_BLOCK, PlainIndexBuilder, slice_hash};
use super::key_coding::{EncodingType, KeyEncoder};
use super::{
    BLOOM_BLOCK, BLOOM_VERSION_PROPERTY, ENCODING_TYPE_PROPERTY, MAX_FILE_SIZE,
    NUM_BLOOM_BLOCKS_PROPERTY, PlainTableOptions,
};
use crate::error::{Error, Result};
use crate::format::dbformat::{InternalKeyComparator, ValueType, parse_internal_key};
use crate::fs::WritableFile;
use crate::table::block_builder::BlockBuilder;
use crate::table::footer::{BlockHandle, Footer, TableKind};
use crate::table::options::TableOptions;
use crate::table::table_builder::TableInfo;
use crate::table::table_properties::{PROPERTIES_BLOCK, TableProperties};
use crate::util::checksum::ChecksumType;
use crate::util::coding::put_varint32;

/// Builds one PlainTable file.
pub struct PlainTableBuilder {
    popts: PlainTableOptions,
    prefix_extractor: Option<crate::util::slice_transform::SliceTransformRef>,
    bloom_locality: u32,
    icmp: InternalKeyComparator,
    file: Box<dyn WritableFile>,
    offset: u64,
    encoder: KeyEncoder,
    buf: Vec<u8>,
    /// `store_index_in_file`: the index records and every key's (or
    /// prefix's) hash for the bloom.
    index: Option<PlainIndexBuilder>,
    key_hashes: Vec<u32>,
    last_key: Vec<u8>,
    props: TableProperties,
    info: TableInfo,
}

impl std::fmt::Debug for PlainTableBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlainTableBuilder")
            .field("offset", &self.offset)
            .field("entries", &self.props.num_entries)
            .finish()
    }
}

impl PlainTableBuilder {
    /// Starts a table written to `file`, which must be empty.
    /// REQUIRES: `opts.plain` is set.
    pub fn new(opts: &TableOptions, file: Box<dyn WritableFile>) -> Result<PlainTableBuilder> {
        let popts = opts.plain.clone().unwrap_or_default();
        if popts.store_index_in_file
            && popts.hash_table_ratio <= 0.0
            && opts.prefix_extractor.is_some()
        {
            return Err(Error::InvalidArgument(
                "PlainTable: store_index_in_file needs hash_table_ratio > 0 with a prefix \
                 extractor"
                    .into(),
            ));
        }
        let encoder = KeyEncoder::new(
            popts.encoding_type,
            popts.user_key_len,
            opts.prefix_extractor.clone(),
            popts.index_sparseness,
        );
        let mut props = TableProperties {
            // RocksDB keeps 0 for kPlain so older readers still open it.
            format_version: u64::from(encoder.encoding() == EncodingType::Prefix),
            fixed_key_len: u64::from(popts.user_key_len),
            num_data_blocks: 1,
            ..TableProperties::for_new_table(opts)
        };
        props.user_collected.insert(
            ENCODING_TYPE_PROPERTY.as_bytes().to_vec(),
            encoder.encoding().code().to_le_bytes().to_vec(),
        );
        let index = popts.store_index_in_file.then(|| {
            props
                .user_collected
                .insert(BLOOM_VERSION_PROPERTY.as_bytes().to_vec(), b"1".to_vec());
            PlainIndexBuilder::new(
                opts.prefix_extractor.is_some(),
                popts.hash_table_ratio,
                popts.index_sparseness,
            )
        });
        Ok(PlainTableBuilder {
            prefix_extractor: opts.prefix_extractor.clone(),
            bloom_locality: opts.bloom_locality,
            icmp: InternalKeyComparator::new(opts.comparator.clone()),
            popts,
            file,
            offset: 0,
            encoder,
            buf: Vec::new(),
            index,
            key_hashes: Vec::new(),
            last_key: Vec::new(),
            props,
            info: TableInfo {
                smallest_seqno: u64::MAX,
                ..Default::default()
            },
        })
    }

    /// Sets properties that identify the writer (db id, session, host,
    /// file number).
    pub fn set_identity(
        &mut self,
        id: &crate::table::factory::TableIdentity<'_>,
        file_number: u64,
    ) {
        let crate::table::factory::TableIdentity {
            db_id,
            session_id,
            host_id,
        } = *id;
        self.props.db_host_id = host_id.as_bytes().to_vec();
        self.props.db_id = db_id.as_bytes().to_vec();
        self.props.db_session_id = session_id.as_bytes().to_vec();
        self.props.orig_file_number = file_number;
    }

    pub fn add_user_property(&mut self, name: &str, value: Vec<u8>) {
        self.props
            .user_collected
            .insert(name.as_bytes().to_vec(), value);
    }

    /// Adds a point entry. REQUIRES: `ikey` is greater than every key
    /// added before.
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        let parsed = parse_internal_key(ikey).ok_or_else(|| {
            Error::InvalidArgument("table key is not a valid internal key".into())
        })?;
        if parsed.value_type == ValueType::RangeDeletion {
            return Err(Error::NotSupported("Range deletion unsupported".into()));
        }
        if !self.last_key.is_empty() && self.icmp.compare(&self.last_key, ikey) != Ordering::Less {
            return Err(Error::InvalidArgument(
                "keys must be added to a table in strictly increasing order".into(),
            ));
        }
        let user_key = parsed.user_key;
        if self.popts.user_key_len != 0 && user_key.len() != self.popts.user_key_len as usize {
            return Err(Error::InvalidArgument(format!(
                "PlainTable user_key_len is {} but a key has {} bytes",
                self.popts.user_key_len,
                user_key.len()
            )));
        }
        let prefix = match &self.prefix_extractor {
            Some(pe) => pe.transform(user_key),
            None => &[][..],
        };
        if let Some(index) = &mut self.index {
            self.key_hashes
                .push(slice_hash(if self.prefix_extractor.is_some() {
                    prefix
                } else {
                    user_key
                }));
            // Every entry the writer records is a full key (the encoder
            // aligns them with the index's sparseness).
            index.add(prefix, self.offset as u32, true);
        }
        self.buf.clear();
        self.encoder.append_entry(ikey, value, &mut self.buf);
        if self.offset + self.buf.len() as u64 > MAX_FILE_SIZE {
            return Err(Error::NotSupported(format!(
                "PlainTable files are limited to {MAX_FILE_SIZE} bytes"
            )));
        }
        self.file.append(&self.buf)?;
        self.offset += self.buf.len() as u64;
        let p = &mut self.props;
        p.num_entries += 1;
        p.raw_key_size += ikey.len() as u64;
        p.raw_value_size += value.len() as u64;
        match parsed.value_type {
            ValueType::Deletion | ValueType::SingleDeletion => p.num_deletions += 1,
            ValueType::Merge => p.num_merge_operands += 1,
            _ => {}
        }
        if self.info.smallest_key.is_empty() {
            self.info.smallest_key = ikey.to_vec();
        }
        self.info.smallest_seqno = self.info.smallest_seqno.min(parsed.sequence);
        self.info.largest_seqno = self.info.largest_seqno.max(parsed.sequence);
        self.last_key.clear();
        self.last_key.extend_from_slice(ikey);
        Ok(())
    }

    pub fn num_entries(&self) -> u64 {
        self.props.num_entries
    }

    pub fn estimated_file_size(&self) -> u64 {
        self.offset
    }

    /// The user key of the last entry added.
    pub fn last_user_key(&self) -> &[u8] {
        crate::format::dbformat::extract_user_key(&self.last_key)
    }

    fn write_raw(&mut self, block: &[u8]) -> Result<BlockHandle> {
        let h = BlockHandle::new(self.offset, block.len() as u64);
        self.file.append(block)?;
        self.offset += block.len() as u64;
        Ok(h)
    }

    /// Writes the meta blocks and the footer, syncs if asked, and closes
    /// the file.
    pub fn finish(mut self, sync: bool) -> Result<TableInfo> {
        self.props.data_size = self.offset;
        let mut meta: Vec<(&str, BlockHandle)> = Vec::new();
        if let Some(index) = self.index.take()
            && self.props.num_entries > 0
        {
            if self.popts.bloom_bits_per_key > 0 {
                let bits = (self.props.num_entries as u32)
                    .saturating_mul(self.popts.bloom_bits_per_key as u32);
                let mut bloom = PlainBloom::with_total_bits(bits, self.bloom_locality);
                for &h in &self.key_hashes {
                    bloom.add_hash(h);
                }
                let mut n = Vec::new();
                put_varint32(&mut n, bloom.num_blocks());
                self.props
                    .user_collected
                    .insert(NUM_BLOOM_BLOCKS_PROPERTY.as_bytes().to_vec(), n);
                self.props.filter_size = bloom.data().len() as u64;
                let h = self.write_raw(bloom.data())?;
                meta.push((BLOOM_BLOCK, h));
            }
            let raw = index.finish();
            self.props.index_size = raw.len() as u64;
            let h = self.write_raw(&raw)?;
            meta.push((INDEX_BLOCK, h));
        }
        let props_block = self.props.encode_block();
        let h = self.write_raw(&props_block)?;
        meta.push((PROPERTIES_BLOCK, h));
        meta.sort_by(|a, b| a.0.cmp(b.0));
        let mut metaindex = BlockBuilder::new(1);
        for (name, h) in &meta {
            metaindex.add(name.as_bytes(), &h.encode());
        }
        let metaindex_raw = metaindex.finish().to_vec();
        let metaindex_handle = self.write_raw(&metaindex_raw)?;
        let footer = Footer {
            kind: TableKind::Plain,
            checksum_type: ChecksumType::NoChecksum,
            metaindex_handle,
            index_handle: BlockHandle::default(),
            format_version: 0,
            offset: self.offset,
            base_context_checksum: 0,
        };
        let enc = footer.encode_legacy();
        self.file.append(&enc)?;
        self.offset += enc.len() as u64;
        if self.offset > MAX_FILE_SIZE {
            return Err(Error::NotSupported(format!(
                "PlainTable files are limited to {MAX_FILE_SIZE} bytes"
            )));
        }
        if sync {
            self.file.sync()?;
        }
        self.file.close()?;
        if self.info.smallest_seqno == u64::MAX {
            self.info.smallest_seqno = 0;
        }
        self.info.largest_key = std::mem::take(&mut self.last_key);
        self.info.file_size = self.offset;
        self.info.num_entries = self.props.num_entries;
        self.info.properties = std::mem::take(&mut self.props);
        Ok(self.info)
    }
}
