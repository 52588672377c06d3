//! The write history of a crash test and its prefix check: random
//! batches with unique values, a replay that finds which prefixes of the
//! history a recovered database equals, and a scan that cross-checks gets.
//! Shared by the power-loss (G2) and crash-point (G3) suites.

use std::collections::BTreeMap;

use strata::{DB, ReadOptions, WriteBatch};

pub type State = BTreeMap<Vec<u8>, Vec<u8>>;

pub const KEYS: u64 = 48;

#[derive(Clone, Debug)]
pub enum Op {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    DeleteRange(Vec<u8>, Vec<u8>),
    Merge(Vec<u8>, Vec<u8>),
}

pub use strata::tools::util::rng::Rng;

pub fn key(i: u64) -> Vec<u8> {
    format!("k{i:03}").into_bytes()
}

/// A random batch; every value names its batch and position, so values are
/// unique across the history.
pub fn random_batch(rng: &mut Rng, index: usize) -> Vec<Op> {
    let n = 1 + rng.below(4) as usize;
    (0..n)
        .map(|j| {
            let k = key(rng.below(KEYS));
            let pad = "x".repeat(rng.below(60) as usize);
            let v = format!("b{index}.{j}{pad}").into_bytes();
            match rng.below(20) {
                0..=10 => Op::Put(k, v),
                11..=13 => Op::Delete(k),
                14 => {
                    let a = rng.below(KEYS);
                    let b = a + 1 + rng.below(8);
                    Op::DeleteRange(key(a), key(b))
                }
                _ => Op::Merge(k, v),
            }
        })
        .collect()
}

pub fn to_write_batch(ops: &[Op]) -> WriteBatch {
    let mut wb = WriteBatch::new();
    for op in ops {
        match op {
            Op::Put(k, v) => wb.put(k, v),
            Op::Delete(k) => wb.delete(k),
            Op::DeleteRange(a, b) => wb.delete_range(a, b),
            Op::Merge(k, v) => wb.merge(k, v),
        }
    }
    wb
}

/// Replays the history while tracking how many keys differ from
/// `recovered`; returns every prefix length at which none does.
pub fn matching_prefixes(history: &[Vec<Op>], recovered: &State) -> Vec<usize> {
    let mut model = State::new();
    let mut differ = recovered.len();
    let mut out = Vec::new();
    if differ == 0 {
        out.push(0);
    }
    // Sets `k` to `new` in the model, keeping `differ` exact.
    let set = |model: &mut State, k: &[u8], new: Option<Vec<u8>>, differ: &mut usize| {
        let want = recovered.get(k);
        let was = model.get(k) == want;
        match new {
            Some(v) => model.insert(k.to_vec(), v),
            None => model.remove(k),
        };
        let is = model.get(k) == want;
        match (was, is) {
            (true, false) => *differ += 1,
            (false, true) => *differ -= 1,
            _ => {}
        }
    };
    for (i, batch) in history.iter().enumerate() {
        for op in batch {
            match op {
                Op::Put(k, v) => set(&mut model, k, Some(v.clone()), &mut differ),
                Op::Delete(k) => set(&mut model, k, None, &mut differ),
                Op::DeleteRange(a, b) => {
                    let doomed: Vec<Vec<u8>> = model
                        .range(a.clone()..b.clone())
                        .map(|(k, _)| k.clone())
                        .collect();
                    for k in doomed {
                        set(&mut model, &k, None, &mut differ);
                    }
                }
                Op::Merge(k, v) => {
                    let new = match model.get(k) {
                        Some(old) => [old.as_slice(), b",", v].concat(),
                        None => v.clone(),
                    };
                    set(&mut model, k, Some(new), &mut differ);
                }
            }
        }
        if differ == 0 {
            out.push(i + 1);
        }
    }
    out
}

pub fn scan(db: &DB) -> Result<State, String> {
    let ro = ReadOptions::default();
    let mut it = db.iter(&ro).map_err(|e| format!("iterator: {e}"))?;
    let mut out = State::new();
    while it.valid() {
        out.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status().map_err(|e| format!("scan: {e}"))?;
    for i in 0..KEYS {
        let k = key(i);
        let got = db.get(&ro, &k).map_err(|e| format!("get: {e}"))?;
        if got.as_ref() != out.get(&k) {
            return Err(format!(
                "get({}) = {got:?} but the scan has {:?}",
                String::from_utf8_lossy(&k),
                out.get(&k)
            ));
        }
    }
    Ok(out)
}
