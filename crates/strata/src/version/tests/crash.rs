//! Simulated power loss (`MemFileSystem::crash`) and injected faults around
//! `log_and_apply`: an acknowledged edit always survives, and whatever
//! fails, recovery yields the state before or after the edit in flight.

use super::*;
use crate::fs::fault::{FailMode, FaultInjectionFileSystem, OpKind};

#[test]
fn acknowledged_edits_survive_power_loss() {
    for seed in 0..160u64 {
        let (m, fs) = mem();
        let mut vs = VersionSet::create_new(fs.clone(), &db_path(), bytewise()).unwrap();
        vs.max_manifest_file_size = 200 + (seed % 4) * 300;
        let k = seed % 24;
        for i in 0..k {
            workload_step(&mut vs, i).unwrap();
        }
        let want = fingerprint(&vs);
        m.crash(seed);
        drop(vs);
        let mut vs = VersionSet::recover(fs.clone(), &db_path(), bytewise(), false)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert_eq!(fingerprint(&vs), want, "seed {seed}");
        // Keep going after recovery, crash again.
        workload_step(&mut vs, k).unwrap();
        let want = fingerprint(&vs);
        m.crash(seed ^ 0xABCD);
        drop(vs);
        let vs = VersionSet::recover(fs.clone(), &db_path(), bytewise(), false).unwrap();
        assert_eq!(fingerprint(&vs), want, "seed {seed} (second crash)");
    }
}

/// A DB on a fault-injecting file system after `steps` workload steps.
fn faulty_db(
    steps: u64,
    max_manifest: u64,
) -> (MemFileSystem, FaultInjectionFileSystem, VersionSet) {
    let (m, _) = mem();
    let f = FaultInjectionFileSystem::new(Arc::new(m.clone()));
    let fs: FileSystemRef = Arc::new(f.clone());
    let mut vs = VersionSet::create_new(fs, &db_path(), bytewise()).unwrap();
    for i in 0..steps {
        workload_step(&mut vs, i).unwrap();
    }
    vs.max_manifest_file_size = max_manifest;
    (m, f, vs)
}

/// Fails the k-th file-system operation of one `log_and_apply` (every k,
/// once and from then on, with and without a MANIFEST rollover), crashes,
/// and checks recovery yields the state before or after.
#[test]
fn fault_sweep_over_log_and_apply() {
    for (step, max_manifest) in [(5u64, 1u64 << 30), (5, 0), (6, 0), (7, 1 << 30)] {
        let (_m, _f, mut reference) = faulty_db(step, max_manifest);
        let before = fingerprint(&reference);
        workload_step(&mut reference, step).unwrap();
        let after = fingerprint(&reference);
        assert_ne!(before, after);
        for mode in [FailMode::Once, FailMode::Persistent] {
            for k in 0.. {
                let mut fired_any = false;
                for variant in 0..4u64 {
                    fired_any |= sweep_one(step, max_manifest, mode, k, variant, &before, &after);
                }
                if !fired_any {
                    break;
                }
            }
        }
    }
}

/// One run of the sweep: fault at operation `k`, then a crash chosen by
/// `variant`. Returns whether the fault fired.
fn sweep_one(
    step: u64,
    max_manifest: u64,
    mode: FailMode,
    k: u64,
    variant: u64,
    before: &str,
    after: &str,
) -> bool {
    let (m, f, mut vs) = faulty_db(step, max_manifest);
    f.fail_after(k, mode);
    let r = workload_step(&mut vs, step);
    let fired = f.injected_count() > 0;
    f.clear_faults();
    match &r {
        Ok(()) => assert_eq!(fingerprint(&vs), after),
        Err(_) => {
            assert!(fired);
            assert_eq!(fingerprint(&vs), before, "k {k}: memory changed");
            // Refuses further edits until reopened.
            if vs.background_error().is_some() {
                assert!(vs.log_and_apply(0, VersionEdit::new()).is_err());
            }
        }
    }
    if variant == 3 {
        m.crash_drop_unsynced();
    } else {
        m.crash(k * 1000 + step * 10 + variant);
    }
    drop(vs);
    let mfs: FileSystemRef = Arc::new(m.clone());
    let got = VersionSet::recover(mfs, &db_path(), bytewise(), false)
        .map(|v| fingerprint(&v))
        .unwrap_or_else(|e| panic!("step {step} k {k} {mode:?} variant {variant}: {e}"));
    if r.is_ok() {
        assert_eq!(got, after, "step {step} k {k}: acknowledged edit lost");
    } else {
        assert!(got == before || got == after, "step {step} k {k}: {got}");
    }
    fired
}

/// A crash while CURRENT is being switched to a new MANIFEST.
#[test]
fn crash_during_current_switch() {
    let (mut saw_old, mut saw_new) = (false, false);
    // The new MANIFEST's sync and directory sync, the temp file's sync,
    // the rename over CURRENT, and the final directory sync.
    let points = [
        (OpKind::Sync, 0),
        (OpKind::SyncDir, 0),
        (OpKind::Sync, 1),
        (OpKind::Rename, 0),
        (OpKind::SyncDir, 1),
    ];
    for (kind, after) in points {
        for seed in 0..60u64 {
            let (m, f, mut vs) = faulty_db(4, 0);
            let before = fingerprint(&vs);
            f.fail_op(&[kind], None, after, FailMode::Once);
            let r = workload_step(&mut vs, 4);
            assert!(r.is_err(), "{kind:?}");
            assert_eq!(fingerprint(&vs), before);
            m.crash(seed);
            drop(vs);
            let (_, _, mut reference) = faulty_db(4, 0);
            workload_step(&mut reference, 4).unwrap();
            let after = fingerprint(&reference);
            let fs: FileSystemRef = Arc::new(m.clone());
            let got = fingerprint(&VersionSet::recover(fs, &db_path(), bytewise(), false).unwrap());
            if got == before {
                saw_old = true;
            } else {
                assert_eq!(got, after, "{kind:?} seed {seed}");
                saw_new = true;
            }
        }
    }
    assert!(saw_old && saw_new);
}

/// Recovery's own rollover, interrupted at every operation.
#[test]
fn faults_during_recovery_rollover() {
    let (m, f, mut vs) = faulty_db(6, 1 << 30);
    let want = fingerprint(&vs);
    drop(vs);
    let fs: FileSystemRef = Arc::new(f.clone());
    for k in 0..40 {
        f.fail_after(k, FailMode::Persistent);
        let r = VersionSet::recover(fs.clone(), &db_path(), bytewise(), false);
        f.clear_faults();
        if let Ok(v) = &r {
            assert_eq!(fingerprint(v), want);
        }
        drop(r);
        m.crash(k);
        vs = VersionSet::recover(fs.clone(), &db_path(), bytewise(), false).unwrap();
        assert_eq!(fingerprint(&vs), want, "k {k}");
        drop(vs);
    }
}
