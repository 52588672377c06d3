//! The deliberate surface for tools outside the engine: `strata`'s
//! sst_dump and ldb commands, the benchmarks, the fuzz targets and the
//! interop tests. Applications use the crate's facade instead; nothing
//! here is a stable API.
//!
//! * [`fuzz`]: one entry point per decoder of on-disk bytes, driven the way
//!   the engine drives it. Invariant: for any input these return (possibly
//!   an error) and never panic, hang, or allocate from an unchecked length.
//! * [`manifest_dump`]: ldb's `manifest_dump` text.
//! * The engine modules the tools read files with: [`table`] (blocks,
//!   footers, properties, readers and builders), [`wal`] (log reader and
//!   writer), [`format`] (internal keys, the WriteBatch encoding),
//!   [`version`] (VersionEdit, the MANIFEST), [`filename`], [`cache`] and
//!   [`util`] (checksums, coding, hashes, the test generator `util::rng`).

pub mod fuzz;
mod manifest_dump;

pub use manifest_dump::{manifest_dump, manifest_dump_with};

/// Table formats: blocks, footers, properties, readers and builders.
pub mod table {
    pub use crate::table::*;
}

/// The write-ahead log's reader and writer.
pub mod wal {
    pub use crate::wal::*;
}

/// Internal keys, value types and the WriteBatch encoding.
pub mod format {
    pub use crate::format::*;
}

/// VersionEdit, Version, the MANIFEST and its text dumps.
pub mod version {
    pub use crate::version::*;
}

/// The names of the files in a database directory.
pub mod filename {
    pub use crate::filename::*;
}

/// The block cache and the table cache.
pub mod cache {
    pub use crate::cache::*;
}

/// The memtable and its representations.
pub mod memtable {
    pub use crate::memtable::*;
}

/// Coding, checksums, hashes, histograms, crash points, the test generator.
pub mod util {
    pub use crate::util::*;
}
