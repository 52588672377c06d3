//! gflags-style command-line parsing shared by the subcommands:
//! `--name=value`, `--name value` is not accepted (as in RocksDB's tools),
//! and booleans as `--flag`, `--flag=true|false|1|0`, `--noflag`.

use std::collections::BTreeMap;

/// Parsed flags and positional arguments.
#[derive(Debug, Default)]
pub struct Flags {
    values: BTreeMap<String, String>,
    pub positional: Vec<String>,
    used: std::cell::RefCell<std::collections::BTreeSet<String>>,
}

impl Flags {
    pub fn parse(args: &[String]) -> Flags {
        let mut f = Flags::default();
        for a in args {
            if let Some(rest) = a
                .strip_prefix("--")
                .or_else(|| a.strip_prefix('-').filter(|r| r.contains('=')))
            {
                match rest.split_once('=') {
                    Some((k, v)) => {
                        f.values.insert(k.to_string(), v.to_string());
                    }
                    None => {
                        f.values.insert(rest.to_string(), "true".to_string());
                    }
                }
            } else {
                f.positional.push(a.clone());
            }
        }
        f
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.used.borrow_mut().insert(name.to_string());
        self.values.get(name).map(|s| s.as_str())
    }

    pub fn bool(&self, name: &str) -> Result<bool, String> {
        if self.values.contains_key(&format!("no{name}")) {
            self.used.borrow_mut().insert(format!("no{name}"));
            return Ok(false);
        }
        match self.get(name) {
            None => Ok(false),
            Some("true") | Some("1") | Some("") | Some("yes") => Ok(true),
            Some("false") | Some("0") | Some("no") => Ok(false),
            Some(v) => Err(format!("invalid value for --{name}: {v}")),
        }
    }

    /// A gflags boolean with a default other than false.
    pub fn bool_or(&self, name: &str, default: bool) -> Result<bool, String> {
        let given =
            self.values.contains_key(name) || self.values.contains_key(&format!("no{name}"));
        if given { self.bool(name) } else { Ok(default) }
    }

    pub fn num<T: std::str::FromStr>(&self, name: &str, default: T) -> Result<T, String> {
        match self.get(name) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| format!("invalid value for --{name}: {v}")),
        }
    }

    /// Flags given on the command line that no code asked for.
    pub fn unknown(&self) -> Vec<String> {
        let used = self.used.borrow();
        self.values
            .keys()
            .filter(|k| !used.contains(*k))
            .cloned()
            .collect()
    }
}

/// Uppercase hex, as RocksDB's tools print it.
pub fn to_hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push_str(&format!("{x:02X}"));
    }
    s
}

/// Parses hex with an optional `0x` prefix.
pub fn from_hex(s: &str) -> Result<Vec<u8>, String> {
    let h = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    if h.len() % 2 != 0 {
        return Err(format!("odd-length hex string: {s}"));
    }
    (0..h.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&h[i..i + 2], 16).map_err(|_| format!("invalid hex string: {s}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_gflags_forms() {
        let args: Vec<String> = ["--file=a.sst", "--output_hex", "--noverify", "--n=5", "pos"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let f = Flags::parse(&args);
        assert_eq!(f.get("file"), Some("a.sst"));
        assert!(f.bool("output_hex").unwrap());
        assert!(!f.bool("verify").unwrap());
        assert_eq!(f.num::<u32>("n", 1).unwrap(), 5);
        assert_eq!(f.positional, vec!["pos"]);
        assert_eq!(from_hex("0x6B31").unwrap(), b"k1");
        assert_eq!(to_hex(b"k1"), "6B31");
    }
}
