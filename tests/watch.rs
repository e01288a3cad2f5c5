//! `watch()` with real files in a temporary directory: an edit applies, a
//! bad edit is refused and the settings in force stay, an editor's
//! write-and-rename applies, a deleted file is a refused reload, a missing
//! file cannot be watched, and dropping the watcher stops it. Outcomes are
//! polled for with a deadline, never waited for with a fixed sleep.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use resil::config::{InitError, Resilience};

mod watched;

use watched::{calls, eventually, watch};

const FILE: &str = "[bulkhead.instances.inventory-query]\nmax-concurrent-calls = 5\n";

fn edited(calls: u32) -> String {
    format!("[bulkhead.instances.inventory-query]\nmax-concurrent-calls = {calls}\n")
}

fn setup(name: &str) -> (PathBuf, PathBuf) {
    watched::setup(&format!("watch-{name}"), FILE)
}

fn load(file: &Path) -> Arc<Resilience> {
    watched::load(file, None)
}

#[test]
fn an_edit_applies() {
    let (dir, file) = setup("edit");
    let loaded = load(&file);
    let watcher = watch(&loaded);
    assert_eq!(watcher.file(), file.as_path());
    std::fs::write(&file, edited(7)).unwrap();
    eventually("the edit to apply", || calls(&loaded) == 7);
    eventually("the outcome to be counted", || watcher.applied() == 1);
    let last = watcher.last().unwrap().unwrap();
    assert_eq!(
        last.to_string(),
        "bulkhead inventory-query: max-concurrent-calls 5 -> 7"
    );
    assert_eq!(watcher.rejected(), 0);
    drop(watcher);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_bad_edit_is_refused_and_the_old_settings_stay() {
    let (dir, file) = setup("bad");
    let loaded = load(&file);
    let watcher = watch(&loaded);
    std::fs::write(
        &file,
        "[bulkhead.instances.inventory-query]\nmax-concurrent-calls = -1\n",
    )
    .unwrap();
    eventually("the refusal", || watcher.rejected() == 1);
    let err = watcher.last().unwrap().unwrap_err();
    assert_eq!(
        err.problems()[0].key(),
        "bulkhead.instances.inventory-query.max-concurrent-calls"
    );
    assert_eq!(calls(&loaded), 5);
    // the next good edit applies
    std::fs::write(&file, edited(6)).unwrap();
    eventually("the good edit", || calls(&loaded) == 6);
    drop(watcher);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_file_renamed_into_place_applies() {
    let (dir, file) = setup("rename");
    let loaded = load(&file);
    let watcher = watch(&loaded);
    // as editors and deployment tools save: a new file, renamed over the old
    let temporary = dir.join(".resilience.toml.swp");
    std::fs::write(&temporary, edited(9)).unwrap();
    std::fs::rename(&temporary, &file).unwrap();
    eventually("the renamed file to apply", || calls(&loaded) == 9);
    drop(watcher);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_deleted_file_is_a_refused_reload_and_a_new_one_applies() {
    let (dir, file) = setup("delete");
    let loaded = load(&file);
    let watcher = watch(&loaded);
    std::fs::remove_file(&file).unwrap();
    eventually("the refusal", || watcher.rejected() == 1);
    let err = watcher.last().unwrap().unwrap_err();
    assert!(
        err.problems()[0]
            .message()
            .starts_with("cannot read the file"),
        "{err}"
    );
    assert_eq!(calls(&loaded), 5);
    std::fs::write(&file, edited(3)).unwrap();
    eventually("the new file to apply", || calls(&loaded) == 3);
    drop(watcher);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_missing_file_or_no_file_cannot_be_watched() {
    let (dir, file) = setup("missing");
    let loaded = load(&file);
    std::fs::remove_file(&file).unwrap();
    let err = loaded.watch().unwrap_err();
    assert!(matches!(err, InitError::Watch(_)), "{err}");
    assert!(err.to_string().contains("does not exist"), "{err}");
    // contents given to the builder: no file
    let contents = Arc::new(
        Resilience::builder()
            .file_contents("resilience.toml", FILE)
            .env_vars(Vec::<(String, String)>::new())
            .load()
            .unwrap(),
    );
    let err = contents.watch().unwrap_err();
    assert!(err.to_string().contains("no file was read"), "{err}");
    // the global registries, which init did not build
    assert!(matches!(resil::watch(), Err(InitError::NotInitialized)));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn dropping_the_watcher_stops_it() {
    let (dir, file) = setup("drop");
    let loaded = load(&file);
    let watcher = watch(&loaded);
    // the watcher's thread holds the registries while it runs
    assert_eq!(Arc::strong_count(&loaded), 2);
    drop(watcher);
    assert_eq!(Arc::strong_count(&loaded), 1, "the thread ended");
    std::fs::write(&file, edited(8)).unwrap();
    // nothing reloads any more: the change is still pending
    let pending = loaded.reload_dry_run().unwrap();
    assert_eq!(
        pending.to_string(),
        "bulkhead inventory-query: max-concurrent-calls 5 -> 8"
    );
    assert_eq!(calls(&loaded), 5);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_swapped_symbolic_link_applies_as_kubernetes_updates_a_config_map() {
    use std::os::unix::fs::symlink;
    let (dir, file) = setup("symlink");
    // resilience.toml -> ..data/resilience.toml, ..data -> ..v1
    std::fs::remove_file(&file).unwrap();
    for version in ["..v1", "..v2"] {
        std::fs::create_dir(dir.join(version)).unwrap();
    }
    std::fs::write(dir.join("..v1/resilience.toml"), FILE).unwrap();
    std::fs::write(dir.join("..v2/resilience.toml"), edited(4)).unwrap();
    symlink("..v1", dir.join("..data")).unwrap();
    symlink("..data/resilience.toml", &file).unwrap();
    let loaded = load(&file);
    let watcher = watch(&loaded);
    // the kubelet's swap: a new link, renamed over the old one
    symlink("..v2", dir.join("..data_tmp")).unwrap();
    std::fs::rename(dir.join("..data_tmp"), dir.join("..data")).unwrap();
    eventually("the swapped file to apply", || calls(&loaded) == 4);
    drop(watcher);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_edit_in_place_of_a_link_target_in_another_directory_applies() {
    use std::os::unix::fs::symlink;
    // resilience.toml -> ../shared/link.toml -> ../store/resilience.toml
    let (dir, file) = setup("target");
    let shared = dir.join("shared");
    let store = dir.join("store");
    let conf = dir.join("conf");
    for d in [&shared, &store, &conf] {
        std::fs::create_dir(d).unwrap();
    }
    std::fs::remove_file(&file).unwrap();
    let target = store.join("resilience.toml");
    std::fs::write(&target, FILE).unwrap();
    symlink("../store/resilience.toml", shared.join("link.toml")).unwrap();
    let named = conf.join("resilience.toml");
    symlink("../shared/link.toml", &named).unwrap();
    let loaded = load(&named);
    let watcher = watch(&loaded);
    // the target edited in place, in a directory neither link is in
    std::fs::write(&target, edited(7)).unwrap();
    eventually("the edited target to apply", || calls(&loaded) == 7);
    // the first link now leads elsewhere: that target is watched instead
    let other = dir.join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("resilience.toml"), edited(8)).unwrap();
    symlink("../other/resilience.toml", shared.join("link.tmp")).unwrap();
    std::fs::rename(shared.join("link.tmp"), shared.join("link.toml")).unwrap();
    eventually("the new target to apply", || calls(&loaded) == 8);
    std::fs::write(other.join("resilience.toml"), edited(9)).unwrap();
    eventually("its edit in place to apply", || calls(&loaded) == 9);
    assert_eq!(watcher.rejected(), 0);
    drop(watcher);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn other_files_and_saves_that_change_nothing_reload_nothing() {
    let (dir, file) = setup("quiet");
    let loaded = load(&file);
    let watcher = watch(&loaded);
    std::fs::write(dir.join("notes.txt"), "unrelated").unwrap();
    std::fs::write(&file, FILE).unwrap(); // saved, unchanged
    // then a real edit, the only reload
    std::fs::write(&file, edited(2)).unwrap();
    eventually("the edit to apply", || calls(&loaded) == 2);
    eventually("its outcome", || watcher.applied() == 1);
    std::fs::write(dir.join("notes.txt"), "more").unwrap();
    std::fs::write(&file, edited(2)).unwrap();
    std::fs::write(&file, edited(6)).unwrap();
    eventually("the second edit", || calls(&loaded) == 6);
    eventually("its outcome", || watcher.applied() == 2);
    assert_eq!(
        watcher.last().unwrap().unwrap().to_string(),
        "bulkhead inventory-query: max-concurrent-calls 2 -> 6"
    );
    assert_eq!(watcher.rejected(), 0);
    drop(watcher);
    std::fs::remove_dir_all(&dir).unwrap();
}
