//! What the benchmark reads from /proc: a process's CPU time and resident memory, and the
//! open-file limit it raises for runs with many connections.

use std::time::Duration;

/// utime + stime of `pid` ("self" for this process), from /proc/PID/stat.
pub fn cpu_time(pid: &str) -> Option<Duration> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain spaces: count fields after it.
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    // Full-line fields 14 (utime) and 15 (stime) are the 12th and 13th after the name.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let hz = if hz > 0 { hz as f64 } else { 100.0 };
    Some(Duration::from_secs_f64((utime + stime) as f64 / hz))
}

/// VmRSS of `pid` in KiB, from /proc/PID/status.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Raises this process's RLIMIT_NOFILE soft limit to the hard limit; returns the new soft limit.
// rlim_t is u64 on 64-bit Linux but not on every target: the casts stay.
#[allow(clippy::unnecessary_cast)]
pub fn raise_nofile() -> u64 {
    // SAFETY: getrlimit/setrlimit write/read only the struct passed.
    unsafe {
        let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) != 0 {
            return 0;
        }
        if rl.rlim_cur < rl.rlim_max {
            let want = libc::rlimit { rlim_cur: rl.rlim_max, rlim_max: rl.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &want) == 0 {
                return want.rlim_cur as u64;
            }
        }
        rl.rlim_cur as u64
    }
}

/// One reading of the server's and this process's counters at an instant.
#[derive(Clone, Copy, Debug)]
pub struct Snapshot {
    pub at: std::time::Instant,
    pub server_cpu: Option<Duration>,
    pub self_cpu: Option<Duration>,
    pub server_rss_kib: Option<u64>,
}

impl Snapshot {
    pub fn take(pid: Option<u32>) -> Snapshot {
        Snapshot {
            at: std::time::Instant::now(),
            server_cpu: pid.and_then(|p| cpu_time(&p.to_string())),
            self_cpu: cpu_time("self"),
            server_rss_kib: pid.and_then(rss_kib),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_this_process() {
        assert!(super::cpu_time("self").is_some());
        assert!(super::rss_kib(std::process::id()).unwrap() > 0);
    }
}
