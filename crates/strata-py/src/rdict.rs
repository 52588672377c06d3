//! `Rdict`, rocksdict's dict-like database handle, and what hangs off it:
//! iterators (`RdictIter`, the `keys`/`values`/`items` views), `Snapshot`,
//! `WriteBatch`, `SstFileWriter`, `Checkpoint`, column families.

use std::path::Path;
use std::sync::Arc;

use pyo3::exceptions::{PyException, PyKeyError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use strata::db::ColumnFamilyDescriptor;
use strata::{ColumnFamilyHandle, DB, DbIterator};

use crate::codec::Codec;
use crate::options::{
    Access, AccessType, IngestExternalFileOptions, Options, ReadOptions, WriteOptions,
};

pyo3::create_exception!(strata, DbClosedError, PyException);

pub fn err(e: strata::Error) -> PyErr {
    PyException::new_err(e.to_string())
}

/// Key bytes for bounds: bytes as they are, other keys encoded as rocksdict
/// encodes keys (bounds are set before the handle's mode is known).
pub fn bound_key(key: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    match key.downcast::<PyBytes>() {
        Ok(b) => Ok(b.as_bytes().to_vec()),
        Err(_) => Codec::new(key.py(), false)?.encode_key(key),
    }
}

const CONFIG_FILE: &str = "rocksdict-config.json";

thread_local! {
    /// Encoding buffers reused by puts and gets on this thread.
    static SCRATCH: std::cell::RefCell<(Vec<u8>, Vec<u8>)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// Runs `f` with two cleared scratch buffers (fresh ones when a `dumps`
/// callback re-enters on this thread while they are in use).
fn with_scratch<T>(f: impl FnOnce(&mut Vec<u8>, &mut Vec<u8>) -> PyResult<T>) -> PyResult<T> {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut bufs) => {
            let (k, v) = &mut *bufs;
            k.clear();
            v.clear();
            f(k, v)
        }
        Err(_) => f(&mut Vec::new(), &mut Vec::new()),
    })
}

/// The default column family's comparator in the newest OPTIONS file.
fn existing_comparator(dir: &Path) -> Option<String> {
    let file = strata::db::options_parser::load_latest(dir).ok()??;
    file.cf_option("default", "comparator").map(str::to_string)
}

#[pyclass(module = "strata")]
pub struct Rdict {
    db: Option<Arc<DB>>,
    /// A secondary instance's handle (its current view is `db`).
    secondary: Option<Arc<strata::db::SecondaryDB>>,
    cf: ColumnFamilyHandle,
    codec: Codec,
    ro: strata::ReadOptions,
    wo: strata::WriteOptions,
    path: String,
    opts: strata::Options,
}

impl Rdict {
    fn db(&self) -> PyResult<&Arc<DB>> {
        self.db
            .as_ref()
            .ok_or_else(|| DbClosedError::new_err("DB instance already closed"))
    }

    fn ro_or(&self, r: Option<PyRef<'_, ReadOptions>>) -> strata::ReadOptions {
        r.map(|r| r.opts.clone()).unwrap_or_else(|| self.ro.clone())
    }

    fn wo_or(&self, w: Option<PyRef<'_, WriteOptions>>) -> strata::WriteOptions {
        w.map(|w| w.opts).unwrap_or(self.wo)
    }

    fn sibling(&self, py: Python<'_>, cf: ColumnFamilyHandle) -> PyResult<Rdict> {
        Ok(Rdict {
            db: Some(self.db()?.clone()),
            secondary: self.secondary.clone(),
            cf,
            codec: self.codec.clone_ref(py),
            ro: self.ro.clone(),
            wo: self.wo,
            path: self.path.clone(),
            opts: self.opts.clone(),
        })
    }

    fn get_one(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        ro: &strata::ReadOptions,
    ) -> PyResult<Option<PyObject>> {
        let db = self.db()?;
        // Decoded where the value lies (memtable, cached block): no copy
        // into a Rust buffer first.
        let v = with_scratch(|k, _| {
            self.codec.encode_key_into(key, k)?;
            db.get_with_cf(ro, &self.cf, k, |v| self.codec.decode_value(py, v))
                .map_err(err)
        })?;
        v.transpose()
    }

    fn view(
        &self,
        py: Python<'_>,
        backwards: bool,
        from_key: Option<&Bound<'_, PyAny>>,
        read_opt: Option<PyRef<'_, ReadOptions>>,
        what: View,
    ) -> PyResult<RdictView> {
        self.view_at(py, self.ro_or(read_opt), backwards, from_key, what)
    }

    /// A keys/values/items view read with `ro`, positioned at `from_key`
    /// (or an end) in the view's direction.
    fn view_at(
        &self,
        py: Python<'_>,
        ro: strata::ReadOptions,
        backwards: bool,
        from_key: Option<&Bound<'_, PyAny>>,
        what: View,
    ) -> PyResult<RdictView> {
        let mut it = self.new_iter(py, ro)?;
        match (from_key, backwards) {
            (Some(k), false) => it.seek_encoded(&self.codec.encode_key(k)?),
            (Some(k), true) => it.seek_for_prev_encoded(&self.codec.encode_key(k)?),
            (None, false) => it.it.seek_to_first(),
            (None, true) => it.it.seek_to_last(),
        }
        Ok(RdictView {
            it,
            backwards,
            what,
        })
    }

    fn new_iter(&self, py: Python<'_>, ro: strata::ReadOptions) -> PyResult<RdictIter> {
        let db = self.db()?.clone();
        let it = db.iter_cf(&ro, &self.cf).map_err(err)?;
        Ok(RdictIter {
            it,
            codec: self.codec.clone_ref(py),
            _db: db,
        })
    }
}

/// The column families to open: those the database has (all must be
/// opened), with the caller's options where given.
fn descriptors(
    path: &str,
    opts: &strata::Options,
    given: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<ColumnFamilyDescriptor>> {
    let mut names = DB::list_column_families(opts, path).unwrap_or_default();
    let mut specific = std::collections::HashMap::new();
    if let Some(d) = given {
        for (k, v) in d.iter() {
            let name: String = k.extract()?;
            let o: PyRef<'_, Options> = v.extract()?;
            if !names.contains(&name) {
                names.push(name.clone());
            }
            specific.insert(name, o.opts.cf.clone());
        }
    }
    if !names.iter().any(|n| n == "default") {
        names.insert(0, "default".into());
    }
    Ok(names
        .into_iter()
        .map(|n| {
            let cf = specific.get(&n).cloned().unwrap_or_else(|| opts.cf.clone());
            ColumnFamilyDescriptor::new(n, cf)
        })
        .collect())
}

#[pymethods]
impl Rdict {
    #[new]
    #[pyo3(signature = (path, options = None, column_families = None, access_type = None))]
    fn new(
        py: Python<'_>,
        path: &str,
        options: Option<PyRef<'_, Options>>,
        column_families: Option<&Bound<'_, PyDict>>,
        access_type: Option<PyRef<'_, AccessType>>,
    ) -> PyResult<Self> {
        let (mut opts, raw) = match options {
            Some(o) => (o.opts.clone(), o.raw_mode),
            None => (crate::options::default_options(false), false),
        };
        // An existing database keeps the comparator it was created with
        // (its OPTIONS file names it), whatever mode encodes this handle's
        // keys: rocksdict opens its databases in raw mode that way too.
        if let Some(cmp) = existing_comparator(Path::new(path)) {
            opts.cf.comparator = crate::options::default_options(cmp != "rocksdict")
                .cf
                .comparator;
        }
        let access = access_type
            .map(|a| a.0.clone())
            .unwrap_or(Access::ReadWrite);
        if column_families.is_some() {
            opts.create_missing_column_families = true;
        }
        let descs = descriptors(path, &opts, column_families)?;
        let p = path.to_string();
        let o2 = opts.clone();
        let mut secondary = None;
        let db: Arc<DB> = match access {
            Access::ReadWrite => py.allow_threads(|| DB::open_cf(o2, &p, descs)).map(Arc::new),
            Access::ReadOnly { error_if_log_file_exist } => {
                let db = py.allow_threads(|| DB::open_cf_read_only(o2, &p, descs)).map_err(err)?;
                if error_if_log_file_exist
                    && db
                        .sorted_wal_files()
                        .map_err(err)?
                        .iter()
                        .any(|w| w.size > 0 && w.file_type == strata::db::WalFileType::Alive)
                {
                    return Err(PyException::new_err(
                        "Corruption: The db was opened in readonly mode with error_if_log_file_exist flag but a WAL file already exists",
                    ));
                }
                Ok(Arc::new(db))
            }
            Access::Secondary(ref secondary_path) => {
                let sp = secondary_path.clone();
                let sec = py
                    .allow_threads(|| strata::db::SecondaryDB::open_cf(o2, &p, &sp, descs))
                    .map_err(err)?;
                let view = sec.db();
                secondary = Some(Arc::new(sec));
                Ok(view)
            }
            Access::WithTtl(ttl) => {
                let ttls = vec![ttl; descs.len()];
                py.allow_threads(|| {
                    strata::utilities::ttl::DBWithTTL::open_cf(o2, &p, descs, &ttls, false)
                        .map(|t| Arc::new(t.into_db()))
                })
            }
        }
        .map_err(err)?;
        if matches!(access, Access::ReadWrite | Access::WithTtl(_)) {
            // rocksdict's config file (its raw mode), for rocksdict to read.
            let cfg = format!("{{\"raw_mode\":{raw},\"prefix_extractors\":{{}}}}");
            let _ = std::fs::write(Path::new(path).join(CONFIG_FILE), cfg);
        }
        let cf = db.default_cf();
        let mut codec = Codec::new(py, raw)?;
        // Values of a TTL database are stamped on write and checked and
        // unstamped on read (in every column family; one created later
        // keeps values forever, RocksDB's TTL 0).
        codec.ttl = matches!(access, Access::WithTtl(_));
        Ok(Rdict {
            db: Some(db),
            secondary,
            cf,
            codec,
            ro: strata::ReadOptions::default(),
            wo: strata::WriteOptions::default(),
            path: path.to_string(),
            opts,
        })
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (_exc_type = None, _exc_value = None, _traceback = None))]
    fn __exit__(
        &mut self,
        py: Python<'_>,
        _exc_type: Option<&Bound<'_, PyAny>>,
        _exc_value: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) {
        self.close(py);
    }

    fn set_dumps(&mut self, dumps: PyObject) {
        self.codec.dumps = dumps;
    }

    fn set_loads(&mut self, loads: PyObject) {
        self.codec.loads = loads;
    }

    fn set_read_options(&mut self, read_opt: PyRef<'_, ReadOptions>) {
        self.ro = read_opt.opts.clone();
    }

    fn set_write_options(&mut self, write_opt: PyRef<'_, WriteOptions>) {
        self.wo = write_opt.opts;
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.get_one(py, key, &self.ro)?.is_some())
    }

    /// A value, or for a list of keys a list of values (None where absent,
    /// read at one snapshot); a missing single key raises KeyError.
    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        if let Ok(list) = key.downcast::<PyList>() {
            return self.multi_get(py, list, &self.ro, None);
        }
        match self.get_one(py, key, &self.ro)? {
            Some(v) => Ok(v),
            None => Err(PyKeyError::new_err(format!("key {} not found", key.str()?))),
        }
    }

    fn __setitem__(&self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.put(key, value, None)
    }

    fn __delitem__(&self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.delete(key, None)
    }

    #[pyo3(signature = (key, default = None, read_opt = None))]
    fn get(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<PyObject>,
        read_opt: Option<PyRef<'_, ReadOptions>>,
    ) -> PyResult<PyObject> {
        let ro = self.ro_or(read_opt);
        if let Ok(list) = key.downcast::<PyList>() {
            return self.multi_get(py, list, &ro, default.as_ref());
        }
        Ok(match self.get_one(py, key, &ro)? {
            Some(v) => v,
            None => default.unwrap_or_else(|| py.None()),
        })
    }

    #[pyo3(signature = (key, value, write_opt = None))]
    fn put(
        &self,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        write_opt: Option<PyRef<'_, WriteOptions>>,
    ) -> PyResult<()> {
        let wo = self.wo_or(write_opt);
        let db = self.db()?;
        // Key and value are encoded straight into the batch that is
        // written: one allocation per put.
        let batch = with_scratch(|k, v| {
            self.codec.encode_key_into(key, k)?;
            self.codec.encode_value_into(value, v)?;
            let mut b =
                strata::WriteBatch::with_capacity(strata::WriteBatch::record_size_bound(&[k, v]));
            b.put_cf(self.cf.id, k, v);
            Ok(b)
        })?;
        db.write(&wo, batch).map_err(err)
    }

    #[pyo3(signature = (key, write_opt = None))]
    fn delete(
        &self,
        key: &Bound<'_, PyAny>,
        write_opt: Option<PyRef<'_, WriteOptions>>,
    ) -> PyResult<()> {
        let k = self.codec.encode_key(key)?;
        let wo = self.wo_or(write_opt);
        self.db()?.delete_cf(&wo, &self.cf, &k).map_err(err)
    }

    /// Whether the key may exist (a read; `fetch` also returns the value).
    #[pyo3(signature = (key, fetch = false, read_opt = None))]
    fn key_may_exist(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        fetch: bool,
        read_opt: Option<PyRef<'_, ReadOptions>>,
    ) -> PyResult<PyObject> {
        let v = self.get_one(py, key, &self.ro_or(read_opt))?;
        let found = v.is_some();
        if fetch {
            let v = v.unwrap_or_else(|| py.None());
            Ok((found, v).into_pyobject(py)?.into_any().unbind())
        } else {
            Ok(found.into_pyobject(py)?.to_owned().into_any().unbind())
        }
    }

    #[pyo3(signature = (read_opt = None))]
    fn iter(
        &self,
        py: Python<'_>,
        read_opt: Option<PyRef<'_, ReadOptions>>,
    ) -> PyResult<RdictIter> {
        self.new_iter(py, self.ro_or(read_opt))
    }

    #[pyo3(signature = (backwards = false, from_key = None, read_opt = None))]
    fn items(
        &self,
        py: Python<'_>,
        backwards: bool,
        from_key: Option<&Bound<'_, PyAny>>,
        read_opt: Option<PyRef<'_, ReadOptions>>,
    ) -> PyResult<RdictView> {
        self.view(py, backwards, from_key, read_opt, View::Items)
    }

    #[pyo3(signature = (backwards = false, from_key = None, read_opt = None))]
    fn keys(
        &self,
        py: Python<'_>,
        backwards: bool,
        from_key: Option<&Bound<'_, PyAny>>,
        read_opt: Option<PyRef<'_, ReadOptions>>,
    ) -> PyResult<RdictView> {
        self.view(py, backwards, from_key, read_opt, View::Keys)
    }

    #[pyo3(signature = (backwards = false, from_key = None, read_opt = None))]
    fn values(
        &self,
        py: Python<'_>,
        backwards: bool,
        from_key: Option<&Bound<'_, PyAny>>,
        read_opt: Option<PyRef<'_, ReadOptions>>,
    ) -> PyResult<RdictView> {
        self.view(py, backwards, from_key, read_opt, View::Values)
    }

    #[pyo3(signature = (paths, opts = None))]
    fn ingest_external_file(
        &self,
        py: Python<'_>,
        paths: Vec<String>,
        opts: Option<PyRef<'_, IngestExternalFileOptions>>,
    ) -> PyResult<()> {
        let o = opts.map(|o| o.0).unwrap_or_default();
        let db = self.db()?.clone();
        let cf = self.cf.clone();
        py.allow_threads(|| db.ingest_external_file_cf(&cf, &paths, &o))
            .map_err(err)
    }

    fn get_column_family(&self, py: Python<'_>, name: &str) -> PyResult<Rdict> {
        let cf = self
            .db()?
            .cf_handle(name)
            .ok_or_else(|| PyException::new_err(format!("column family {name} not found")))?;
        self.sibling(py, cf)
    }

    #[pyo3(signature = (name, options = None))]
    fn create_column_family(
        &self,
        py: Python<'_>,
        name: &str,
        options: Option<PyRef<'_, Options>>,
    ) -> PyResult<Rdict> {
        let cfo = options
            .map(|o| o.opts.cf.clone())
            .unwrap_or_else(|| self.opts.cf.clone());
        let cf = self.db()?.create_column_family(name, cfo).map_err(err)?;
        self.sibling(py, cf)
    }

    /// The handle of a column family (for `WriteBatch` calls).
    fn get_column_family_handle(&self, name: &str) -> PyResult<ColumnFamily> {
        let cf = self
            .db()?
            .cf_handle(name)
            .ok_or_else(|| PyException::new_err(format!("column family {name} not found")))?;
        Ok(ColumnFamily { cf })
    }

    fn drop_column_family(&self, name: &str) -> PyResult<()> {
        let db = self.db()?;
        let cf = db
            .cf_handle(name)
            .ok_or_else(|| PyException::new_err(format!("column family {name} not found")))?;
        db.drop_column_family(&cf).map_err(err)
    }

    #[pyo3(signature = (write_batch, write_opt = None))]
    fn write(
        &self,
        py: Python<'_>,
        write_batch: PyRef<'_, WriteBatch>,
        write_opt: Option<PyRef<'_, WriteOptions>>,
    ) -> PyResult<()> {
        let wo = self.wo_or(write_opt);
        let batch = if self.codec.ttl {
            let now = strata::compaction_filter::unix_now_seconds();
            strata::utilities::ttl::stamp_batch(&write_batch.batch, now).map_err(err)?
        } else {
            write_batch.batch.clone()
        };
        let db = self.db()?.clone();
        py.allow_threads(|| db.write(&wo, batch)).map_err(err)
    }

    #[pyo3(signature = (begin, end, write_opt = None))]
    fn delete_range(
        &self,
        begin: &Bound<'_, PyAny>,
        end: &Bound<'_, PyAny>,
        write_opt: Option<PyRef<'_, WriteOptions>>,
    ) -> PyResult<()> {
        let (b, e) = (self.codec.encode_key(begin)?, self.codec.encode_key(end)?);
        let wo = self.wo_or(write_opt);
        self.db()?
            .delete_range_cf(&wo, &self.cf, &b, &e)
            .map_err(err)
    }

    fn snapshot(&self, py: Python<'_>) -> PyResult<Snapshot> {
        let db = self.db()?.clone();
        let snap = db.snapshot();
        let mut ro = self.ro.clone();
        ro.snapshot = Some(snap.sequence());
        Ok(Snapshot {
            rdict: self.sibling(py, self.cf.clone())?,
            ro,
            _snap: snap,
        })
    }

    fn path(&self) -> String {
        self.path.clone()
    }

    fn property_value(&self, name: &str) -> PyResult<Option<String>> {
        Ok(self.db()?.property_cf(&self.cf, name))
    }

    fn property_int_value(&self, name: &str) -> PyResult<Option<u64>> {
        Ok(self
            .db()?
            .property_cf(&self.cf, name)
            .and_then(|v| v.trim().parse().ok()))
    }

    fn latest_sequence_number(&self) -> PyResult<u64> {
        Ok(self.db()?.latest_sequence_number())
    }

    fn live_files(&self, py: Python<'_>) -> PyResult<Vec<PyObject>> {
        let mut out = Vec::new();
        for f in self.db()?.live_files_metadata() {
            let d = PyDict::new(py);
            d.set_item("name", &f.name)?;
            d.set_item("column_family_name", &f.column_family_name)?;
            d.set_item("level", f.level)?;
            d.set_item("size", f.size)?;
            d.set_item("start_key", PyBytes::new(py, &f.smallest_key))?;
            d.set_item("end_key", PyBytes::new(py, &f.largest_key))?;
            d.set_item("smallest_seqno", f.smallest_seqno)?;
            d.set_item("largest_seqno", f.largest_seqno)?;
            d.set_item("num_entries", f.num_entries)?;
            d.set_item("num_deletions", f.num_deletions)?;
            out.push(d.into_any().unbind());
        }
        Ok(out)
    }

    #[pyo3(signature = (begin, end, compact_opt = None))]
    fn compact_range(
        &self,
        py: Python<'_>,
        begin: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        compact_opt: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let _ = compact_opt;
        let b = begin.map(|k| self.codec.encode_key(k)).transpose()?;
        let e = end.map(|k| self.codec.encode_key(k)).transpose()?;
        let db = self.db()?.clone();
        let cf = self.cf.clone();
        py.allow_threads(|| {
            db.compact_range_cf_opt(
                &cf,
                b.as_deref(),
                e.as_deref(),
                &strata::db::CompactRangeOptions::default(),
            )
        })
        .map_err(err)
    }

    #[pyo3(signature = (wait = true))]
    fn flush(&self, py: Python<'_>, wait: bool) -> PyResult<()> {
        let _ = wait;
        let db = self.db()?.clone();
        let cf = self.cf.clone();
        py.allow_threads(|| db.flush_cf(&cf)).map_err(err)
    }

    #[pyo3(signature = (sync = true))]
    fn flush_wal(&self, py: Python<'_>, sync: bool) -> PyResult<()> {
        let db = self.db()?.clone();
        py.allow_threads(|| db.flush_wal(sync)).map_err(err)
    }

    /// Closes this handle; the database closes when no handle, column
    /// family, iterator or snapshot uses it any more.
    fn close(&mut self, py: Python<'_>) {
        let secondary = self.secondary.take();
        if let Some(db) = self.db.take() {
            py.allow_threads(|| drop(db));
        }
        py.allow_threads(|| drop(secondary));
    }

    /// A secondary instance's refresh (rocksdict's
    /// `try_catch_up_with_primary`): this handle then reads what the
    /// primary holds now. Other handles (column families, views) opened
    /// before keep the view they had.
    fn try_catch_up_with_primary(&mut self, py: Python<'_>) -> PyResult<()> {
        self.db()?;
        let Some(sec) = self.secondary.clone() else {
            return Err(PyException::new_err(
                "Invalid argument: try_catch_up_with_primary needs a secondary instance",
            ));
        };
        py.allow_threads(|| sec.try_catch_up_with_primary())
            .map_err(err)?;
        self.db = Some(sec.db());
        Ok(())
    }

    #[staticmethod]
    #[pyo3(signature = (path, options = None))]
    fn destroy(path: &str, options: Option<PyRef<'_, Options>>) -> PyResult<()> {
        let o = options.map_or_else(
            || crate::options::default_options(false),
            |o| o.opts.clone(),
        );
        strata::db::destroy_db(&o, path).map_err(err)?;
        let _ = std::fs::remove_file(Path::new(path).join(CONFIG_FILE));
        let _ = std::fs::remove_dir(path);
        Ok(())
    }

    #[staticmethod]
    #[pyo3(signature = (path, options = None))]
    fn repair(path: &str, options: Option<PyRef<'_, Options>>) -> PyResult<()> {
        let o = options.map_or_else(
            || crate::options::default_options(false),
            |o| o.opts.clone(),
        );
        strata::db::repair_db(&o, path).map_err(err)
    }

    #[staticmethod]
    #[pyo3(signature = (path, options = None))]
    fn list_cf(path: &str, options: Option<PyRef<'_, Options>>) -> PyResult<Vec<String>> {
        let o = options.map_or_else(
            || crate::options::default_options(false),
            |o| o.opts.clone(),
        );
        DB::list_column_families(&o, path).map_err(err)
    }
}

impl Rdict {
    /// Values of a list of keys at one snapshot (`default`, or None, where
    /// absent).
    fn multi_get(
        &self,
        py: Python<'_>,
        list: &Bound<'_, PyList>,
        ro: &strata::ReadOptions,
        default: Option<&PyObject>,
    ) -> PyResult<PyObject> {
        let keys: Vec<Vec<u8>> = list
            .iter()
            .map(|k| self.codec.encode_key(&k))
            .collect::<PyResult<_>>()?;
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        let db = self.db()?;
        let snap = db.snapshot();
        let mut ro = ro.clone();
        ro.snapshot.get_or_insert(snap.sequence());
        let out = PyList::empty(py);
        for k in refs {
            match db.get_cf(&ro, &self.cf, k).map_err(err)? {
                Some(v) => out.append(self.codec.decode_value(py, &v)?)?,
                None => out.append(default.map_or_else(|| py.None(), |d| d.clone_ref(py)))?,
            }
        }
        Ok(out.into_any().unbind())
    }
}

/// A column family handle (rocksdict's `ColumnFamily`).
#[pyclass(module = "strata")]
#[derive(Clone)]
pub struct ColumnFamily {
    cf: ColumnFamilyHandle,
}

/// A column family given as an `Rdict` or a `ColumnFamily` handle.
fn cf_id_of(v: &Bound<'_, PyAny>) -> PyResult<u32> {
    if let Ok(r) = v.downcast::<Rdict>() {
        return Ok(r.borrow().cf.id);
    }
    if let Ok(c) = v.downcast::<ColumnFamily>() {
        return Ok(c.borrow().cf.id);
    }
    Err(pyo3::exceptions::PyTypeError::new_err(
        "column_family must be an Rdict or a ColumnFamily",
    ))
}

/// rocksdict's raw iterator: `seek`, `seek_for_prev`, `seek_to_first`,
/// `seek_to_last`, `valid`, `key`, `value`, `next`, `prev`, `status`.
// Used from the thread that made it (pyo3 checks): strata's iterators are
// Send, not Sync.
#[pyclass(module = "strata", unsendable)]
pub struct RdictIter {
    it: DbIterator,
    codec: Codec,
    _db: Arc<DB>,
}

impl RdictIter {
    fn seek_encoded(&mut self, k: &[u8]) {
        self.it.seek(k)
    }
    fn seek_for_prev_encoded(&mut self, k: &[u8]) {
        self.it.seek_for_prev(k)
    }
}

#[pymethods]
impl RdictIter {
    fn valid(&self) -> bool {
        self.it.valid()
    }
    fn status(&self) -> PyResult<()> {
        self.it.status().map_err(err)
    }
    fn seek_to_first(&mut self) {
        self.it.seek_to_first()
    }
    fn seek_to_last(&mut self) {
        self.it.seek_to_last()
    }
    fn seek(&mut self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let k = self.codec.encode_key(key)?;
        self.it.seek(&k);
        Ok(())
    }
    fn seek_for_prev(&mut self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let k = self.codec.encode_key(key)?;
        self.it.seek_for_prev(&k);
        Ok(())
    }
    fn next(&mut self) {
        if self.it.valid() {
            self.it.next()
        }
    }
    fn prev(&mut self) {
        if self.it.valid() {
            self.it.prev()
        }
    }
    fn key(&self, py: Python<'_>) -> PyResult<PyObject> {
        if !self.it.valid() {
            return Ok(py.None());
        }
        self.codec.decode_key(py, self.it.key())
    }
    fn value(&self, py: Python<'_>) -> PyResult<PyObject> {
        if !self.it.valid() {
            return Ok(py.None());
        }
        self.codec.decode_value(py, self.it.value())
    }
}

#[derive(Clone, Copy)]
pub enum View {
    Items,
    Keys,
    Values,
}

/// `Rdict.keys()`, `values()`, `items()`: Python iterators over a range.
#[pyclass(module = "strata", unsendable)]
pub struct RdictView {
    it: RdictIter,
    backwards: bool,
    what: View,
}

#[pymethods]
impl RdictView {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }
    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<PyObject>> {
        let it = &mut self.it;
        if !it.it.valid() {
            it.it.status().map_err(err)?;
            return Ok(None);
        }
        let out = match self.what {
            View::Keys => it.codec.decode_key(py, it.it.key())?,
            View::Values => it.codec.decode_value(py, it.it.value())?,
            View::Items => {
                let k = it.codec.decode_key(py, it.it.key())?;
                let v = it.codec.decode_value(py, it.it.value())?;
                (k, v).into_pyobject(py)?.into_any().unbind()
            }
        };
        if self.backwards {
            it.it.prev()
        } else {
            it.it.next()
        }
        Ok(Some(out))
    }
}

/// A point-in-time view: reads, iterators and views at the snapshot.
#[pyclass(module = "strata")]
pub struct Snapshot {
    rdict: Rdict,
    ro: strata::ReadOptions,
    _snap: strata::Snapshot,
}

#[pymethods]
impl Snapshot {
    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        match self.rdict.get_one(py, key, &self.ro)? {
            Some(v) => Ok(v),
            None => Err(PyKeyError::new_err(format!("key {} not found", key.str()?))),
        }
    }
    #[pyo3(signature = (key, default = None))]
    fn get(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<PyObject>,
    ) -> PyResult<PyObject> {
        Ok(self
            .rdict
            .get_one(py, key, &self.ro)?
            .unwrap_or_else(|| default.unwrap_or_else(|| py.None())))
    }
    fn iter(&self, py: Python<'_>) -> PyResult<RdictIter> {
        self.rdict.new_iter(py, self.ro.clone())
    }
    #[pyo3(signature = (backwards = false, from_key = None))]
    fn items(
        &self,
        py: Python<'_>,
        backwards: bool,
        from_key: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<RdictView> {
        self.view(py, backwards, from_key, View::Items)
    }
    #[pyo3(signature = (backwards = false, from_key = None))]
    fn keys(
        &self,
        py: Python<'_>,
        backwards: bool,
        from_key: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<RdictView> {
        self.view(py, backwards, from_key, View::Keys)
    }
    #[pyo3(signature = (backwards = false, from_key = None))]
    fn values(
        &self,
        py: Python<'_>,
        backwards: bool,
        from_key: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<RdictView> {
        self.view(py, backwards, from_key, View::Values)
    }
}

impl Snapshot {
    fn view(
        &self,
        py: Python<'_>,
        backwards: bool,
        from_key: Option<&Bound<'_, PyAny>>,
        what: View,
    ) -> PyResult<RdictView> {
        self.rdict
            .view_at(py, self.ro.clone(), backwards, from_key, what)
    }
}

/// An atomic batch of writes (rocksdict's `WriteBatch(raw_mode=False)`).
#[pyclass(module = "strata")]
pub struct WriteBatch {
    batch: strata::WriteBatch,
    codec: Codec,
    cf: u32,
}

#[pymethods]
impl WriteBatch {
    #[new]
    #[pyo3(signature = (raw_mode = false))]
    fn new(py: Python<'_>, raw_mode: bool) -> PyResult<Self> {
        Ok(WriteBatch {
            batch: strata::WriteBatch::new(),
            codec: Codec::new(py, raw_mode)?,
            cf: 0,
        })
    }
    fn __len__(&self) -> usize {
        self.batch.count() as usize
    }
    fn len(&self) -> usize {
        self.batch.count() as usize
    }
    fn is_empty(&self) -> bool {
        self.batch.count() == 0
    }
    fn size_in_bytes(&self) -> usize {
        self.batch.data().len()
    }
    fn clear(&mut self) {
        self.batch.clear()
    }
    fn set_dumps(&mut self, dumps: PyObject) {
        self.codec.dumps = dumps;
    }
    /// Later writes without a column family go to this one.
    fn set_default_column_family(
        &mut self,
        column_family: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        self.cf = column_family.map(cf_id_of).transpose()?.unwrap_or(0);
        Ok(())
    }
    fn __setitem__(&mut self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.put(key, value, None)
    }
    fn __delitem__(&mut self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.delete(key, None)
    }
    #[pyo3(signature = (key, value, column_family = None))]
    fn put(
        &mut self,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        column_family: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let (k, v) = (self.codec.encode_key(key)?, self.codec.encode_value(value)?);
        let cf = column_family.map(cf_id_of).transpose()?.unwrap_or(self.cf);
        self.batch.put_cf(cf, &k, &v);
        Ok(())
    }
    #[pyo3(signature = (key, column_family = None))]
    fn delete(
        &mut self,
        key: &Bound<'_, PyAny>,
        column_family: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let k = self.codec.encode_key(key)?;
        let cf = column_family.map(cf_id_of).transpose()?.unwrap_or(self.cf);
        self.batch.delete_cf(cf, &k);
        Ok(())
    }
    #[pyo3(signature = (begin, end, column_family = None))]
    fn delete_range(
        &mut self,
        begin: &Bound<'_, PyAny>,
        end: &Bound<'_, PyAny>,
        column_family: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let (b, e) = (self.codec.encode_key(begin)?, self.codec.encode_key(end)?);
        let cf = column_family.map(cf_id_of).transpose()?.unwrap_or(self.cf);
        self.batch.delete_range_cf(cf, &b, &e);
        Ok(())
    }
}

/// Writes a table file for `Rdict.ingest_external_file` (keys in order).
#[pyclass(module = "strata", unsendable)]
pub struct SstFileWriter {
    table: strata::TableOptions,
    writer: Option<strata::SstFileWriter>,
    codec: Codec,
    size: u64,
}

#[pymethods]
impl SstFileWriter {
    #[new]
    #[pyo3(signature = (options = None))]
    fn new(py: Python<'_>, options: Option<PyRef<'_, Options>>) -> PyResult<Self> {
        let (cf, raw) = options.map_or_else(
            || (strata::ColumnFamilyOptions::default(), false),
            |o| (o.opts.cf.clone(), o.raw_mode),
        );
        Ok(SstFileWriter {
            table: cf.sst_file_writer_table_options(),
            writer: None,
            codec: Codec::new(py, raw)?,
            size: 0,
        })
    }
    fn set_dumps(&mut self, dumps: PyObject) {
        self.codec.dumps = dumps;
    }
    fn open(&mut self, path: &str) -> PyResult<()> {
        self.writer = Some(strata::SstFileWriter::create(path, self.table.clone()).map_err(err)?);
        Ok(())
    }
    fn __setitem__(&mut self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let (k, v) = (self.codec.encode_key(key)?, self.codec.encode_value(value)?);
        self.open_writer()?.put(&k, &v).map_err(err)
    }
    fn __delitem__(&mut self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let k = self.codec.encode_key(key)?;
        self.open_writer()?.delete(&k).map_err(err)
    }
    fn finish(&mut self) -> PyResult<()> {
        let w = self
            .writer
            .take()
            .ok_or_else(|| PyException::new_err("Invalid argument: File is not opened"))?;
        self.size = w.finish().map_err(err)?.file_size;
        Ok(())
    }
    fn file_size(&self) -> u64 {
        self.writer.as_ref().map_or(self.size, |w| w.file_size())
    }
}

impl SstFileWriter {
    fn open_writer(&mut self) -> PyResult<&mut strata::SstFileWriter> {
        self.writer
            .as_mut()
            .ok_or_else(|| PyException::new_err("Invalid argument: File is not opened"))
    }
}

/// RocksDB's Checkpoint: an openable copy of a live database.
#[pyclass(module = "strata")]
pub struct Checkpoint {
    db: Arc<DB>,
}

#[pymethods]
impl Checkpoint {
    #[new]
    fn new(db: PyRef<'_, Rdict>) -> PyResult<Self> {
        Ok(Checkpoint {
            db: db.db()?.clone(),
        })
    }
    fn create_checkpoint(&self, py: Python<'_>, path: &str) -> PyResult<()> {
        let db = self.db.clone();
        py.allow_threads(|| {
            strata::utilities::checkpoint::Checkpoint::new(&db)?
                .create_checkpoint(Path::new(path), 0)
        })
        .map_err(err)?;
        Ok(())
    }
}
