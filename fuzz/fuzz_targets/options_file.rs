#![no_main]
//! Fuzz target: `strata::tools::fuzz::options_file` on arbitrary bytes.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    strata::tools::fuzz::options_file(data);
});
