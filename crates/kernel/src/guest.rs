//! The guest runner: one command in a Debian 6.12 kernel under QEMU, with the host's root read-only.
//!
//! [`prepare`] finds QEMU and busybox-static, fetches the kernel package through apt into the cache
//! folder (`apt-get download`, `dpkg-deb -x`, `depmod -b`; nothing is installed into /boot) and
//! builds the initramfs (busybox-static, the decompressed 9p and overlay modules, our `/init`).
//! [`run`] boots `qemu-system-x86_64 -accel tcg,thread=multi -cpu max -M pc -nodefaults` with no
//! network device, the host's `/` over 9p read-only (tmpfs overlays on /etc /root /tmp /usr /var),
//! and an exchange folder shared read-write at its own path: the command's stdout, stderr and exit
//! status come back through it, the kernel's console goes to `console.log` there. A timeout kills
//! QEMU (it has no children), so nothing is left running.
//!
//! Everything that can be missing on a machine is an [`Unavailable`] with a one-line reason.

use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use thiserror::Error;

use crate::cpio::{self, Entry};

/// The apt package whose dependency is the kernel image (Debian 12 backports, 6.12.x).
pub const KERNEL_META_PACKAGE: &str = "linux-image-6.12-amd64";
/// Free space the kernel fetch needs in the cache folder (the .deb plus its unpacked tree).
pub const NEEDED_SPACE_MB: u64 = 800;
/// The modules the initramfs loads itself (in this order), decompressed from the package.
const INITRAMFS_MODULES: [&str; 5] =
    ["fs/netfs/netfs", "net/9p/9pnet", "net/9p/9pnet_virtio", "fs/9p/9p", "fs/overlayfs/overlay"];
/// The 9p mount tags: the host's root and the exchange folder.
const ROOT_TAG: &str = "hostroot";
const XCHG_TAG: &str = "xchg";

/// Why a guest cannot run on this machine (one line each, with what to do).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum Unavailable {
    #[error("no qemu-system-x86_64 on PATH (Debian: apt-get install qemu-system-x86)")]
    NoQemu,
    #[error("no static busybox at {0} (Debian: apt-get install busybox-static)")]
    NoBusybox(String),
    #[error("no {0} on PATH (Debian: apt-get install {1})")]
    NoTool(&'static str, &'static str),
    #[error("apt knows no kernel package for {KERNEL_META_PACKAGE} and none is cached in {cache} (needs Debian 12 with bookworm-backports and apt-get update): {detail}")]
    NoKernelPackage { cache: String, detail: String },
    #[error("not enough space for the kernel in {cache}: {free_mb} MB free, {NEEDED_SPACE_MB} MB needed")]
    NoSpace { cache: String, free_mb: u64 },
}

/// Everything that can go wrong with a guest.
#[derive(Debug, Error)]
pub enum GuestError {
    #[error("cannot run a guest: {0}")]
    Unavailable(#[from] Unavailable),
    #[error("{what} {path}: {source}")]
    Io { what: &'static str, path: PathBuf, source: std::io::Error },
    #[error("{cmd} failed ({status}): {stderr}")]
    Tool { cmd: String, status: String, stderr: String },
    #[error("{0}")]
    Invalid(String),
    #[error("the guest did not finish within {secs} s (QEMU killed); console ends with:\n{console_tail}")]
    Timeout { secs: f64, console_tail: String },
    #[error(
        "the guest stopped without reporting the command's exit status (QEMU {qemu_status}); console ends with:\n{console_tail}"
    )]
    NoExit { qemu_status: String, console_tail: String },
    #[error("the guest kernel failed {attempts} time(s) before the command started (the command never ran); last console:\n{console_tail}")]
    BootFailed { attempts: u32, console_tail: String },
}

/// How many times [`run`] boots a guest whose kernel dies before the command starts. Under TCG
/// (no KVM) a boot very rarely oopses in the emulator (CI once saw `sched_clock_cpu` fault in an
/// interrupt at 2.7 s, all three guest tests failing on that one boot); the command had not run, so
/// booting again is safe. Each failed boot is recorded in [`Outcome::failed_boots`].
pub const BOOT_ATTEMPTS: u32 = 3;

fn io_err<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> GuestError + 'a {
    move |source| GuestError::Io { what, path: path.to_path_buf(), source }
}

/// How a guest is run.
#[derive(Clone, Debug)]
pub struct GuestConfig {
    /// The cache folder (kernel trees and initramfs images).
    pub cache: PathBuf,
    /// Wall-clock limit for the whole boot + command + power-off.
    pub timeout: Duration,
    pub cpus: u32,
    pub mem_mb: u32,
    /// Host folders shared read-write at their own path in the guest (results written there stay).
    pub writable: Vec<PathBuf>,
    /// Environment variables passed to the command (besides PATH, HOME and every `SCHEDLAB_*`).
    pub env: Vec<(String, String)>,
    /// The command's working folder (the host's, seen read-only unless it is in `writable`).
    pub cwd: Option<PathBuf>,
    /// The PATH searched for QEMU and the tools (default: this process's PATH).
    pub search_path: Option<OsString>,
    /// Where the exchange folder is made (default: the system's temporary folder).
    pub scratch: Option<PathBuf>,
    /// Extra words for the guest kernel's command line (e.g. `tsc=unstable`), one word each.
    pub append: Vec<String>,
}

impl GuestConfig {
    pub fn new(cache: PathBuf) -> GuestConfig {
        GuestConfig {
            cache,
            timeout: Duration::from_secs(300),
            cpus: 2,
            mem_mb: 1024,
            writable: Vec::new(),
            env: Vec::new(),
            cwd: std::env::current_dir().ok(),
            search_path: None,
            scratch: None,
            append: Vec::new(),
        }
    }
}

/// The default cache folder: `$XDG_CACHE_HOME/schedlab`, else `~/.cache/schedlab`, else the
/// system's temporary folder.
pub fn default_cache() -> PathBuf {
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|x| !x.is_empty()) {
        return PathBuf::from(x).join("schedlab");
    }
    if let Some(h) = std::env::var_os("HOME").filter(|x| !x.is_empty()) {
        return PathBuf::from(h).join(".cache").join("schedlab");
    }
    std::env::temp_dir().join("schedlab-cache")
}

/// A kernel ready to boot.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Kernel {
    /// The unpacked package (`boot/`, `lib/modules/VERSION/` with modules.dep).
    pub root: PathBuf,
    pub package: String,
    pub version: String,
    pub vmlinuz: PathBuf,
    pub initramfs: PathBuf,
    pub qemu: PathBuf,
}

/// Finds `name` in `path` (a PATH value).
pub fn find_in_path(name: &str, path: &OsStr) -> Option<PathBuf> {
    std::env::split_paths(path)
        .map(|d| d.join(name))
        .find(|p| p.metadata().map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false))
}

fn search_path(cfg: &GuestConfig) -> OsString {
    cfg.search_path.clone().or_else(|| std::env::var_os("PATH")).unwrap_or_default()
}

/// Checks only what a guest needs that can be seen without downloading anything: QEMU, a static
/// busybox, the unpack tools. The first thing missing is the answer.
pub fn check_host(cfg: &GuestConfig) -> Result<PathBuf, Unavailable> {
    let path = search_path(cfg);
    let qemu = find_in_path("qemu-system-x86_64", &path).ok_or(Unavailable::NoQemu)?;
    static_busybox(Path::new(BUSYBOX))?;
    for (tool, pkg) in [("xz", "xz-utils"), ("depmod", "kmod")] {
        find_in_path(tool, &path).ok_or(Unavailable::NoTool(tool, pkg))?;
    }
    Ok(qemu)
}

const BUSYBOX: &str = "/bin/busybox";

/// A busybox the initramfs can run: an ELF64 with no program interpreter (statically linked).
fn static_busybox(p: &Path) -> Result<(), Unavailable> {
    let missing = || Unavailable::NoBusybox(p.display().to_string());
    let bytes = std::fs::read(p).map_err(|_| missing())?;
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" || bytes[4] != 2 {
        return Err(missing());
    }
    let u16at = |o: usize| u16::from_le_bytes([bytes[o], bytes[o + 1]]) as usize;
    let phoff = u64::from_le_bytes(bytes[0x20..0x28].try_into().expect("8 bytes")) as usize;
    let (phentsize, phnum) = (u16at(0x36), u16at(0x38));
    for i in 0..phnum {
        let o = phoff + i * phentsize;
        if o + 4 > bytes.len() {
            return Err(missing());
        }
        // PT_INTERP = 3: a dynamically linked busybox (Debian's `busybox`, not `busybox-static`).
        if u32::from_le_bytes(bytes[o..o + 4].try_into().expect("4 bytes")) == 3 {
            return Err(missing());
        }
    }
    Ok(())
}

fn run_tool(cmd: &mut Command) -> Result<String, GuestError> {
    let shown = format!("{cmd:?}");
    let out = cmd.stdin(Stdio::null()).output().map_err(|e| GuestError::Tool {
        cmd: shown.clone(),
        status: "not started".into(),
        stderr: e.to_string(),
    })?;
    if !out.status.success() {
        return Err(GuestError::Tool {
            cmd: shown,
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// An exclusive lock on a file (held until dropped), so that parallel runs fetch the kernel once.
struct FileLock(std::fs::File);

impl FileLock {
    fn take(path: &Path) -> Result<FileLock, GuestError> {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(io_err("cannot open lock file", path))?;
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a file descriptor this function owns; no memory is passed.
        let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) };
        if rc != 0 {
            return Err(GuestError::Io {
                what: "cannot lock",
                path: path.to_path_buf(),
                source: std::io::Error::last_os_error(),
            });
        }
        Ok(FileLock(f))
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        use std::os::fd::AsRawFd;
        // SAFETY: unlocking the descriptor this value owns.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

fn free_mb(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs is plain data; zeroed is a valid value that the call overwrites.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `s` a valid, writable statvfs.
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return None;
    }
    Some(s.f_bavail as u64 * s.f_frsize as u64 / 1_000_000)
}

/// Makes sure a kernel is unpacked in the cache and its initramfs built; `log` hears what is done
/// (downloads take seconds). A kernel already in the cache is used without asking apt when apt
/// cannot answer.
pub fn prepare(cfg: &GuestConfig, log: &mut dyn FnMut(&str)) -> Result<Kernel, GuestError> {
    let qemu = check_host(cfg)?;
    let kdir = cfg.cache.join("kernel");
    std::fs::create_dir_all(&kdir).map_err(io_err("cannot create the cache folder", &kdir))?;
    if kdir.to_string_lossy().chars().any(char::is_whitespace) {
        return Err(GuestError::Invalid(format!(
            "the cache folder {} has white space in its path; choose another with --cache",
            kdir.display()
        )));
    }
    let _lock = FileLock::take(&kdir.join(".lock"))?;
    let package = match kernel_package_name(cfg) {
        Ok(p) => p,
        Err(detail) => match newest_cached(&kdir) {
            Some(p) => {
                log(&format!("apt cannot name the kernel package ({detail}); using the cached {p}"));
                p
            }
            None => return Err(Unavailable::NoKernelPackage { cache: kdir.display().to_string(), detail }.into()),
        },
    };
    let root = kdir.join(&package);
    if !root.join(".complete").exists() {
        fetch_kernel(cfg, &kdir, &package, log)?;
    }
    let version = std::fs::read_to_string(root.join(".complete"))
        .map_err(io_err("cannot read", &root.join(".complete")))?
        .trim()
        .to_string();
    let vmlinuz = root.join("boot").join(format!("vmlinuz-{version}"));
    if !vmlinuz.exists() {
        return Err(GuestError::Invalid(format!("{} is missing: remove {} and run again", vmlinuz.display(), root.display())));
    }
    let init = init_script();
    let initramfs = root.join(format!("schedlab-initramfs-{:016x}.cpio", fnv1a(init.as_bytes())));
    if !initramfs.exists() {
        log(&format!("building the initramfs {}", initramfs.display()));
        build_initramfs(&root, &version, &init, &initramfs)?;
    }
    Ok(Kernel { root, package, version, vmlinuz, initramfs, qemu })
}

fn kernel_package_name(cfg: &GuestConfig) -> Result<String, String> {
    let path = search_path(cfg);
    let apt_cache = find_in_path("apt-cache", &path).ok_or("no apt-cache on PATH")?;
    let out = Command::new(apt_cache)
        .args(["depends", KERNEL_META_PACKAGE])
        .env("PATH", &path)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("apt-cache: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("Depends: "))
        .find(|p| p.starts_with("linux-image-6") && !p.contains('<'))
        .map(str::to_string)
        .ok_or_else(|| format!("apt-cache depends {KERNEL_META_PACKAGE}: {}", String::from_utf8_lossy(&out.stderr).trim()))
}

fn newest_cached(kdir: &Path) -> Option<String> {
    let mut names: Vec<String> = std::fs::read_dir(kdir)
        .ok()?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join(".complete").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names.pop()
}

fn fetch_kernel(cfg: &GuestConfig, kdir: &Path, package: &str, log: &mut dyn FnMut(&str)) -> Result<(), GuestError> {
    let path = search_path(cfg);
    if let Some(free) = free_mb(kdir) {
        if free < NEEDED_SPACE_MB {
            return Err(Unavailable::NoSpace { cache: kdir.display().to_string(), free_mb: free }.into());
        }
    }
    for (tool, pkg) in [("apt-get", "apt"), ("dpkg-deb", "dpkg")] {
        find_in_path(tool, &path).ok_or(Unavailable::NoTool(tool, pkg))?;
    }
    let dl = kdir.join(format!(".download-{}", std::process::id()));
    let partial = kdir.join(format!(".{package}.partial"));
    let _ = std::fs::remove_dir_all(&dl);
    let _ = std::fs::remove_dir_all(&partial);
    std::fs::create_dir_all(&dl).map_err(io_err("cannot create", &dl))?;
    log(&format!("downloading {package} with apt-get (about 107 MB) into {}", kdir.display()));
    let t = Instant::now();
    run_tool(Command::new("apt-get").args(["download", "-qq", package]).current_dir(&dl).env("PATH", &path))?;
    let deb = std::fs::read_dir(&dl)
        .map_err(io_err("cannot read", &dl))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .ok_or_else(|| GuestError::Invalid(format!("apt-get download {package} left no .deb in {}", dl.display())))?;
    run_tool(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&partial).env("PATH", &path))?;
    let modules = partial.join("lib/modules");
    let version = std::fs::read_dir(&modules)
        .map_err(io_err("the package has no lib/modules", &modules))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .next()
        .ok_or_else(|| GuestError::Invalid(format!("{} is empty", modules.display())))?;
    // The .deb ships no modules.dep; modprobe in the guest needs it.
    run_tool(Command::new("depmod").arg("-b").arg(&partial).arg(&version).env("PATH", &path))?;
    std::fs::write(partial.join(".complete"), format!("{version}\n")).map_err(io_err("cannot write", &partial))?;
    let root = kdir.join(package);
    let _ = std::fs::remove_dir_all(&root);
    std::fs::rename(&partial, &root).map_err(io_err("cannot rename into place", &root))?;
    let _ = std::fs::remove_dir_all(&dl);
    log(&format!("kernel {version} unpacked in {} ({:.1} s)", root.display(), t.elapsed().as_secs_f64()));
    Ok(())
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

/// The initramfs's `/init` (busybox sh). It mounts the host's root read-only over 9p with tmpfs
/// overlays, binds the kernel's modules, mounts the exchange folder at its own path and the
/// writable shares, runs `EXCHANGE/cmd.sh` in the new root and powers off.
fn init_script() -> String {
    format!(
        r#"#!/bin/busybox sh
B=/bin/busybox
$B mount -t proc proc /proc; $B mount -t sysfs sys /sys; $B mount -t devtmpfs dev /dev
for m in netfs 9pnet 9pnet_virtio 9p overlay; do $B insmod /mods/$m.ko || echo "[guest] insmod $m failed"; done
arg() {{ $B sed -n "s/.*$1=\([^ ]*\).*/\1/p" /proc/cmdline; }}
fail() {{ echo "[guest] init: $1"; $B poweroff -f; }}
$B mount -t 9p -o ro,trans=virtio,version=9p2000.L,msize=512000,access=any {ROOT_TAG} /newroot || fail "9p root mount failed"
R=/newroot
$B mount -t tmpfs tmpfs $R/run; $B mkdir -p $R/run/ov
for d in etc root tmp usr var; do
  $B mkdir -p $R/run/ov/$d/u $R/run/ov/$d/w
  $B mount -t overlay ov-$d -o lowerdir=$R/$d,upperdir=$R/run/ov/$d/u,workdir=$R/run/ov/$d/w $R/$d || fail "overlay on /$d failed"
done
KV=$($B uname -r); KROOT=$(arg kroot); X=$(arg xchg)
$B mkdir -p $R/usr/lib/modules/$KV && $B mount --bind $R$KROOT/lib/modules/$KV $R/usr/lib/modules/$KV
$B mkdir -p $R$X && $B mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,access=any {XCHG_TAG} $R$X || fail "exchange mount failed"
N=0; for W in $($B cat $R$X/writable); do
  $B mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,access=any rw$N $R$W || fail "cannot mount $W"; N=$((N+1))
done
$B mount --move /proc $R/proc; $B mount --move /sys $R/sys; $B mount --move /dev $R/dev
exec $B switch_root $R /bin/busybox sh -c "
  mount -t devpts devpts /dev/pts 2>/dev/null; mkdir -p /dev/shm; mount -t tmpfs tmpfs /dev/shm
  mkdir -p /run/netns; hostname guest; ip link set lo up 2>/dev/null || busybox ip link set lo up
  echo \"[guest] up \$(cut -d' ' -f1 /proc/uptime) s\"
  /bin/sh $X/cmd.sh; echo \$? > $X/exit.tmp; mv $X/exit.tmp $X/exit
  echo \"[guest] done \$(cut -d' ' -f1 /proc/uptime) s\"
  sync; exec busybox poweroff -f"
"#
    )
}

fn build_initramfs(root: &Path, version: &str, init: &str, out: &Path) -> Result<(), GuestError> {
    let busybox = std::fs::read(BUSYBOX).map_err(io_err("cannot read", Path::new(BUSYBOX)))?;
    let mut entries = vec![
        Entry::Dir("bin".into()),
        Entry::Dir("dev".into()),
        Entry::Dir("mods".into()),
        Entry::Dir("newroot".into()),
        Entry::Dir("proc".into()),
        Entry::Dir("sys".into()),
        Entry::File { name: "bin/busybox".into(), mode: 0o755, data: busybox },
        Entry::File { name: "init".into(), mode: 0o755, data: init.as_bytes().to_vec() },
    ];
    // Busybox's insmod cannot read .ko.xz: decompress the few modules /init loads itself.
    for m in INITRAMFS_MODULES {
        let src = root.join("lib/modules").join(version).join("kernel").join(format!("{m}.ko.xz"));
        let out =
            Command::new("xz").arg("-dc").arg(&src).stdin(Stdio::null()).output().map_err(io_err("cannot run xz on", &src))?;
        if !out.status.success() {
            return Err(GuestError::Tool {
                cmd: format!("xz -dc {}", src.display()),
                status: out.status.to_string(),
                stderr: String::from_utf8_lossy(&out.stderr).trim().into(),
            });
        }
        let name = Path::new(m).file_name().expect("module path has a name").to_string_lossy();
        entries.push(Entry::File { name: format!("mods/{name}.ko"), mode: 0o644, data: out.stdout });
    }
    let tmp = out.with_extension(format!("tmp{}", std::process::id()));
    let mut f = std::io::BufWriter::new(std::fs::File::create(&tmp).map_err(io_err("cannot create", &tmp))?);
    cpio::write_archive(&mut f, &entries).and_then(|_| f.flush()).map_err(io_err("cannot write", &tmp))?;
    drop(f);
    std::fs::rename(&tmp, out).map_err(io_err("cannot rename into place", out))
}

/// What one command in the guest gave back.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Outcome {
    /// The command's exit status in the guest (128 + N for a signal, as the shell reports it).
    pub exit: i32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// The guest's serial console (kernel messages and the init's `[guest]` lines).
    pub console: String,
    pub kernel_version: String,
    /// Guest uptime when the command started (seconds), as the guest read it.
    pub boot_s: Option<f64>,
    /// Wall-clock time from QEMU's start to its end.
    pub wall_s: f64,
    /// Boots that died before the command started (one line each: the kernel's first complaint),
    /// before the boot that ran it; empty almost always.
    pub failed_boots: Vec<String>,
}

/// Single-quotes `s` for sh.
pub fn sh_quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c)) {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn check_path_word(p: &Path, what: &str) -> Result<String, GuestError> {
    let s = p.to_str().ok_or_else(|| GuestError::Invalid(format!("{what} {} is not UTF-8", p.display())))?;
    if s.is_empty() || s.chars().any(|c| c.is_whitespace() || c == ',' || c == '"' || c == '\\' || c == '$' || c == '`') {
        return Err(GuestError::Invalid(format!(
            "{what} '{s}' has white space, a comma, a quote or a $ in its path: QEMU and the kernel command line cannot carry it"
        )));
    }
    if !p.is_absolute() {
        return Err(GuestError::Invalid(format!("{what} '{s}' is not an absolute path")));
    }
    Ok(s.to_string())
}

/// Runs `argv` in the guest (the host's programs, the host's paths) and returns what it gave back.
/// The exit status of the command is in the [`Outcome`]; an error means the guest itself failed.
pub fn run(kernel: &Kernel, cfg: &GuestConfig, argv: &[String]) -> Result<Outcome, GuestError> {
    if argv.is_empty() {
        return Err(GuestError::Invalid("no command to run in the guest".into()));
    }
    let scratch = cfg.scratch.clone().unwrap_or_else(std::env::temp_dir);
    let mut failed_boots = Vec::new();
    loop {
        let xchg = tempfile_dir(&scratch)?;
        let result = run_in(kernel, cfg, argv, &xchg);
        let _ = std::fs::remove_dir_all(&xchg);
        match result {
            Ok(mut o) => {
                o.failed_boots = failed_boots;
                return Ok(o);
            }
            Err(GuestError::BootFailed { console_tail, .. }) => {
                failed_boots.push(first_complaint(&console_tail));
                let attempts = failed_boots.len() as u32;
                if attempts >= BOOT_ATTEMPTS {
                    return Err(GuestError::BootFailed { attempts, console_tail });
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// The kernel's first complaint in a console (an oops, a BUG, a panic), or its last line.
fn first_complaint(console: &str) -> String {
    const MARKS: [&str; 6] = ["BUG:", "Oops", "general protection", "kernel BUG", "Kernel panic", "[guest] init:"];
    console
        .lines()
        .find(|l| MARKS.iter().any(|m| l.contains(m)))
        .or_else(|| console.lines().rev().find(|l| !l.trim().is_empty()))
        .unwrap_or("(empty console)")
        .trim()
        .to_string()
}

fn tempfile_dir(base: &Path) -> Result<PathBuf, GuestError> {
    for i in 0..1000u32 {
        let p = base.join(format!("schedlab-vm-{}-{}-{i}", std::process::id(), schedlab_report::frontend::now_ns()));
        match std::fs::create_dir(&p) {
            Ok(()) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(GuestError::Io { what: "cannot create", path: p, source: e }),
        }
    }
    Err(GuestError::Invalid(format!("cannot make an exchange folder in {}", base.display())))
}

fn run_in(kernel: &Kernel, cfg: &GuestConfig, argv: &[String], xchg: &Path) -> Result<Outcome, GuestError> {
    let x = check_path_word(xchg, "the exchange folder")?;
    let kroot = check_path_word(&kernel.root, "the kernel folder")?;
    let mut writable = Vec::new();
    for w in &cfg.writable {
        let w = w.canonicalize().map_err(io_err("cannot share", w))?;
        writable.push(check_path_word(&w, "the writable folder")?);
    }
    std::fs::write(xchg.join("writable"), writable.join("\n")).map_err(io_err("cannot write", xchg))?;
    let mut script = String::from("# written by schedlab vm\n");
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/sbin:/usr/bin:/sbin:/bin".into());
    let _ = writeln!(script, "export PATH={} HOME=/root LANG=C.UTF-8", sh_quote(&format!("{path}:/usr/sbin:/sbin")));
    let mut env: Vec<(String, String)> =
        std::env::vars().filter(|(k, _)| k.starts_with("SCHEDLAB_") || k == "RUST_BACKTRACE").collect();
    env.extend(cfg.env.iter().cloned());
    for (k, v) in env {
        if k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            let _ = writeln!(script, "export {k}={}", sh_quote(&v));
        }
    }
    if let Some(cwd) = &cfg.cwd {
        if let Some(c) = cwd.to_str() {
            let _ = writeln!(script, "cd {} 2>/dev/null || cd /tmp", sh_quote(c));
        }
    }
    let cmd: Vec<String> = argv.iter().map(|a| sh_quote(a)).collect();
    let _ = writeln!(script, "{} >{x}/stdout 2>{x}/stderr </dev/null", cmd.join(" "));
    std::fs::write(xchg.join("cmd.sh"), script).map_err(io_err("cannot write", xchg))?;

    let console = xchg.join("console.log");
    let mut qemu = Command::new(&kernel.qemu);
    qemu.args([
        "-accel",
        "tcg,thread=multi",
        "-cpu",
        "max",
        "-M",
        "pc",
        "-nodefaults",
        "-no-reboot",
        "-display",
        "none",
        "-monitor",
        "none",
    ])
    .args(["-smp", &cfg.cpus.to_string(), "-m", &format!("{}M", cfg.mem_mb)])
    .arg("-serial")
    .arg(format!("file:{}", console.display()))
    .arg("-kernel")
    .arg(&kernel.vmlinuz)
    .arg("-initrd")
    .arg(&kernel.initramfs)
    .args(["-fsdev", "local,id=root,path=/,readonly=on,security_model=none,multidevs=remap"])
    .args(["-device", &format!("virtio-9p-pci,fsdev=root,mount_tag={ROOT_TAG}")])
    .args(["-fsdev", &format!("local,id=xchg,path={x},security_model=none,multidevs=remap")])
    .args(["-device", &format!("virtio-9p-pci,fsdev=xchg,mount_tag={XCHG_TAG}")]);
    for (i, w) in writable.iter().enumerate() {
        qemu.args(["-fsdev", &format!("local,id=rw{i},path={w},security_model=none,multidevs=remap")])
            .args(["-device", &format!("virtio-9p-pci,fsdev=rw{i},mount_tag=rw{i}")]);
    }
    // no_timer_check: under a loaded host the emulated 8254 can miss the kernel's IO-APIC timer
    // check, which then panics at boot ("IO-APIC + timer doesn't work!"; seen here once).
    let mut append = format!("console=ttyS0 quiet panic=-1 no_timer_check kroot={kroot} xchg={x}");
    for w in &cfg.append {
        if w.is_empty() || w.chars().any(|c| c.is_whitespace() || c == '"' || c.is_control()) {
            return Err(GuestError::Invalid(format!("kernel argument '{w}' is empty or has white space or a quote")));
        }
        append.push(' ');
        append.push_str(w);
    }
    qemu.arg("-append").arg(append);
    let qemu_err = xchg.join("qemu.stderr");
    let errfile = std::fs::File::create(&qemu_err).map_err(io_err("cannot create", &qemu_err))?;
    let start = Instant::now();
    let mut child =
        qemu.stdin(Stdio::null()).stdout(Stdio::null()).stderr(errfile).spawn().map_err(io_err("cannot start", &kernel.qemu))?;
    let status = loop {
        match child.try_wait().map_err(io_err("cannot wait for", &kernel.qemu))? {
            Some(s) => break s,
            None if start.elapsed() >= cfg.timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(GuestError::Timeout {
                    secs: cfg.timeout.as_secs_f64(),
                    console_tail: tail(&read_lossy(&console), 15),
                });
            }
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    let wall_s = start.elapsed().as_secs_f64();
    let console_text = read_lossy(&console);
    let exit = match std::fs::read_to_string(xchg.join("exit")) {
        Ok(s) => s
            .trim()
            .parse::<i32>()
            .map_err(|_| GuestError::Invalid(format!("the guest wrote a bad exit status '{}'", s.trim())))?,
        Err(_) => {
            let started = console_text.lines().any(|l| l.trim().starts_with("[guest] up "));
            let mut t = tail(&console_text, 15);
            let complaint = first_complaint(&console_text);
            if !t.contains(&complaint) {
                t = format!("{complaint}\n...\n{t}");
            }
            let qerr = read_lossy(&qemu_err);
            if !qerr.trim().is_empty() {
                t.push_str("\nQEMU said: ");
                t.push_str(qerr.trim());
            }
            // Our own init's failures (a mount that cannot work) repeat on every boot: not retried.
            let init_failed = console_text.contains("[guest] init:");
            if !started && !init_failed {
                return Err(GuestError::BootFailed { attempts: 1, console_tail: t });
            }
            return Err(GuestError::NoExit { qemu_status: status.to_string(), console_tail: t });
        }
    };
    let boot_s = console_text
        .lines()
        .find_map(|l| l.trim().strip_prefix("[guest] up ").and_then(|r| r.trim_end_matches(" s").trim().parse().ok()));
    Ok(Outcome {
        exit,
        stdout: std::fs::read(xchg.join("stdout")).unwrap_or_default(),
        stderr: std::fs::read(xchg.join("stderr")).unwrap_or_default(),
        console: console_text,
        kernel_version: kernel.version.clone(),
        boot_s,
        wall_s,
        failed_boots: Vec::new(),
    })
}

fn read_lossy(p: &Path) -> String {
    std::fs::read(p).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default()
}

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_complaint_is_the_oops_line_not_the_panic_tail() {
        let console = "[    2.70] random: crng init done\n[    2.71] BUG: unable to handle page fault for address: 0\n\
                       [    2.71] RIP: 0010:sched_clock_cpu+0x9/0x190\n[    2.72] Kernel panic - not syncing: Fatal exception\n";
        assert_eq!(first_complaint(console), "[    2.71] BUG: unable to handle page fault for address: 0");
        assert_eq!(first_complaint("a\nlast line\n\n"), "last line");
        assert_eq!(first_complaint(""), "(empty console)");
    }

    #[test]
    fn quoting_survives_the_shell() {
        assert_eq!(sh_quote("uname"), "uname");
        assert_eq!(sh_quote("a b"), "'a b'");
        assert_eq!(sh_quote("it's"), r"'it'\''s'");
        assert_eq!(sh_quote(""), "''");
    }

    #[test]
    fn no_qemu_on_the_path_is_one_line() {
        let mut cfg = GuestConfig::new(std::env::temp_dir());
        cfg.search_path = Some(OsString::from("/nonexistent-schedlab"));
        let e = check_host(&cfg).unwrap_err();
        assert_eq!(e, Unavailable::NoQemu);
        assert!(!e.to_string().contains('\n'));
    }

    #[test]
    fn a_dynamic_binary_is_not_a_static_busybox() {
        // /bin/sh is dynamically linked on Debian; a missing file is refused too.
        assert!(static_busybox(Path::new("/nonexistent")).is_err());
        if let Ok(sh) = std::fs::canonicalize("/bin/sh") {
            let bytes = std::fs::read(&sh).unwrap_or_default();
            if bytes.windows(14).any(|w| w == b"ld-linux-x86-6") {
                assert!(static_busybox(&sh).is_err());
            }
        }
    }

    #[test]
    fn paths_the_command_line_cannot_carry_are_refused() {
        assert!(check_path_word(Path::new("/tmp/a b"), "x").is_err());
        assert!(check_path_word(Path::new("rel"), "x").is_err());
        assert_eq!(check_path_word(Path::new("/tmp/ab"), "x").unwrap(), "/tmp/ab");
    }
}
