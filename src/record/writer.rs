//! The writer thread: receives lines from a bounded channel, appends them
//! to the file, and rotates it at its bound.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender, TrySendError, bounded};

use super::line::Line;

/// Lines waiting for the writer; past this the caller drops its line (and
/// counts it) rather than wait.
pub(crate) const CAPACITY: usize = 8192;

/// What the writer thread receives.
pub(crate) enum Msg {
    Line(Line),
    /// Flush, close the file and end; the sender is told when it is done.
    Stop(Sender<()>),
}

/// One open recording: the channel to its thread.
pub(crate) struct Writer {
    pub(crate) path: PathBuf,
    pub(crate) max_bytes: u64,
    tx: Sender<Msg>,
    thread: std::sync::Mutex<Option<JoinHandle<()>>>,
    /// Lines dropped because the channel was full.
    pub(crate) dropped: AtomicU64,
}

impl Writer {
    /// Opens `path` for appending (created when missing) and starts its thread.
    pub(crate) fn start(path: &Path, max_bytes: u64) -> io::Result<Writer> {
        let file = open_append(path)?;
        let written = file.metadata()?.len();
        let (tx, rx) = bounded(CAPACITY);
        let out = Output {
            path: path.to_owned(),
            max_bytes,
            file: BufWriter::new(file),
            written,
            failed: false,
        };
        let thread = std::thread::Builder::new()
            .name("resil-record".to_owned())
            .spawn(move || run(rx, out))?;
        Ok(Writer {
            path: path.to_owned(),
            max_bytes,
            tx,
            thread: std::sync::Mutex::new(Some(thread)),
            dropped: AtomicU64::new(0),
        })
    }

    /// Hands `line` to the writer thread without waiting: when the channel
    /// is full the line is dropped and counted.
    pub(crate) fn send(&self, line: Line) {
        match self.tx.try_send(Msg::Line(line)) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                super::DROPPED.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Writes what was sent before this call, closes the file and ends the
    /// thread (waiting for it). A second call does nothing.
    pub(crate) fn stop(&self) {
        let Some(thread) = crate::sync::lock(&self.thread).take() else {
            return;
        };
        let (ack, done) = bounded(1);
        // waits for room: the lines before the stop are written
        if self.tx.send(Msg::Stop(ack)).is_ok() {
            let _ = done.recv();
        }
        let _ = thread.join();
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn open_append(path: &Path) -> io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

/// The file side of the writer thread.
struct Output {
    path: PathBuf,
    max_bytes: u64,
    file: BufWriter<File>,
    /// The file's size so far.
    written: u64,
    /// An error was reported already (one warning, not one per line).
    failed: bool,
}

impl Output {
    fn write(&mut self, text: &str) {
        let len = text.len() as u64;
        if self.written > 0 && self.written + len > self.max_bytes {
            let rotated = self.rotate();
            self.report(rotated);
        }
        let result = self.file.write_all(text.as_bytes());
        if result.is_ok() {
            self.written += len;
        }
        self.report(result);
    }

    /// `calls.jsonl` becomes `calls.jsonl.1` (replacing an older one) and a
    /// new, empty `calls.jsonl` is started.
    fn rotate(&mut self) -> io::Result<()> {
        self.file.flush()?;
        let mut rotated = self.path.clone().into_os_string();
        rotated.push(".1");
        std::fs::rename(&self.path, &rotated)?;
        self.file = BufWriter::new(
            OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(true)
                .open(&self.path)?,
        );
        self.written = 0;
        Ok(())
    }

    fn report(&mut self, result: io::Result<()>) {
        if let Err(e) = result
            && !std::mem::replace(&mut self.failed, true)
        {
            tracing::warn!(
                target: "resil::record",
                "resil: cannot write the recording to {}: {e}; lines are lost until it can",
                self.path.display()
            );
        }
    }
}

fn run(rx: Receiver<Msg>, mut out: Output) {
    let mut text = String::with_capacity(512);
    while let Ok(msg) = rx.recv() {
        let mut next = Some(msg);
        // drain what is queued, then flush once
        while let Some(msg) = next.take() {
            match msg {
                Msg::Line(line) => {
                    text.clear();
                    line.write_json(&mut text);
                    out.write(&text);
                }
                Msg::Stop(ack) => {
                    let flushed = out.file.flush();
                    out.report(flushed);
                    let _ = ack.send(());
                    return;
                }
            }
            next = rx.try_recv().ok();
        }
        let flushed = out.file.flush();
        out.report(flushed);
    }
}
