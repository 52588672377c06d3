//! `strata sst_dump`: RocksDB's `sst_dump` for block-based tables, with the
//! same flags and line shapes (`'k1' seq:0, type:1 => v1`).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata::fs::{FileSystem, default_fs};
use strata::tools::format::iterator::InternalIterator;
use strata::tools::format::parse_internal_key;
use strata::tools::table::block::KeyOrder;
use strata::tools::table::footer::BlockHandle;
use strata::tools::table::table_properties::TableProperties;
use strata::tools::table::{Table, TableOptions};

use crate::flags::{Flags, from_hex, to_hex};

struct Settings {
    command: String,
    output_hex: bool,
    show_properties: bool,
    from: Option<Vec<u8>>,
    to: Option<Vec<u8>>,
    read_num: Option<u64>,
    verify_checksum: bool,
}

pub fn run(f: &Flags) -> Result<(), String> {
    let file = f.get("file").ok_or("--file=PATH is required")?.to_string();
    let input_hex = f.bool("input_key_hex")?;
    let key = |name: &str| -> Result<Option<Vec<u8>>, String> {
        match f.get(name) {
            None => Ok(None),
            Some(s) if input_hex => from_hex(s).map(Some),
            Some(s) => Ok(Some(s.as_bytes().to_vec())),
        }
    };
    let s = Settings {
        command: f.get("command").unwrap_or("check").to_string(),
        output_hex: f.bool("output_hex")?,
        show_properties: f.bool("show_properties")?,
        from: key("from")?,
        to: key("to")?,
        read_num: f
            .get("read_num")
            .map(|v| v.parse().map_err(|_| format!("bad --read_num: {v}")))
            .transpose()?,
        verify_checksum: f.bool("verify_checksum")?,
    };
    let unknown = f.unknown();
    if !unknown.is_empty() {
        return Err(format!("unknown flags: --{}", unknown.join(", --")));
    }
    if !["scan", "check", "verify", "raw", "none"].contains(&s.command.as_str()) {
        return Err(format!("unsupported --command={}", s.command));
    }
    let fs = default_fs();
    let path = PathBuf::from(&file);
    let files: Vec<PathBuf> = if std::fs::metadata(&path)
        .map(|m| m.is_dir())
        .unwrap_or(false)
    {
        let mut v: Vec<PathBuf> = fs
            .children(&path)
            .map_err(|e| e.to_string())?
            .into_iter()
            .filter(|n| n.ends_with(".sst") || n.ends_with(".ldb"))
            .map(|n| path.join(n))
            .collect();
        v.sort();
        v
    } else {
        vec![path]
    };
    let mut failed = false;
    for p in files {
        if let Err(e) = dump_one(&*fs, &p, &s) {
            println!("{}: {e}", p.display());
            failed = true;
        }
    }
    if failed {
        Err("sst_dump failed".into())
    } else {
        Ok(())
    }
}

/// `b` as C's `%s` prints it: up to its first NUL byte.
fn c_str(b: &[u8]) -> &[u8] {
    b.iter().position(|&c| c == 0).map_or(b, |n| &b[..n])
}

fn show_bytes(b: &[u8], hex: bool) -> Vec<u8> {
    if hex {
        to_hex(b).into_bytes()
    } else {
        b.to_vec()
    }
}

fn show(b: &[u8], hex: bool) -> String {
    if hex {
        to_hex(b)
    } else {
        String::from_utf8_lossy(b).into_owned()
    }
}

fn dump_one(fs: &dyn FileSystem, path: &Path, s: &Settings) -> Result<(), String> {
    println!("Process {}", path.display());
    let size = fs.file_size(path).map_err(|e| e.to_string())?;
    let file = fs.new_random_access_file(path).map_err(|e| e.to_string())?;
    let opts = TableOptions {
        verify_checksums: s.verify_checksum || s.command == "verify",
        ..TableOptions::default()
    };
    let table = Arc::new(
        Table::open(file, &path.to_string_lossy(), size, &opts).map_err(|e| e.to_string())?,
    );
    println!(
        "Sst file format: {}",
        match table.kind() {
            strata::tools::table::footer::TableKind::BlockBased => "block-based",
            strata::tools::table::footer::TableKind::Plain => "plain table",
            strata::tools::table::footer::TableKind::Cuckoo => "cuckoo table",
        }
    );
    match s.command.as_str() {
        "verify" => match table.verify_checksums() {
            Ok(()) => println!("The file is ok"),
            Err(e) => {
                println!("{} is corrupted: {e}", path.display());
                return Err(e.to_string());
            }
        },
        "raw" => {
            let out = raw_dump_path(path);
            std::fs::write(&out, raw_dump(&table).map_err(|e| e.to_string())?)
                .map_err(|e| format!("writing {}: {e}", out.display()))?;
            println!("raw dump written to file {}", out.display());
        }
        "scan" | "check" => {
            println!(
                "from [{}] to [{}]",
                s.from
                    .as_deref()
                    .map(|k| show(k, s.output_hex))
                    .unwrap_or_default(),
                s.to.as_deref()
                    .map(|k| show(k, s.output_hex))
                    .unwrap_or_default()
            );
            scan(&table, s, s.command == "scan")?;
        }
        _ => {}
    }
    if s.show_properties {
        print!("{}", properties_text(table.properties(), table.file_size()));
    }
    Ok(())
}

/// ldb's `DumpSstFile(options, file, output_hex=false,
/// show_properties=true)`, as `dump_live_files` prints each table: its
/// entries, then its properties as `name=value` lines. A table that cannot
/// be read is reported on stderr, as ldb does.
pub fn dump_for_ldb(path: &Path) -> Result<(), String> {
    if !path.to_string_lossy().ends_with(".sst") {
        println!("Invalid sst file name.");
        return Ok(());
    }
    println!("Process {}", path.display());
    let fs = default_fs();
    let opened = fs.file_size(path).and_then(|size| {
        let file = fs.new_random_access_file(path)?;
        Table::open(
            file,
            &path.to_string_lossy(),
            size,
            &TableOptions::default(),
        )
    });
    let table = match opened {
        Ok(t) => Arc::new(t),
        Err(e) => {
            eprintln!("Error in reading SST {} {e}", path.display());
            return Ok(());
        }
    };
    println!(
        "Sst file format: {}",
        match table.kind() {
            strata::tools::table::footer::TableKind::BlockBased => "block-based",
            strata::tools::table::footer::TableKind::Plain => "plain table",
            strata::tools::table::footer::TableKind::Cuckoo => "cuckoo table",
        }
    );
    let settings = Settings {
        command: "scan".into(),
        output_hex: false,
        show_properties: true,
        from: None,
        to: None,
        read_num: None,
        verify_checksum: false,
    };
    if let Err(e) = scan(&table, &settings, true) {
        eprintln!("Error in reading SST {} {e}", path.display());
    }
    println!(
        "\nTable Properties:\n{}",
        table.properties().to_string_with("\n", "=")
    );
    Ok(())
}

fn scan(table: &Arc<Table>, s: &Settings, print: bool) -> Result<(), String> {
    let mut it = table.iter();
    match &s.from {
        Some(k) => it.seek(&strata::tools::format::make_internal_key(
            k,
            strata::tools::format::MAX_SEQUENCE_NUMBER,
            strata::tools::format::ValueType::WideColumnEntity,
        )),
        None => it.seek_to_first(),
    }
    let mut n = 0u64;
    while it.valid() {
        if s.read_num.is_some_and(|max| n >= max) {
            break;
        }
        let key = it.key();
        match parse_internal_key(key) {
            Some(p) => {
                if s.to.as_deref().is_some_and(|to| p.user_key >= to) {
                    break;
                }
                if print {
                    // Raw bytes, as RocksDB prints them: through printf's
                    // `%s`, so the key's text and the value each end at a
                    // NUL byte (a binary key prints as `' => ...`).
                    let mut key = b"'".to_vec();
                    key.extend_from_slice(&show_bytes(p.user_key, s.output_hex));
                    key.extend_from_slice(
                        format!("' seq:{}, type:{}", p.sequence, p.value_type as u8).as_bytes(),
                    );
                    let value = show_bytes(it.value(), s.output_hex);
                    let mut line = c_str(&key).to_vec();
                    line.extend_from_slice(b" => ");
                    line.extend_from_slice(c_str(&value));
                    line.push(b'\n');
                    std::io::stdout()
                        .lock()
                        .write_all(&line)
                        .map_err(|e| e.to_string())?;
                }
            }
            None => println!("Internal Key [{}] parse error!", to_hex(key)),
        }
        n += 1;
        it.next();
    }
    it.status().map_err(|e| e.to_string())
}

fn raw_dump_path(path: &Path) -> PathBuf {
    let s = path.to_string_lossy();
    let stem = s
        .strip_suffix(".sst")
        .or_else(|| s.strip_suffix(".ldb"))
        .unwrap_or(&s);
    PathBuf::from(format!("{stem}_dump.txt"))
}

fn hex_ascii(out: &mut String, k: &[u8], v: &[u8]) {
    let ascii = |b: &[u8]| {
        b.iter()
            .map(|&c| {
                if c.is_ascii_graphic() || c == b' ' {
                    format!("{} ", c as char)
                } else {
                    ". ".to_string()
                }
            })
            .collect::<String>()
    };
    let _ = writeln!(out, "  HEX    {}: {}", to_hex(k), to_hex(v));
    let _ = writeln!(out, "  ASCII  {}: {}", ascii(k), ascii(v));
    let _ = writeln!(out, "  ------");
}

fn raw_dump(table: &Arc<Table>) -> strata::Result<String> {
    // RocksDB's PlainTableReader has no DumpTable either.
    let Some(block_based) = table.as_block_based() else {
        return Err(strata::Error::NotSupported(
            "DumpTable() not supported".into(),
        ));
    };
    let mut out = String::new();
    let footer = table.footer();
    let _ = writeln!(
        out,
        "Footer Details:\n--------------------------------------"
    );
    let _ = writeln!(
        out,
        "  metaindex handle: {}",
        to_hex(&footer.metaindex_handle.encode())
    );
    let _ = writeln!(
        out,
        "  index handle: {}",
        to_hex(&footer.index_handle.encode())
    );
    let _ = writeln!(
        out,
        "  table_magic_number: {}",
        strata::tools::table::footer::BLOCK_BASED_TABLE_MAGIC
    );
    let _ = writeln!(out, "  format version: {}\n  ", footer.format_version);
    let _ = writeln!(
        out,
        "Metaindex Details:\n--------------------------------------"
    );
    for (name, h) in table.meta_blocks() {
        let label = match name.as_str() {
            "rocksdb.properties" => "Properties block handle".to_string(),
            "rocksdb.range_del" => "Range deletion block handle".to_string(),
            n if n.starts_with("fullfilter.") => "Filter block handle".to_string(),
            n => format!("{n} block handle"),
        };
        let _ = writeln!(out, "  {label}: {}", to_hex(&h.encode()));
    }
    let _ = writeln!(out);
    out.push_str(
        &properties_text(table.properties(), table.file_size()).replace(
            "------------------------------\n",
            "--------------------------------------\n",
        ),
    );
    let _ = writeln!(
        out,
        "Index Details:\n--------------------------------------"
    );
    let _ = writeln!(
        out,
        "  Block key hex dump: Data block handle\n  Block key ascii\n"
    );
    let mut idx = block_based.index_iter();
    idx.seek_to_first();
    let mut handles = Vec::new();
    while idx.valid() {
        hex_ascii(&mut out, idx.key(), idx.value());
        if let Some(h) = BlockHandle::decode(idx.value()) {
            handles.push(h);
        }
        idx.next();
    }
    idx.status()?;
    let _ = writeln!(out);
    let (mut min, mut max, mut total) = (u64::MAX, 0u64, 0u64);
    for (i, h) in handles.iter().enumerate() {
        let _ = writeln!(out, "Data Block # {} @ {}", i + 1, to_hex(&h.encode()));
        let _ = writeln!(out, "--------------------------------------");
        let block = block_based.read_data_block(*h)?;
        min = min.min(block.size() as u64);
        max = max.max(block.size() as u64);
        total += block.size() as u64;
        let mut it = block.iter(KeyOrder::Bytewise, false);
        it.seek_to_first();
        while it.valid() {
            hex_ascii(
                &mut out,
                strata::tools::format::extract_user_key(it.key()),
                it.value(),
            );
            it.next();
        }
        it.status()?;
        let _ = writeln!(out);
    }
    let n = handles.len() as u64;
    let _ = writeln!(
        out,
        "Data Block Summary:\n--------------------------------------"
    );
    let _ = writeln!(out, "  # data blocks: {n}");
    if n > 0 {
        let _ = writeln!(out, "  min data block size: {min}");
        let _ = writeln!(out, "  max data block size: {max}");
        let _ = writeln!(out, "  avg data block size: {:.6}", total as f64 / n as f64);
    }
    if !table.range_tombstones().is_empty() {
        let _ = writeln!(
            out,
            "\nRange deletions:\n--------------------------------------"
        );
        for (k, v) in table.range_tombstones() {
            hex_ascii(&mut out, strata::tools::format::extract_user_key(k), v);
        }
    }
    Ok(out)
}

/// The properties as sst_dump prints them: RocksDB's
/// `TableProperties::ToString("\n  ", ": ")`, then the user-collected
/// properties.
fn properties_text(p: &TableProperties, file_size: u64) -> String {
    let mut o = String::new();
    let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let _ = writeln!(o, "Table Properties:\n------------------------------");
    // The last property's delimiter indents the next line.
    let _ = write!(o, "  {}", p.to_string_with("\n  ", ": "));
    let _ = writeln!(
        o,
        "Raw user collected properties\n------------------------------"
    );
    for (k, v) in &p.user_collected {
        let _ = writeln!(o, "  # {}: 0x{}", s(k), to_hex(v));
    }
    let _ = file_size;
    o
}
