//! Named crash points (docs/RELIABILITY.md G3): `crash_point!("name")` marks a
//! step of the file lifecycle, between two file-system operations whose
//! order recovery depends on. Without the `crash-points` feature the macro
//! is empty. With it, every point counts its hits, and a test can [`arm`]
//! one point with a hook that runs at its n-th hit, typically a simulated
//! power loss of the in-memory file system
//! ([`crate::fs::mem::MemFileSystem::crash`]); the database then fails
//! like a machine that lost power there, and the test reopens and checks.
//!
//! Invariant: [`POINTS`] lists every name used in the code (a test checks
//! that each is reached), and names are `area::step`.

/// Every crash point, in lifecycle order.
pub const POINTS: &[&str] = &[
    "wal::after_append",
    "wal::after_sync",
    "wal::switch_after_create",
    "wal::after_closed_wals_sync",
    "flush::after_table_sync",
    "flush::after_dir_sync",
    "flush::after_install",
    "compaction::after_outputs_sync",
    "compaction::after_install",
    "manifest::after_append",
    "manifest::new_after_sync",
    // CURRENT and OPTIONS files: written to a temporary file, renamed.
    "replace::after_tmp_sync",
    "replace::after_rename",
    "obsolete::before_delete_wal",
    "obsolete::before_delete_table",
    "obsolete::before_delete_manifest",
    "open::after_wal_replay",
    // Checkpoints: after each file linked or copied into the staging
    // directory, and after the staging directory took the final name.
    "checkpoint::after_file",
    "checkpoint::after_rename",
    // Ingestion: after each external file linked or copied in, before and
    // after the MANIFEST records them.
    "ingest::after_file",
    "ingest::before_manifest",
    "ingest::after_manifest",
    // Backups: after each file is in the backup directory, before the
    // meta file takes its name; restores: after each file restored.
    "backup::after_file",
    "backup::before_meta_rename",
    "restore::after_file",
    // Repair: after a file moved to lost/, after each table it wrote,
    // before CURRENT names its MANIFEST.
    "repair::after_archive",
    "repair::after_table",
    "repair::before_current",
];

/// Marks a crash point (see the module documentation).
// Exported only because `#[macro_export]` is how a macro reaches every
// module of the crate; hidden from the facade's documentation.
#[doc(hidden)]
#[macro_export]
macro_rules! crash_point {
    ($name:literal) => {
        #[cfg(feature = "crash-points")]
        $crate::util::crash_point::hit($name);
    };
}

#[cfg(feature = "crash-points")]
mod imp {
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    use crate::util::sync::lock;

    type Hook = Box<dyn FnOnce() + Send>;

    struct Armed {
        name: &'static str,
        /// Hits left before the hook runs.
        countdown: u64,
        hook: Hook,
    }

    static ARMED: Mutex<Option<Armed>> = Mutex::new(None);
    static HITS: Mutex<BTreeMap<&'static str, u64>> = Mutex::new(BTreeMap::new());

    /// Runs `hook` at the `nth` (1-based) next hit of point `name`.
    /// Replaces whatever was armed.
    pub fn arm(name: &'static str, nth: u64, hook: impl FnOnce() + Send + 'static) {
        debug_assert!(super::POINTS.contains(&name), "unknown crash point {name}");
        *lock(&ARMED) = Some(Armed {
            name,
            countdown: nth.max(1),
            hook: Box::new(hook),
        });
    }

    /// Disarms; true if the armed hook had fired (or nothing was armed).
    pub fn disarm() -> bool {
        lock(&ARMED).take().is_none()
    }

    /// Hits per point since the process started.
    pub fn hits() -> BTreeMap<&'static str, u64> {
        lock(&HITS).clone()
    }

    /// Called by `crash_point!`.
    pub fn hit(name: &'static str) {
        *lock(&HITS).entry(name).or_insert(0) += 1;
        let hook = {
            let mut armed = lock(&ARMED);
            match armed.as_mut() {
                Some(a) if a.name == name => {
                    a.countdown -= 1;
                    if a.countdown == 0 {
                        armed.take().map(|a| a.hook)
                    } else {
                        None
                    }
                }
                _ => None,
            }
        };
        // Outside the lock: the hook may take a while (a crash copies the
        // file system).
        if let Some(h) = hook {
            h();
        }
    }
}

#[cfg(feature = "crash-points")]
pub use imp::{arm, disarm, hit, hits};
