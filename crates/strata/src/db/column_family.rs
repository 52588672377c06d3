//! Column families: their descriptors at open, and creating and dropping
//! them on an open database (RocksDB's `DBImpl::CreateColumnFamily` and
//! `DropColumnFamily`).
//!
//! Invariants: a column family exists once its creation is in the MANIFEST
//! and an OPTIONS file names it; a dropped family's handle keeps reads
//! working until it is released, and its files go with the last reader.

use super::open::check_cf_supported;
use super::{CfData, ColumnFamilyHandle, DB};
use crate::error::{Error, Result};
use crate::format::InternalKeyComparator;
use crate::options::ColumnFamilyOptions;

/// A column family to open, with its options.
#[derive(Clone, Debug)]
pub struct ColumnFamilyDescriptor {
    pub name: String,
    pub options: ColumnFamilyOptions,
}

impl ColumnFamilyDescriptor {}

impl ColumnFamilyDescriptor {
    pub fn new(name: impl Into<String>, options: ColumnFamilyOptions) -> Self {
        ColumnFamilyDescriptor {
            name: name.into(),
            options,
        }
    }
}

impl DB {
    /// Creates a column family.
    pub fn create_column_family(
        &self,
        name: &str,
        options: ColumnFamilyOptions,
    ) -> Result<ColumnFamilyHandle> {
        let inner = &self.inner;
        if inner.read_only {
            return Err(Error::NotSupported(
                "create_column_family on a read-only database".into(),
            ));
        }
        let options = options.sanitized_for(&inner.options);
        options.validate(name)?;
        check_cf_supported(&inner.options, &options)?;
        let _leader = inner
            .write_mutex
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        inner.wait_for_pending_writes();
        let mut st = inner.lock_state();
        if st.cfs.values().any(|c| c.name == name && !c.dropped) {
            return Err(Error::InvalidArgument(format!(
                "Column family already exists: {name}"
            )));
        }
        let mut options = options;
        if options.block_cache.is_none() {
            options.block_cache = st.cfs.get(&0).and_then(|c| c.options.block_cache.clone());
        }
        // The column family's own comparator is recorded in the MANIFEST;
        // WALs before the current one hold nothing for it.
        let wal = st.wal_number;
        st.versions.set_num_levels_for(name, options.num_levels);
        let id = st
            .versions
            .create_column_family_with(name, options.comparator.clone(), wal)?;
        let icmp = InternalKeyComparator::new(options.comparator.clone());
        st.memtables_changed();
        st.cfs.insert(
            id,
            CfData {
                id,
                name: name.to_string(),
                mem: super::new_memtable(
                    &icmp,
                    &options,
                    self.inner.options.write_buffer_manager.as_ref(),
                    Some(&self.inner.arena_pool),
                ),
                icmp,
                options,
                mem_wal: wal,
                imms: Vec::new(),
                dropped: false,
                flush_running: false,
            },
        );
        inner.install_super_versions(&mut st);
        // The OPTIONS file is advisory: the column family exists once the
        // MANIFEST says so, whether or not this write succeeds.
        let _ = inner.write_options_file(&mut st);
        Ok(ColumnFamilyHandle {
            id,
            name: name.to_string(),
        })
    }

    /// Drops a column family (not the default one).
    pub fn drop_column_family(&self, cf: &ColumnFamilyHandle) -> Result<()> {
        let inner = &self.inner;
        if inner.read_only {
            return Err(Error::NotSupported(
                "drop_column_family on a read-only database".into(),
            ));
        }
        if cf.id == 0 {
            return Err(Error::InvalidArgument(
                "Can't drop default column family".into(),
            ));
        }
        let _leader = inner
            .write_mutex
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        inner.wait_for_pending_writes();
        let mut st = inner.lock_state();
        if st.cfs.get(&cf.id).is_none_or(|c| c.dropped) {
            return Err(Error::InvalidArgument(format!(
                "unknown column family {}",
                cf.name
            )));
        }
        st.versions.drop_column_family(cf.id)?;
        st.cfs.remove(&cf.id);
        st.memtables_changed();
        inner.install_super_versions(&mut st);
        inner.delete_obsolete_files(&mut st);
        let _ = inner.write_options_file(&mut st);
        Ok(())
    }
}
