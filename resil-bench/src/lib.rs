//! Benchmarks of resil live in the repository's `benches/` folder; this
//! package only carries their dependencies (see its `Cargo.toml`).
