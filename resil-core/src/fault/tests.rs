use std::time::Duration;

use super::*;
use crate::clock::{ManualClock, SharedClock};

fn abort_all() -> FaultConfig {
    FaultConfig::builder().abort_percent(100.0).build().unwrap()
}

#[test]
fn percents_outside_0_to_100_are_refused_by_name() {
    let err = FaultConfig::builder()
        .delay_percent(101.0)
        .abort_percent(-1.0)
        .build()
        .unwrap_err();
    let fields: Vec<_> = err.problems().iter().map(|p| p.field()).collect();
    assert_eq!(fields, ["delay_percent", "abort_percent"]);
    assert_eq!(err.problems()[0].value(), "101");
    assert!(
        FaultConfig::builder()
            .abort_percent(f64::NAN)
            .build()
            .is_err()
    );
    assert!(
        FaultConfig::builder()
            .delay(Duration::from_secs(3601))
            .build()
            .is_err()
    );
}

#[test]
fn an_injected_fault_ends_when_its_time_is_up_and_the_configured_one_is_back() {
    let clock = ManualClock::new();
    let faults = Faults::seeded(7);
    assert!(!faults.any_in_force());
    let configured = FaultConfig::builder()
        .delay(Duration::from_millis(200))
        .delay_percent(10.0)
        .build()
        .unwrap();
    faults.configure(
        "inventory",
        Some(configured),
        SharedClock::new(clock.clone()),
    );
    faults
        .inject(
            "inventory",
            abort_all(),
            Duration::from_secs(600),
            &SharedClock::new(clock.clone()),
        )
        .unwrap();
    let listed = faults.list();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].source, FaultSource::Injected);
    assert_eq!(listed[0].remaining, Some(Duration::from_secs(600)));
    clock.advance(Duration::from_secs(600));
    let listed = faults.list();
    assert_eq!(listed[0].source, FaultSource::Configured);
    assert_eq!(listed[0].config, configured);
    faults.configure("inventory", None, SharedClock::new(clock.clone()));
    assert!(faults.list().is_empty());
    assert!(
        !faults.any_in_force(),
        "nothing in force: the one load again"
    );
}

#[test]
fn stop_ends_an_injected_fault_and_the_board_is_quiet_again() {
    let faults = Faults::seeded(1);
    faults
        .inject(
            "a",
            abort_all(),
            Duration::from_secs(60),
            &SharedClock::default(),
        )
        .unwrap();
    assert!(faults.any_in_force());
    assert!(faults.stop("a"));
    assert!(!faults.stop("a"));
    assert!(!faults.stop("never-seen"));
    assert!(!faults.any_in_force());
}

#[test]
fn an_injection_needs_a_bounded_while() {
    let faults = Faults::seeded(1);
    let err = faults
        .inject(
            "a",
            abort_all(),
            Duration::from_secs(24 * 3600 + 1),
            &SharedClock::default(),
        )
        .unwrap_err();
    assert!(err.contains("at most 24h"), "{err}");
    assert!(
        faults
            .inject("a", abort_all(), Duration::ZERO, &SharedClock::default())
            .is_err()
    );
    assert!(
        !faults.any_in_force(),
        "a refused injection changes nothing"
    );
}

#[test]
fn draws_follow_the_percentages_and_the_seed() {
    let run = |seed| {
        let faults = Faults::seeded(seed);
        let config = FaultConfig::builder()
            .delay(Duration::from_millis(5))
            .delay_percent(50.0)
            .abort_percent(20.0)
            .build()
            .unwrap();
        faults.configure("x", Some(config), SharedClock::new(ManualClock::new()));
        let decisions: Vec<char> = (0..2000)
            .map(|_| match faults.decide(["x"]) {
                None => '.',
                Some(Decision::Delay(..)) => 'd',
                Some(Decision::Abort(_)) => 'a',
            })
            .collect();
        (decisions, faults.injected_total("x"))
    };
    let (first, (delayed, aborted)) = run(42);
    assert_eq!(run(42).0, first, "the same seed draws alike");
    // 20% aborted; half of the other 80% delayed.
    assert!((300..500).contains(&aborted), "{aborted}");
    assert!((700..900).contains(&delayed), "{delayed}");
}
