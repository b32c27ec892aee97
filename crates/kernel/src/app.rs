//! `schedlab vm` and `schedlab qdisc`'s flow: [`vm_main`] and [`qdisc_main`] turn argv into a
//! config through [`crate::cli`], boot the guest (or run the guest's side), print what came back,
//! write the files asked for and return the exit code.

use std::ffi::OsString;
use std::io::Write;

use anyhow::{Context, Result};

use crate::cli::{parse_qdisc_args, parse_vm_args, QdiscArgs, QDISC_HELP, VM_HELP};
use crate::guest::{self, GuestError};
use crate::qdisc::host;
use crate::qdisc::{self, Plan};

/// Exit status when the guest cannot run on this machine (no QEMU, no kernel package, no space):
/// automake's "skipped", so scripts can tell it from a failure.
pub const EXIT_UNAVAILABLE: i32 = 77;
/// Exit status when the guest did not finish in time (as `timeout(1)`).
pub const EXIT_TIMEOUT: i32 = 124;

/// `schedlab vm`; `args[0]` is the command name.
pub fn vm_main(args: Vec<OsString>) -> Result<i32> {
    let parsed = match parse_vm_args(&args) {
        Ok(Some(p)) => p,
        Ok(None) => {
            print!("{VM_HELP}");
            return Ok(0);
        }
        Err(e) => {
            eprintln!(
                "schedlab vm: usage error: {e:#}\nUsage: schedlab vm [--timeout S] [--cache DIR] -- CMD [ARGS...] (see --help)"
            );
            return Ok(2);
        }
    };
    let mut log = |m: &str| eprintln!("schedlab vm: {m}");
    let kernel = match guest::prepare(&parsed.cfg, &mut log) {
        Ok(k) => k,
        Err(GuestError::Unavailable(u)) => {
            eprintln!("schedlab vm: cannot run a guest here: {u}");
            return Ok(EXIT_UNAVAILABLE);
        }
        Err(e) => return Err(e).context("preparing the guest"),
    };
    if parsed.prepare_only {
        println!(
            "kernel {} ({}) in {}; initramfs {}",
            kernel.version,
            kernel.package,
            kernel.root.display(),
            kernel.initramfs.display()
        );
        return Ok(0);
    }
    match guest::run(&kernel, &parsed.cfg, &parsed.argv) {
        Ok(out) => {
            for f in &out.failed_boots {
                eprintln!("schedlab vm: note: a boot died before the command started ({f}); booted again");
            }
            // Output first (files the caller redirects), then the console on request.
            std::io::stdout().write_all(&out.stdout).context("writing to stdout")?;
            std::io::stdout().flush().context("writing to stdout")?;
            std::io::stderr().write_all(&out.stderr).context("writing to stderr")?;
            if parsed.console {
                eprintln!(
                    "--- guest console (kernel {}, command started at {:?} s uptime, {:.1} s wall) ---",
                    out.kernel_version, out.boot_s, out.wall_s
                );
                eprint!("{}", out.console);
            }
            Ok(out.exit)
        }
        Err(GuestError::Timeout { secs, console_tail }) => {
            eprintln!(
                "schedlab vm: the guest did not finish within {secs} s; QEMU was killed. Console ends with:\n{console_tail}"
            );
            Ok(EXIT_TIMEOUT)
        }
        Err(e) => Err(e).context("running the guest"),
    }
}

/// Exit status when the kernel's shares disagree with the other answers.
pub const EXIT_DISAGREE: i32 = 3;

/// `schedlab qdisc`; `args[0]` is the command name.
pub fn qdisc_main(args: Vec<OsString>) -> Result<i32> {
    let parsed = match parse_qdisc_args(&args) {
        Ok(Some(p)) => p,
        Ok(None) => {
            print!("{QDISC_HELP}");
            return Ok(0);
        }
        Err(e) => {
            eprintln!("schedlab qdisc: usage error: {e:#}\nUsage: schedlab qdisc -f TRAFFIC -b BW -- -flowsets W:L:N,... -alg NAME (see --help)");
            return Ok(2);
        }
    };
    match parsed {
        QdiscArgs::InGuest(path) => {
            let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
            let plan: Plan = serde_json::from_str(&text).with_context(|| format!("{}: not a qdisc plan", path.display()))?;
            let answer = qdisc::inguest::execute(&plan)?;
            println!("{}", serde_json::to_string(&answer).context("answer to JSON")?);
            Ok(0)
        }
        QdiscArgs::Run(cfg, json) => {
            let report = match host::run(&cfg) {
                Ok(r) => r,
                Err(e) => {
                    if let Some(reason) = host::unavailable(&e) {
                        eprintln!("schedlab qdisc: cannot run a guest here: {reason}");
                        return Ok(EXIT_UNAVAILABLE);
                    }
                    return Err(e);
                }
            };
            if let Some(path) = &json {
                schedlab_report::export::write_json(path, &report)?;
            }
            if json.as_deref() != Some(std::path::Path::new("-")) {
                print!("{}", report.text());
            }
            Ok(if report.agree == Some(false) { EXIT_DISAGREE } else { 0 })
        }
    }
}
