//! `[resil] record` in the file `init()` reads: it starts recording, and a
//! reload moves the recording to another file or stops it.

use std::path::Path;

#[derive(Debug)]
struct Down;

fn count(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

#[test]
fn the_file_starts_moves_and_stops_the_recording() {
    let dir = std::env::temp_dir().join(format!("resil-record-reload-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = (dir.join("a.jsonl"), dir.join("b.jsonl"));
    let config = dir.join("resilience.toml");
    let write = |record: Option<&Path>| {
        let table = record.map_or(String::new(), |p| {
            format!("[resil]\nrecord = {:?}\n", p.display().to_string())
        });
        std::fs::write(
            &config,
            format!("{table}\n[circuitbreaker.instances.orders]\n"),
        )
        .unwrap();
    };
    write(Some(&a));
    resil::config::Resilience::builder()
        .file(&config)
        .env_vars(Vec::<(String, String)>::new())
        .init()
        .unwrap();
    assert_eq!(resil::record::active().as_deref(), Some(a.as_path()));
    let cb = resil::registries()
        .circuit_breakers()
        .circuit_breaker("orders");
    let call = || cb.call(|| Ok::<_, Down>(())).unwrap();
    call();
    call();

    // moved: the old file is complete and closed, the new one receives
    write(Some(&b));
    resil::reload().unwrap();
    assert_eq!(resil::record::active().as_deref(), Some(b.as_path()));
    assert_eq!(count(&a), 2);
    call();

    // an unchanged `record` keeps the recording as it is
    resil::reload().unwrap();
    assert_eq!(resil::record::active().as_deref(), Some(b.as_path()));
    call();

    // removed: stopped
    write(None);
    resil::reload().unwrap();
    assert_eq!(resil::record::active(), None);
    assert_eq!(count(&b), 2);
    call();
    assert_eq!((count(&a), count(&b)), (2, 2));

    // a path that cannot be written is a refused reload: nothing changes
    write(Some(&dir.join("missing").join("c.jsonl")));
    let err = resil::reload().unwrap_err();
    assert!(err.to_string().contains("resil.record"), "{err}");
    assert_eq!(resil::record::active(), None);
    std::fs::remove_dir_all(&dir).unwrap();
}
