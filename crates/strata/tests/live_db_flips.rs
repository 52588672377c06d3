//! G5/G6 on a live database (docs/RELIABILITY.md, issue 6 item 6): bit flips in
//! every kind of file of a multi-file database (tables on several levels,
//! MANIFEST, CURRENT, OPTIONS). After each flip the database opens or
//! refuses to; if it opens, `verify_checksums` either reports a Corruption
//! naming the flipped table and an offset at or just before the flipped
//! byte, or the contents read back exactly as before the flip. The WAL has
//! its own sweep (`wal_damage_sweep.rs`).
//!
//! `STRATA_LIVE_FLIP_STRIDE` (default 61) flips every n-th bit of each
//! file; 1 flips every bit.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use strata::fs::FileSystem;
use strata::fs::mem::MemFileSystem;
use strata::options::{Options, ReadOptions, WriteOptions};
use strata::{DB, Error};

type Files = BTreeMap<PathBuf, Vec<u8>>;
type Contents = BTreeMap<Vec<u8>, Vec<u8>>;

fn options(fs: &MemFileSystem) -> Options {
    let mut o = Options {
        create_if_missing: true,
        fs: Some(Arc::new(fs.clone())),
        ..Options::default()
    };
    o.cf.write_buffer_size = 8 << 10;
    o.cf.target_file_size_base = 8 << 10;
    o.cf.max_bytes_for_level_base = 32 << 10;
    o.cf.level0_file_num_compaction_trigger = 2;
    o.cf.block_size = 1024;
    o.cf.bloom_bits_per_key = Some(10.0);
    o.cf.compression = strata::CompressionType::Snappy;
    o
}

fn scan(db: &DB) -> strata::Result<Contents> {
    let mut it = db.iter(&ReadOptions::default())?;
    let mut out = Contents::new();
    while it.valid() {
        out.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status()?;
    Ok(out)
}

/// A closed database with tables on several levels; its files.
fn build() -> (Files, Contents) {
    let fs = MemFileSystem::new();
    let db = DB::open(options(&fs), "/db").unwrap();
    let wo = WriteOptions::default();
    for round in 0..3u32 {
        for i in 0..600u32 {
            let k = format!("key{:05}", (i * 7919 + round * 13) % 1500);
            db.put(
                &wo,
                k.as_bytes(),
                format!("v{round}-{i}-{}", "y".repeat(40)).as_bytes(),
            )
            .unwrap();
        }
        db.delete_range(
            &wo,
            format!("key{:05}", round * 100).as_bytes(),
            format!("key{:05}", round * 100 + 20).as_bytes(),
        )
        .unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let levels: Vec<usize> = db.live_files_metadata().iter().map(|f| f.level).collect();
    assert!(
        levels.contains(&0) || levels.iter().filter(|&&l| l > 0).count() >= 2,
        "want a multi-file tree: {levels:?}"
    );
    let contents = scan(&db).unwrap();
    db.close().unwrap();
    let files = fs
        .file_names()
        .into_iter()
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            !n.ends_with(".log") && n != "LOCK" && !n.starts_with("LOG")
        })
        .map(|p| {
            let b = fs.read_file(&p).unwrap();
            (p, b)
        })
        .collect();
    (files, contents)
}

fn restore(files: &Files) -> MemFileSystem {
    let fs = MemFileSystem::new();
    fs.create_dir_all(std::path::Path::new("/db")).unwrap();
    for (p, b) in files {
        fs.write_file(p, b, true).unwrap();
    }
    fs.sync_dir(std::path::Path::new("/db")).unwrap();
    fs
}

#[derive(Default, Debug)]
struct Tally {
    flips: u64,
    refused_at_open: u64,
    detected_by_scrub: u64,
    harmless: u64,
    /// The largest distance from a reported offset to the flipped byte.
    max_gap: usize,
    /// Footer flips reported at the block a damaged handle names.
    footer_elsewhere: u64,
}

/// A table's footer (format version 1 and later).
const FOOTER_LEN: usize = 53;

#[test]
fn flips_in_a_live_database_are_detected_or_harmless() {
    let stride: usize = std::env::var("STRATA_LIVE_FLIP_STRIDE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(61)
        .max(1);
    let (files, want) = build();
    let mut by_kind: BTreeMap<&str, Tally> = BTreeMap::new();
    for (path, bytes) in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let kind = if name.ends_with(".sst") {
            "table"
        } else if name.starts_with("MANIFEST") {
            "MANIFEST"
        } else if name == "CURRENT" {
            "CURRENT"
        } else if name.starts_with("OPTIONS") {
            "OPTIONS"
        } else if name == "IDENTITY" {
            "IDENTITY"
        } else {
            "other"
        };
        let tally = by_kind.entry(kind).or_default();
        for bit in (0..bytes.len() * 8).step_by(stride) {
            let byte = bit / 8;
            let mut damaged = files.clone();
            damaged.get_mut(path).unwrap()[byte] ^= 1 << (bit % 8);
            let fs = restore(&damaged);
            tally.flips += 1;
            let what = format!("{name}: bit {bit} (byte {byte} of {})", bytes.len());
            let db = match DB::open(options(&fs), "/db") {
                Ok(db) => db,
                Err(e) => {
                    // Refused: for the MANIFEST, a Corruption naming it, or
                    // (a flip in the last record's length reads as a torn
                    // tail, so recovery stops before the last edit) the
                    // open-time table check naming a table that edit had
                    // already deleted.
                    if kind == "MANIFEST" {
                        match &e {
                            Error::Corruption { file, msg, .. } => assert!(
                                file.ends_with(&name) || msg.starts_with("Can't access"),
                                "{what}: names {file}: {e}"
                            ),
                            _ => panic!("{what}: refused without a Corruption: {e}"),
                        }
                    }
                    assert!(kind != "table", "{what}: a table flip failed the open: {e}");
                    tally.refused_at_open += 1;
                    continue;
                }
            };
            match db.verify_checksums() {
                Err(Error::Corruption { file, offset, msg }) => {
                    assert!(
                        file.ends_with(&name),
                        "{what}: verify_checksums named {file} (offset {offset}): {msg}"
                    );
                    let offset = offset as usize;
                    // The footer's block handles carry no checksum (format
                    // versions before 6): a flipped index handle that still
                    // points inside the file is caught where it points.
                    // Every other flip is reported at or just before it.
                    let in_footer = kind == "table" && byte >= bytes.len() - FOOTER_LEN;
                    if in_footer && !(offset <= byte && byte - offset < 8 << 10) {
                        tally.footer_elsewhere += 1;
                    } else {
                        assert!(
                            offset <= byte && byte - offset < 8 << 10,
                            "{what}: reported offset {offset} is not at or just before the damage: {msg}"
                        );
                        tally.max_gap = tally.max_gap.max(byte - offset);
                    }
                    tally.detected_by_scrub += 1;
                }
                Err(e) => panic!("{what}: verify_checksums failed without a Corruption: {e}"),
                Ok(()) => {
                    let got = scan(&db);
                    assert!(
                        matches!(&got, Ok(c) if *c == want),
                        "{what}: verify_checksums passed but the contents changed ({:?})",
                        got.err()
                    );
                    tally.harmless += 1;
                }
            }
        }
    }
    let total: u64 = by_kind.values().map(|t| t.flips).sum();
    let detail: Vec<String> = by_kind
        .iter()
        .map(|(k, t)| {
            let scrub = if t.detected_by_scrub > 0 {
                format!(
                    ", {} reported by verify_checksums with file and offset (the damaged byte \
                     at most {} bytes past the offset, except {} footer flips reported where \
                     the damaged handle points)",
                    t.detected_by_scrub, t.max_gap, t.footer_elsewhere
                )
            } else {
                String::new()
            };
            format!(
                "{k} {}: {} refused at open{scrub}, {} harmless",
                t.flips, t.refused_at_open, t.harmless
            )
        })
        .collect();
    common::figures::record(
        "G5-live",
        "bit flips in every file of a live multi-file database",
        &format!(
            "{total} flips over {} files (1 bit in {stride}; {}), 0 undetected",
            files.len(),
            detail.join("; ")
        ),
    );
}
