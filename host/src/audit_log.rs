//! Audit sinks of the CLI: records appended to a JSONL file (one §21.5.1 record a line).

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::Mutex;

use crate::engine::AuditLog;

/// Appends each record as one line to a file, creating it if needed.
pub struct JsonlAudit {
    path: PathBuf,
    lock: Mutex<()>,
}

impl JsonlAudit {
    pub fn new(path: PathBuf) -> Self {
        JsonlAudit { path, lock: Mutex::new(()) }
    }
}

impl AuditLog for JsonlAudit {
    fn append(&self, line: &str) -> Result<(), String> {
        let _g = self.lock.lock().map_err(|_| "audit lock poisoned".to_string())?;
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let err = |e: std::io::Error| format!("{}: {e}", self.path.display());
        let mut f = std::fs::OpenOptions::new().create(true).read(true).append(true).open(&self.path).map_err(err)?;
        let len = f.metadata().map_err(err)?.len();
        // A line left unfinished by something else (a crash, another writer) is ended
        // first, so this record is a line of its own and stays readable.
        let mut buf = if ends_unfinished(&mut f, len).map_err(err)? { "\n".to_string() } else { String::new() };
        buf.push_str(&line.replace('\n', " "));
        buf.push('\n');
        if let Err(e) = f.write_all(buf.as_bytes()) {
            // A write that failed part way (a full disk, a file-size limit) is taken back,
            // so the file holds whole records only and the next one is not glued to it.
            let _ = f.set_len(len);
            return Err(err(e));
        }
        Ok(())
    }
}

/// Whether the file (of `len` bytes) ends in the middle of a line.
fn ends_unfinished(f: &mut std::fs::File, len: u64) -> std::io::Result<bool> {
    if len == 0 {
        return Ok(false);
    }
    let mut last = [0u8];
    f.seek(SeekFrom::Start(len - 1))?;
    f.read_exact(&mut last)?;
    Ok(last[0] != b'\n')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_whole_lines_even_after_an_unfinished_one() {
        let path = std::env::temp_dir().join(format!("lid-audit-log-{}.jsonl", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let log = JsonlAudit::new(path.clone());
        log.append(r#"{"id":"a"}"#).unwrap();
        std::fs::write(&path, std::fs::read_to_string(&path).unwrap() + r#"{"id":"b","cut"#).unwrap();
        log.append("{\"id\":\"c\",\n\"x\":1}").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"id\":\"a\"}\n{\"id\":\"b\",\"cut\n{\"id\":\"c\", \"x\":1}\n");
        let _ = std::fs::remove_file(&path);
    }
}
