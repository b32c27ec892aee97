//! The few `bpf(2)` commands the sockmap echo server needs, called directly (no libbpf), and its
//! two programs assembled by hand:
//!
//! - stream parser: `return skb->len;` — every received chunk is one message;
//! - verdict: `return bpf_sk_redirect_map(skb, &map, 0, 0);` — send the message out of the socket
//!   stored at key 0 of the map, which is the socket it arrived on.
//!
//! Every object created here is an [`OwnedFd`]; its kernel id is recorded so that the server can
//! check after closing everything that no program or map of its own is left ([`exists`]).

use std::ffi::CString;
use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::sys::cvt;
use crate::EchoError;

const BPF_MAP_CREATE: libc::c_int = 0;
const BPF_MAP_UPDATE_ELEM: libc::c_int = 2;
const BPF_MAP_DELETE_ELEM: libc::c_int = 3;
const BPF_PROG_LOAD: libc::c_int = 5;
const BPF_PROG_ATTACH: libc::c_int = 8;
const BPF_PROG_DETACH: libc::c_int = 9;
const BPF_PROG_GET_FD_BY_ID: libc::c_int = 13;
const BPF_MAP_GET_FD_BY_ID: libc::c_int = 14;
const BPF_OBJ_GET_INFO_BY_FD: libc::c_int = 15;

const BPF_MAP_TYPE_SOCKMAP: u32 = 15;
const BPF_PROG_TYPE_SK_SKB: u32 = 14;
/// Attach type of a stream parser program.
pub const BPF_SK_SKB_STREAM_PARSER: u32 = 4;
/// Attach type of a stream verdict program.
pub const BPF_SK_SKB_STREAM_VERDICT: u32 = 5;
const BPF_FUNC_SK_REDIRECT_MAP: i32 = 52;
const BPF_PSEUDO_MAP_FD: u8 = 1;

/// One eBPF instruction (`struct bpf_insn`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Insn {
    code: u8,
    /// dst register in the low nibble, src register in the high nibble.
    regs: u8,
    off: i16,
    imm: i32,
}

const fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn { code, regs: (src << 4) | (dst & 0x0f), off, imm }
}

/// `r0 = *(u32 *)(r1 + offsetof(struct __sk_buff, len)); exit` — the parser.
pub fn parser_program() -> Vec<Insn> {
    vec![
        insn(0x61, 0, 1, 0, 0), // BPF_LDX | BPF_MEM | BPF_W: r0 = skb->len (offset 0)
        insn(0x95, 0, 0, 0, 0), // BPF_JMP | BPF_EXIT
    ]
}

/// `return bpf_sk_redirect_map(skb, map, 0, 0)` — the verdict, for the map open as `map_fd`.
pub fn verdict_program(map_fd: RawFd) -> Vec<Insn> {
    vec![
        insn(0x18, 2, BPF_PSEUDO_MAP_FD, 0, map_fd),   // BPF_LD | BPF_IMM | BPF_DW: r2 = &map
        insn(0, 0, 0, 0, 0),                           //   (second half of the 64-bit immediate)
        insn(0xb7, 3, 0, 0, 0),                        // BPF_ALU64 | BPF_MOV | BPF_K: r3 = 0 (key)
        insn(0xb7, 4, 0, 0, 0),                        // r4 = 0 (flags: egress)
        insn(0x85, 0, 0, 0, BPF_FUNC_SK_REDIRECT_MAP), // BPF_JMP | BPF_CALL
        insn(0x95, 0, 0, 0, 0),                        // exit with the helper's SK_PASS/SK_DROP
    ]
}

#[repr(C)]
#[derive(Default)]
struct MapCreateAttr {
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
    inner_map_fd: u32,
    numa_node: u32,
    map_name: [u8; 16],
}

#[repr(C)]
#[derive(Default)]
struct MapElemAttr {
    map_fd: u32,
    pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

#[repr(C)]
#[derive(Default)]
struct ProgLoadAttr {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
}

#[repr(C)]
#[derive(Default)]
struct AttachAttr {
    target_fd: u32,
    attach_bpf_fd: u32,
    attach_type: u32,
    attach_flags: u32,
    replace_bpf_fd: u32,
}

#[repr(C)]
#[derive(Default)]
struct GetFdByIdAttr {
    id: u32,
    next_id: u32,
    open_flags: u32,
}

#[repr(C)]
#[derive(Default)]
struct InfoAttr {
    bpf_fd: u32,
    info_len: u32,
    info: u64,
}

fn sys_bpf<T>(cmd: libc::c_int, attr: &mut T) -> io::Result<libc::c_long> {
    // SAFETY: attr is a live, fully initialised repr(C) prefix of `union bpf_attr` (every struct
    // above has no implicit padding) and its exact size is passed; pointers inside it point to
    // buffers that outlive the call.
    let r = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr as *mut T, size_of::<T>() as libc::c_uint) };
    cvt(r)
}

fn owned(fd: libc::c_long) -> OwnedFd {
    // SAFETY: fd is a new descriptor returned by bpf(2); nobody else owns it.
    unsafe { OwnedFd::from_raw_fd(fd as RawFd) }
}

fn name16(name: &str) -> [u8; 16] {
    let mut out = [0u8; 16];
    for (o, b) in out.iter_mut().zip(name.bytes().filter(|b| b.is_ascii_alphanumeric() || *b == b'_').take(15)) {
        *o = b;
    }
    out
}

/// Kind of a BPF object, for id look-ups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjKind {
    Prog,
    Map,
}

/// Creates a `BPF_MAP_TYPE_SOCKMAP` with `entries` slots.
pub fn create_sockmap(entries: u32, name: &str) -> io::Result<OwnedFd> {
    let mut a = MapCreateAttr {
        map_type: BPF_MAP_TYPE_SOCKMAP,
        key_size: 4,
        value_size: 4,
        max_entries: entries,
        map_name: name16(name),
        ..Default::default()
    };
    sys_bpf(BPF_MAP_CREATE, &mut a).map(owned)
}

/// Loads an `SK_SKB` program; on rejection the verifier log is in the error.
pub fn load_sk_skb(insns: &[Insn], name: &str, attach: u32) -> Result<OwnedFd, EchoError> {
    let license = CString::new("Dual MIT/GPL").expect("no NUL");
    let mut log = vec![0u8; 64 * 1024];
    let mut a = ProgLoadAttr {
        prog_type: BPF_PROG_TYPE_SK_SKB,
        insn_cnt: insns.len() as u32,
        insns: insns.as_ptr() as u64,
        license: license.as_ptr() as u64,
        log_level: 1,
        log_size: log.len() as u32,
        log_buf: log.as_mut_ptr() as u64,
        prog_name: name16(name),
        expected_attach_type: attach,
        ..Default::default()
    };
    match sys_bpf(BPF_PROG_LOAD, &mut a) {
        Ok(fd) => Ok(owned(fd)),
        Err(err) => {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            Err(EchoError::BpfLoad { name: name.to_string(), err, log: String::from_utf8_lossy(&log[..end]).into_owned() })
        }
    }
}

fn attach_cmd(cmd: libc::c_int, map: &OwnedFd, prog: &OwnedFd, attach_type: u32) -> io::Result<()> {
    let mut a = AttachAttr {
        target_fd: map.as_raw_fd() as u32,
        attach_bpf_fd: prog.as_raw_fd() as u32,
        attach_type,
        ..Default::default()
    };
    sys_bpf(cmd, &mut a).map(|_| ())
}

/// Attaches `prog` to the sockmap `map` (`BPF_PROG_ATTACH`).
pub fn attach(map: &OwnedFd, prog: &OwnedFd, attach_type: u32) -> io::Result<()> {
    attach_cmd(BPF_PROG_ATTACH, map, prog, attach_type)
}

/// Detaches `prog` from the sockmap `map` (`BPF_PROG_DETACH`).
pub fn detach(map: &OwnedFd, prog: &OwnedFd, attach_type: u32) -> io::Result<()> {
    attach_cmd(BPF_PROG_DETACH, map, prog, attach_type)
}

/// Stores socket `sock` at `key` of the sockmap.
pub fn map_set_socket(map: &OwnedFd, key: u32, sock: RawFd) -> io::Result<()> {
    let value = sock as u32;
    let mut a = MapElemAttr {
        map_fd: map.as_raw_fd() as u32,
        key: &key as *const u32 as u64,
        value: &value as *const u32 as u64,
        ..Default::default()
    };
    sys_bpf(BPF_MAP_UPDATE_ELEM, &mut a).map(|_| ())
}

/// Removes `key` from the sockmap.
pub fn map_delete(map: &OwnedFd, key: u32) -> io::Result<()> {
    let mut a = MapElemAttr { map_fd: map.as_raw_fd() as u32, key: &key as *const u32 as u64, ..Default::default() };
    sys_bpf(BPF_MAP_DELETE_ELEM, &mut a).map(|_| ())
}

/// The kernel id of a program or map (first two u32 of `bpf_prog_info`/`bpf_map_info` are
/// type and id).
pub fn object_id(fd: &OwnedFd) -> io::Result<u32> {
    let mut info = [0u32; 32];
    let mut a =
        InfoAttr { bpf_fd: fd.as_raw_fd() as u32, info_len: size_of::<[u32; 32]>() as u32, info: info.as_mut_ptr() as u64 };
    sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &mut a)?;
    Ok(info[1])
}

/// True while a program or map with this id still exists anywhere in the kernel.
pub fn exists(kind: ObjKind, id: u32) -> io::Result<bool> {
    let cmd = match kind {
        ObjKind::Prog => BPF_PROG_GET_FD_BY_ID,
        ObjKind::Map => BPF_MAP_GET_FD_BY_ID,
    };
    let mut a = GetFdByIdAttr { id, ..Default::default() };
    match sys_bpf(cmd, &mut a) {
        Ok(fd) => {
            drop(owned(fd));
            Ok(true)
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Checks that sockmap echo can work here: creates a map, loads both programs and attaches
/// them, then releases everything.
pub fn probe() -> Result<(), String> {
    let map = create_sockmap(1, "sl_probe").map_err(|e| {
        format!("cannot create a SOCKMAP ({e}); needs root or CAP_BPF+CAP_NET_ADMIN and CONFIG_BPF_STREAM_PARSER")
    })?;
    let parser = load_sk_skb(&parser_program(), "sl_probe_p", BPF_SK_SKB_STREAM_PARSER).map_err(|e| e.to_string())?;
    let verdict =
        load_sk_skb(&verdict_program(map.as_raw_fd()), "sl_probe_v", BPF_SK_SKB_STREAM_VERDICT).map_err(|e| e.to_string())?;
    attach(&map, &parser, BPF_SK_SKB_STREAM_PARSER).map_err(|e| format!("cannot attach a stream parser: {e}"))?;
    attach(&map, &verdict, BPF_SK_SKB_STREAM_VERDICT).map_err(|e| format!("cannot attach a stream verdict: {e}"))?;
    let _ = detach(&map, &verdict, BPF_SK_SKB_STREAM_VERDICT);
    let _ = detach(&map, &parser, BPF_SK_SKB_STREAM_PARSER);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instruction_encoding() {
        assert_eq!(size_of::<Insn>(), 8);
        let v = verdict_program(7);
        assert_eq!(v[0], Insn { code: 0x18, regs: 0x12, off: 0, imm: 7 }, "r2 = map fd 7, src = PSEUDO_MAP_FD");
        assert_eq!(v[4].imm, 52, "bpf_sk_redirect_map");
        assert_eq!(parser_program()[0].regs, 0x10, "dst r0, src r1");
        assert_eq!(size_of::<ProgLoadAttr>(), 72);
        assert_eq!(size_of::<MapElemAttr>(), 32);
    }

    #[test]
    fn names_are_truncated_and_cleaned() {
        assert_eq!(&name16("a-b_c")[..4], b"ab_c");
        assert_eq!(name16("0123456789abcdefXYZ")[15], 0);
    }

    #[test]
    fn objects_disappear_when_closed() {
        let map = match create_sockmap(1, "sl_test") {
            Ok(m) => m,
            Err(e) => schedlab_report::skip!("cannot create a sockmap here: {e}"),
        };
        let prog = load_sk_skb(&verdict_program(map.as_raw_fd()), "sl_test_v", BPF_SK_SKB_STREAM_VERDICT).unwrap();
        let (pid, mid) = (object_id(&prog).unwrap(), object_id(&map).unwrap());
        assert!(exists(ObjKind::Prog, pid).unwrap());
        assert!(exists(ObjKind::Map, mid).unwrap());
        drop(prog);
        drop(map);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
        while (exists(ObjKind::Prog, pid).unwrap() || exists(ObjKind::Map, mid).unwrap()) && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(!exists(ObjKind::Prog, pid).unwrap() && !exists(ObjKind::Map, mid).unwrap());
    }
}
