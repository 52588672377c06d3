//! Error kinds returned by every fallible Strata call.
//!
//! Invariant: data read from disk that fails to decode is always reported as
//! [`Error::Corruption`] naming the file and the byte offset of the damage, so
//! an operator can find it with a hex dump. Nothing in the engine panics on
//! bad bytes.

use std::fmt;

/// The error type of every Strata operation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bytes on disk (or handed in as if from disk) failed to decode or
    /// failed a checksum.
    #[error("Corruption: {msg} (file {file}, offset {offset})")]
    Corruption {
        /// The file that holds the damaged bytes (empty for in-memory buffers).
        file: String,
        /// Byte offset in `file` at or near the damage.
        offset: u64,
        /// What was wrong.
        msg: String,
    },
    /// An operating-system I/O error.
    #[error("IO error: {context}: {source}")]
    Io {
        /// What was being done, usually with a path.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The caller passed an argument or option that cannot be honoured.
    #[error("Invalid argument: {0}")]
    InvalidArgument(String),
    /// The request is valid but this build or file format does not support it.
    #[error("Not implemented: {0}")]
    NotSupported(String),
    /// A file or entry that was required does not exist.
    #[error("NotFound: {0}")]
    NotFound(String),
    /// A resource is held by someone else (for example the DB lock).
    #[error("Resource busy: {0}")]
    Busy(String),
    /// The operation could not complete (for example a truncated read).
    #[error("Result incomplete: {0}")]
    Incomplete(String),
    /// The operation cannot be done now and may succeed if retried (for
    /// example an ingestion that cannot reach the last level yet).
    #[error("Operation failed. Try again.: {0}")]
    TryAgain(String),
    /// The disk is full (or an injected quota was reached).
    #[error("IO error: No space left on device: {0}")]
    NoSpace(String),
    /// A wait ran out of time (for example a transaction's lock wait:
    /// RocksDB's `TimedOut` with `kLockTimeout`).
    #[error("Operation timed out: {0}")]
    TimedOut(String),
    /// The object outlived its allowed time (an expired transaction).
    #[error("Operation expired: {0}")]
    Expired(String),
    /// Merge operands were found without their base value where the
    /// base lies elsewhere (a write batch's own lookup).
    #[error("Merge in progress: {0}")]
    MergeInProgress(String),
    /// The operation was given up (for example a transaction's batch
    /// reached its size limit: RocksDB's `Aborted` with `kMemoryLimit`).
    #[error("Operation aborted: {0}")]
    Aborted(String),
}

/// The message of the `Busy` a transaction gets when waiting for a lock
/// would close a cycle of waiters (RocksDB's `Busy` with `kDeadlock`).
pub const DEADLOCK_MSG: &str = "Deadlock";

/// The result type used throughout Strata.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Whether this is the `Busy` of a detected deadlock.
    pub fn is_deadlock(&self) -> bool {
        matches!(self, Error::Busy(m) if m == DEADLOCK_MSG)
    }

    /// A corruption error at `offset` of `file`.
    pub fn corruption(file: impl fmt::Display, offset: u64, msg: impl Into<String>) -> Error {
        Error::Corruption {
            file: file.to_string(),
            offset,
            msg: msg.into(),
        }
    }

    /// An I/O error with a description of what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Error {
        if source.raw_os_error() == Some(28) {
            return Error::NoSpace(context.into());
        }
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// A copy of this error (I/O errors keep their kind and message), for
    /// iterators that report a stored error more than once.
    pub fn duplicate(&self) -> Error {
        match self {
            Error::Corruption { file, offset, msg } => Error::Corruption {
                file: file.clone(),
                offset: *offset,
                msg: msg.clone(),
            },
            Error::Io { context, source } => Error::Io {
                context: context.clone(),
                source: std::io::Error::new(source.kind(), source.to_string()),
            },
            Error::InvalidArgument(m) => Error::InvalidArgument(m.clone()),
            Error::NotSupported(m) => Error::NotSupported(m.clone()),
            Error::NotFound(m) => Error::NotFound(m.clone()),
            Error::Busy(m) => Error::Busy(m.clone()),
            Error::TryAgain(m) => Error::TryAgain(m.clone()),
            Error::Incomplete(m) => Error::Incomplete(m.clone()),
            Error::NoSpace(m) => Error::NoSpace(m.clone()),
            Error::TimedOut(m) => Error::TimedOut(m.clone()),
            Error::Expired(m) => Error::Expired(m.clone()),
            Error::MergeInProgress(m) => Error::MergeInProgress(m.clone()),
            Error::Aborted(m) => Error::Aborted(m.clone()),
        }
    }

    /// True for [`Error::Corruption`].
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }

    /// True for [`Error::NotFound`].
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::NotFound(_))
    }

    /// Moves a corruption error found at `inner` bytes into a buffer that
    /// starts at `base` of `file` so it names the file-level offset.
    pub fn relocate(self, file: &str, base: u64) -> Error {
        match self {
            Error::Corruption {
                file: f,
                offset,
                msg,
            } if f.is_empty() => Error::Corruption {
                file: file.to_string(),
                offset: base + offset,
                msg,
            },
            other => other,
        }
    }
}
