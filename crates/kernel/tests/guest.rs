//! The guest runner against a real QEMU and a real Debian kernel (skipped, visibly, only where the
//! machine lacks QEMU, busybox-static, the kernel package or the space for it).

use std::ffi::OsString;
use std::time::Duration;

use schedlab_kernel::guest::{self, GuestConfig, GuestError, Kernel, Unavailable};
use schedlab_report::skip;

fn config() -> GuestConfig {
    let mut c = GuestConfig::new(guest::default_cache());
    c.timeout = Duration::from_secs(240);
    c
}

fn kernel(cfg: &GuestConfig) -> Result<Kernel, Unavailable> {
    match guest::prepare(cfg, &mut |m| eprintln!("{m}")) {
        Ok(k) => Ok(k),
        Err(GuestError::Unavailable(u)) => Err(u),
        Err(e) => panic!("preparing the guest failed: {e}"),
    }
}

#[test]
fn a_real_boot_runs_one_command_and_returns_its_output_and_exit_status() {
    let cfg = config();
    let k = match kernel(&cfg) {
        Ok(k) => k,
        Err(u) => skip!("{u}"),
    };
    let argv: Vec<String> =
        ["sh", "-c", "uname -r; echo 'to stderr' >&2; test -w / && echo root-writable; exit 3"].map(String::from).into();
    let out = guest::run(&k, &cfg, &argv).expect("the guest runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.exit, 3, "stdout {stdout:?}, console:\n{}", out.console);
    // The guest's kernel, not the host's.
    assert_eq!(stdout.lines().next(), Some(k.version.as_str()), "{stdout:?}");
    assert!(k.version.starts_with("6.12"), "{}", k.version);
    assert_ne!(Some(k.version.as_str()), std::fs::read_to_string("/proc/sys/kernel/osrelease").ok().as_deref().map(str::trim));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "to stderr\n");
    // The host's root is read-only in the guest.
    assert!(!stdout.contains("root-writable"), "{stdout:?}");
    assert!(out.boot_s.is_some_and(|b| b > 0.0), "{:?}", out.boot_s);
}

#[test]
fn a_boot_that_dies_before_the_command_is_retried_and_then_reported() {
    let mut cfg = config();
    let k = match kernel(&cfg) {
        Ok(k) => k,
        Err(u) => skip!("{u}"),
    };
    // No init in the initramfs and no root device: every boot panics before the command starts.
    cfg.append = vec!["rdinit=/no-such-init".into()];
    cfg.timeout = Duration::from_secs(120);
    let argv: Vec<String> = ["true"].map(String::from).into();
    match guest::run(&k, &cfg, &argv) {
        Err(GuestError::BootFailed { attempts, console_tail }) => {
            assert_eq!(attempts, guest::BOOT_ATTEMPTS);
            assert!(console_tail.contains("Kernel panic"), "{console_tail}");
        }
        other => panic!("expected a boot failure after {} boots, got {other:?}", guest::BOOT_ATTEMPTS),
    }
}

#[test]
fn the_timeout_kills_qemu_and_leaves_no_process() {
    let mut cfg = config();
    let scratch = std::env::temp_dir().join(format!("schedlab-timeout-test-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    cfg.scratch = Some(scratch.clone());
    let k = match kernel(&cfg) {
        Ok(k) => k,
        Err(u) => skip!("{u}"),
    };
    // Long enough to boot (so the kill happens with the guest running), far shorter than the sleep.
    cfg.timeout = Duration::from_secs(20);
    let argv: Vec<String> = ["sleep", "100000"].map(String::from).into();
    match guest::run(&k, &cfg, &argv) {
        Err(GuestError::Timeout { secs, .. }) => assert_eq!(secs, 20.0),
        other => panic!("expected a timeout, got {other:?}"),
    }
    // No QEMU of ours is left: none has our scratch folder on its command line.
    let needle = scratch.display().to_string();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd);
            assert!(!(cmd.contains("qemu-system") && cmd.contains(&needle)), "a QEMU is still running: {cmd}");
        }
    }
    std::fs::remove_dir_all(&scratch).unwrap();
}

#[test]
fn without_qemu_the_reason_is_one_line() {
    let mut cfg = config();
    let empty = std::env::temp_dir().join(format!("schedlab-empty-path-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    cfg.search_path = Some(OsString::from(&empty));
    match guest::prepare(&cfg, &mut |_| {}) {
        Err(GuestError::Unavailable(Unavailable::NoQemu)) => {}
        other => panic!("expected NoQemu, got {other:?}"),
    }
    let line = Unavailable::NoQemu.to_string();
    assert!(!line.contains('\n') && line.contains("qemu-system-x86_64"), "{line}");
    std::fs::remove_dir_all(&empty).unwrap();
}
