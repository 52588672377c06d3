//! `SstFileWriter`: builds a table from user keys for bulk loading, in the
//! form RocksDB's `SstFileWriter` writes and `IngestExternalFile` accepts:
//! every key at sequence 0, and the external-file properties
//! (`rocksdb.external_sst_file.version` = 2, `global_seqno` = 0).
//!
//! Invariant: point keys are added in strictly increasing user-key order
//! (an error otherwise); range deletions may come in any order and are
//! sorted when the file is finished.

use std::path::Path;

use super::factory::TableBuilder;
use super::options::TableOptions;
use super::table_builder::TableInfo;
use super::table_properties::{EXTERNAL_SST_GLOBAL_SEQNO, EXTERNAL_SST_VERSION};
use crate::error::{Error, Result};
use crate::format::{ValueType, make_internal_key};
use crate::fs::{FileSystem, default_fs};

/// Writes an external table file from sorted user keys.
pub struct SstFileWriter {
    builder: TableBuilder,
    opts: TableOptions,
    last_user_key: Option<Vec<u8>>,
    range_dels: Vec<(Vec<u8>, Vec<u8>)>,
}

impl std::fmt::Debug for SstFileWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SstFileWriter")
            .field("builder", &self.builder)
            .finish()
    }
}

impl SstFileWriter {
    /// Creates `path` on the real file system.
    pub fn create(path: impl AsRef<Path>, opts: TableOptions) -> Result<SstFileWriter> {
        Self::create_in(&*default_fs(), path.as_ref(), opts)
    }

    /// Creates `path` on `fs` for no column family in particular (RocksDB's
    /// SstFileWriter without a handle): any column family may ingest it.
    pub fn create_in(
        fs: &dyn FileSystem,
        path: &Path,
        opts: TableOptions,
    ) -> Result<SstFileWriter> {
        let opts = TableOptions {
            column_family_id: super::table_properties::UNKNOWN_COLUMN_FAMILY,
            column_family_name: String::new(),
            ..opts
        };
        Self::create_for_column_family(fs, path, opts)
    }

    /// Creates `path` on `fs` for the column family `opts` names
    /// (`column_family_id`, `column_family_name`; RocksDB's SstFileWriter
    /// with a handle): ingesting it into another one is refused.
    pub fn create_for_column_family(
        fs: &dyn FileSystem,
        path: &Path,
        opts: TableOptions,
    ) -> Result<SstFileWriter> {
        let file = fs.new_writable_file(path)?;
        let mut builder = TableBuilder::new(opts.clone(), file)?;
        builder.add_user_property(EXTERNAL_SST_VERSION, 2u32.to_le_bytes().to_vec());
        builder.add_user_property(EXTERNAL_SST_GLOBAL_SEQNO, 0u64.to_le_bytes().to_vec());
        Ok(SstFileWriter {
            builder,
            opts,
            last_user_key: None,
            range_dels: Vec::new(),
        })
    }

    fn add(&mut self, key: &[u8], t: ValueType, value: &[u8]) -> Result<()> {
        if let Some(last) = &self.last_user_key
            && self.opts.comparator.compare(last, key).is_ge()
        {
            return Err(Error::InvalidArgument(
                "Keys must be added in strict ascending order.".into(),
            ));
        }
        self.builder.add(&make_internal_key(key, 0, t), value)?;
        self.last_user_key = Some(key.to_vec());
        Ok(())
    }

    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.add(key, ValueType::Value, value)
    }

    pub fn merge(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.add(key, ValueType::Merge, value)
    }

    pub fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.add(key, ValueType::Deletion, &[])
    }

    /// Deletes user keys in `[begin, end)`.
    pub fn delete_range(&mut self, begin: &[u8], end: &[u8]) -> Result<()> {
        match self.opts.comparator.compare(begin, end) {
            std::cmp::Ordering::Greater => Err(Error::InvalidArgument(
                "end key comes before start key".into(),
            )),
            // Empty: covers nothing, so nothing is written.
            std::cmp::Ordering::Equal => Ok(()),
            std::cmp::Ordering::Less => {
                self.range_dels.push((begin.to_vec(), end.to_vec()));
                Ok(())
            }
        }
    }

    /// Bytes of the file so far (RocksDB's `FileSize`; final after
    /// `finish`, which returns it).
    pub fn file_size(&self) -> u64 {
        self.builder.estimated_file_size()
    }

    /// Entries added so far.
    pub fn num_entries(&self) -> u64 {
        self.builder.num_entries() + self.range_dels.len() as u64
    }

    /// Writes the rest of the file, syncs and closes it.
    pub fn finish(mut self) -> Result<TableInfo> {
        if self.builder.num_entries() == 0 && self.range_dels.is_empty() {
            return Err(Error::InvalidArgument(
                "Cannot create sst file with no entries".into(),
            ));
        }
        let cmp = self.opts.comparator.clone();
        self.range_dels.sort_by(|a, b| {
            cmp.compare(&a.0, &b.0)
                .then_with(|| cmp.compare(&a.1, &b.1))
        });
        self.range_dels.dedup();
        for (b, e) in std::mem::take(&mut self.range_dels) {
            self.builder.add_range_tombstone(&b, &e, 0)?;
        }
        self.builder.finish(true)
    }
}
