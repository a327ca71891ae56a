//! The facts a report's header gives about where and when it was
//! measured: CPU model, cores, kernel, memory, the load average (other
//! processes competing for the cores), date and the source commit.

use std::path::Path;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

/// Where and when a report was measured.
#[derive(Clone, Debug, Default)]
pub struct Machine {
    /// `model name` of /proc/cpuinfo.
    pub cpu: String,
    /// Cores the process may use.
    pub cores: usize,
    /// /proc/sys/kernel/osrelease.
    pub kernel: String,
    /// MemTotal of /proc/meminfo, in GiB.
    pub memory_gib: f64,
    /// The 1-minute load average when the report started.
    pub load_at_start: Option<f64>,
    /// When the report started, `YYYY-MM-DD HH:MM UTC`.
    pub date: String,
    /// `git rev-parse HEAD` of the source tree the binary was built from,
    /// with `(modified)` if that tree has uncommitted changes.
    pub commit: String,
}

impl Machine {
    /// Reads the facts of this machine; `source` is the source tree.
    pub fn probe(source: &Path) -> Self {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let cpu = read("/proc/cpuinfo")
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map_or_else(|| "unknown".to_owned(), |(_, v)| v.trim().to_owned());
        let memory_gib = read("/proc/meminfo")
            .lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
            .map_or(0.0, |kib| kib / (1u64 << 20) as f64);
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Machine {
            cpu,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            kernel: read("/proc/sys/kernel/osrelease").trim().to_owned(),
            memory_gib,
            load_at_start: load_average(),
            date: utc_date(secs),
            commit: commit(source),
        }
    }
}

/// The 1-minute load average (/proc/loadavg).
pub fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn commit(source: &Path) -> String {
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(source)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    match git(&["rev-parse", "HEAD"]) {
        Some(head) => {
            let modified = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if modified {
                format!("{head} (modified)")
            } else {
                head
            }
        }
        None => format!("unknown (no git repository at {})", source.display()),
    }
}

/// `secs` since the Unix epoch as `YYYY-MM-DD HH:MM UTC`.
pub fn utc_date(secs: u64) -> String {
    let days = secs / 86_400;
    let rest = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rest / 3600,
        rest % 3600 / 60
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01: count whole
/// 400-year eras (146,097 days each), then the year within the era with
/// the leap days taken out, and the month of a year that starts on March 1
/// (so the leap day is the year's last).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    // Days since 0000-03-01.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_calendar_dates() {
        assert_eq!(utc_date(0), "1970-01-01 00:00 UTC");
        // 2000-02-29 12:34:56, a leap day of a century leap year.
        assert_eq!(utc_date(951_827_696), "2000-02-29 12:34 UTC");
        assert_eq!(utc_date(951_868_800), "2000-03-01 00:00 UTC");
        // 2026-12-31 23:59:59.
        assert_eq!(utc_date(1_798_761_599), "2026-12-31 23:59 UTC");
        assert_eq!(utc_date(1_798_761_600), "2027-01-01 00:00 UTC");
    }

    #[test]
    fn this_machine_is_described() {
        let m = Machine::probe(Path::new(env!("CARGO_MANIFEST_DIR")));
        assert!(m.cores >= 1);
        assert!(!m.kernel.is_empty(), "/proc/sys/kernel/osrelease");
        assert!(m.date.ends_with(" UTC"));
    }
}
