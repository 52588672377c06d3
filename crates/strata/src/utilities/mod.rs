//! Stacked utilities above the database (RocksDB's `utilities/`): they
//! use only the database's public and crate-level calls, and nothing in
//! `db` depends on them.
//!
//! - [`backup`]: backups in RocksDB's backup directory format.
//! - [`checkpoint`]: openable copies of a live database.
//! - [`transactions`]: write batches with an index, pessimistic and
//!   optimistic transactions.
//! - [`ttl`]: a database whose values expire (RocksDB's `DBWithTTL`).

pub mod backup;
pub mod checkpoint;
pub mod transactions;
pub mod ttl;
