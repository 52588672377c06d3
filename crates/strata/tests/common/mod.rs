//! Helpers shared by the integration tests (each test binary includes the
//! parts it uses with `mod common;`).
#![allow(dead_code)]

pub mod bank;
pub mod figures;
pub mod history;
pub mod rocksdb;
