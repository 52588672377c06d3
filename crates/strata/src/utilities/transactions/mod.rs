//! Transactions (RocksDB's `utilities/transactions`), stacked on the
//! database through its public and crate-level calls only:
//!
//! - [`WriteBatchWithIndex`]: a write batch that can be read, alone or on
//!   top of the database ([`BaseDeltaIterator`]).
//! - [`TransactionDB`]: pessimistic transactions. Keys are locked when a
//!   transaction writes them or reads them with `get_for_update`; with a
//!   snapshot set, a key written by someone else after the snapshot is a
//!   conflict (`Busy`) when the transaction locks it. Lock waits time out
//!   (`TimedOut`) and, with `deadlock_detect`, a wait that would close a
//!   cycle fails at once (`Busy` with [`crate::error::DEADLOCK_MSG`]).
//!   Write policy WriteCommitted: the batch reaches the database at
//!   commit, in one atomic write.
//! - [`OptimisticTransactionDB`]: no locks; the keys a transaction wrote
//!   or read with `get_for_update` are validated at commit (`Busy` if
//!   someone wrote one after the transaction first touched it, or after
//!   its snapshot), under per-key bucket locks (`ValidateParallel`,
//!   RocksDB's default and ours) or serially with every write
//!   (`ValidateSerial`).
//!
//! As in RocksDB, a plain `get` reads what its `ReadOptions` say (pass
//! the transaction's snapshot to read at it); only `get_for_update` takes
//! part in conflict checking, so write skew is possible between
//! transactions that read without it.

pub mod base_delta_iterator;
pub mod lock_manager;
pub mod optimistic;
pub mod transaction;
pub mod transaction_db;
pub mod write_batch_with_index;

pub use base_delta_iterator::BaseDeltaIterator;
pub use lock_manager::{DeadlockInfo, DeadlockPath, TransactionId};
pub use optimistic::{OccValidationPolicy, OptimisticTransactionDB, OptimisticTransactionOptions};
pub use transaction::{Transaction, TransactionState};
pub use transaction_db::{
    TransactionDB, TransactionDBOptions, TransactionOptions, TxnDBWritePolicy,
};
pub use write_batch_with_index::{BatchLookup, WriteBatchWithIndex, WriteEntry, WriteType};
