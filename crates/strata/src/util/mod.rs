//! Layer 0: encodings, checksums, hashes and comparators. Depends on nothing
//! else in the crate.

pub mod checksum;
pub mod civil_time;
pub mod coding;
pub mod comparator;
pub mod crash_point;
#[cfg(test)]
pub(crate) mod datadriven;
pub mod file_checksum;
pub mod hash;
pub mod histogram;
pub mod host_name;
pub mod huge_bytes;
pub mod id_map;
pub mod janitor;
pub mod malloc;
pub mod perf_context;
pub mod prefetch;
pub mod rng;
pub mod slice_transform;
pub mod statistics;
pub mod sync;
pub mod xxph3;
