//! Compile-time behaviour of the attributes: every supported shape builds
//! (`ui/pass`), every mistake gets its own targeted error (`ui/fail`, one
//! mistake per file, with the expected `.stderr` beside it).
//!
//! Compiler output differs between releases, so this runs on the pinned
//! toolchain only. Regenerate with `TRYBUILD=overwrite cargo test --test ui`
//! and read every changed `.stderr` before committing it.

#[rustversion::stable(1.95)]
#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
