#![no_main]
//! Fuzz target: `strata::tools::fuzz::table` on arbitrary bytes.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    strata::tools::fuzz::table(data);
});
