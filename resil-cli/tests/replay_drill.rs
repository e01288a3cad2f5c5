//! A drill of the inventory service (`examples/inventory-service`),
//! recorded with `[resil] record` and replayed with two candidate
//! configurations: the service's own, which opens where the recording
//! opened, and one judging over 100 calls, which never opens and lets
//! through the calls the recording refused (their outcomes inferred).

#[allow(dead_code)] // a test binary uses only part of the example
#[path = "../../examples/inventory-service/app/mod.rs"]
mod app;

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

use resil::circuit_breaker::State;
use resil::clock::TokioClock;
use resil::config::Resilience;

use crate::app::Inventory;
use crate::app::domain::Mode;
use crate::app::downstream::InventoryHttpClient;

const CONFIG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../resilience.toml");
const SKU: &str = "SKU-1001";

fn replay(dir: &Path, config: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_resil"))
        .args(["replay", "--calls", "calls.jsonl", "--config", config])
        .current_dir(dir)
        .output()
        .expect("the resil binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test(start_paused = true)]
async fn a_recorded_drill_replays_with_two_candidates_that_disagree_about_opening() {
    let dir = std::env::temp_dir().join(format!("resil-replay-drill-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let calls = dir.join("calls.jsonl");

    // the service's configuration, recording (as RESIL_RESIL__RECORD would
    // ask a running service to)
    Resilience::builder()
        .file(CONFIG)
        .clock(TokioClock::new())
        .env_vars([("RESIL_RESIL__RECORD", calls.display().to_string())])
        .init()
        .unwrap();
    assert_eq!(resil::record::active().as_deref(), Some(calls.as_path()));
    let client = Arc::new(InventoryHttpClient::with_latency(Duration::from_millis(20)));
    let inventory = Inventory::new(client, resil::registries());
    let breaker = resil::registries()
        .circuit_breakers()
        .circuit_breaker("inventory-query");

    // the drill: ten good answers, then the inventory answers 503 fifteen
    // times; the breaker opens at the 20th call (half of 20 failed) and
    // refuses the last five; ten seconds later three probes close it
    for _ in 0..10 {
        inventory.gateway.query(SKU, Mode::Success).await.unwrap();
    }
    for _ in 0..15 {
        inventory.gateway.query(SKU, Mode::Fail).await.unwrap();
    }
    assert_eq!(breaker.state(), State::Open);
    tokio::time::advance(Duration::from_secs(11)).await;
    for _ in 0..5 {
        inventory.gateway.query(SKU, Mode::Success).await.unwrap();
    }
    assert_eq!(breaker.state(), State::Closed);
    resil::record::stop();

    // the service's own thresholds open where the recording opened
    std::fs::copy(CONFIG, dir.join("current.toml")).unwrap();
    let out = replay(&dir, "current.toml");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let opens = text(&out.stdout);
    let breaker_report = |report: &str| {
        let start = report.find("circuitbreaker `inventory-query`").unwrap();
        report[start..].split("\n\n").next().unwrap().to_owned()
    };
    let current = breaker_report(&opens);
    assert!(current.contains("    calls: 30\n"), "{opens}");
    assert!(current.contains("    inferred: 0\n"), "{opens}");
    assert!(
        current.contains("    refusals: 5 (recording: 5, difference: 0)\n"),
        "{opens}"
    );
    // every call of the retry is in the recording, the fifteen that
    // succeeded at their first attempt too (they publish no event)
    let start = opens.find("retry `inventory-query`").unwrap();
    let retry = opens[start..].split("\n\n").next().unwrap();
    assert!(retry.contains("    calls: 30\n"), "{opens}");
    let open_line = current.lines().last().unwrap();
    assert!(
        open_line.starts_with("    OPEN: 1 at +") && open_line.ends_with(", difference: 0)"),
        "{opens}"
    );

    // the time limiter saw each call the breaker let through take its
    // 20 ms, well within 800 ms
    let start = opens.find("timelimiter `inventory-query`").unwrap();
    let timed = &opens[start..];
    assert!(timed.contains("    calls: 25\n"), "{opens}");
    assert!(
        timed.contains("    timeouts: 0 (recording: 0, difference: 0)\n"),
        "{opens}"
    );

    // judged over 100 calls it never opens: the five refused calls are let
    // through, with the outcome of their nearest recorded neighbour; with a
    // 10 ms timeout, every 20 ms call times out
    let candidate = std::fs::read_to_string(CONFIG)
        .unwrap()
        .replace("sliding-window-size = 20", "sliding-window-size = 100")
        .replace(
            "minimum-number-of-calls = 10",
            "minimum-number-of-calls = 100",
        )
        .replace(
            "timeout-duration = \"800ms\"",
            "timeout-duration = \"10ms\"",
        );
    std::fs::write(dir.join("candidate.toml"), candidate).unwrap();
    let out = replay(&dir, "candidate.toml");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stays = text(&out.stdout);
    let candidate = breaker_report(&stays);
    assert!(candidate.contains("    inferred: 5\n"), "{stays}");
    assert!(
        candidate.contains("    refusals: 0 (recording: 5, difference: -5)\n"),
        "{stays}"
    );
    assert!(
        candidate.contains("    OPEN: 0 (recording: 1 at +"),
        "{stays}"
    );
    assert!(
        stays.ends_with(
            "timelimiter `inventory-query`
    calls: 25
    inferred: 0
    timeouts: 25 (recording: 0, difference: +25)
"
        ),
        "{stays}"
    );
    // the same recording, the same bytes
    assert_eq!(replay(&dir, "candidate.toml").stdout, out.stdout);
    std::fs::remove_dir_all(&dir).unwrap();
}
