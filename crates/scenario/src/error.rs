//! Errors for users: every one names the file, the line (when the key is in the file), the key
//! and what was expected.

use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioError {
    pub file: PathBuf,
    pub line: Option<usize>,
    /// Dotted key path, e.g. `process.sink.nice` or `process[1].nice`.
    pub key: String,
    pub message: String,
}

impl ScenarioError {
    /// A message is one line: parts of a multi-line message (some TOML parse errors) are
    /// joined with `; `.
    pub fn new(file: &Path, line: Option<usize>, key: impl Into<String>, message: impl Into<String>) -> Self {
        let message: String = message.into();
        let message = if message.contains(['\n', '\r']) {
            message.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ")
        } else {
            message
        };
        let key: String = key.into();
        let key = if key.chars().any(char::is_control) { key.escape_debug().to_string() } else { key };
        ScenarioError { file: file.to_path_buf(), line, key, message }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        if !self.key.is_empty() {
            write!(f, ": key `{}`", self.key)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ScenarioError {}

/// Line (1-based) of a byte offset in `src`.
pub fn line_of(src: &str, offset: usize) -> usize {
    src[..offset.min(src.len())].bytes().filter(|&b| b == b'\n').count() + 1
}
