#![no_main]
//! Fuzz target: `strata::tools::fuzz::manifest` on arbitrary bytes.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    strata::tools::fuzz::manifest(data);
});
