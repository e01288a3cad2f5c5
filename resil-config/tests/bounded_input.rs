//! Configuration input is bounded and never silently dropped: files that are
//! not regular files, files that lie about their size, and `RESIL_*`
//! variables that are not UTF-8 are errors that name what was wrong.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use resil_config::{InitError, Resilience};

fn load_file(path: &Path) -> Result<Resilience, InitError> {
    Resilience::builder()
        .file(path)
        .env_vars(Vec::<(String, String)>::new())
        .declarations([])
        .load()
}

fn message(result: Result<Resilience, InitError>) -> String {
    match result {
        Ok(_) => panic!("accepted"),
        Err(e) => e.to_string(),
    }
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("resil-bounded-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Fails the test instead of hanging when `f` blocks.
fn within<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("reading the configuration blocked")
}

#[test]
fn a_fifo_is_refused_without_blocking() {
    let dir = temp("fifo");
    let fifo = dir.join("resilience.toml");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("skipped: mkfifo is not available here");
        return;
    }
    let shown = fifo.display().to_string();
    // Before the fix, opening the FIFO blocked until a writer came.
    let text = within(move || message(load_file(&fifo)));
    assert!(text.contains(&shown), "{text}");
    assert!(text.contains("is not a regular file (a FIFO)"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn dev_zero_is_refused_though_its_size_is_zero() {
    // Before the fix the size check trusted the metadata (0 bytes) and the
    // read never ended.
    let text = within(|| message(load_file(Path::new("/dev/zero"))));
    assert!(text.contains("/dev/zero"), "{text}");
    assert!(text.contains("a character device"), "{text}");
}

#[test]
fn a_directory_is_refused() {
    let dir = temp("dir");
    let text = message(load_file(&dir));
    assert!(
        text.contains("is not a regular file (a directory)"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_file_over_the_limit_is_refused() {
    let dir = temp("big");
    let file = dir.join("resilience.toml");
    std::fs::write(&file, "#".repeat(1024 * 1024 + 1)).unwrap();
    let text = message(load_file(&file));
    assert!(text.contains("resil reads at most 1048576 bytes"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_resil_variable_that_is_not_utf8_is_an_error_naming_it() {
    use std::os::unix::ffi::OsStrExt;
    const KEY: &str = "RESIL_RETRY__INSTANCES__NOT_UTF8_TEST__MAX_ATTEMPTS";
    const CHILD: &str = "BOUNDED_INPUT_CHILD";
    if std::env::var_os(CHILD).is_none() {
        // The variable is set on a child run of this test alone, so no other
        // test sees it and no `unsafe` `set_var` is needed.
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "a_resil_variable_that_is_not_utf8_is_an_error_naming_it",
            ])
            .args(["--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            .env(KEY, std::ffi::OsStr::from_bytes(b"4\xff"))
            .output()
            .unwrap();
        let shown = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{shown}");
        assert!(shown.contains("1 passed"), "{shown}");
        return;
    }
    let result = Resilience::builder()
        .file_contents("resilience.toml", "")
        .declarations([])
        .load();
    // Before the fix the variable was dropped and resil started on defaults.
    let text = message(result);
    assert!(
        text.contains(&format!("environment variable {KEY}")),
        "{text}"
    );
    assert!(text.contains("is not UTF-8"), "{text}");
}
