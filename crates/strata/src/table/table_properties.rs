//! The properties block: table statistics and settings under RocksDB's
//! property names (`table/meta_blocks.cc`, `table_properties.cc`).
//!
//! Invariants: names in the block are strictly increasing bytewise
//! (RocksDB rejects "properties unsorted"); integers are varint64, strings
//! raw bytes; unknown names are kept as user-collected properties.

use std::collections::BTreeMap;

use super::block::{Block, KeyOrder};
use super::block_builder::BlockBuilder;
use crate::error::{Error, Result};
use crate::format::iterator::InternalIterator;
use crate::util::coding::{get_varint64, put_varint64};
use std::sync::Arc;

/// Meta-index name of the properties block.
pub const PROPERTIES_BLOCK: &str = "rocksdb.properties";
/// Old name of the properties block, accepted on read.
pub const PROPERTIES_BLOCK_OLD: &str = "rocksdb.stats";
/// Meta-index name of the range-deletion block.
/// Meta-index entry of the index block (format_version >= 6, where the
/// footer no longer holds its handle).
pub const INDEX_BLOCK: &str = "rocksdb.index";
/// Meta-index entry of the data blocks' compression dictionary.
pub const COMPRESSION_DICT_BLOCK: &str = "rocksdb.compression_dict";
/// The hash-search index's meta blocks (`kHashIndexPrefixesBlock`,
/// `kHashIndexPrefixesMetadataBlock`).
pub const HASH_INDEX_PREFIXES_BLOCK: &str = "rocksdb.hashindex.prefixes";
pub const HASH_INDEX_METADATA_BLOCK: &str = "rocksdb.hashindex.metadata";
pub const RANGE_DEL_BLOCK: &str = "rocksdb.range_del";
/// Meta-index name of the full filter written by the built-in bloom policies.
pub const FULL_FILTER_BLOCK: &str = "fullfilter.rocksdb.BuiltinBloomFilter";
/// Meta-index entry of a partitioned filter's top-level index.
pub const PARTITIONED_FILTER_BLOCK: &str = "partitionedfilter.rocksdb.BuiltinBloomFilter";

pub const INDEX_TYPE: &str = "rocksdb.block.based.table.index.type";
pub const WHOLE_KEY_FILTERING: &str = "rocksdb.block.based.table.whole.key.filtering";
pub const PREFIX_FILTERING: &str = "rocksdb.block.based.table.prefix.filtering";
pub const EXTERNAL_SST_VERSION: &str = "rocksdb.external_sst_file.version";
pub const EXTERNAL_SST_GLOBAL_SEQNO: &str = "rocksdb.external_sst_file.global_seqno";
pub const DELETED_KEYS: &str = "rocksdb.deleted.keys";
pub const MERGE_OPERANDS: &str = "rocksdb.merge.operands";

/// Sentinel for a column family id that is not known.
pub const UNKNOWN_COLUMN_FAMILY: u64 = 0x7fff_ffff;

macro_rules! int_props {
    ($($field:ident = $name:literal,)*) => {
        /// Table properties with RocksDB's names.
        #[derive(Clone, Debug, Default, PartialEq, Eq)]
        pub struct TableProperties {
            $(pub $field: u64,)*
            pub db_id: Vec<u8>,
            pub db_session_id: Vec<u8>,
            pub db_host_id: Vec<u8>,
            pub filter_policy_name: Vec<u8>,
            pub column_family_name: Vec<u8>,
            pub comparator_name: Vec<u8>,
            pub merge_operator_name: Vec<u8>,
            pub prefix_extractor_name: Vec<u8>,
            pub property_collectors_names: Vec<u8>,
            pub compression_name: Vec<u8>,
            pub compression_options: Vec<u8>,
            pub seqno_to_time_mapping: Vec<u8>,
            /// Properties under names this struct has no field for.
            pub user_collected: BTreeMap<Vec<u8>, Vec<u8>>,
            /// Whether each integer property was present (by name).
            pub present: Vec<&'static str>,
        }

        const INT_NAMES: &[&str] = &[$($name,)*];

        impl TableProperties {
            fn int_fields(&self) -> Vec<(&'static str, u64)> {
                vec![$(($name, self.$field),)*]
            }

            fn set_int(&mut self, name: &str, v: u64) -> bool {
                match name {
                    $($name => { self.$field = v; self.present.push($name); true })*
                    _ => false,
                }
            }
        }
    };
}

int_props! {
    data_size = "rocksdb.data.size",
    index_size = "rocksdb.index.size",
    index_partitions = "rocksdb.index.partitions",
    top_level_index_size = "rocksdb.top-level.index.size",
    index_key_is_user_key = "rocksdb.index.key.is.user.key",
    index_value_is_delta_encoded = "rocksdb.index.value.is.delta.encoded",
    filter_size = "rocksdb.filter.size",
    raw_key_size = "rocksdb.raw.key.size",
    raw_value_size = "rocksdb.raw.value.size",
    num_data_blocks = "rocksdb.num.data.blocks",
    num_entries = "rocksdb.num.entries",
    num_filter_entries = "rocksdb.num.filter_entries",
    num_deletions = "rocksdb.deleted.keys",
    num_merge_operands = "rocksdb.merge.operands",
    num_range_deletions = "rocksdb.num.range-deletions",
    format_version = "rocksdb.format.version",
    fixed_key_len = "rocksdb.fixed.key.length",
    column_family_id = "rocksdb.column.family.id",
    creation_time = "rocksdb.creation.time",
    oldest_key_time = "rocksdb.oldest.key.time",
    file_creation_time = "rocksdb.file.creation.time",
    orig_file_number = "rocksdb.original.file.number",
    slow_compression_estimated_data_size = "rocksdb.sample_for_compression.slow.data.size",
    fast_compression_estimated_data_size = "rocksdb.sample_for_compression.fast.data.size",
}

impl TableProperties {
    /// RocksDB 7.8.3's `TableProperties::ToString(prop_delim, kv_delim)`:
    /// every property as `name<kv_delim>value<prop_delim>`, in its order
    /// (sst_dump prints it with `"\n  ", ": "`, ldb with `"\n", "="`).
    pub fn to_string_with(&self, prop_delim: &str, kv_delim: &str) -> String {
        let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let avg = |a: u64, b: u64| {
            let v = if b == 0 { 0.0 } else { a as f64 / b as f64 };
            format!("{v:.6}")
        };
        let or_na = |b: &[u8]| {
            if b.is_empty() {
                "N/A".to_string()
            } else {
                s(b)
            }
        };
        let unique = super::unique_id::internal_unique_id(
            &s(&self.db_id),
            &s(&self.db_session_id),
            self.orig_file_number,
        )
        .map_or_else(|_| "N/A".to_string(), super::unique_id::public_unique_id);
        let index_name = format!(
            "index block size (user-key? {}, delta-value? {})",
            self.index_key_is_user_key, self.index_value_is_delta_encoded
        );
        let pairs: [(&str, String); 34] = [
            ("# data blocks", self.num_data_blocks.to_string()),
            ("# entries", self.num_entries.to_string()),
            ("# deletions", self.num_deletions.to_string()),
            ("# merge operands", self.num_merge_operands.to_string()),
            ("# range deletions", self.num_range_deletions.to_string()),
            ("raw key size", self.raw_key_size.to_string()),
            (
                "raw average key size",
                avg(self.raw_key_size, self.num_entries),
            ),
            ("raw value size", self.raw_value_size.to_string()),
            (
                "raw average value size",
                avg(self.raw_value_size, self.num_entries),
            ),
            ("data block size", self.data_size.to_string()),
            (&index_name, self.index_size.to_string()),
            ("filter block size", self.filter_size.to_string()),
            ("# entries for filter", self.num_filter_entries.to_string()),
            (
                "(estimated) table size",
                (self.data_size + self.index_size + self.filter_size).to_string(),
            ),
            ("filter policy name", or_na(&self.filter_policy_name)),
            ("prefix extractor name", s(&self.prefix_extractor_name)),
            (
                "column family ID",
                if self.column_family_id == UNKNOWN_COLUMN_FAMILY {
                    "N/A".to_string()
                } else {
                    self.column_family_id.to_string()
                },
            ),
            ("column family name", s(&self.column_family_name)),
            ("comparator name", s(&self.comparator_name)),
            ("merge operator name", s(&self.merge_operator_name)),
            (
                "property collectors names",
                s(&self.property_collectors_names),
            ),
            ("SST file compression algo", s(&self.compression_name)),
            ("SST file compression options", s(&self.compression_options)),
            ("creation time", self.creation_time.to_string()),
            (
                "time stamp of earliest key",
                self.oldest_key_time.to_string(),
            ),
            ("file creation time", self.file_creation_time.to_string()),
            (
                "slow compression estimated data size",
                self.slow_compression_estimated_data_size.to_string(),
            ),
            (
                "fast compression estimated data size",
                self.fast_compression_estimated_data_size.to_string(),
            ),
            ("DB identity", s(&self.db_id)),
            ("DB session identity", s(&self.db_session_id)),
            ("DB host id", s(&self.db_host_id)),
            ("original file number", self.orig_file_number.to_string()),
            ("unique ID", unique),
            (
                "Sequence number to time mapping",
                s(&self.seqno_to_time_mapping),
            ),
        ];
        let mut out = String::new();
        for (name, value) in pairs {
            out.push_str(name);
            out.push_str(kv_delim);
            out.push_str(&value);
            out.push_str(prop_delim);
        }
        out
    }

    fn string_fields(&self) -> Vec<(&'static str, &Vec<u8>)> {
        vec![
            ("rocksdb.creating.db.identity", &self.db_id),
            ("rocksdb.creating.session.identity", &self.db_session_id),
            ("rocksdb.creating.host.identity", &self.db_host_id),
            ("rocksdb.filter.policy", &self.filter_policy_name),
            ("rocksdb.column.family.name", &self.column_family_name),
            ("rocksdb.comparator", &self.comparator_name),
            ("rocksdb.merge.operator", &self.merge_operator_name),
            ("rocksdb.prefix.extractor.name", &self.prefix_extractor_name),
            (
                "rocksdb.property.collectors",
                &self.property_collectors_names,
            ),
            ("rocksdb.compression", &self.compression_name),
            ("rocksdb.compression_options", &self.compression_options),
            ("rocksdb.seqno.time.map", &self.seqno_to_time_mapping),
        ]
    }

    fn string_field_mut(&mut self, name: &[u8]) -> Option<&mut Vec<u8>> {
        Some(match name {
            b"rocksdb.creating.db.identity" => &mut self.db_id,
            b"rocksdb.creating.session.identity" => &mut self.db_session_id,
            b"rocksdb.creating.host.identity" => &mut self.db_host_id,
            b"rocksdb.filter.policy" => &mut self.filter_policy_name,
            b"rocksdb.column.family.name" => &mut self.column_family_name,
            b"rocksdb.comparator" => &mut self.comparator_name,
            b"rocksdb.merge.operator" => &mut self.merge_operator_name,
            b"rocksdb.prefix.extractor.name" => &mut self.prefix_extractor_name,
            b"rocksdb.property.collectors" => &mut self.property_collectors_names,
            b"rocksdb.compression" => &mut self.compression_name,
            b"rocksdb.compression_options" => &mut self.compression_options,
            b"rocksdb.seqno.time.map" => &mut self.seqno_to_time_mapping,
            _ => return None,
        })
    }

    /// Encodes the properties block (sorted, one restart point).
    pub fn encode_block(&self) -> Vec<u8> {
        let mut all: BTreeMap<Vec<u8>, Vec<u8>> = self.user_collected.clone();
        for (name, v) in self.int_fields() {
            // RocksDB's PropertyBlockBuilder::AddTableProperty leaves these
            // out when they say nothing.
            let omitted = match name {
                "rocksdb.index.partitions" | "rocksdb.top-level.index.size" => {
                    self.index_partitions == 0
                }
                "rocksdb.file.creation.time"
                | "rocksdb.sample_for_compression.slow.data.size"
                | "rocksdb.sample_for_compression.fast.data.size" => v == 0,
                _ => false,
            };
            if omitted {
                continue;
            }
            let mut buf = Vec::new();
            put_varint64(&mut buf, v);
            all.insert(name.as_bytes().to_vec(), buf);
        }
        // So are empty strings, all of them.
        for (name, v) in self.string_fields() {
            if !v.is_empty() {
                all.insert(name.as_bytes().to_vec(), v.clone());
            }
        }
        let mut b = BlockBuilder::new(usize::MAX);
        for (k, v) in &all {
            b.add(k, v);
        }
        b.finish().to_vec()
    }

    /// The properties every new table starts with: column family,
    /// comparator, merge operator and prefix extractor names, creation
    /// times and host, as `opts` gives them.
    pub fn for_new_table(opts: &super::options::TableOptions) -> TableProperties {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        TableProperties {
            column_family_id: opts.column_family_id,
            column_family_name: opts.column_family_name.as_bytes().to_vec(),
            comparator_name: opts.comparator.name().as_bytes().to_vec(),
            merge_operator_name: opts
                .merge_operator_name
                .clone()
                .unwrap_or_else(|| "nullptr".into())
                .into_bytes(),
            prefix_extractor_name: opts
                .prefix_extractor
                .as_ref()
                .map(|p| p.name())
                .unwrap_or_else(|| "nullptr".into())
                .into_bytes(),
            property_collectors_names: b"[]".to_vec(),
            creation_time: now,
            file_creation_time: now,
            db_host_id: crate::util::host_name::host_name().as_bytes().to_vec(),
            ..Default::default()
        }
    }

    /// Decodes a properties block.
    pub fn decode_block(block: Arc<Block>, file: &str, offset: u64) -> Result<TableProperties> {
        let mut props = TableProperties::default();
        let mut it = block.iter(KeyOrder::Bytewise, false);
        it.seek_to_first();
        let mut last: Option<Vec<u8>> = None;
        while it.valid() {
            let (k, v) = (it.key(), it.value());
            if let Some(prev) = &last
                && prev.as_slice() >= k
            {
                return Err(Error::corruption(file, offset, "properties unsorted"));
            }
            last = Some(k.to_vec());
            let name = std::str::from_utf8(k).unwrap_or("");
            if INT_NAMES.contains(&name) {
                // A malformed varint is skipped, as RocksDB does.
                if let Some((n, used)) = get_varint64(v)
                    && used == v.len()
                {
                    props.set_int(name, n);
                }
                if name == DELETED_KEYS || name == MERGE_OPERANDS {
                    props.user_collected.insert(k.to_vec(), v.to_vec());
                }
            } else if let Some(f) = props.string_field_mut(k) {
                *f = v.to_vec();
            } else {
                props.user_collected.insert(k.to_vec(), v.to_vec());
            }
            it.next();
        }
        it.status()?;
        Ok(props)
    }

    /// A user-collected property, raw.
    pub fn user_property(&self, name: &str) -> Option<&[u8]> {
        self.user_collected
            .get(name.as_bytes())
            .map(|v| v.as_slice())
    }

    /// The index type (`rocksdb.block.based.table.index.type`), 0 if absent.
    pub fn index_type(&self) -> u32 {
        self.user_property(INDEX_TYPE)
            .and_then(|v| crate::util::coding::decode_fixed32(v, 0))
            .unwrap_or(0)
    }

    /// `Some(seqno)` when this is an external file (version >= 2) whose keys
    /// all take a global sequence number.
    pub fn global_seqno(&self) -> Option<u64> {
        if self.external_sst_version()? < 2 {
            return None;
        }
        self.user_property(EXTERNAL_SST_GLOBAL_SEQNO)
            .and_then(|v| crate::util::coding::decode_fixed64(v, 0))
    }

    /// `rocksdb.external_sst_file.version`: `Some` for a file an
    /// `SstFileWriter` wrote (1 or 2), `None` for one a flush or compaction
    /// wrote.
    pub fn external_sst_version(&self) -> Option<u32> {
        self.user_property(EXTERNAL_SST_VERSION)
            .and_then(|v| crate::util::coding::decode_fixed32(v, 0))
    }
}

/// The offset, within the uncompressed payload of a properties block, of
/// the value of property `key` when that value is 8 bytes (RocksDB's
/// `external_sst_file_global_seqno_offset`, relative to the block). `None`
/// when the block does not parse or has no such entry. Every entry of a
/// properties block is a restart point (RocksDB writes it with a restart
/// interval of 1), but shared prefixes are followed anyway.
pub fn fixed64_value_offset(payload: &[u8], key: &[u8]) -> Option<usize> {
    use crate::util::coding::{decode_fixed32, get_varint32};
    let n = payload.len();
    let restarts = decode_fixed32(payload, n.checked_sub(4)?)? as usize;
    let end = n.checked_sub(4)?.checked_sub(restarts.checked_mul(4)?)?;
    let mut pos = 0usize;
    let mut last_key: Vec<u8> = Vec::new();
    while pos < end {
        let field = |pos: &mut usize| -> Option<usize> {
            let (v, used) = get_varint32(payload.get(*pos..end)?)?;
            *pos += used;
            Some(v as usize)
        };
        let shared = field(&mut pos)?;
        let non_shared = field(&mut pos)?;
        let value_len = field(&mut pos)?;
        let delta = payload.get(pos..pos.checked_add(non_shared)?)?;
        last_key.truncate(shared);
        if last_key.len() != shared {
            return None;
        }
        last_key.extend_from_slice(delta);
        pos += non_shared;
        if pos.checked_add(value_len)? > end {
            return None;
        }
        if last_key == key {
            return (value_len == 8).then_some(pos);
        }
        pos += value_len;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip() {
        let mut p = TableProperties {
            num_entries: 7,
            data_size: 1234,
            comparator_name: b"leveldb.BytewiseComparator".to_vec(),
            compression_name: b"Snappy".to_vec(),
            ..Default::default()
        };
        p.user_collected
            .insert(INDEX_TYPE.as_bytes().to_vec(), vec![0, 0, 0, 0]);
        let block = Arc::new(Block::from_vec(p.encode_block()).unwrap());
        let q = TableProperties::decode_block(block, "t", 0).unwrap();
        assert_eq!(q.num_entries, 7);
        assert_eq!(q.data_size, 1234);
        assert_eq!(q.compression_name, b"Snappy");
        assert_eq!(q.index_type(), 0);
        assert!(q.global_seqno().is_none());
    }
}
