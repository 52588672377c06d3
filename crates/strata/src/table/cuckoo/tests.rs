//! CuckooTable tests.
