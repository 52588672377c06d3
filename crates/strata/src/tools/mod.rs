//! The deliberate API for tools outside the engine: fuzz targets (and their
//! corpus replay in the normal test run) call these entry points, which
//! drive each decoder of on-disk bytes the way the engine does.
//!
//! Invariant: for any input these functions return (possibly an error)
//! and never panic, hang, or allocate from an unchecked length.

pub mod fuzz;
mod manifest_dump;

pub use manifest_dump::{manifest_dump, manifest_dump_with};
