//! Data-driven tests (Pebble's `datadriven` package): a test file holds
//! cases, each some input lines, `----`, and the expected output up to a
//! blank line; lines starting with `#` and blank lines between cases are
//! comments. A test runs each case's input through a function and compares
//! the lines it returns with the expected ones. With `STRATA_REWRITE=1` the
//! file is rewritten in place from what the code prints, so a deliberate
//! change of output is one command and a reviewed diff.

/// One case: its input lines and expected output lines.
pub(crate) struct Case {
    /// Line number (1-based) of the case's first input line.
    pub line: usize,
    pub input: Vec<String>,
    pub expected: Vec<String>,
}

/// The file as comments/blank lines and cases, in order, so it can be
/// written back.
enum Chunk {
    Text(String),
    Case(Case),
}

fn parse(name: &str, text: &str) -> Vec<Chunk> {
    let lines: Vec<&str> = text.lines().collect();
    let mut chunks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        if l.trim().is_empty() || l.starts_with('#') {
            chunks.push(Chunk::Text(l.to_string()));
            i += 1;
            continue;
        }
        let line = i + 1;
        let mut input = Vec::new();
        while i < lines.len() && lines[i] != "----" {
            assert!(
                !lines[i].trim().is_empty(),
                "{name}:{}: blank line before ----",
                i + 1
            );
            input.push(lines[i].to_string());
            i += 1;
        }
        assert!(i < lines.len(), "{name}:{line}: case without ----");
        i += 1;
        let mut expected = Vec::new();
        while i < lines.len() && !lines[i].trim().is_empty() {
            expected.push(lines[i].to_string());
            i += 1;
        }
        chunks.push(Chunk::Case(Case {
            line,
            input,
            expected,
        }));
    }
    chunks
}

/// Runs every case of the file at `path` through `run` and fails with
/// every differing case (or rewrites the file under `STRATA_REWRITE=1`).
pub(crate) fn run_file(path: &str, mut run: impl FnMut(&Case) -> Vec<String>) {
    let name = std::path::Path::new(path)
        .file_name()
        .map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned());
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {path}: {e}"));
    let rewrite = std::env::var_os("STRATA_REWRITE").is_some_and(|v| v == "1");
    let mut failures = Vec::new();
    let mut out = String::new();
    let mut cases = 0;
    for chunk in parse(&name, &text) {
        match chunk {
            Chunk::Text(t) => {
                out.push_str(&t);
                out.push('\n');
            }
            Chunk::Case(case) => {
                cases += 1;
                let got = run(&case);
                if got != case.expected {
                    failures.push(format!(
                        "{name}:{}:\n{}\n--- expected\n{}\n--- got\n{}",
                        case.line,
                        case.input.join("\n"),
                        case.expected.join("\n"),
                        got.join("\n")
                    ));
                }
                for l in case.input.iter().map(String::as_str).chain(["----"]) {
                    out.push_str(l);
                    out.push('\n');
                }
                for l in &got {
                    out.push_str(l);
                    out.push('\n');
                }
            }
        }
    }
    assert!(cases > 0, "no cases in {name}");
    if rewrite {
        if out != text {
            std::fs::write(path, out).unwrap_or_else(|e| panic!("rewrite {path}: {e}"));
        }
        return;
    }
    assert!(
        failures.is_empty(),
        "{} of {cases} cases differ (STRATA_REWRITE=1 rewrites them):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
