//! The folder of one scenario: the node configurations, the rendered balancer configuration,
//! and every process's log. When the scenario fails, the end of each log is printed before
//! the folder is removed, so that a failure in CI shows what the balancer and the nodes saw.

use std::path::{Path, PathBuf};

/// Lines of each log shown when a scenario fails.
const TAIL_LINES: usize = 40;

pub struct Scratch {
    path: PathBuf,
}

impl Scratch {
    pub fn new(label: &str) -> Scratch {
        let path = std::env::temp_dir().join(format!(
            "mcp-actor-cluster-{label}-{}",
            crate::common::unique()
        ));
        std::fs::create_dir_all(&path).expect("create the scenario's folder");
        Scratch { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    fn print_log_tails(&self) {
        let Ok(entries) = std::fs::read_dir(&self.path) else {
            return;
        };
        let mut logs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "log"))
            .collect();
        logs.sort();
        for log in logs {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let start = lines.len().saturating_sub(TAIL_LINES);
            eprintln!(
                "---- {} (last {} lines)",
                log.display(),
                lines.len() - start
            );
            for line in &lines[start..] {
                eprintln!("{line}");
            }
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.print_log_tails();
        }
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
