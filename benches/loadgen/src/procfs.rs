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

/// What `--pid` reads: the process alone, or with `--tree` the process and every descendant
/// (a gateway and the upstream servers it runs), with the processes that run `child_cmd`
/// counted apart. Set once from the command line, before any reading.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    pub tree: bool,
    pub child_cmd: Option<String>,
}

static SCOPE: std::sync::OnceLock<Scope> = std::sync::OnceLock::new();

pub fn set_scope(scope: Scope) {
    let _ = SCOPE.set(scope);
}

/// The fields of /proc/PID/stat this module uses.
struct Stat {
    ppid: u32,
    ticks: u64,
}

/// Whether `pid` runs the program `name`: the file name of its argv[0] (a program) or of its
/// argv[1] (an interpreter's script) is `name`. The command line, not `comm`, because it is
/// set at exec: an interpreter still starting up already counts as the child it will be.
/// A wrapper (`sh -c "python3 x.py"`, a supervisor `... -- python3 x.py`) does not match.
fn runs(pid: u32, name: &str) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let file_name = |arg: &[u8]| arg.rsplit(|b| *b == b'/').next().map(|f| f == name.as_bytes());
    cmdline.split(|b| *b == 0).take(2).any(|arg| file_name(arg) == Some(true))
}

fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain spaces: count fields after it.
    let close = text.rfind(')')?;
    let mut fields = text.get(close + 1..)?.split_ascii_whitespace();
    // After the name: state, ppid, ... utime is the 12th, stime the 13th.
    let ppid = fields.nth(1)?.parse().ok()?;
    let utime: u64 = fields.nth(9)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(Stat { ppid, ticks: utime + stime })
}

fn ticks_to_duration(ticks: u64) -> Duration {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let hz = if hz > 0 { hz as f64 } else { 100.0 };
    Duration::from_secs_f64(ticks as f64 / hz)
}

/// `root` and all its descendants alive now, from one pass over /proc (a process that exits
/// between the pass and its own reading is left out, with its CPU time).
fn tree(root: u32) -> Vec<(u32, Stat)> {
    let mut all: Vec<(u32, Stat)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Some((pid, stat(pid)?)))
        .collect();
    let mut keep = vec![root];
    let mut out = Vec::new();
    while let Some(pid) = keep.pop() {
        let mut i = 0;
        while i < all.len() {
            if all[i].0 == pid {
                out.push(all.swap_remove(i));
            } else if all[i].1.ppid == pid {
                keep.push(all[i].0);
                i += 1;
            } else {
                i += 1;
            }
        }
    }
    out
}

/// A process tree's CPU time and RSS, split into the gateway's part and its children's.
#[derive(Clone, Copy, Debug, Default)]
pub struct TreeReading {
    pub processes: u32,
    pub children: u32,
    pub child_cpu: Duration,
    pub child_rss_kib: u64,
}

/// One reading of the server's and this process's counters at an instant. With `--tree`,
/// `server_cpu` is the tree less the children, `server_rss_kib` the whole tree.
#[derive(Clone, Copy, Debug)]
pub struct Snapshot {
    pub at: std::time::Instant,
    pub server_cpu: Option<Duration>,
    pub self_cpu: Option<Duration>,
    pub server_rss_kib: Option<u64>,
    pub tree: Option<TreeReading>,
}

impl Snapshot {
    pub fn take(pid: Option<u32>) -> Snapshot {
        let scope = SCOPE.get();
        if let (Some(root), Some(scope)) = (pid, scope.filter(|s| s.tree)) {
            return Snapshot::take_tree(root, scope);
        }
        Snapshot {
            at: std::time::Instant::now(),
            server_cpu: pid.and_then(|p| cpu_time(&p.to_string())),
            self_cpu: cpu_time("self"),
            server_rss_kib: pid.and_then(rss_kib),
            tree: None,
        }
    }

    fn take_tree(root: u32, scope: &Scope) -> Snapshot {
        let at = std::time::Instant::now();
        let procs = tree(root);
        let mut r = TreeReading { processes: procs.len() as u32, ..TreeReading::default() };
        let (mut own_ticks, mut child_ticks, mut rss) = (0, 0, 0);
        for (pid, st) in &procs {
            let kib = rss_kib(*pid).unwrap_or(0);
            rss += kib;
            if scope.child_cmd.as_deref().is_some_and(|name| runs(*pid, name)) {
                r.children += 1;
                child_ticks += st.ticks;
                r.child_rss_kib += kib;
            } else {
                own_ticks += st.ticks;
            }
        }
        r.child_cpu = ticks_to_duration(child_ticks);
        let found = !procs.is_empty();
        Snapshot {
            at,
            server_cpu: found.then(|| ticks_to_duration(own_ticks)),
            self_cpu: cpu_time("self"),
            server_rss_kib: found.then_some(rss),
            tree: found.then_some(r),
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

    #[test]
    fn a_tree_holds_its_children_and_splits_them_by_name() {
        let me = std::process::id();
        let mut child = std::process::Command::new("/bin/sleep").arg("5").spawn().unwrap();
        let t = super::tree(me);
        assert!(t.iter().any(|(p, _)| *p == me));
        assert!(t.iter().any(|(p, s)| *p == child.id() && s.ppid == me));
        assert!(super::runs(child.id(), "sleep") && !super::runs(child.id(), "bin"));
        let scope = super::Scope { tree: true, child_cmd: Some("sleep".into()) };
        let snap = super::Snapshot::take_tree(me, &scope);
        let r = snap.tree.unwrap();
        assert_eq!(r.children, 1);
        assert!(r.processes >= 2);
        assert!(r.child_rss_kib > 0 && snap.server_rss_kib.unwrap() > r.child_rss_kib);
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
