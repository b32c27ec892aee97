//! `schedlab vm` and `schedlab qdisc`: argv into a config ([`VmArgs`], [`QdiscArgs`]) and their
//! help texts; nothing else. [`crate::app`] runs them.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::guest::{self, GuestConfig};
use crate::qdisc::host::{self, QdiscConfig};
use crate::qdisc::{self, Alg, Flow, Plan};

/// `schedlab vm --help`.
pub const VM_HELP: &str = "\
schedlab vm — run one command in a Linux guest (Debian's 6.12 kernel under QEMU, software emulation)

Usage: schedlab vm [options] -- CMD [ARGS...]

The guest sees the host's root file system read-only (writes to /etc /root /tmp /usr /var land in
memory and vanish), has no network device to the outside, and runs CMD as root in the current
folder. CMD's stdout, stderr and exit status come back as its own. The first run fetches the kernel
package with apt-get (about 107 MB) into the cache folder; later runs boot in about 5 s.

Options:
  --timeout S      wall-clock limit in seconds for boot, command and power-off (default 300);
                   past it QEMU is killed and the exit status is 124
  --cache DIR      cache folder (default $XDG_CACHE_HOME/schedlab or ~/.cache/schedlab)
  --write DIR      share host folder DIR read-write at its own path (repeatable)
  --cpus N         guest CPUs (default 2)
  --mem MB         guest memory in MiB (default 1024)
  --append ARG     one more word for the guest kernel's command line, e.g. tsc=unstable (repeatable)
  --console        print the guest's serial console (kernel messages) to stderr afterwards
  --prepare        only fetch the kernel and build the initramfs, then print what is ready

Exit status: CMD's own; 77 when no guest can run here (the one-line reason says why: no QEMU,
no kernel package known to apt, no space); 124 on timeout; 1 when the guest itself failed.
A boot whose kernel dies before CMD starts (rare under emulation) is booted again, up to 3 boots,
each noted on stderr.

Example: schedlab vm -- uname -r
";

/// `schedlab vm`'s command line: the guest's configuration, what to show, the command.
#[derive(Debug)]
pub struct VmArgs {
    /// The guest: cache, timeout, CPUs, memory, shared folders, kernel command line.
    pub cfg: GuestConfig,
    /// `--console`: print the guest's serial console afterwards.
    pub console: bool,
    /// `--prepare`: only fetch the kernel and build the initramfs.
    pub prepare_only: bool,
    /// The command to run in the guest.
    pub argv: Vec<String>,
}

/// Parses `schedlab vm`'s command line (`args[0]` is the command name); `Ok(None)` is `--help`.
pub fn parse_vm_args(args: &[OsString]) -> Result<Option<VmArgs>> {
    utf8_args(args).and_then(|a| parse_vm(&a))
}

fn parse_vm(args: &[String]) -> Result<Option<VmArgs>> {
    let mut cfg = GuestConfig::new(guest::default_cache());
    let (mut console, mut prepare_only) = (false, false);
    let mut it = args.iter();
    let mut argv = Vec::new();
    while let Some(a) = it.next() {
        let mut val = |name: &str| it.next().cloned().with_context(|| format!("{name} needs a value"));
        match a.as_str() {
            "-h" | "--help" => return Ok(None),
            "--timeout" => {
                let v = val("--timeout")?;
                let s: f64 = v
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s > 0.0)
                    .with_context(|| format!("--timeout '{v}': expected seconds > 0"))?;
                cfg.timeout = Duration::from_secs_f64(s);
            }
            "--cache" => cfg.cache = PathBuf::from(val("--cache")?),
            "--write" => cfg.writable.push(PathBuf::from(val("--write")?)),
            "--cpus" => {
                let v = val("--cpus")?;
                cfg.cpus =
                    v.parse().ok().filter(|n| (1..=64).contains(n)).with_context(|| format!("--cpus '{v}': expected 1..=64"))?;
            }
            "--mem" => {
                let v = val("--mem")?;
                cfg.mem_mb = v
                    .parse()
                    .ok()
                    .filter(|n| (256..=65536).contains(n))
                    .with_context(|| format!("--mem '{v}': expected 256..=65536 MiB"))?;
            }
            "--append" => cfg.append.push(val("--append")?),
            "--console" => console = true,
            "--prepare" => prepare_only = true,
            "--" => {
                argv.extend(it.by_ref().cloned());
                break;
            }
            other => bail!("unknown option '{other}' (the command goes after --)"),
        }
    }
    if argv.is_empty() && !prepare_only {
        bail!("no command: schedlab vm [options] -- CMD [ARGS...]");
    }
    if cfg.cache.is_relative() {
        cfg.cache = std::env::current_dir().context("current folder")?.join(&cfg.cache);
    }
    Ok(Some(VmArgs { cfg, console, prepare_only, argv }))
}

fn utf8_args(args: &[OsString]) -> Result<Vec<String>> {
    args.iter()
        .skip(1)
        .map(|a| a.to_str().map(str::to_string).with_context(|| format!("argument {a:?} is not valid UTF-8")))
        .collect()
}

/// `schedlab qdisc --help`.
pub const QDISC_HELP: &str = "\
schedlab qdisc — the kernel as the third answer: a sched traffic file through a Linux qdisc

Usage: schedlab qdisc -f TRAFFIC -b BW [options] -- -flowsets W:L:N,... -alg NAME

Each client of the traffic file (the `schedlab sched -f` format; client i is flow i) sends paced
UDP packets of its lengths and rates through a veth inside a guest (`schedlab vm`), whose root
qdisc is a tbf bottleneck at BW with the policy's kernel counterpart below it; a receiver in its
own network namespace counts bytes, packets and message delays per flow in a window after a
warm-up. Beside it: the harness (`schedlab sched` with the same options) and the model
(schedlab-policy's code on an ideal link, the same arrivals). Shares of backlogged flows of drr and
qfq are judged (agree within 0.05) once the bottleneck is saturated; delays are printed only.

  -alg NAME     fifo (pfifo) | drr, rr (drr, quantum = weight x max length) | qfq (same weights)
                | prio (higher weight, higher band) | fq | fq_codel (kernel only)

Options:
  -f FILE       traffic file (required)
  -t N          clients (default 2)
  -b BW         bottleneck rate, e.g. 5M (required; keep it well below what the clients offer)
  --limit N     packets each flow's queue (or the fifo) holds (default 1000)
  --warmup S    seconds before the measured window starts (default 1)
  --qfq-agg N   qfq: classes per aggregate of Linux's QFQ+: 8 (default, Linux's own), 4, 2 or 1.
                An aggregate of classes of one weight and max length weighs all of them, idle
                or not; where flows share one, the kernel is judged against QFQ+'s fluid shares
                (a column) instead of the model's and the harness's plain QFQ
  --json FILE   write the whole result as JSON ('-' for stdout)
  --no-harness, --no-model   leave an answer out
  --timeout S, --cache DIR   as schedlab vm (default timeout: traffic + 180 s)

Scheduler options (after --): -flowsets W:L:N,... (N flows of weight W, max length L bytes),
-flows N (N flows of weight 1), -alg NAME.

Exit status: 0 when the answers agree or are not judged, 3 when they disagree, 77 when no guest
can run here (the one-line reason says why), 2 on a usage error, 1 on other errors.

Example: schedlab qdisc -t 2 -f sched.txt -b 5M -- -flowsets 100:1500:1,1:1500:16 -alg drr
";

/// `-flowsets W:L:N,...`: N flows of weight W and maximum packet length L.
fn parse_flowsets(s: &str) -> Result<Vec<Flow>> {
    let mut flows = Vec::new();
    for (k, set) in s.split(',').enumerate() {
        let ctx = || format!("-flowsets entry {} '{set}'", k + 1);
        let parts: Vec<&str> = set.split(':').collect();
        if parts.len() != 3 {
            bail!("{}: expected WEIGHT:MAXLEN:FLOWS, e.g. 1:1500:16", ctx());
        }
        let num = |i: usize, name: &str, max: u32| -> Result<u32> {
            let v: u32 = parts[i].parse().with_context(|| format!("{}: {name} '{}' is not a whole number", ctx(), parts[i]))?;
            if v == 0 || v > max {
                bail!("{}: {name} must be in 1..={max}", ctx());
            }
            Ok(v)
        };
        let (weight, max_len, n) = (num(0, "WEIGHT", 1 << 16)?, num(1, "MAXLEN", qdisc::MAX_PKT)?, num(2, "FLOWS", 4096)?);
        flows.extend((0..n).map(|_| Flow { weight, max_len }));
    }
    Ok(flows)
}

/// `schedlab qdisc`'s command line.
#[derive(Debug)]
pub enum QdiscArgs {
    /// `--in-guest PLAN`: the guest's side, run by the host side through `schedlab vm`.
    InGuest(PathBuf),
    /// The host side: the run's configuration and `--json FILE`.
    Run(Box<QdiscConfig>, Option<PathBuf>),
}

/// Parses `schedlab qdisc`'s command line (`args[0]` is the command name); `Ok(None)` is
/// `--help`. Reads the traffic file.
pub fn parse_qdisc_args(args: &[OsString]) -> Result<Option<QdiscArgs>> {
    utf8_args(args).and_then(|a| parse_qdisc(&a))
}

fn parse_qdisc(args: &[String]) -> Result<Option<QdiscArgs>> {
    let (mut file, mut threads, mut link, mut limit, mut warmup) = (None, 2usize, None, 1000u32, 1.0f64);
    let (mut json, mut flowsets, mut alg) = (None, None, None);
    let (mut use_harness, mut use_model, mut timeout) = (true, true, None);
    let mut qfq_agg_classes = qdisc::LINUX_QFQ_AGG_CLASSES;
    let mut guest_cfg = GuestConfig::new(guest::default_cache());
    let mut it = args.iter();
    let mut after = false;
    while let Some(a) = it.next() {
        let mut val = |name: &str| it.next().cloned().with_context(|| format!("{name} needs a value"));
        match (after, a.as_str()) {
            (_, "-h" | "--help") => return Ok(None),
            (false, "--in-guest") => return Ok(Some(QdiscArgs::InGuest(PathBuf::from(val("--in-guest")?)))),
            (false, "-f") => file = Some(PathBuf::from(val("-f")?)),
            (false, "-t") => {
                let v = val("-t")?;
                threads = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=256).contains(n))
                    .with_context(|| format!("-t '{v}': expected 1..=256 clients"))?;
            }
            (false, "-b") => link = Some(val("-b")?),
            (false, "--limit") => {
                let v = val("--limit")?;
                limit = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=100_000).contains(n))
                    .with_context(|| format!("--limit '{v}': expected 1..=100000 packets"))?;
            }
            (false, "--warmup") => {
                let v = val("--warmup")?;
                warmup = v
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s >= 0.0)
                    .with_context(|| format!("--warmup '{v}': expected seconds >= 0"))?;
            }
            (false, "--qfq-agg") => {
                let v = val("--qfq-agg")?;
                qfq_agg_classes = v
                    .parse()
                    .ok()
                    .filter(|n| [1, 2, 4, 8].contains(n))
                    .with_context(|| format!("--qfq-agg '{v}': expected 1, 2, 4 or 8 classes per aggregate"))?;
            }
            (false, "--json") => json = Some(PathBuf::from(val("--json")?)),
            (false, "--no-harness") => use_harness = false,
            (false, "--no-model") => use_model = false,
            (false, "--timeout") => {
                let v = val("--timeout")?;
                timeout = Some(
                    v.parse()
                        .ok()
                        .filter(|s: &f64| s.is_finite() && *s > 0.0)
                        .with_context(|| format!("--timeout '{v}': expected seconds > 0"))?,
                );
            }
            (false, "--cache") => guest_cfg.cache = PathBuf::from(val("--cache")?),
            (false, "--") => after = true,
            (true, "-flowsets") => flowsets = Some(val("-flowsets")?),
            (true, "-flows") => {
                let v = val("-flows")?;
                let n: u32 = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=4096).contains(n))
                    .with_context(|| format!("-flows '{v}': expected 1..=4096"))?;
                flowsets = Some(format!("1:1500:{n}"));
            }
            (true, "-alg") => {
                let v = val("-alg")?;
                alg = Some(
                    Alg::parse(&v)
                        .with_context(|| format!("unknown -alg '{v}': use fifo, drr (rr), qfq, prio, fq or fq_codel"))?,
                );
            }
            (false, other) => bail!("unknown option '{other}' (scheduler options go after --)"),
            (true, other) => bail!("unknown scheduler option '{other}' (after --): use -flowsets, -flows, -alg"),
        }
    }
    let file = file.context("-f TRAFFIC is required (the schedlab sched traffic file)")?;
    let link = link.context("-b BW is required (the bottleneck rate, e.g. 5M)")?;
    let link_bps = schedlab_report::units::parse_bps(&link).map_err(|e| anyhow::anyhow!("-b '{link}': {e}"))?.0;
    let alg = alg.context("-alg NAME is required after -- (fifo, drr, qfq, prio, fq, fq_codel)")?;
    let flowsets = flowsets.unwrap_or_else(|| format!("1:1500:{threads}"));
    let flows = parse_flowsets(&flowsets)?;
    let clients = host::load_traffic(&file, threads)?;
    let plan = Plan {
        alg,
        flows,
        clients,
        link_bps,
        queue_pkts: limit,
        warmup_s: warmup,
        traffic: file.display().to_string(),
        seed: 1,
        qfq_agg_classes,
    };
    plan.validate().map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    guest_cfg.timeout = Duration::from_secs_f64(timeout.unwrap_or(plan.duration_s() + 180.0));
    if guest_cfg.cache.is_relative() {
        guest_cfg.cache = std::env::current_dir().context("current folder")?.join(&guest_cfg.cache);
    }
    let exe = std::env::current_exe().context("cannot find the schedlab binary itself")?;
    let traffic_file = file.canonicalize().with_context(|| format!("{}", file.display()))?;
    Ok(Some(QdiscArgs::Run(
        Box::new(QdiscConfig {
            plan,
            traffic_file,
            threads,
            link,
            flowsets,
            harness: use_harness,
            model: use_model,
            guest: guest_cfg,
            exe,
        }),
        json,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flowsets_expand_and_bad_ones_name_the_entry() {
        let f = parse_flowsets("100:1500:1,1:1500:16").unwrap();
        assert_eq!(f.len(), 17);
        assert_eq!(f[0], Flow { weight: 100, max_len: 1500 });
        assert_eq!(f[16], Flow { weight: 1, max_len: 1500 });
        assert!(parse_flowsets("1:1500").unwrap_err().to_string().contains("entry 1"));
        assert!(parse_flowsets("1:1500:1,0:1500:1").unwrap_err().to_string().contains("entry 2"));
        assert!(parse_flowsets("1:9000:1").unwrap_err().to_string().contains("MAXLEN"));
    }

    #[test]
    fn qdisc_options_need_a_traffic_file_a_link_and_an_alg() {
        let p = |s: &str| parse_qdisc(&s.split_whitespace().map(String::from).collect::<Vec<_>>());
        assert!(p("-b 5M -- -alg drr").unwrap_err().to_string().contains("-f"));
        assert!(p("-f x -- -alg drr").unwrap_err().to_string().contains("-b"));
        assert!(p("-f x -b 5M -- -alg wfq").unwrap_err().to_string().contains("unknown -alg 'wfq'"));
        assert!(p("-f x -b 5M -- -bogus").unwrap_err().to_string().contains("-bogus"));
        assert!(p("-f x -b 5M --qfq-agg 3 -- -alg qfq").unwrap_err().to_string().contains("--qfq-agg '3'"));
    }

    fn p(s: &str) -> Result<Option<VmArgs>> {
        parse_vm(&s.split_whitespace().map(String::from).collect::<Vec<_>>())
    }

    #[test]
    fn the_command_is_everything_after_the_double_dash() {
        let a = p("--timeout 30 --cache /c -- sh -c --timeout").unwrap().unwrap();
        assert_eq!(a.argv, ["sh", "-c", "--timeout"]);
        assert_eq!(a.cfg.timeout, Duration::from_secs(30));
        assert_eq!(a.cfg.cache, PathBuf::from("/c"));
    }

    #[test]
    fn bad_values_name_the_option() {
        assert!(p("--timeout x -- true").unwrap_err().to_string().contains("--timeout 'x'"));
        assert!(p("--timeout -1 -- true").unwrap_err().to_string().contains("--timeout"));
        assert!(p("--cpus 0 -- true").unwrap_err().to_string().contains("--cpus"));
        assert_eq!(p("--append tsc=unstable --append nokaslr -- true").unwrap().unwrap().cfg.append, ["tsc=unstable", "nokaslr"]);
        assert!(p("--bogus -- true").unwrap_err().to_string().contains("--bogus"));
        assert!(p("--timeout 5").unwrap_err().to_string().contains("no command"));
    }
}
