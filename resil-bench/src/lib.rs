//! Benchmarks of resil live in the repository's `benches/` folder; this
//! package only carries their dependencies (see its `Cargo.toml`).

use std::hint::black_box;
use std::time::Instant;

/// Times `a` and `b` in alternating rounds of `calls` calls each, `rounds`
/// times, and prints each one's minimum and median nanoseconds per call and
/// the ratio `a / b` of both: on a machine shared with other work,
/// alternating skews the ratio less than criterion's separate groups.
///
/// Returns the ratios of the minimums and of the medians.
#[allow(clippy::disallowed_methods)] // the harness times itself
pub fn interleaved(
    label: &str,
    (name_a, a): (&str, &dyn Fn() -> bool),
    (name_b, b): (&str, &dyn Fn() -> bool),
    rounds: usize,
    calls: u32,
) -> (f64, f64) {
    let round = |f: &dyn Fn() -> bool| {
        let start = Instant::now();
        for _ in 0..calls {
            black_box(f());
        }
        start.elapsed().as_secs_f64() * 1e9 / f64::from(calls)
    };
    let (mut ta, mut tb) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
    for _ in 0..rounds.max(1) {
        ta.push(round(a));
        tb.push(round(b));
    }
    ta.sort_by(f64::total_cmp);
    tb.sort_by(f64::total_cmp);
    let mid = ta.len() / 2;
    let ratios = (ta[0] / tb[0], ta[mid] / tb[mid]);
    println!(
        "{label}/interleaved: {name_a} {:.2} ns min {:.2} ns median; {name_b} {:.2} ns min {:.2} ns median; ratio {:.3} min {:.3} median",
        ta[0], ta[mid], tb[0], tb[mid], ratios.0, ratios.1
    );
    ratios
}
