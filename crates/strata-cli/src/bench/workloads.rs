//! The benchmark bodies, one per db_bench method, each run by every
//! thread of the benchmark (each thread does the full count). The order
//! of random draws follows db_bench's (a discarded draw per write batch
//! and per read where db_bench selects a DB), so the same seed reads the
//! same keys.

use strata::merge_operator::MergeOperator;
use strata::{ReadOptions, WriteBatch};

use super::random::{KeyOrder, ValueGenerator};
use super::stats::OpType;
use super::{OpBudget, Shared, ThreadState};

type R = Result<(), String>;

fn err(what: &str, e: strata::Error) -> String {
    format!("{what} error: {e}")
}

/// db_bench's `put` merge operator: the last operand wins.
#[derive(Debug, Clone, Copy)]
pub struct PutOperator;

impl MergeOperator for PutOperator {
    fn name(&self) -> &str {
        "PutOperator"
    }

    fn full_merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>> {
        operands.last().copied().or(existing).map(|v| v.to_vec())
    }
}

/// db_bench's `DoWrite`.
fn do_write(sh: &Shared, ts: &mut ThreadState, mut order: KeyOrder, time_limited: bool) -> R {
    let run = &sh.run;
    let batch_size = run.cfg.batch_size;
    let sequential = matches!(order, KeyOrder::Sequential { .. });
    let num_ops = if run.writes == 0 { run.num } else { run.writes };
    if run.num == 0 {
        // db_bench writes nothing when the key range is empty (fillsync
        // and fill100K with --num below 1000).
        return Ok(());
    }
    let mut budget = OpBudget::new(if time_limited { run.cfg.duration } else { 0 }, num_ops);
    if run.num != run.cfg.num {
        ts.stats.add_message(&format!("({} ops)", run.num));
    }
    let mut values = ValueGenerator::new(run.cfg.compression_ratio, run.value_size);
    let mut key = Vec::with_capacity(run.key_size);
    let mut bytes = 0u64;
    // `DB::write` takes the batch; each one is allocated with room for its
    // records so filling it does not reallocate (db_bench reuses one).
    let batch_cap = (batch_size as usize)
        .saturating_mul(run.key_size + run.value_size + 16)
        .min(64 << 20);
    let mut batch = WriteBatch::with_capacity(batch_cap);
    let tombstones = run.cfg.range_tombstones;
    let (mut written, mut range_deletions) = (0i64, 0u64);
    let mut end_key = Vec::with_capacity(run.key_size);
    while !budget.done(batch_size) {
        if !sequential {
            // db_bench picks a key generator per batch (always the one).
            ts.rand.next();
        }
        batch.clear();
        let mut batch_bytes = 0;
        for _ in 0..batch_size {
            let k = order.next(&mut ts.rand);
            run.make_key(k, &mut key);
            let v = values.generate(run.value_size);
            batch.put(&key, v);
            batch_bytes += (v.len() + run.key_size) as u64;
            written += 1;
            if tombstones.due(written) {
                range_deletions += 1;
                // db_bench takes the range's first key from the same key
                // generator.
                let begin = order.next(&mut ts.rand);
                range_delete(run, &mut batch, begin, &mut key, &mut end_key);
            }
        }
        bytes += batch_bytes;
        if sh.pace_writes(batch_size, batch_bytes) {
            ts.stats.reset_last_op_time();
        }
        sh.db
            .write(
                &run.cfg.write_opts,
                std::mem::replace(&mut batch, WriteBatch::with_capacity(batch_cap)),
            )
            .map_err(|e| err("put", e))?;
        ts.stats
            .finished_ops(sh.stats_cfg, batch_size, OpType::Write);
    }
    sh.range_deletions
        .fetch_add(range_deletions, std::sync::atomic::Ordering::AcqRel);
    ts.stats.add_bytes(bytes);
    Ok(())
}

/// Adds db_bench's range deletion of `range_tombstone_width` keys from key
/// number `begin` to `batch` (or that many point deletions with
/// `--expand_range_tombstones`).
fn range_delete(
    run: &super::RunConfig,
    batch: &mut WriteBatch,
    begin: u64,
    key: &mut Vec<u8>,
    end_key: &mut Vec<u8>,
) {
    let width = run.cfg.range_tombstones.width.max(0) as u64;
    if run.cfg.range_tombstones.expand {
        for offset in 0..width {
            run.make_key(begin + offset, key);
            batch.delete(key);
        }
        return;
    }
    run.make_key(begin, key);
    run.make_key(begin + width, end_key);
    batch.delete_range(key, end_key);
}

pub fn fill_seq(sh: &Shared, ts: &mut ThreadState) -> R {
    do_write(sh, ts, KeyOrder::Sequential { next: 0 }, false)
}

/// The key range of a fill's key generator: db_bench's `num_per_key_gen`,
/// `num_` plus room for the range deletions' first keys.
fn key_gen_range(run: &super::RunConfig) -> u64 {
    run.num + run.cfg.range_tombstones.max.max(0) as u64
}

pub fn fill_random(sh: &Shared, ts: &mut ThreadState) -> R {
    do_write(
        sh,
        ts,
        KeyOrder::Random {
            num: key_gen_range(&sh.run).max(1),
        },
        true,
    )
}

pub fn fill_unique_random(sh: &Shared, ts: &mut ThreadState) -> R {
    let order = KeyOrder::unique(key_gen_range(&sh.run), ts.rand.next());
    do_write(sh, ts, order, false)
}

fn read_scan(sh: &Shared, ts: &mut ThreadState, reverse: bool) -> R {
    let mut it = sh
        .db
        .new_iterator(&ReadOptions::default())
        .map_err(|e| err("iterator", e))?;
    if reverse {
        it.seek_to_last();
    } else {
        it.seek_to_first();
    }
    let (mut i, mut bytes) = (0u64, 0u64);
    while i < sh.run.reads && it.valid() {
        bytes += (it.key().len() + it.value().len()) as u64;
        i += 1;
        ts.stats.finished_ops(sh.stats_cfg, 1, OpType::Read);
        if reverse {
            it.prev();
        } else {
            it.next();
        }
    }
    it.status().map_err(|e| err("iterator", e))?;
    ts.stats.add_bytes(bytes);
    Ok(())
}

pub fn read_seq(sh: &Shared, ts: &mut ThreadState) -> R {
    read_scan(sh, ts, false)
}

pub fn read_reverse(sh: &Shared, ts: &mut ThreadState) -> R {
    read_scan(sh, ts, true)
}

/// A key drawn as db_bench's `GetRandomKey` (uniform over `--num`).
#[inline]
fn random_key(sh: &Shared, ts: &mut ThreadState, key: &mut Vec<u8>) {
    let n = ts.rand.next() % sh.run.cfg.num;
    sh.run.make_key(n, key);
}

pub fn read_random(sh: &Shared, ts: &mut ThreadState) -> R {
    let ro = ReadOptions::default();
    let mut budget = OpBudget::new(sh.run.cfg.duration, sh.run.reads);
    let mut key = Vec::with_capacity(sh.run.key_size);
    let (mut read, mut found, mut bytes) = (0u64, 0u64, 0u64);
    while !budget.done(1) {
        ts.rand.next(); // db_bench's SelectDB draw
        random_key(sh, ts, &mut key);
        read += 1;
        // As db_bench's Get into a PinnableSlice: the value is not copied.
        if let Some(len) = sh
            .db
            .get_with(&ro, &key, <[u8]>::len)
            .map_err(|e| err("get", e))?
        {
            found += 1;
            bytes += (key.len() + len) as u64;
        }
        ts.stats.finished_ops(sh.stats_cfg, 1, OpType::Read);
    }
    ts.stats.add_bytes(bytes);
    ts.stats
        .add_message(&format!("({found} of {read} found)\n"));
    Ok(())
}

pub fn multi_read_random(sh: &Shared, ts: &mut ThreadState) -> R {
    let ro = ReadOptions::default();
    let batch = sh.run.cfg.batch_size;
    let mut budget = OpBudget::new(sh.run.cfg.duration, sh.run.reads);
    let mut keys: Vec<Vec<u8>> = vec![Vec::with_capacity(sh.run.key_size); batch as usize];
    let (mut read, mut found, mut bytes) = (0u64, 0u64, 0u64);
    while !budget.done(batch) {
        ts.rand.next(); // SelectDB
        for k in keys.iter_mut() {
            random_key(sh, ts, k);
        }
        let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
        for (k, r) in refs.iter().zip(sh.db.multi_get(&ro, &refs)) {
            read += 1;
            if let Some(v) = r.map_err(|e| err("multiget", e))? {
                found += 1;
                bytes += (k.len() + v.len()) as u64;
            }
        }
        ts.stats.finished_ops(sh.stats_cfg, batch, OpType::Read);
    }
    ts.stats.add_bytes(bytes);
    ts.stats.add_message(&format!("({found} of {read} found)"));
    Ok(())
}

pub fn seek_random(sh: &Shared, ts: &mut ThreadState) -> R {
    let ro = ReadOptions::default();
    let mut budget = OpBudget::new(sh.run.cfg.duration, sh.run.reads);
    let mut key = Vec::with_capacity(sh.run.key_size);
    let (mut read, mut found, mut bytes) = (0u64, 0u64, 0u64);
    while !budget.done(1) {
        let mut it = sh.db.new_iterator(&ro).map_err(|e| err("iterator", e))?;
        random_key(sh, ts, &mut key);
        it.seek(&key);
        read += 1;
        if it.valid() && it.key() == key.as_slice() {
            found += 1;
        }
        let mut j = 0;
        while j < sh.run.cfg.seek_nexts && it.valid() {
            bytes += (it.key().len() + it.value().len()) as u64;
            if sh.run.cfg.reverse_iterator {
                it.prev();
            } else {
                it.next();
            }
            j += 1;
        }
        it.status().map_err(|e| err("iterator", e))?;
        ts.stats.finished_ops(sh.stats_cfg, 1, OpType::Seek);
    }
    ts.stats.add_bytes(bytes);
    ts.stats
        .add_message(&format!("({found} of {read} found)\n"));
    Ok(())
}

/// db_bench's `BGWriter`: puts (or merges) random keys until every reader
/// is done; not part of the printed result.
fn bg_writer(sh: &Shared, ts: &mut ThreadState, merge: bool) -> R {
    ts.stats.exclude_from_merge();
    let mut values = ValueGenerator::new(sh.run.cfg.compression_ratio, sh.run.value_size);
    let mut key = Vec::with_capacity(sh.run.key_size);
    let mut bytes = 0u64;
    let tombstones = sh.run.cfg.range_tombstones;
    let (mut written, mut range_deletions) = (0i64, 0u64);
    let mut end_key = Vec::with_capacity(sh.run.key_size);
    loop {
        ts.rand.next(); // SelectDB
        if sh.num_done.load(std::sync::atomic::Ordering::Acquire) + 1 >= sh.num_threads {
            break;
        }
        random_key(sh, ts, &mut key);
        let v = values.generate(sh.run.value_size);
        let wo = &sh.run.cfg.write_opts;
        if merge {
            sh.db.merge(wo, &key, v).map_err(|e| err("merge", e))?;
        } else {
            sh.db.put(wo, &key, v).map_err(|e| err("put", e))?;
        }
        let n = (key.len() + v.len()) as u64;
        bytes += n;
        ts.stats.finished_ops(sh.stats_cfg, 1, OpType::Write);
        sh.pace_writes(1, n);
        written += 1;
        if tombstones.due(written) {
            range_deletions += 1;
            let begin = ts.rand.next() % sh.run.cfg.num;
            let mut batch = WriteBatch::new();
            range_delete(&sh.run, &mut batch, begin, &mut key, &mut end_key);
            sh.db.write(wo, batch).map_err(|e| err("deleterange", e))?;
            ts.stats.finished_ops(sh.stats_cfg, 1, OpType::Write);
        }
    }
    sh.range_deletions
        .fetch_add(range_deletions, std::sync::atomic::Ordering::AcqRel);
    ts.stats.add_bytes(bytes);
    Ok(())
}

pub fn read_while_writing(sh: &Shared, ts: &mut ThreadState) -> R {
    if ts.tid > 0 {
        read_random(sh, ts)
    } else {
        bg_writer(sh, ts, false)
    }
}

pub fn read_while_merging(sh: &Shared, ts: &mut ThreadState) -> R {
    if ts.tid > 0 {
        read_random(sh, ts)
    } else {
        bg_writer(sh, ts, true)
    }
}

pub fn read_random_write_random(sh: &Shared, ts: &mut ThreadState) -> R {
    let ro = ReadOptions::default();
    let total = sh.run.cfg.readwrites();
    let mut budget = OpBudget::new(sh.run.cfg.duration, total);
    let mut values = ValueGenerator::new(sh.run.cfg.compression_ratio, sh.run.value_size);
    let mut key = Vec::with_capacity(sh.run.key_size);
    let (mut reads, mut writes, mut found) = (0u64, 0u64, 0u64);
    let (mut get_weight, mut put_weight) = (0u64, 0u64);
    while !budget.done(1) {
        ts.rand.next(); // SelectDB
        random_key(sh, ts, &mut key);
        if get_weight == 0 && put_weight == 0 {
            get_weight = sh.run.cfg.readwritepercent;
            put_weight = 100 - get_weight;
        }
        if get_weight > 0 {
            if sh
                .db
                .get_with(&ro, &key, |_| ())
                .map_err(|e| err("get", e))?
                .is_some()
            {
                found += 1;
            }
            get_weight -= 1;
            reads += 1;
            ts.stats.finished_ops(sh.stats_cfg, 1, OpType::Read);
        } else {
            let v = values.generate(sh.run.value_size);
            sh.pace_writes(1, (key.len() + v.len()) as u64);
            sh.db
                .put(&sh.run.cfg.write_opts, &key, v)
                .map_err(|e| err("put", e))?;
            put_weight -= 1;
            writes += 1;
            ts.stats.finished_ops(sh.stats_cfg, 1, OpType::Write);
        }
    }
    ts.stats.add_message(&format!(
        "( reads:{reads} writes:{writes} total:{total} found:{found})"
    ));
    Ok(())
}

pub fn update_random(sh: &Shared, ts: &mut ThreadState) -> R {
    let ro = ReadOptions::default();
    let total = sh.run.cfg.readwrites();
    let mut budget = OpBudget::new(sh.run.cfg.duration, total);
    let mut values = ValueGenerator::new(sh.run.cfg.compression_ratio, sh.run.value_size);
    let mut key = Vec::with_capacity(sh.run.key_size);
    let (mut found, mut bytes) = (0u64, 0u64);
    while !budget.done(1) {
        ts.rand.next(); // SelectDB
        random_key(sh, ts, &mut key);
        if let Some(old) = sh.db.get(&ro, &key).map_err(|e| err("get", e))? {
            found += 1;
            bytes += (key.len() + old.len()) as u64;
        }
        let v = values.generate(sh.run.value_size);
        if sh.pace_writes(1, (key.len() + v.len()) as u64) {
            ts.stats.reset_last_op_time();
        }
        sh.db
            .put(&sh.run.cfg.write_opts, &key, v)
            .map_err(|e| err("put", e))?;
        bytes += (key.len() + v.len()) as u64;
        ts.stats.finished_ops(sh.stats_cfg, 1, OpType::Update);
    }
    ts.stats.add_bytes(bytes);
    ts.stats
        .add_message(&format!("( updates:{total} found:{found})"));
    Ok(())
}

pub fn merge_random(sh: &Shared, ts: &mut ThreadState) -> R {
    let total = sh.run.cfg.readwrites();
    let merge_keys = if sh.run.cfg.merge_keys < 0 {
        sh.run.cfg.num
    } else {
        (sh.run.cfg.merge_keys as u64).max(1)
    };
    let mut budget = OpBudget::new(sh.run.cfg.duration, total);
    let mut values = ValueGenerator::new(sh.run.cfg.compression_ratio, sh.run.value_size);
    let mut key = Vec::with_capacity(sh.run.key_size);
    let mut bytes = 0u64;
    while !budget.done(1) {
        ts.rand.next(); // SelectDB
        let n = ts.rand.next() % merge_keys;
        sh.run.make_key(n, &mut key);
        let v = values.generate(sh.run.value_size);
        sh.pace_writes(1, (key.len() + v.len()) as u64);
        sh.db
            .merge(&sh.run.cfg.write_opts, &key, v)
            .map_err(|e| err("merge", e))?;
        bytes += (key.len() + v.len()) as u64;
        ts.stats.finished_ops(sh.stats_cfg, 1, OpType::Merge);
    }
    ts.stats.add_bytes(bytes);
    ts.stats.add_message(&format!("( updates:{total})"));
    Ok(())
}

fn do_delete(sh: &Shared, ts: &mut ThreadState, sequential: bool) -> R {
    let batch_size = sh.run.cfg.batch_size;
    let secs = if sequential { 0 } else { sh.run.cfg.duration };
    let mut budget = OpBudget::new(secs, sh.run.deletes);
    let mut key = Vec::with_capacity(sh.run.key_size);
    let mut i = 0u64;
    while !budget.done(batch_size) {
        ts.rand.next(); // SelectDB
        let mut batch = WriteBatch::new();
        for j in 0..batch_size {
            let n = if sequential {
                i + j
            } else {
                ts.rand.next() % sh.run.cfg.num
            };
            sh.run.make_key(n, &mut key);
            batch.delete(&key);
        }
        sh.db
            .write(&sh.run.cfg.write_opts, batch)
            .map_err(|e| err("del", e))?;
        ts.stats
            .finished_ops(sh.stats_cfg, batch_size, OpType::Delete);
        i += batch_size;
    }
    Ok(())
}

pub fn delete_seq(sh: &Shared, ts: &mut ThreadState) -> R {
    do_delete(sh, ts, true)
}

pub fn delete_random(sh: &Shared, ts: &mut ThreadState) -> R {
    do_delete(sh, ts, false)
}

/// A full manual compaction, the bottommost level included.
pub fn compact(sh: &Shared, ts: &mut ThreadState) -> R {
    ts.rand.next(); // SelectDB
    let cro = strata::db::CompactRangeOptions {
        bottommost_level_compaction: strata::db::BottommostLevelCompaction::Force,
        ..Default::default()
    };
    sh.db
        .compact_range_cf_opt(&sh.db.default_cf(), None, None, &cro)
        .map_err(|e| err("compact", e))
}

/// db_bench's `backup`: a fresh backup (old ones destroyed) of the whole
/// database into `--backup_dir`.
pub fn backup(sh: &Shared, ts: &mut ThreadState) -> R {
    use strata::utilities::backup::{BackupEngine, BackupEngineOptions};
    ts.rand.next(); // SelectDB
    let cfg = &sh.run.cfg;
    let mut o = BackupEngineOptions::new(&cfg.backup_dir);
    o.backup_rate_limit = cfg.backup_rate_limit;
    o.destroy_old_data = true;
    let mut engine = BackupEngine::open(o).map_err(|e| err("backup", e))?;
    engine
        .create_new_backup(sh.db, false)
        .map_err(|e| err("backup", e))?;
    if engine.get_backup_info(false).len() != 1 {
        return Err("backup: expected exactly one backup".into());
    }
    Ok(())
}

/// db_bench's `restore`: the latest backup in `--backup_dir` restored
/// into `--restore_dir`.
pub fn restore(sh: &Shared, _ts: &mut ThreadState) -> R {
    use strata::utilities::backup::{BackupEngine, BackupEngineOptions};
    let cfg = &sh.run.cfg;
    let mut o = BackupEngineOptions::new(&cfg.backup_dir);
    o.restore_rate_limit = cfg.restore_rate_limit;
    let engine = BackupEngine::open_read_only(o).map_err(|e| err("restore", e))?;
    let dir = std::path::Path::new(&cfg.restore_dir);
    engine
        .restore_db_from_latest_backup(&Default::default(), dir, dir)
        .map_err(|e| err("restore", e))
}
