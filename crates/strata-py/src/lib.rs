//! Strata's Python module (`strata._strata`, re-exported by the `strata`
//! package): rocksdict's API over the Strata engine.

#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod codec;
mod options;
mod rdict;

use pyo3::prelude::*;

#[pymodule]
fn _strata(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let names = [
        "Rdict",
        "RdictIter",
        "Snapshot",
        "WriteBatch",
        "SstFileWriter",
        "Checkpoint",
        "Options",
        "ReadOptions",
        "WriteOptions",
        "BlockBasedOptions",
        "BlockBasedIndexType",
        "DataBlockIndexType",
        "ChecksumType",
        "Cache",
        "DBCompressionType",
        "DBCompactionStyle",
        "SliceTransform",
        "AccessType",
        "IngestExternalFileOptions",
        "DbClosedError",
        "ColumnFamily",
        "PlainTableFactoryOptions",
        "CuckooTableOptions",
        "DBPath",
        "MemtableFactory",
    ];
    m.add_class::<rdict::Rdict>()?;
    m.add_class::<rdict::RdictIter>()?;
    m.add_class::<rdict::RdictView>()?;
    m.add_class::<rdict::Snapshot>()?;
    m.add_class::<rdict::WriteBatch>()?;
    m.add_class::<rdict::SstFileWriter>()?;
    m.add_class::<rdict::Checkpoint>()?;
    m.add_class::<rdict::ColumnFamily>()?;
    m.add_class::<options::PlainTableFactoryOptions>()?;
    m.add_class::<options::CuckooTableOptions>()?;
    m.add_class::<options::DbPath>()?;
    m.add_class::<options::MemtableFactory>()?;
    m.add_class::<options::Options>()?;
    m.add_class::<options::ReadOptions>()?;
    m.add_class::<options::WriteOptions>()?;
    m.add_class::<options::BlockBasedOptions>()?;
    m.add_class::<options::BlockBasedIndexType>()?;
    m.add_class::<options::DataBlockIndexType>()?;
    m.add_class::<options::ChecksumType>()?;
    m.add_class::<options::Cache>()?;
    m.add_class::<options::DBCompressionType>()?;
    m.add_class::<options::DBCompactionStyle>()?;
    m.add_class::<options::SliceTransform>()?;
    m.add_class::<options::AccessType>()?;
    m.add_class::<options::IngestExternalFileOptions>()?;
    m.add("DbClosedError", m.py().get_type::<rdict::DbClosedError>())?;
    m.add("__all__", names.to_vec())?;
    Ok(())
}
