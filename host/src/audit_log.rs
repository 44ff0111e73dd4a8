//! Audit sinks of the CLI: records appended to a JSONL file (one §21.5.1 record a line).

use std::io::Write;
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
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&self.path).map_err(|e| format!("{}: {e}", self.path.display()))?;
        let mut buf = line.replace('\n', " ");
        buf.push('\n');
        f.write_all(buf.as_bytes()).map_err(|e| format!("{}: {e}", self.path.display()))
    }
}
