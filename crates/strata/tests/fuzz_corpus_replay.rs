//! Replays every saved fuzz input (corpus seeds and past crashers under
//! `fuzz/corpus/<target>` and `fuzz/artifacts/<target>`) through the same
//! entry points the cargo-fuzz targets call, so a fixed crasher stays fixed
//! in the normal test run.

use std::path::PathBuf;

#[test]
fn replay_fuzz_corpora() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
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
                // Also every truncation of small inputs.
                if data.len() <= 2048 {
                    for cut in 0..data.len() {
                        target(&data[..cut]);
                    }
                }
                inputs += 1;
            }
        }
        assert!(inputs > 0, "fuzz target {name} has no saved corpus");
        eprintln!("fuzz target {name}: replayed {inputs} inputs");
    }
}
