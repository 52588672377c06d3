//! Replays every saved fuzz input (corpus seeds and past crashers under
//! `fuzz/corpus/<target>` and `fuzz/artifacts/<target>`) through the same
//! entry points the cargo-fuzz targets call, so a fixed crasher stays fixed
//! in the normal test run.

mod common;

use std::path::PathBuf;

#[test]
fn replay_fuzz_corpora() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let (mut files, mut runs) = (0, 0);
    for (name, target) in strata::tools::fuzz::TARGETS {
        let mut inputs = 0;
        for sub in ["corpus", "artifacts"] {
            let dir = root.join(sub).join(name);
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries {
                let path = e.unwrap().path();
                if !path.is_file() {
                    continue;
                }
                let data = std::fs::read(&path).unwrap();
                target(&data);
                runs += 1;
                // Also every truncation of small inputs.
                if data.len() <= 2048 {
                    for cut in 0..data.len() {
                        target(&data[..cut]);
                    }
                    runs += data.len();
                }
                inputs += 1;
            }
        }
        assert!(inputs > 0, "fuzz target {name} has no saved corpus");
        eprintln!("fuzz target {name}: replayed {inputs} inputs");
        files += inputs;
    }
    common::figures::record(
        "G7-replay",
        "fuzz corpora and saved crashers replayed",
        &format!(
            "{} targets, {files} saved inputs, {runs} runs with truncations, 0 failures",
            strata::tools::fuzz::TARGETS.len()
        ),
    );
}

/// `STRATA_FUZZ_SECS=N cargo test --release --test fuzz_corpus_replay
/// mutate -- --nocapture`: for N seconds, feeds every target random
/// mutations of its saved inputs (bit flips, byte edits, truncations,
/// splices), without coverage guidance; a panicking input is saved under
/// `fuzz/artifacts/<target>/` (so the replay above keeps it fixed) and
/// fails the test. Without the variable it does nothing. For
/// coverage-guided runs use cargo-fuzz (README).
#[test]
fn mutate_saved_inputs() {
    let Some(secs) = std::env::var("STRATA_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    else {
        return;
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut seed = std::env::var("STRATA_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(0x9E37_79B9_7F4A_7C15);
    let mut rand = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut corpora: Vec<(&str, strata::tools::fuzz::FuzzTarget, Vec<Vec<u8>>)> = Vec::new();
    for (name, target) in strata::tools::fuzz::TARGETS {
        let mut inputs = Vec::new();
        for sub in ["corpus", "artifacts"] {
            if let Ok(entries) = std::fs::read_dir(root.join(sub).join(name)) {
                for e in entries.flatten() {
                    if let Ok(d) = std::fs::read(e.path()) {
                        inputs.push(d);
                    }
                }
            }
        }
        if inputs.is_empty() {
            inputs.push(Vec::new());
        }
        corpora.push((name, *target, inputs));
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    let mut runs = 0u64;
    std::panic::set_hook(Box::new(|_| {}));
    while std::time::Instant::now() < deadline {
        let (name, target, inputs) = &corpora[(rand() % corpora.len() as u64) as usize];
        let mut data = inputs[(rand() % inputs.len() as u64) as usize].clone();
        for _ in 0..1 + rand() % 8 {
            let len = data.len() as u64;
            match rand() % 6 {
                0 if len > 0 => {
                    let i = (rand() % len) as usize;
                    data[i] ^= 1 << (rand() % 8);
                }
                1 if len > 0 => {
                    let i = (rand() % len) as usize;
                    data[i] = rand() as u8;
                }
                2 => {
                    let i = (rand() % (len + 1)) as usize;
                    data.insert(i, rand() as u8);
                }
                3 if len > 0 => {
                    let i = (rand() % len) as usize;
                    data.remove(i);
                }
                4 => data.truncate((rand() % (len + 1)) as usize),
                _ => {
                    let other = &inputs[(rand() % inputs.len() as u64) as usize];
                    if !other.is_empty() {
                        let from = (rand() % other.len() as u64) as usize;
                        let at = (rand() % (len + 1)) as usize;
                        let piece: Vec<u8> = other[from..].iter().take(64).copied().collect();
                        data.splice(at..at, piece);
                    }
                }
            }
        }
        let input = data.clone();
        if std::panic::catch_unwind(move || target(&input)).is_err() {
            let _ = std::panic::take_hook();
            let dir = root.join("artifacts").join(name);
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join(format!("crash-{:016x}", rand()));
            std::fs::write(&path, &data).unwrap();
            // Re-run outside catch_unwind for the message.
            eprintln!(
                "fuzz target {name} panicked; input saved to {}",
                path.display()
            );
            target(&data);
            panic!("fuzz target {name} panicked on {}", path.display());
        }
        runs += 1;
    }
    let _ = std::panic::take_hook();
    eprintln!("mutated {runs} inputs in {secs} s, no failures");
}
