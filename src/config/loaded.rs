//! A parsed configuration with the text it came from: what `mcp-actor check`, the server
//! and a reload read. Building its providers (`LoadedConfig::build`) lives in `providers`,
//! which it needs; reading and parsing need nothing above `config`.

use std::path::{Path, PathBuf};

use super::{Config, ConfigError};

/// A parsed configuration with the text it came from, so errors found while building the
/// providers can still name the file and line.
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    pub config: Config,
    pub(crate) text: String,
    pub(crate) origin: String,
    /// Relative paths in the configuration resolve against the file's directory.
    pub(crate) base_dir: PathBuf,
}

impl LoadedConfig {
    /// The directory relative paths in the configuration resolve against.
    pub fn base_dir(&self) -> &Path {
        &self.base_dir
    }

    /// Whether the operator's file sets `key` of `[table]` itself. The embedded default
    /// configuration sets nothing on anyone's behalf, so it answers false.
    pub fn sets(&self, table: &str, key: &str) -> bool {
        if self.text == super::DEFAULT_CONFIG_TOML {
            return false;
        }
        // The text already parsed as the configuration, so it parses as a table.
        self.text
            .parse::<toml::Table>()
            .is_ok_and(|t| t.get(table).and_then(|v| v.get(key)).is_some())
    }

    /// Reads and validates `path`, or the embedded default configuration when `None`.
    pub fn read(path: Option<&Path>) -> Result<Self, ConfigError> {
        let Some(path) = path else {
            let text = super::DEFAULT_CONFIG_TOML.to_string();
            let origin = "<embedded default config>".to_string();
            let config = Config::parse(&text, &origin)?;
            return Ok(LoadedConfig {
                config,
                text,
                origin,
                base_dir: PathBuf::from("."),
            });
        };
        let (text, origin, base_dir) = read_file(path)?;
        let config = Config::parse(&text, &origin)?;
        Ok(LoadedConfig {
            config,
            text,
            origin,
            base_dir,
        })
    }
}

/// The text of the configuration file at `path`, its name for errors, and the directory
/// its relative paths resolve against.
pub(crate) fn read_file(path: &Path) -> Result<(String, String, PathBuf), ConfigError> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: origin.clone(),
        source,
    })?;
    let base_dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((text, origin, base_dir))
}
