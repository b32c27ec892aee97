//! What the run actually got: machine facts and per-thread placement read back from the kernel.
//!
//! Every result schedlab writes embeds a [`MachineInfo`]; benchmarks that pin threads or ask for a
//! real-time policy embed the [`ThreadInfo`] each thread read back *after* asking, so a result
//! never carries a label it only requested.

use std::fs;

use serde::Serialize;

/// Facts about the machine a result was measured on.
#[derive(Clone, Debug, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct MachineInfo {
    pub hostname: String,
    pub kernel: String,
    pub kernel_version: String,
    pub arch: String,
    pub cpu_model: String,
    pub cpus_online: usize,
    /// Hypervisor as far as it can be told (`none` on bare metal, `unknown` if it cannot be told).
    pub virtualization: String,
    pub cpuidle_driver: Option<String>,
    pub cpuidle_governor: Option<String>,
    pub cpufreq_governor: Option<String>,
    /// Effective user id (0 = root): many features depend on it.
    pub euid: u32,
    pub schedlab_version: String,
    /// Seconds since the Unix epoch when the facts were collected.
    pub collected_unix_s: u64,
}

fn read_trim(path: &str) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

fn uname() -> (String, String, String, String) {
    // SAFETY: utsname is plain old data; uname fills it and we only read NUL-terminated fields.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return Default::default();
    }
    let f = |b: &[libc::c_char]| {
        let bytes: Vec<u8> = b.iter().take_while(|c| **c != 0).map(|c| *c as u8).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    (f(&u.nodename), f(&u.release), f(&u.version), f(&u.machine))
}

fn detect_virt(cpuinfo: &str) -> String {
    let vendor = read_trim("/sys/class/dmi/id/sys_vendor").unwrap_or_default();
    let product = read_trim("/sys/class/dmi/id/product_name").unwrap_or_default();
    let hv = read_trim("/sys/hypervisor/type");
    classify_virt(&vendor, &product, hv.as_deref(), cpuinfo, cpuid_hypervisor().as_deref())
}

/// The hypervisor's vendor signature (CPUID leaf 0x40000000), when the CPU says it runs under one.
#[cfg(target_arch = "x86_64")]
fn cpuid_hypervisor() -> Option<String> {
    use std::arch::x86_64::__cpuid;
    // SAFETY: CPUID exists on every x86_64 CPU; leaf 1 ECX bit 31 says a hypervisor is present,
    // and only then is leaf 0x40000000 (its vendor signature) defined.
    #[allow(unused_unsafe)]
    let (present, sig) = unsafe {
        let present = __cpuid(1).ecx & (1 << 31) != 0;
        let l = __cpuid(0x4000_0000);
        (present, [l.ebx, l.ecx, l.edx])
    };
    if !present {
        return None;
    }
    let bytes: Vec<u8> = sig.iter().flat_map(|r| r.to_le_bytes()).take_while(|b| *b != 0).collect();
    let s = String::from_utf8_lossy(&bytes).trim().to_string();
    (!s.is_empty()).then_some(s)
}

#[cfg(not(target_arch = "x86_64"))]
fn cpuid_hypervisor() -> Option<String> {
    None
}

/// Names the hypervisor from what the machine shows: DMI vendor and product, `/sys/hypervisor/type`,
/// `/proc/cpuinfo` and the CPUID hypervisor signature. `none` means bare metal, `unknown` that it
/// cannot be told.
pub fn classify_virt(vendor: &str, product: &str, hv: Option<&str>, cpuinfo: &str, cpuid_signature: Option<&str>) -> String {
    let flags = cpuinfo.lines().find(|l| l.starts_with("flags"));
    let flag = flags.is_some_and(|l| l.split_whitespace().any(|w| w == "hypervisor"));
    // An x86 CPU that does not set the hypervisor bit runs on bare metal as far as the kernel can
    // tell (`None`: no such line, e.g. arm64, where the bit does not exist).
    let bare_cpu = flags.map(|_| !flag);
    let dmi = format!("{vendor} {product}").to_lowercase();
    // DMI names only a virtual machine has: they stand even if a guest hides the CPU bit.
    let vm_only = [
        ("qemu", "kvm/qemu"),
        ("kvm", "kvm"),
        ("firecracker", "firecracker"),
        ("vmware", "vmware"),
        ("virtualbox", "virtualbox"),
        ("xen", "xen"),
        ("cloud hypervisor", "cloud-hypervisor"),
    ];
    // Vendors that also sell bare metal (EC2 `.metal` instances, Surface laptops, Chromebooks):
    // their name is a hypervisor only when the CPU says it runs under one.
    let also_metal = [("microsoft", "hyper-v"), ("amazon ec2", "kvm (amazon ec2)"), ("google", "kvm (google compute engine)")];
    if let Some((_, name)) = vm_only.iter().find(|(k, _)| dmi.contains(k)) {
        return name.to_string();
    }
    if let Some(h) = hv {
        return h.to_string();
    }
    if bare_cpu == Some(true) {
        return "none".into();
    }
    if let Some((_, name)) = also_metal.iter().find(|(k, _)| dmi.contains(k)) {
        return name.to_string();
    }
    let by_signature = [
        ("KVMKVMKVM", "kvm"),
        ("Linux KVM Hv", "kvm"),
        ("Microsoft Hv", "hyper-v"),
        ("VMwareVMware", "vmware"),
        ("XenVMMXenVMM", "xen"),
        ("TCGTCGTCGTCG", "qemu (tcg)"),
        ("VBoxVBoxVBox", "virtualbox"),
        ("bhyve bhyve", "bhyve"),
        ("ACRNACRNACRN", "acrn"),
        ("QNXQVMBSQG", "qnx"),
    ];
    if let Some(sig) = cpuid_signature.map(str::trim).filter(|s| !s.is_empty()) {
        return match by_signature.iter().find(|(k, _)| *k == sig) {
            Some((_, name)) => name.to_string(),
            None => format!("hypervisor with CPUID signature '{sig}'"),
        };
    }
    if flag {
        return "unknown hypervisor (cpu flag 'hypervisor' set)".into();
    }
    if vendor.is_empty() {
        "unknown".into()
    } else {
        "none".into()
    }
}

impl MachineInfo {
    /// Collects the facts (cheap: a few small files).
    pub fn collect() -> MachineInfo {
        let (hostname, kernel, kernel_version, arch) = uname();
        let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name") || l.starts_with("Model") || l.starts_with("cpu model"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        MachineInfo {
            hostname,
            kernel,
            kernel_version,
            arch,
            cpu_model,
            cpus_online: cpus_online(),
            virtualization: detect_virt(&cpuinfo),
            cpuidle_driver: read_trim("/sys/devices/system/cpu/cpuidle/current_driver"),
            cpuidle_governor: read_trim("/sys/devices/system/cpu/cpuidle/current_governor_ro")
                .or_else(|| read_trim("/sys/devices/system/cpu/cpuidle/current_governor")),
            cpufreq_governor: read_trim("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
            // SAFETY: geteuid has no preconditions.
            euid: unsafe { libc::geteuid() },
            schedlab_version: env!("CARGO_PKG_VERSION").to_string(),
            collected_unix_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
        }
    }

    /// One human line.
    pub fn line(&self) -> String {
        format!(
            "machine: {} | kernel {} | {} | {} cpus | virt: {} | idle: {}",
            self.hostname,
            self.kernel,
            self.cpu_model,
            self.cpus_online,
            self.virtualization,
            self.cpuidle_driver.as_deref().unwrap_or("n/a")
        )
    }
}

/// How many CPUs the machine has online: `/sys/devices/system/cpu/online` (`0-3`, `0,2-5`), else
/// `sysconf(_SC_NPROCESSORS_ONLN)`. Not the caller's affinity mask ([`online_cpus`]): a thread
/// pinned before collecting the facts (`burst --cpu`) must not make a 2-CPU machine read as 1.
fn cpus_online() -> usize {
    let from_sysfs = read_trim("/sys/devices/system/cpu/online").and_then(|list| {
        list.split(',')
            .map(|part| match part.split_once('-') {
                Some((a, b)) => {
                    let (a, b) = (a.trim().parse::<usize>().ok()?, b.trim().parse::<usize>().ok()?);
                    b.checked_sub(a).map(|d| d + 1)
                }
                None => part.trim().parse::<usize>().ok().map(|_| 1),
            })
            .sum::<Option<usize>>()
    });
    // SAFETY: sysconf has no preconditions.
    from_sysfs.filter(|&n| n > 0).unwrap_or_else(|| unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize)
}

/// CPUs the calling thread may run on (its affinity mask), in increasing order. Called before any
/// pinning, that is the process's mask.
pub fn online_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity writes at most sizeof(cpu_set_t) bytes.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return (0..std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)).collect();
        }
        (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect()
    }
}

/// Scheduling policy of a thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SchedPolicy {
    SchedOther,
    SchedFifo,
    SchedRr,
    SchedBatch,
    SchedIdle,
    SchedDeadline,
    Unknown,
}

impl SchedPolicy {
    fn from_raw(p: i32) -> Self {
        // `chrt -R` (SCHED_RESET_ON_FORK) is a flag on top of the policy, not another policy.
        match p & !libc::SCHED_RESET_ON_FORK {
            libc::SCHED_OTHER => SchedPolicy::SchedOther,
            libc::SCHED_FIFO => SchedPolicy::SchedFifo,
            libc::SCHED_RR => SchedPolicy::SchedRr,
            libc::SCHED_BATCH => SchedPolicy::SchedBatch,
            libc::SCHED_IDLE => SchedPolicy::SchedIdle,
            6 => SchedPolicy::SchedDeadline,
            _ => SchedPolicy::Unknown,
        }
    }
    /// The kernel's name for it.
    pub fn name(self) -> &'static str {
        match self {
            SchedPolicy::SchedOther => "SCHED_OTHER",
            SchedPolicy::SchedFifo => "SCHED_FIFO",
            SchedPolicy::SchedRr => "SCHED_RR",
            SchedPolicy::SchedBatch => "SCHED_BATCH",
            SchedPolicy::SchedIdle => "SCHED_IDLE",
            SchedPolicy::SchedDeadline => "SCHED_DEADLINE",
            SchedPolicy::Unknown => "unknown",
        }
    }
}

/// What a thread actually got, read back from the kernel.
#[derive(Clone, Debug, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct ThreadInfo {
    /// Kernel thread id.
    pub tid: i64,
    /// CPU it was running on when read.
    pub cpu: i32,
    /// CPUs it may run on.
    pub allowed_cpus: Vec<usize>,
    pub policy: SchedPolicy,
    /// The real-time priority (`sched_getparam`): 0 under SCHED_OTHER, BATCH and IDLE.
    pub priority: i32,
    /// The thread's nice value (`getpriority` on its thread id), which is what orders SCHED_OTHER
    /// and SCHED_BATCH threads (a run under `nice -n 19` has 19 here and priority 0). Absent in
    /// files written before it was recorded, or when it could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nice: Option<i32>,
}

impl ThreadInfo {
    /// Reads back the calling thread's placement and policy.
    pub fn current() -> ThreadInfo {
        // SAFETY: these calls only read the calling thread's state into local plain-data values.
        unsafe {
            let tid = libc::syscall(libc::SYS_gettid);
            let cpu = libc::sched_getcpu();
            let pol = libc::sched_getscheduler(0);
            let mut param: libc::sched_param = std::mem::zeroed();
            libc::sched_getparam(0, &mut param);
            // getpriority returns -1 both as a nice value and on failure: errno tells them apart.
            *libc::__errno_location() = 0;
            let nice = libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t);
            let nice = (nice != -1 || *libc::__errno_location() == 0).then_some(nice);
            ThreadInfo {
                tid,
                cpu,
                allowed_cpus: online_cpus(),
                policy: SchedPolicy::from_raw(pol),
                priority: param.sched_priority,
                nice,
            }
        }
    }

    /// The policy as people read it: `SCHED_FIFO priority 50`, or `SCHED_OTHER nice 19` for the
    /// policies ordered by nice (`nice ?` when it was not recorded).
    pub fn policy_text(&self) -> String {
        match self.policy {
            SchedPolicy::SchedFifo | SchedPolicy::SchedRr | SchedPolicy::SchedDeadline | SchedPolicy::Unknown => {
                format!("{} priority {}", self.policy.name(), self.priority)
            }
            SchedPolicy::SchedOther | SchedPolicy::SchedBatch | SchedPolicy::SchedIdle => {
                let nice = self.nice.map_or_else(|| "?".to_string(), |n| n.to_string());
                format!("{} nice {nice}", self.policy.name())
            }
        }
    }
}

/// Pins the calling thread to one CPU. Fails with the OS error (e.g. the CPU is not allowed).
pub fn pin_current_thread(cpu: usize) -> std::io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("CPU {cpu} out of range")));
    }
    // SAFETY: the set is zero-initialised plain data and `cpu` is below CPU_SETSIZE.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Asks for a real-time policy (`SCHED_FIFO` or `SCHED_RR`) at `priority` for the calling thread.
/// Fails with EPERM when unprivileged; callers must report what they got ([`ThreadInfo::current`]).
pub fn set_realtime(round_robin: bool, priority: i32) -> std::io::Result<()> {
    let pol = if round_robin { libc::SCHED_RR } else { libc::SCHED_FIFO };
    let param = libc::sched_param { sched_priority: priority };
    // SAFETY: `param` is a valid sched_param for the duration of the call.
    let rc = unsafe { libc::sched_setscheduler(0, pol, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn collects_facts() {
        let m = MachineInfo::collect();
        assert!(!m.kernel.is_empty());
        assert!(m.cpus_online >= 1);
        let t = ThreadInfo::current();
        assert!(t.cpu >= 0);
        assert!(t.allowed_cpus.contains(&(t.cpu as usize)));
    }
    #[test]
    fn pinning_is_read_back() {
        let cpus = online_cpus();
        let last = *cpus.last().unwrap();
        std::thread::spawn(move || {
            pin_current_thread(last).unwrap();
            let t = ThreadInfo::current();
            assert_eq!(t.allowed_cpus, vec![last]);
            assert_eq!(t.cpu as usize, last);
        })
        .join()
        .unwrap();
        assert!(pin_current_thread(100_000).is_err());
    }
}
