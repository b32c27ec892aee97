//! What `machine` records is what the kernel says the run got, never what was asked for, and
//! machine facts do not depend on which thread collects them.

use schedlab_report::machine::{online_cpus, pin_current_thread, set_realtime, MachineInfo, SchedPolicy, ThreadInfo};
use schedlab_report::testkit::{drop_root_in_this_thread, rtprio_limit};

/// CPUs online according to the kernel (`/sys/devices/system/cpu/online`), counted here
/// independently of `machine`: `0-1`, `0,2-3`.
fn cpus_online_per_sysfs() -> usize {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").expect("sysfs lists the online CPUs");
    text.trim()
        .split(',')
        .map(|part| match part.split_once('-') {
            Some((a, b)) => b.parse::<usize>().unwrap() - a.parse::<usize>().unwrap() + 1,
            None => 1,
        })
        .sum()
}

#[test]
fn cpus_online_counts_the_machine_not_the_collecting_threads_mask() {
    let online = cpus_online_per_sysfs();
    let cpus = online_cpus();
    if cpus.len() < 2 {
        schedlab_report::skip!("this process may run on {cpus:?} only: a pinned thread's mask cannot be told from the machine");
    }
    let last = *cpus.last().unwrap();
    let (m, t) = std::thread::spawn(move || {
        pin_current_thread(last).unwrap();
        (MachineInfo::collect(), ThreadInfo::current())
    })
    .join()
    .unwrap();
    assert_eq!(t.allowed_cpus, vec![last], "the thread is pinned");
    assert_eq!(m.cpus_online, online, "cpus_online of a machine with {online} CPUs, collected by a thread pinned to CPU {last}");
    assert!(m.line().contains(&format!("{online} cpus")), "{}", m.line());
}

#[test]
fn refused_sched_fifo_is_recorded_as_what_the_thread_kept_and_says_why() {
    if rtprio_limit() != 0 {
        schedlab_report::skip!("RLIMIT_RTPRIO is {}: an unprivileged thread may get SCHED_FIFO 1", rtprio_limit());
    }
    let (err, t) = std::thread::spawn(|| {
        let dropped = drop_root_in_this_thread();
        let err = set_realtime(false, 10).err();
        (err.map(|e| (e.raw_os_error(), e.to_string(), dropped)), ThreadInfo::current())
    })
    .join()
    .unwrap();
    let (errno, text, _) = err.expect("an unprivileged thread with RLIMIT_RTPRIO 0 is refused SCHED_FIFO");
    assert_eq!(errno, Some(libc::EPERM), "{text}");
    assert_eq!(t.policy, SchedPolicy::SchedOther, "{t:?}");
    assert_eq!(t.priority, 0, "{t:?}");
}

#[test]
fn an_out_of_range_priority_is_refused_and_the_policy_read_back_is_unchanged() {
    let (err, t) = std::thread::spawn(|| (set_realtime(false, 100).err(), ThreadInfo::current())).join().unwrap();
    let err = err.expect("SCHED_FIFO priority 100 does not exist");
    assert_eq!(err.raw_os_error(), Some(libc::EINVAL), "{err}");
    assert_eq!((t.policy, t.priority), (SchedPolicy::SchedOther, 0), "{t:?}");
}

#[test]
fn sched_fifo_with_reset_on_fork_reads_back_as_sched_fifo() {
    let got = std::thread::spawn(|| {
        let param = libc::sched_param { sched_priority: 1 };
        // SAFETY: `param` is valid for the call; it changes the calling thread only.
        let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &param) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let t = ThreadInfo::current();
        // Back to SCHED_OTHER before the thread ends, so the test leaves nothing spinning at RT.
        let other = libc::sched_param { sched_priority: 0 };
        // SAFETY: as above.
        unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &other) };
        Ok(t)
    })
    .join()
    .unwrap();
    match got {
        Ok(t) => assert_eq!((t.policy, t.priority), (SchedPolicy::SchedFifo, 1), "{t:?}"),
        Err(e) => schedlab_report::skip!("SCHED_FIFO refused here ({e}): needs root or CAP_SYS_NICE"),
    }
}

const X86_GUEST: &str = "processor\t: 0\nmodel name\t: Intel(R) Xeon(R)\nflags\t\t: fpu vme de pse tsc msr hypervisor lahf_lm\n";
const X86_METAL: &str = "processor\t: 0\nmodel name\t: Intel(R) Xeon(R)\nflags\t\t: fpu vme de pse tsc msr lahf_lm\n";

#[test]
fn hardware_vendors_on_bare_metal_are_not_called_virtual_machines() {
    use schedlab_report::machine::classify_virt;
    // Vendors that sell bare metal as well as VMs: their name alone is no hypervisor.
    assert_eq!(classify_virt("Amazon EC2", "c5.metal", None, X86_METAL, None), "none");
    assert_eq!(classify_virt("Microsoft Corporation", "Surface Laptop 3", None, X86_METAL, None), "none");
    assert_eq!(classify_virt("Google", "Eve", None, X86_METAL, None), "none");
    // The same vendors' virtual machines still are.
    assert_eq!(classify_virt("Amazon EC2", "m5.large", None, X86_GUEST, Some("KVMKVMKVM")), "kvm (amazon ec2)");
    assert_eq!(classify_virt("Microsoft Corporation", "Virtual Machine", None, X86_GUEST, Some("Microsoft Hv")), "hyper-v");
    // A DMI name only a VM has stands even when the guest hides the CPU flag.
    assert_eq!(classify_virt("QEMU", "Standard PC (Q35 + ICH9, 2009)", None, X86_METAL, None), "kvm/qemu");
    assert_eq!(classify_virt("Dell Inc.", "PowerEdge R650", None, X86_METAL, None), "none");
    assert_eq!(classify_virt("", "", Some("xen"), X86_GUEST, None), "xen");
}

#[test]
fn a_guest_without_dmi_is_named_by_its_cpuid_signature() {
    use schedlab_report::machine::classify_virt;
    // Firecracker guests have no DMI tables: the CPU's hypervisor leaf still names KVM.
    assert_eq!(classify_virt("", "", None, X86_GUEST, Some("KVMKVMKVM")), "kvm");
    assert_eq!(classify_virt("", "", None, X86_GUEST, Some("TCGTCGTCGTCG")), "qemu (tcg)");
    assert_eq!(classify_virt("", "", None, X86_GUEST, Some("NewVisorSig")), "hypervisor with CPUID signature 'NewVisorSig'");
    assert_eq!(classify_virt("", "", None, X86_GUEST, None), "unknown hypervisor (cpu flag 'hypervisor' set)");
    assert_eq!(classify_virt("", "", None, "", None), "unknown");
}

/// The nice value is read back per thread: a thread that raises its own nice to 7 (always allowed)
/// records 7, and says so in its policy text, while the thread that started it keeps its own.
#[test]
fn a_threads_nice_is_read_back() {
    let before = ThreadInfo::current();
    let t = std::thread::spawn(|| {
        // SAFETY: gettid has no preconditions; setpriority on the calling thread's own id.
        let rc = unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            libc::setpriority(libc::PRIO_PROCESS, tid, 7)
        };
        assert_eq!(rc, 0, "setpriority: {}", std::io::Error::last_os_error());
        ThreadInfo::current()
    })
    .join()
    .unwrap();
    assert_eq!(t.nice, Some(7), "{t:?}");
    assert_eq!(t.policy_text(), "SCHED_OTHER nice 7");
    assert_eq!(ThreadInfo::current().nice, before.nice, "the spawning thread keeps its nice");
    let json = serde_json::to_value(&t).unwrap();
    assert_eq!(json["nice"], 7, "{json}");
    // A file written before the field existed still reads.
    let mut old = json.clone();
    old.as_object_mut().unwrap().remove("nice");
    let back: ThreadInfo = serde_json::from_value(old).unwrap();
    assert_eq!(back.nice, None);
    assert_eq!(back.policy_text(), "SCHED_OTHER nice ?");
}
