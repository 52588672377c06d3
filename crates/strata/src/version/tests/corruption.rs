//! Damaged MANIFESTs: every single-bit flip and every truncation either
//! fails recovery with Corruption or recovers the state after a prefix of
//! the edits. Never a panic, never a state that was not logged.

use std::collections::BTreeSet;

use super::*;

/// A DB whose MANIFEST-000001 holds the workload's first `steps` edits
/// (no rollover), its bytes, and the record offsets.
fn build(steps: u64) -> (MemFileSystem, FileSystemRef, Vec<u8>, Vec<u64>) {
    let (m, fs) = mem();
    let mut vs = VersionSet::create_new(fs.clone(), &db_path(), bytewise()).unwrap();
    for i in 0..steps {
        workload_step(&mut vs, i).unwrap();
    }
    assert_eq!(vs.manifest_file_number(), 1);
    drop(vs);
    let path = db_path().join("MANIFEST-000001");
    let bytes = fs.read_file(&path).unwrap();
    let mut r = ManifestReader::open(&*fs, &path).unwrap();
    let mut offsets = Vec::new();
    while let Some((off, _)) = r.next_edit().unwrap() {
        offsets.push(off);
    }
    (m, fs, bytes, offsets)
}

/// Fingerprints of the states after each prefix of whole records (the
/// ones recovery accepts).
fn prefix_states(fs: &FileSystemRef, bytes: &[u8], offsets: &[u64]) -> BTreeSet<String> {
    let path = db_path().join("MANIFEST-000001");
    let mut out = BTreeSet::new();
    let ends = offsets.iter().skip(1).copied().chain([bytes.len() as u64]);
    for end in ends {
        fs.write_file(&path, &bytes[..end as usize], true).unwrap();
        if let Ok(vs) = recover_ro(fs) {
            out.insert(fingerprint(&vs));
        }
    }
    fs.write_file(&path, bytes, true).unwrap();
    out
}

fn check_outcome(fs: &FileSystemRef, states: &BTreeSet<String>, what: &str) {
    match recover_ro(fs) {
        Ok(vs) => assert!(
            states.contains(&fingerprint(&vs)),
            "{what}: recovered a state that is not a prefix:\n{}",
            fingerprint(&vs)
        ),
        Err(e) => assert!(e.is_corruption(), "{what}: {e}"),
    }
}

#[test]
fn every_bit_flip_and_truncation_of_a_small_manifest() {
    let (_m, fs, bytes, offsets) = build(9);
    assert!(offsets.len() >= 8, "{offsets:?}");
    let states = prefix_states(&fs, &bytes, &offsets);
    assert!(states.len() >= 5);
    let path = db_path().join("MANIFEST-000001");
    let (mut ok, mut corrupt) = (0, 0);
    for i in 0..bytes.len() {
        for bit in 0..8 {
            let mut b = bytes.clone();
            b[i] ^= 1 << bit;
            fs.write_file(&path, &b, true).unwrap();
            match recover_ro(&fs) {
                Ok(vs) => {
                    ok += 1;
                    assert!(states.contains(&fingerprint(&vs)), "flip {i}.{bit}");
                }
                Err(e) => {
                    corrupt += 1;
                    assert!(e.is_corruption(), "flip {i}.{bit}: {e}");
                    assert!(
                        e.to_string().contains("MANIFEST-000001"),
                        "flip {i}.{bit}: {e}"
                    );
                }
            }
        }
    }
    // Length bits of the last record read as a torn tail; the rest is caught.
    assert!(corrupt > ok * 4, "{corrupt} corrupt, {ok} ok");
    for len in 0..bytes.len() {
        fs.write_file(&path, &bytes[..len], true).unwrap();
        check_outcome(&fs, &states, &format!("truncated to {len}"));
    }
    // Truncation exactly at a record boundary recovers that prefix.
    fs.write_file(&path, &bytes[..offsets[5] as usize], true)
        .unwrap();
    assert!(recover_ro(&fs).is_ok());
    // Zero-filled tail (preallocated space) is the end of the log.
    let mut z = bytes.clone();
    z.extend_from_slice(&[0u8; 100]);
    fs.write_file(&path, &z, true).unwrap();
    let full = fingerprint(&recover_ro(&fs).unwrap());
    fs.write_file(&path, &bytes, true).unwrap();
    assert_eq!(full, fingerprint(&recover_ro(&fs).unwrap()));
}

#[test]
fn damage_in_a_multi_block_manifest() {
    // Enough edits to cross the first 32 KiB block boundary.
    let (_m, fs, bytes, offsets) = build(600);
    assert!(bytes.len() > 40_000, "{}", bytes.len());
    let states = prefix_states(&fs, &bytes, &offsets);
    let path = db_path().join("MANIFEST-000001");
    let block = crate::wal::BLOCK_SIZE;
    for len in (block - 300..block + 300).chain([bytes.len() - 1]) {
        fs.write_file(&path, &bytes[..len], true).unwrap();
        check_outcome(&fs, &states, &format!("truncated to {len}"));
    }
    for i in (0..bytes.len()).step_by(97).chain(block - 12..block + 12) {
        let mut b = bytes.clone();
        b[i] ^= 0x10;
        fs.write_file(&path, &b, true).unwrap();
        check_outcome(&fs, &states, &format!("flip at {i}"));
    }
    // Damage in the middle followed by intact records fails open: no holes.
    let mut b = bytes.clone();
    let mid = offsets[offsets.len() / 2] as usize + 3;
    b[mid] ^= 1;
    fs.write_file(&path, &b, true).unwrap();
    let e = recover_ro(&fs).unwrap_err();
    assert!(e.is_corruption(), "{e}");
    // A torn region followed by more data is corruption too.
    let mut b = bytes[..offsets[3] as usize].to_vec();
    b.extend_from_slice(&[0u8; 20]);
    b.extend_from_slice(&bytes[offsets[3] as usize..]);
    fs.write_file(&path, &b, true).unwrap();
    assert!(recover_ro(&fs).unwrap_err().is_corruption());
}
