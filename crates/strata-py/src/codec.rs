//! rocksdict's key and value encoding, byte for byte, so a database written
//! by rocksdict reads the same here and back: one type byte, then the
//! payload.
//!
//! | byte | type  | payload                                          |
//! |------|-------|--------------------------------------------------|
//! | 1    | bytes | the bytes                                        |
//! | 2    | str   | UTF-8                                            |
//! | 3    | int   | two's complement, big-endian, fewest bytes       |
//! | 4    | float | IEEE 754 binary64, big-endian                    |
//! | 5    | bool  | 0 or 1                                           |
//! | 6    | other | `dumps(value)` (pickle by default); values only  |
//!
//! In raw mode keys and values are bytes, stored as they are.

use pyo3::exceptions::{PyException, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyString};

const BYTES: u8 = 1;
const STR: u8 = 2;
const INT: u8 = 3;
const FLOAT: u8 = 4;
const BOOL: u8 = 5;
const ANY: u8 = 6;

/// How one database handle turns Python objects into bytes and back.
#[derive(Debug)]
pub struct Codec {
    pub raw: bool,
    pub dumps: PyObject,
    pub loads: PyObject,
    /// Values carry DBWithTTL's 4-byte timestamp suffix (a database opened
    /// with `AccessType.with_ttl`): encoding appends the current time,
    /// decoding checks and drops it.
    pub ttl: bool,
}

impl Codec {
    pub fn new(py: Python<'_>, raw: bool) -> PyResult<Codec> {
        let pickle = py.import("pickle")?;
        Ok(Codec {
            raw,
            dumps: pickle.getattr("dumps")?.unbind(),
            loads: pickle.getattr("loads")?.unbind(),
            ttl: false,
        })
    }

    pub fn clone_ref(&self, py: Python<'_>) -> Codec {
        Codec {
            raw: self.raw,
            dumps: self.dumps.clone_ref(py),
            loads: self.loads.clone_ref(py),
            ttl: self.ttl,
        }
    }

    pub fn encode_key(&self, key: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
        let mut out = Vec::new();
        self.encode_key_into(key, &mut out)?;
        Ok(out)
    }

    /// Appends the key's encoding to `out`.
    pub fn encode_key_into(&self, key: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> PyResult<()> {
        if self.raw {
            return raw_bytes_into(key, out);
        }
        if encode_primitive_into(key, out)? {
            Ok(())
        } else {
            Err(PyException::new_err(
                "Only support `string`, `int`, `float`, `bool`, and `bytes` as keys",
            ))
        }
    }

    pub fn encode_value(&self, value: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
        let mut out = Vec::new();
        self.encode_value_into(value, &mut out)?;
        Ok(out)
    }

    /// Appends the value's encoding to `out` (with the time, for a TTL
    /// database).
    pub fn encode_value_into(&self, value: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> PyResult<()> {
        self.encode_plain_value_into(value, out)?;
        if self.ttl {
            let now = strata::compaction_filter::unix_now_seconds();
            strata::utilities::ttl::push_ts(out, now);
        }
        Ok(())
    }

    fn encode_plain_value_into(&self, value: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> PyResult<()> {
        if self.raw {
            return raw_bytes_into(value, out);
        }
        if encode_primitive_into(value, out)? {
            return Ok(());
        }
        let pickled = self.dumps.bind(value.py()).call1((value,))?;
        let b = pickled
            .downcast::<PyBytes>()
            .map_err(|_| PyTypeError::new_err("dumps must return bytes"))?;
        out.push(ANY);
        out.extend_from_slice(b.as_bytes());
        Ok(())
    }

    pub fn decode_key(&self, py: Python<'_>, b: &[u8]) -> PyResult<PyObject> {
        self.decode(py, b)
    }

    pub fn decode_value(&self, py: Python<'_>, b: &[u8]) -> PyResult<PyObject> {
        if self.ttl {
            let plain = strata::utilities::ttl::strip_ts(b)
                .map_err(|e| PyException::new_err(e.to_string()))?;
            return self.decode(py, plain);
        }
        self.decode(py, b)
    }

    fn decode(&self, py: Python<'_>, b: &[u8]) -> PyResult<PyObject> {
        if self.raw {
            return Ok(PyBytes::new(py, b).into_any().unbind());
        }
        let Some((&t, rest)) = b.split_first() else {
            return Err(PyException::new_err(
                "empty encoded value (not written by rocksdict or strata?)",
            ));
        };
        Ok(match t {
            BYTES => PyBytes::new(py, rest).into_any().unbind(),
            // One UTF-8 validation, CPython's (invalid bytes raise).
            // SAFETY: `rest` is valid for the call; the result is a new
            // reference, or NULL with the exception set.
            STR => unsafe {
                Bound::from_owned_ptr_or_err(
                    py,
                    pyo3::ffi::PyUnicode_DecodeUTF8(
                        rest.as_ptr() as *const std::ffi::c_char,
                        rest.len() as pyo3::ffi::Py_ssize_t,
                        c"strict".as_ptr(),
                    ),
                )?
                .unbind()
            },

            INT => decode_int(py, rest)?,
            FLOAT => {
                let a: [u8; 8] = rest
                    .try_into()
                    .map_err(|_| PyException::new_err("bad float encoding"))?;
                PyFloat::new(py, f64::from_be_bytes(a)).into_any().unbind()
            }
            BOOL => PyBool::new(py, rest.first().is_some_and(|&v| v != 0))
                .to_owned()
                .into_any()
                .unbind(),
            ANY => self
                .loads
                .bind(py)
                .call1((PyBytes::new(py, rest),))?
                .unbind(),
            other => {
                return Err(PyException::new_err(format!(
                    "unknown type byte {other} (not written by rocksdict or strata?)"
                )));
            }
        })
    }
}

fn raw_bytes_into(v: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> PyResult<()> {
    match v.downcast::<PyBytes>() {
        Ok(b) => {
            out.extend_from_slice(b.as_bytes());
            Ok(())
        }
        Err(_) => Err(PyTypeError::new_err("raw mode only supports bytes")),
    }
}

/// Appends the encoding of a bytes, str, int, float or bool to `out`
/// (`false`, nothing appended, for other types).
fn encode_primitive_into(v: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> PyResult<bool> {
    if let Ok(b) = v.downcast::<PyBytes>() {
        out.push(BYTES);
        out.extend_from_slice(b.as_bytes());
    } else if let Ok(s) = v.downcast::<PyString>() {
        out.push(STR);
        out.extend_from_slice(s.to_str()?.as_bytes());
    } else if let Ok(b) = v.downcast::<PyBool>() {
        // Before int: bool is an int subclass.
        out.extend_from_slice(&[BOOL, u8::from(b.is_true())]);
    } else if v.is_instance_of::<PyInt>() {
        out.push(INT);
        encode_int(v, out)?;
    } else if let Ok(f) = v.downcast::<PyFloat>() {
        out.push(FLOAT);
        out.extend_from_slice(&f.value().to_be_bytes());
    } else {
        return Ok(false);
    }
    Ok(true)
}

/// Fewest big-endian two's-complement bytes (num-bigint's
/// `to_signed_bytes_be`, which rocksdict uses).
fn encode_int(v: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> PyResult<()> {
    if let Ok(n) = v.extract::<i64>() {
        out.extend_from_slice(minimal(&n.to_be_bytes()));
        return Ok(());
    }
    // Big ints: int.to_bytes with the length of the magnitude's bits.
    let py = v.py();
    let negative = v.lt(0)?;
    let bits: usize = if negative {
        // -n - 1 has the bits a negative number needs besides its sign.
        v.neg()?.sub(1)?.call_method0("bit_length")?.extract()?
    } else {
        v.call_method0("bit_length")?.extract()?
    };
    let len = (bits + 8) / 8;
    let kwargs = PyDict::new(py);
    kwargs.set_item("signed", true)?;
    let b = v.call_method("to_bytes", (len, "big"), Some(&kwargs))?;
    out.extend_from_slice(b.downcast::<PyBytes>()?.as_bytes());
    Ok(())
}

fn decode_int(py: Python<'_>, b: &[u8]) -> PyResult<PyObject> {
    if !b.is_empty() && b.len() <= 8 {
        let fill = if b[0] & 0x80 != 0 { 0xff } else { 0 };
        let mut a = [fill; 8];
        a[8 - b.len()..].copy_from_slice(b);
        return Ok(i64::from_be_bytes(a).into_pyobject(py)?.into_any().unbind());
    }
    let kwargs = PyDict::new(py);
    kwargs.set_item("signed", true)?;
    Ok(py
        .get_type::<PyInt>()
        .call_method("from_bytes", (PyBytes::new(py, b), "big"), Some(&kwargs))?
        .unbind())
}

/// rocksdict's comparator (named "rocksdict", the default of databases it
/// opens outside raw mode): ints (type byte 3) in numeric order, every
/// other key bytewise (so types group by their type byte).
#[derive(Debug)]
pub struct RocksdictComparator;

impl strata::Comparator for RocksdictComparator {
    fn name(&self) -> &str {
        "rocksdict"
    }

    fn compare(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        match (a.split_first(), b.split_first()) {
            (Some((&INT, x)), Some((&INT, y))) => compare_ints(x, y),
            _ => strata::bytewise_compare(a, b),
        }
    }
}

/// Big-endian two's-complement integers, numerically.
fn compare_ints(x: &[u8], y: &[u8]) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let (x, y) = (minimal(x), minimal(y));
    let neg = |v: &[u8]| v.first().is_some_and(|b| b & 0x80 != 0);
    match (neg(x), neg(y)) {
        (false, true) => Ordering::Greater,
        (true, false) => Ordering::Less,
        // Same sign: more bytes means farther from zero.
        (false, false) => x.len().cmp(&y.len()).then_with(|| x.cmp(y)),
        (true, true) => y.len().cmp(&x.len()).then_with(|| x.cmp(y)),
    }
}

/// Drops leading bytes that only repeat the sign (an empty payload is 0).
fn minimal(mut v: &[u8]) -> &[u8] {
    while v.len() > 1 {
        let (a, b) = (v[0], v[1]);
        if (a == 0 && b & 0x80 == 0) || (a == 0xff && b & 0x80 != 0) {
            v = &v[1..];
        } else {
            break;
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata::Comparator;

    #[test]
    fn ints_compare_numerically_and_other_keys_bytewise() {
        let enc = |n: i64| {
            let mut v = vec![INT];
            v.extend_from_slice(minimal(&n.to_be_bytes()));
            v
        };
        let ns = [
            -70000i64,
            -300,
            -129,
            -128,
            -1,
            0,
            1,
            127,
            128,
            255,
            256,
            70000,
            i64::MAX,
        ];
        for (i, a) in ns.iter().enumerate() {
            for (j, b) in ns.iter().enumerate() {
                assert_eq!(
                    RocksdictComparator.compare(&enc(*a), &enc(*b)),
                    i.cmp(&j),
                    "{a} vs {b}"
                );
            }
        }
        assert!(RocksdictComparator.compare(b"\x02b", b"\x03\x00").is_lt());
        assert!(
            RocksdictComparator
                .compare(b"\x04\xc0", b"\x04\x3f")
                .is_gt()
        );
    }
}
