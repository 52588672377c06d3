//! Layer 5: iterators over several sources: the merging iterator, range
//! tombstone aggregation, and `DBIter` (the user's view at a snapshot).

pub mod db_iter;
pub mod level_iter;
pub mod merging;

pub use db_iter::{DBIter, DBIterOptions};
pub use level_iter::{FileOpener, LevelIterator};
pub use merging::MergingIterator;

#[cfg(test)]
mod tests;
