//! Full verification of a database against the expected state, run when a
//! stress run starts (after the previous one died or ended) and when it
//! ends: every key by get (settling writes left in flight, or replaying a
//! WAL-off trace), then by multi-get, by a forward and a reverse scan, and
//! finally the checksum scrub.

use strata::{DB, ReadOptions};

use super::expected::{
    ExpectedState, TraceRecord, describe, exists, key_bytes, parse_key, read_base, read_trace,
    value_state,
};
use super::{Config, VERIFICATION_FAILED};

/// What a verification found.
#[derive(Debug, Default)]
pub struct Report {
    pub present: u64,
    /// In-flight writes of a dead process, settled one way or the other.
    pub settled: u64,
    /// With a WAL-off trace: writes recovered, writes traced.
    pub trace: Option<(usize, usize)>,
}

fn fail(msg: String) -> String {
    format!("{VERIFICATION_FAILED}: {msg}")
}

/// The state a read value stands for (`None`: absent).
pub fn decode(k: u64, v: Option<&[u8]>, cfg: &Config) -> Result<Option<u32>, String> {
    match v {
        None => Ok(None),
        Some(v) => value_state(k, v, cfg.value_extra).map(Some).ok_or_else(|| {
            fail(format!(
                "key {k}: value {:?} is no value this key was ever given",
                String::from_utf8_lossy(&v[..v.len().min(80)])
            ))
        }),
    }
}

/// Whether a read state agrees with expected state `want`.
pub fn agrees(want: u32, got: Option<u32>) -> bool {
    if exists(want) {
        got == Some(want)
    } else {
        got.is_none()
    }
}

pub fn verify_all(db: &DB, exp: &ExpectedState, cfg: &Config) -> Result<Report, String> {
    let ro = ReadOptions::default();
    let n = exp.max_key();
    let mut actual = Vec::with_capacity(n as usize);
    for k in 0..n {
        let v = db
            .get(&ro, &key_bytes(k))
            .map_err(|e| fail(format!("get key {k}: {e}")))?;
        actual.push(decode(k, v.as_deref(), cfg)?);
    }
    let mut report = Report {
        present: actual.iter().filter(|a| a.is_some()).count() as u64,
        ..Report::default()
    };
    let trace_path = exp.trace_path();
    if trace_path.exists() {
        report.trace = Some(settle_by_trace(exp, &actual)?);
        exp.sync()?;
        std::fs::remove_file(&trace_path)
            .and_then(|()| std::fs::remove_file(exp.base_path()))
            .map_err(|e| format!("remove the WAL-off trace: {e}"))?;
    } else {
        for (k, &got) in actual.iter().enumerate() {
            let k = k as u64;
            let (committed, pending) = exp.get(k);
            if agrees(committed, got) {
                if pending.is_some() {
                    exp.commit(k, committed)?;
                    report.settled += 1;
                }
            } else if let Some(p) = pending.filter(|&p| agrees(p, got)) {
                exp.commit(k, p)?;
                report.settled += 1;
            } else {
                return Err(fail(format!(
                    "key {k}: expected {}{}, found {}",
                    describe(Some(committed)),
                    pending.map_or(String::new(), |p| format!(
                        " (or {} from a write in flight)",
                        describe(Some(p))
                    )),
                    describe(got)
                )));
            }
        }
        exp.sync()?;
    }
    // Multi-get, in chunks.
    let keys: Vec<Vec<u8>> = (0..n).map(key_bytes).collect();
    for (c, chunk) in keys.chunks(97).enumerate() {
        let refs: Vec<&[u8]> = chunk.iter().map(|k| k.as_slice()).collect();
        for (i, r) in db.multi_get(&ro, &refs).into_iter().enumerate() {
            let k = (c * 97 + i) as u64;
            let v = r.map_err(|e| fail(format!("multi_get key {k}: {e}")))?;
            let got = decode(k, v.as_deref(), cfg)?;
            if !agrees(exp.get(k).0, got) {
                return Err(fail(format!(
                    "multi_get key {k}: expected {}, found {} (get agreed)",
                    describe(Some(exp.get(k).0)),
                    describe(got)
                )));
            }
        }
    }
    // Forward and reverse scans see exactly the existing keys.
    let want: Vec<u64> = (0..n).filter(|&k| exists(exp.get(k).0)).collect();
    for reverse in [false, true] {
        let what = if reverse { "reverse scan" } else { "scan" };
        let mut it = db
            .new_iterator(&ro)
            .map_err(|e| fail(format!("{what}: {e}")))?;
        let mut seen = Vec::with_capacity(want.len());
        if reverse {
            it.seek_to_last();
        } else {
            it.seek_to_first();
        }
        while it.valid() {
            let k = parse_key(it.key())
                .filter(|&k| k < n)
                .ok_or_else(|| fail(format!("{what}: unexpected key {:?}", it.key())))?;
            let got = decode(k, Some(it.value()), cfg)?;
            if !agrees(exp.get(k).0, got) {
                return Err(fail(format!(
                    "{what}: key {k}: expected {}, found {}",
                    describe(Some(exp.get(k).0)),
                    describe(got)
                )));
            }
            seen.push(k);
            if reverse {
                it.prev();
            } else {
                it.next();
            }
        }
        it.status().map_err(|e| fail(format!("{what}: {e}")))?;
        if reverse {
            seen.reverse();
        }
        if seen != want {
            let missing = want.iter().find(|k| !seen.contains(k));
            return Err(fail(format!(
                "{what} saw {} keys, gets saw {} (first missing: {missing:?})",
                seen.len(),
                want.len()
            )));
        }
    }
    db.verify_checksums()
        .map_err(|e| fail(format!("verify_checksums: {e}")))?;
    Ok(report)
}

/// A WAL-off run died: the database must hold the run's base plus a prefix
/// of its trace, at least up to the last flush marker. Picks the longest
/// such prefix and makes it the expected state.
fn settle_by_trace(exp: &ExpectedState, actual: &[Option<u32>]) -> Result<(usize, usize), String> {
    let n = exp.max_key();
    let base = read_base(&exp.base_path(), n)?;
    let trace = read_trace(&exp.trace_path())?;
    let mut model = base.clone();
    let mut differ = (0..n as usize)
        .filter(|&k| !agrees(model[k], actual[k]))
        .count();
    let mut writes = 0usize;
    let mut floor = 0usize;
    let mut best = (differ == 0).then_some(0usize);
    for r in &trace {
        match r {
            TraceRecord::Flush => floor = writes,
            TraceRecord::Write(kv) => {
                for &(k, s) in kv {
                    let k = usize::try_from(k)
                        .ok()
                        .filter(|&k| k < model.len())
                        .ok_or_else(|| format!("trace names key {k} beyond --max_key"))?;
                    let was = agrees(model[k], actual[k]);
                    model[k] = s;
                    match (was, agrees(s, actual[k])) {
                        (true, false) => differ += 1,
                        (false, true) => differ -= 1,
                        _ => {}
                    }
                }
                writes += 1;
                if differ == 0 {
                    best = Some(writes);
                }
            }
        }
    }
    let Some(p) = best.filter(|&p| p >= floor) else {
        return Err(fail(format!(
            "with the WAL off, the database is not the state after any prefix of the \
             {writes} traced writes that keeps the {floor} before the last flush \
             (longest matching prefix: {best:?})"
        )));
    };
    // Replay to `p` again and make it the expected state.
    let mut model = base;
    for kv in trace
        .iter()
        .filter_map(|r| match r {
            TraceRecord::Write(kv) => Some(kv),
            TraceRecord::Flush => None,
        })
        .take(p)
    {
        for &(k, s) in kv {
            model[k as usize] = s;
        }
    }
    for (k, &s) in model.iter().enumerate() {
        exp.commit(k as u64, s)?;
    }
    Ok((p, writes))
}
