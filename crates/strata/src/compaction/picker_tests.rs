//! Data-driven tests of the pickers and the level scores (in the manner of
//! Pebble's `testdata/compaction_picker_*`): `testdata/pickers.txt` holds
//! cases, each an `options` line, one line per level describing the LSM
//! shape, a `pick` command, `----` and the expected output (up to a blank
//! line), run by `util::datadriven`. Run with `STRATA_REWRITE=1` to
//! rewrite the expected outputs in place from what the code prints.
//!
//! Options (`key=value`, sizes may end in K, M or G): `style`
//! (level|universal|fifo), `num_levels`, `l0_trigger`, `level_base`,
//! `multiplier`, `dynamic` (true|false), `target_file_size`,
//! `max_compaction_bytes`, `size_ratio`, `min_width`, `max_width`,
//! `max_size_amp`, `fifo_max_size`, `ttl`, `now`.
//!
//! Levels: `L<n>: <file> <file> ...` with each file written
//! `number:smallest-largest:size:seqlo-seqhi` followed by any of `*`
//! (being compacted), `!` (marked for compaction) and `@<unix seconds>`
//! (creation time).
//!
//! Every picked compaction is also checked against the module invariants
//! (contiguous clean-cut inputs on levels >= 1, every overlapping
//! output-level file an input, no busy input).

use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::Arc;

use super::leveled::PickerInput;
use super::{Compaction, fifo, leveled, overlapping_clean, range_of, score, universal};
use crate::format::dbformat::{InternalKeyComparator, ValueType, make_internal_key};
use crate::format::extract_user_key;
use crate::options::{ColumnFamilyOptions, CompactionStyle};
use crate::util::comparator::bytewise;
use crate::util::datadriven::Case;
use crate::version::{FileMetaData, Version, VersionBuilder, VersionEdit};

const TESTDATA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/src/compaction/testdata/pickers.txt"
);

fn size(v: &str) -> u64 {
    let (num, mult) = match v.as_bytes().last() {
        Some(b'K') => (&v[..v.len() - 1], 1u64 << 10),
        Some(b'M') => (&v[..v.len() - 1], 1 << 20),
        Some(b'G') => (&v[..v.len() - 1], 1 << 30),
        _ => (v, 1),
    };
    num.parse::<u64>()
        .unwrap_or_else(|_| panic!("bad size {v:?}"))
        * mult
}

/// What a case sets up.
struct Setup {
    opts: ColumnFamilyOptions,
    now: u64,
    version: Arc<Version>,
    being_compacted: HashSet<u64>,
}

fn parse_options(line: &str, o: &mut ColumnFamilyOptions, now: &mut u64) {
    for kv in line.split_whitespace().skip(1) {
        let (k, v) = kv
            .split_once('=')
            .unwrap_or_else(|| panic!("bad option {kv:?}"));
        match k {
            "style" => {
                o.compaction_style = match v {
                    "level" => CompactionStyle::Level,
                    "universal" => CompactionStyle::Universal,
                    "fifo" => CompactionStyle::Fifo,
                    _ => panic!("bad style {v:?}"),
                }
            }
            "num_levels" => o.num_levels = v.parse().unwrap(),
            "l0_trigger" => o.level0_file_num_compaction_trigger = v.parse().unwrap(),
            "level_base" => o.max_bytes_for_level_base = size(v),
            "multiplier" => o.max_bytes_for_level_multiplier = v.parse().unwrap(),
            "dynamic" => o.level_compaction_dynamic_level_bytes = v.parse().unwrap(),
            "target_file_size" => o.target_file_size_base = size(v),
            "max_compaction_bytes" => o.max_compaction_bytes = size(v),
            "size_ratio" => o.universal.size_ratio = v.parse().unwrap(),
            "min_width" => o.universal.min_merge_width = v.parse().unwrap(),
            "max_width" => o.universal.max_merge_width = v.parse().unwrap(),
            "max_size_amp" => o.universal.max_size_amplification_percent = v.parse().unwrap(),
            "fifo_max_size" => o.fifo.max_table_files_size = size(v),
            "ttl" => o.fifo.ttl_seconds = v.parse().unwrap(),
            "now" => *now = v.parse().unwrap(),
            _ => panic!("unknown option {k:?}"),
        }
    }
}

/// `number:smallest-largest:size:seqlo-seqhi` plus `*`, `!`, `@time`.
fn parse_file_spec(spec: &str, being: &mut HashSet<u64>) -> FileMetaData {
    let (mut body, mut created) = (spec, 0u64);
    if let Some((b, t)) = spec.split_once('@') {
        body = b;
        created = t.parse().unwrap_or_else(|_| panic!("bad time in {spec:?}"));
    }
    let busy = body.contains('*');
    let marked = body.contains('!');
    let body = body.trim_end_matches(['*', '!']);
    let parts: Vec<&str> = body.split(':').collect();
    assert_eq!(parts.len(), 4, "bad file {spec:?}");
    let number: u64 = parts[0].parse().unwrap();
    let (lo, hi) = parts[1].split_once('-').expect("smallest-largest");
    let (slo, shi) = parts[3].split_once('-').expect("seqlo-seqhi");
    let (slo, shi): (u64, u64) = (slo.parse().unwrap(), shi.parse().unwrap());
    let mut f = FileMetaData::new(
        number,
        size(parts[2]),
        make_internal_key(lo.as_bytes(), slo, ValueType::Value),
        make_internal_key(hi.as_bytes(), shi, ValueType::Value),
        slo,
        shi,
    );
    f.marked_for_compaction = marked;
    f.file_creation_time = created;
    if busy {
        being.insert(number);
    }
    f
}

fn setup(case: &Case) -> Setup {
    let mut opts = ColumnFamilyOptions::default();
    let mut now = 0;
    let mut being = HashSet::new();
    let mut edit = VersionEdit::new();
    for l in &case.input {
        if l.starts_with("options") {
            parse_options(l, &mut opts, &mut now);
        } else if let Some(rest) = l.strip_prefix('L') {
            let (level, files) = rest.split_once(':').expect("L<n>: files");
            let level: u32 = level.parse().expect("level number");
            for spec in files.split_whitespace() {
                edit.add_file(level, parse_file_spec(spec, &mut being));
            }
        } else if l != "pick" {
            panic!("pickers.txt:{}: unknown line {l:?}", case.line);
        }
    }
    let icmp = InternalKeyComparator::new(bytewise());
    let base = Arc::new(Version::new(icmp, opts.num_levels));
    let mut b = VersionBuilder::new(base);
    b.apply(&edit).expect("apply");
    let version = Arc::new(b.finish(1).expect("a valid LSM shape"));
    Setup {
        opts,
        now,
        version,
        being_compacted: being,
    }
}

fn nums(files: &[Arc<FileMetaData>]) -> String {
    if files.is_empty() {
        return "-".into();
    }
    files
        .iter()
        .map(|f| f.number.to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

fn render(s: &Setup, c: Option<&Compaction>) -> Vec<String> {
    let mut out = String::new();
    match c {
        None => out.push_str("picked: none\n"),
        Some(c) => {
            let _ = writeln!(
                out,
                "picked: {} L{} -> L{} score={:.2}",
                c.reason.name(),
                c.start_level(),
                c.output_level,
                c.score
            );
            for l in &c.inputs {
                let _ = writeln!(out, "  L{}: {}", l.level, nums(&l.files));
            }
            if !c.grandparents.is_empty() {
                let _ = writeln!(out, "  grandparents: {}", nums(&c.grandparents));
            }
            let _ = writeln!(
                out,
                "  trivial move: {}, deletion only: {}",
                yes(c.is_trivial_move()),
                yes(c.deletion_only)
            );
        }
    }
    let sc = score::compute(&s.version, &s.opts, &s.being_compacted);
    let mut by_level = sc.scores.clone();
    by_level.sort_by_key(|&(l, _)| l);
    let scores: Vec<String> = by_level
        .iter()
        .map(|(l, x)| format!("L{l}={x:.2}"))
        .collect();
    let _ = writeln!(out, "scores: {}", scores.join(" "));
    if s.opts.compaction_style == CompactionStyle::Level {
        let targets: Vec<String> = (1..s.version.num_levels())
            .map(|l| match sc.max_bytes_for_level(l) {
                u64::MAX => format!("L{l}=max"),
                t => format!("L{l}={t}"),
            })
            .collect();
        let _ = writeln!(
            out,
            "base level: {}; targets: {}",
            sc.base_level,
            targets.join(" ")
        );
        let _ = writeln!(
            out,
            "pending compaction bytes: {}",
            sc.pending_compaction_bytes
        );
    }
    out.lines().map(str::to_string).collect()
}

/// The module's invariants for a picked compaction.
fn check_invariants(s: &Setup, c: &Compaction) -> Result<(), String> {
    let v = &s.version;
    let ucmp = v.icmp().user_comparator().clone();
    for (_, f) in c.input_files() {
        if s.being_compacted.contains(&f.number) {
            return Err(format!("input #{} is being compacted", f.number));
        }
    }
    if c.deletion_only {
        return Ok(());
    }
    for l in c
        .inputs
        .iter()
        .filter(|l| l.level > 0 && !l.files.is_empty())
    {
        let files = v.files(l.level);
        let first = files
            .iter()
            .position(|f| f.number == l.files[0].number)
            .ok_or("input not on its level")?;
        let run = &files[first..first + l.files.len()];
        if run
            .iter()
            .map(|f| f.number)
            .ne(l.files.iter().map(|f| f.number))
        {
            return Err(format!("L{} inputs are not a contiguous run", l.level));
        }
        let refs: Vec<&Arc<FileMetaData>> = l.files.iter().collect();
        let (lo, hi) = range_of(&ucmp, &refs).unwrap();
        if overlapping_clean(v, &ucmp, l.level, &lo, &hi).len() != l.files.len() {
            return Err(format!("L{} inputs are not a clean cut", l.level));
        }
    }
    if let Some((lo, hi)) = c.user_key_range(&ucmp) {
        let inputs = c.input_numbers();
        let start = c.start_level();
        for level in (start + 1..=c.output_level).filter(|&l| l > 0) {
            for f in v.overlapping_files(level, Some(&lo), Some(&hi)) {
                if !inputs.contains(&f.number) {
                    return Err(format!(
                        "L{level} file #{} overlaps the inputs but is not one",
                        f.number
                    ));
                }
            }
        }
        for f in &c.grandparents {
            let (a, b) = (extract_user_key(&f.smallest), extract_user_key(&f.largest));
            if ucmp.compare(b, &lo).is_lt() || ucmp.compare(a, &hi).is_gt() {
                return Err(format!("grandparent #{} does not overlap", f.number));
            }
        }
    }
    Ok(())
}

fn run_case(case: &Case) -> Vec<String> {
    let s = setup(case);
    let p = PickerInput {
        cf_id: 0,
        version: &s.version,
        opts: &s.opts,
        being_compacted: &s.being_compacted,
        now_seconds: s.now,
        reserved_last_level: false,
        oldest_snapshot: 0,
        rewritten_bottommost: &Default::default(),
    };
    let c = match s.opts.compaction_style {
        CompactionStyle::Level => leveled::pick(&p),
        CompactionStyle::Universal => universal::pick(&p),
        CompactionStyle::Fifo => fifo::pick(&p),
        CompactionStyle::None => None,
    };
    if let Some(c) = &c
        && let Err(e) = check_invariants(&s, c)
    {
        panic!("pickers.txt:{}: invariant broken: {e}", case.line);
    }
    render(&s, c.as_ref())
}

#[test]
fn pickers_golden() {
    crate::util::datadriven::run_file(TESTDATA, run_case);
}
