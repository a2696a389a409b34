//! The configuration loader, `Config::parse(text, origin)`: any text is a configuration or
//! errors that point into it (a line of the text, a column from 1), and what passes has
//! passed its checks.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_actor::fuzzing::{Config, ConfigError};

fn check_located(error: &ConfigError, lines: usize) {
    match error {
        ConfigError::Invalid { line, column, .. } => {
            assert!(
                (1..=lines + 1).contains(line),
                "line {line} of a {lines}-line text"
            );
            assert!(*column >= 1, "column {column}");
        }
        ConfigError::Several(errors) => {
            assert!(errors.len() > 1, "Several with {} errors", errors.len());
            for e in errors {
                check_located(e, lines);
            }
        }
        ConfigError::Read { .. } => panic!("parse reported a read error"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Config::parse(text, "fuzz.toml") {
        Ok(config) => assert!(
            config.server.path.starts_with('/'),
            "an unchecked path passed"
        ),
        Err(error) => {
            check_located(&error, text.lines().count());
            let _ = error.to_string();
        }
    }
});
