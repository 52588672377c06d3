//! `strata --db=DIR checkconsistency` on a real database directory with
//! bit flips in its table files: each flip is reported naming the damaged
//! file and an offset at or just before the damage (the damaged block), or
//! it is harmless and `scan` prints exactly what it printed before. The
//! flips are spread evenly through every table file.

mod common;

use std::path::{Path, PathBuf};

use common::strata;

fn ours(db: &Path, args: &[&str]) -> std::process::Output {
    strata()
        .arg(format!("--db={}", db.display()))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn checkconsistency_names_the_damaged_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let out = strata()
        .args([
            "bench",
            "--benchmarks=fillrandom",
            "--num=20000",
            "--write_buffer_size=262144",
            "--target_file_size_base=262144",
            "--compression_type=snappy",
            &format!("--db={}", db.display()),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ok = ours(&db, &["checkconsistency"]);
    assert_eq!(String::from_utf8_lossy(&ok.stdout), "OK\n");
    let baseline = ours(&db, &["scan"]).stdout;
    let tables: Vec<PathBuf> = std::fs::read_dir(&db)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sst"))
        .collect();
    assert!(tables.len() >= 2, "{tables:?}");
    let (mut reported, mut harmless) = (0, 0);
    for t in &tables {
        let name = t.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(t).unwrap();
        for i in 0..12 {
            // Spread through the file, the footer included.
            let byte = if i == 11 {
                bytes.len() - 3
            } else {
                bytes.len() * i / 11 + 5
            };
            let mut damaged = bytes.clone();
            damaged[byte] ^= 0x10;
            std::fs::write(t, &damaged).unwrap();
            let out = ours(&db, &["checkconsistency"]);
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            if out.status.success() {
                assert_eq!(text, "OK\n");
                assert!(
                    ours(&db, &["scan"]).stdout == baseline,
                    "{name} byte {byte}: checkconsistency said OK but scan changed"
                );
                harmless += 1;
            } else {
                assert!(text.contains("Corruption"), "{name} byte {byte}: {text}");
                assert!(text.contains(&name), "{name} byte {byte}: {text}");
                let offset: usize = text
                    .split("offset ")
                    .nth(1)
                    .and_then(|s| s.split(')').next())
                    .and_then(|s| s.parse().ok())
                    .unwrap_or_else(|| panic!("{name} byte {byte}: no offset in {text}"));
                assert!(
                    offset <= byte && byte - offset < 64 << 10,
                    "{name} byte {byte}: reported offset {offset}: {text}"
                );
                reported += 1;
            }
        }
        std::fs::write(t, &bytes).unwrap();
    }
    assert!(reported > 0, "no flip was reported");
    let ok = ours(&db, &["checkconsistency"]);
    assert_eq!(String::from_utf8_lossy(&ok.stdout), "OK\n");
    eprintln!(
        "checkconsistency: {reported} flips reported with file and offset, {harmless} harmless"
    );
}
