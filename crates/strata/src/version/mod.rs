//! Layer 4: the version set. Which table files make up each column family
//! at each level, how that changes (a `VersionEdit` per change), and the
//! MANIFEST log that makes the changes durable (RocksDB's `db/version_*`,
//! `db/version_edit_handler.cc`, `file/filename.cc`).
//!
//! * file names and the CURRENT protocol live in [`crate::filename`] (re-exported here).
//! * [`edit`]: `FileMetaData` and `VersionEdit` with RocksDB 7.8.3's encoding.
//! * [`version`]: the immutable `Version` and its LSM-shape invariants.
//! * [`builder`]: `VersionBuilder`, applying edits to a version.
//! * [`version_set`]: `VersionSet`, logging edits to the MANIFEST and
//!   installing the versions they produce; recovery is in `recovery.rs`.
//!
//! Invariant: a version becomes current only after the edit producing it is
//! synced in the MANIFEST, and the MANIFEST named by CURRENT always replays
//! to a consistent state (or fails with `Error::Corruption` naming the
//! MANIFEST and offset).

mod apply;
pub mod builder;
mod debug;
mod dump;
pub mod edit;
mod file_meta;
mod manifest;
mod recovery;
#[allow(clippy::module_inception)]
pub mod version;
pub mod version_set;

pub use crate::filename::{FileType, parse_file_name, read_current_file, set_current_file};
pub use builder::VersionBuilder;
pub use debug::{hex, internal_key_debug_bytes, internal_key_debug_string, public_unique_id};
pub use dump::dump_manifest;
pub use edit::{
    BlobFileAddition, BlobFileGarbage, FileMetaData, VersionEdit, WalAddition, WalDeletion,
};
pub use recovery::ManifestReader;
pub use version::{DEFAULT_NUM_LEVELS, Version};
pub use version_set::{
    ColumnFamilyData, DEFAULT_COLUMN_FAMILY_NAME, VersionSet, VersionSetOptions,
};

#[cfg(test)]
mod tests;
