//! The C library through C, with the system compiler: the test program
//! (`tests/c/strata_c_test.c`, every declared function), the example
//! written against RocksDB's documented C API, the same test program
//! against librocksdb 7.8.3 (so its expectations are RocksDB's behaviour),
//! a valgrind run, and checks that the header and the library agree.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where `libstrata_c.so` is: built here by cargo (`cargo test` links
/// integration tests with the rlib only), into the test binary's target
/// directory, once per run.
fn lib_dir() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().unwrap();
            // target/<profile>/deps/c_api-*: target/<profile> holds the
            // libraries `cargo build` makes.
            let profile_dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
            let target = profile_dir.parent().unwrap();
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let mut cmd = Command::new(cargo);
            cmd.args(["build", "-q", "-p", "strata-c", "--lib"])
                .arg("--target-dir")
                .arg(target);
            // The profile and features of this test build (the test
            // command passes its features in STRATA_TEST_FEATURES), so the
            // library reuses the engine this run already compiled instead
            // of building it again: in CI that is one crate to link, not a
            // second build of the engine, and valgrind runs optimized code.
            if profile_dir.file_name().is_some_and(|n| n == "release") {
                cmd.arg("--release");
            } else {
                cmd.args(["--profile", "test"]);
            }
            if let Ok(f) = std::env::var("STRATA_TEST_FEATURES") {
                cmd.args(["--features", &f]);
            }
            let o = cmd.output().unwrap();
            assert!(
                o.status.success(),
                "building libstrata_c failed:\n{}",
                String::from_utf8_lossy(&o.stderr)
            );
            profile_dir
        })
        .clone()
}

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn c_source(name: &str) -> PathBuf {
    crate_dir().join("tests/c").join(name)
}

fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".into())
}

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Compiles `src` into `out` against our header and library.
fn build_against_strata(src: &Path, out: &Path) {
    let lib = lib_dir();
    assert!(
        lib.join("libstrata_c.so").exists(),
        "libstrata_c.so not built in {}",
        lib.display()
    );
    let o = Command::new(cc())
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g"])
        .arg("-I")
        .arg(crate_dir().join("include"))
        .arg(src)
        .arg("-o")
        .arg(out)
        .arg(format!("-L{}", lib.display()))
        .arg("-lstrata_c")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .output()
        .expect("a C compiler (cc)");
    assert!(
        o.status.success(),
        "compiling {} failed:\n{}",
        src.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn run(cmd: &mut Command) -> String {
    let o = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{cmd:?} failed ({}):\n{text}", o.status);
    text
}

#[test]
fn c_test_program_passes() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("strata_c_test");
    build_against_strata(&c_source("strata_c_test.c"), &exe);
    let scratch = dir.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let out = run(Command::new(&exe).arg(&scratch));
    assert!(out.contains("strata_c_test: all passed"), "{out}");
}

#[test]
fn example_written_for_rocksdb_runs_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("example");
    build_against_strata(&c_source("example.c"), &exe);
    let out = run(Command::new(&exe).arg(dir.path()));
    assert!(out.contains("example: ok"), "{out}");
}

/// The names the header declares.
fn declared() -> Vec<String> {
    let h = std::fs::read_to_string(crate_dir().join("include/rocksdb/c.h")).unwrap();
    let mut names = Vec::new();
    for decl in h.split("extern STRATA_C_API ").skip(1) {
        let head = &decl[..decl.find('(').unwrap()];
        let name = head
            .split_whitespace()
            .last()
            .unwrap()
            .trim_start_matches('*');
        names.push(name.to_string());
    }
    names
}

#[test]
fn every_declared_function_is_called_by_the_c_tests() {
    let names = declared();
    assert!(names.len() > 300, "{} declarations", names.len());
    let test = std::fs::read_to_string(c_source("strata_c_test.c")).unwrap();
    let missing: Vec<&String> = names
        .iter()
        .filter(|n| !test.contains(&format!("{n}(")))
        .collect();
    eprintln!(
        "C API coverage: {} of {} declared functions called by tests/c/strata_c_test.c",
        names.len() - missing.len(),
        names.len()
    );
    assert!(missing.is_empty(), "not called by the C tests: {missing:?}");
}

/// Top-level parameters of a parenthesized list (nested parentheses and
/// generics kept together).
fn count_params(list: &str) -> usize {
    let list = list.trim();
    if list.is_empty() || list == "void" {
        return 0;
    }
    let mut depth = 0i32;
    let mut n = 1;
    let mut prev = ' ';
    for c in list.chars() {
        match c {
            '(' | '<' | '[' => depth += 1,
            // `->` is a return type, not a closing bracket.
            '>' if prev == '-' => {}
            ')' | '>' | ']' => depth -= 1,
            ',' if depth == 0 => n += 1,
            _ => {}
        }
        prev = c;
    }
    // A trailing comma (rustfmt's style) is not a parameter.
    if list.trim_end().ends_with(',') {
        n -= 1;
    }
    n
}

/// The parameter list after `open` (at the opening parenthesis).
fn paren_body(s: &str) -> &str {
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return &s[1..i];
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced parameter list");
}

#[test]
fn header_and_library_agree_on_every_signature() {
    // Parameter counts of the header's declarations against the Rust
    // definitions (functions and the setter macros), so a C caller and the
    // library never disagree on the arguments.
    let h = std::fs::read_to_string(crate_dir().join("include/rocksdb/c.h")).unwrap();
    let mut header = std::collections::BTreeMap::new();
    for decl in h.split("extern STRATA_C_API ").skip(1) {
        let open = decl.find('(').unwrap();
        let name = decl[..open]
            .split_whitespace()
            .last()
            .unwrap()
            .trim_start_matches('*');
        header.insert(name.to_string(), count_params(paren_body(&decl[open..])));
    }
    let mut rust = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(crate_dir().join("src")).unwrap() {
        let src = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for (at, _) in src.match_indices("fn rocksdb_") {
            let rest = &src[at + 3..];
            let open = rest.find('(').unwrap();
            rust.insert(
                rest[..open].to_string(),
                count_params(paren_body(&rest[open..])),
            );
        }
        // Macro-made functions: `macro!(Type, name, ...)` or `macro!(name, ...)`.
        for (mac, n) in [
            ("setter!(", 2),
            ("getter!(", 1),
            ("opt_set!(", 2),
            ("be_opt!(", 2),
            ("ingest_flag!(", 2),
            ("be_get!(", 1),
        ] {
            for (at, _) in src.match_indices(mac) {
                let args = &src[at + mac.len()..];
                let name = args
                    .split(',')
                    .map(str::trim)
                    .take(2)
                    .find(|a| a.starts_with("rocksdb_") && !a.ends_with("_t"));
                if let Some(name) = name {
                    rust.insert(name.to_string(), n);
                }
            }
        }
        // Setter/getter pairs (`knobs.rs`): the first `rocksdb_` name
        // takes the object and a value, the second the object; and
        // `usage_getter!(name, ..)` takes the report.
        for mac in ["plain_knob!(", "bool_knob!(", "opt_knob!("] {
            for (at, _) in src.match_indices(mac) {
                let args = &src[at + mac.len()..];
                let names: Vec<&str> = args
                    .split(',')
                    .map(str::trim)
                    .take(3)
                    .filter(|a| a.starts_with("rocksdb_") && !a.ends_with("_t"))
                    .collect();
                if let [set, get] = names[..] {
                    rust.insert(set.to_string(), 2);
                    rust.insert(get.to_string(), 1);
                }
            }
        }
        for (at, _) in src.match_indices("usage_getter!(") {
            let args = &src[at + "usage_getter!(".len()..];
            if let Some(name) = args.split(',').next().map(str::trim)
                && name.starts_with("rocksdb_")
            {
                rust.insert(name.to_string(), 1);
            }
        }
        // `write_fn!(name, (args), ...)`: db, options, the listed
        // arguments, errptr; `txn_fn!`: the transaction, the arguments,
        // errptr.
        for (mac, fixed) in [("write_fn!(", 3), ("txn_fn!(", 2)] {
            for (at, _) in src.match_indices(mac) {
                let args = &src[at + mac.len()..];
                let Some(name) = args.split(',').next().map(str::trim) else {
                    continue;
                };
                if !name.starts_with("rocksdb_") {
                    continue;
                }
                let open = args.find('(').unwrap();
                rust.insert(
                    name.to_string(),
                    fixed + count_params(paren_body(&args[open..])),
                );
            }
        }
    }
    let mut wrong = Vec::new();
    for (name, n) in &header {
        match rust.get(name) {
            Some(m) if m == n => {}
            other => wrong.push(format!("{name}: header {n}, library {other:?}")),
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn header_compiles_as_c_and_cplusplus() {
    let include = crate_dir().join("include/rocksdb/c.h");
    run(Command::new(cc())
        .args(["-std=c99", "-Wall", "-Werror", "-fsyntax-only", "-x", "c"])
        .arg(&include));
    if have("c++") {
        run(Command::new("c++")
            .args(["-Wall", "-Werror", "-fsyntax-only", "-x", "c++"])
            .arg(&include));
    } else {
        eprintln!("skipping the C++ check: no c++ compiler");
    }
}

#[test]
fn c_test_program_is_clean_under_valgrind() {
    if !have("valgrind") {
        eprintln!("skipping: valgrind not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("strata_c_test");
    build_against_strata(&c_source("strata_c_test.c"), &exe);
    let scratch = dir.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    // Invalid reads/writes, uses of uninitialised values and definite leaks
    // fail the run (thread-local allocations of live threads are at most
    // "possibly lost").
    let out = run(Command::new("valgrind")
        .args([
            "-q",
            "--error-exitcode=9",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite",
        ])
        .arg(&exe)
        .arg(&scratch));
    assert!(out.contains("strata_c_test: all passed"), "{out}");
}

#[test]
fn c_test_program_passes_against_librocksdb() {
    // The oracle: the same program, built with RocksDB's own header and
    // library (Debian's librocksdb-dev, 7.8.3), passes too, so what it
    // expects of Strata is what RocksDB does. Its few Strata-only checks
    // (NULL handles reported, not crashed on) are compiled out there.
    if !Path::new("/usr/include/rocksdb/c.h").exists() {
        eprintln!("skipping: librocksdb-dev not installed (scripts/test-all.sh installs it)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (src, args) in [
        ("strata_c_test.c", vec!["-DAGAINST_ROCKSDB"]),
        ("example.c", vec![]),
    ] {
        let exe = dir.path().join(src.trim_end_matches(".c"));
        let o = Command::new(cc())
            .args(["-std=c11", "-Wall", "-O1"])
            .args(&args)
            .arg(c_source(src))
            .arg("-o")
            .arg(&exe)
            .arg("-lrocksdb")
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "compiling {src} against librocksdb failed:\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let scratch = dir.path().join(format!("scratch-{src}"));
        std::fs::create_dir(&scratch).unwrap();
        run(Command::new(&exe).arg(&scratch));
    }
}

/// The phases of RocksDB 7.8.3's `db/c_test.c`.
const C_TEST_PHASES: usize = 59;

#[test]
fn rocksdb_own_c_test_program_runs_unchanged() {
    // RocksDB's own C API test (its `make c_test`), from Debian's source
    // package (scripts/test-all.sh fetches it): compiled against Strata's
    // header, linked with -lstrata_c, run. Every phase must pass and the
    // program must print PASS, as it does against librocksdb.
    let Some(src) = std::env::var_os("STRATA_ROCKSDB_C_TEST").map(PathBuf::from) else {
        eprintln!("skipping: STRATA_ROCKSDB_C_TEST unset (scripts/test-all.sh fetches c_test.c)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("c_test");
    build_against_strata(&src, &exe);
    let o = Command::new(&exe)
        .env("TEST_TMPDIR", dir.path())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let phases: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("=== Test "))
        .collect();
    assert!(o.status.success(), "{text}");
    assert!(text.lines().any(|l| l.trim() == "PASS"), "{text}");
    assert_eq!(phases.len(), C_TEST_PHASES, "phases run: {phases:?}");
    assert!(phases.contains(&"open_db_paths"), "{phases:?}");
}
