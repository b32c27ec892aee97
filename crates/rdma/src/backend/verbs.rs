//! The real backend: libibverbs through the `sideway` crate (which loads `libibverbs.so.1` at run
//! time). One RC queue pair, one completion queue shared by send and receive, one registered
//! buffer; a completion channel when event polling is asked for.
//!
//! Without the library, without kernel RDMA support or without a device, [`probe`] and
//! [`VerbsEndpoint::open`] fail with one line that says which of these is missing.

use std::collections::VecDeque;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Duration;

use rdma_mummy_sys::{ibv_ack_cq_events, ibv_cq, ibv_get_cq_event, ibv_req_notify_cq};
use sideway::ibverbs::address::{AddressHandleAttribute, Gid};
use sideway::ibverbs::completion::{BasicCompletionQueue, CompletionChannel, CompletionQueue, PollCompletionQueueError};
use sideway::ibverbs::device::{DeviceInfo, DeviceList};
use sideway::ibverbs::device_context::DeviceContext;
use sideway::ibverbs::memory_region::MemoryRegion;
use sideway::ibverbs::protection_domain::ProtectionDomain;
use sideway::ibverbs::queue_pair::{
    BasicQueuePair, PostSendGuard, QueuePair, QueuePairAttribute, QueuePairState, SetScatterGatherEntry, WorkRequestFlags,
};
use sideway::ibverbs::AccessFlags;

use super::{BackendError, BackendKind, Completion, Endpoint, EndpointConfig, QpState, SendWr, WcOpcode, WcStatus};
use crate::types::{Op, QpInfo};

fn verbs_err(call: &'static str, e: impl std::fmt::Display) -> BackendError {
    BackendError::Verbs { call, err: std::io::Error::other(e.to_string()) }
}

/// Why no device can be used, in one line, or the device list.
fn device_list() -> Result<DeviceList, BackendError> {
    let list = DeviceList::new().map_err(|e| {
        let os = std::io::Error::last_os_error().raw_os_error();
        BackendError::Unavailable(match os {
            Some(libc::EOPNOTSUPP) => format!(
                "libibverbs.so.1 could not be loaded ({e}); install rdma-core's libibverbs1 and a provider, or use --backend emulated"
            ),
            Some(libc::ENOSYS) => "the kernel has no RDMA (uverbs) support; load an RDMA driver (e.g. rdma_rxe for Soft-RoCE) or use --backend emulated".into(),
            _ => format!("ibv_get_device_list failed ({e}); use --backend emulated on machines without RDMA"),
        })
    })?;
    if list.is_empty() {
        return Err(BackendError::Unavailable(
            "no RDMA device found (ibv_get_device_list returned none); this machine has no RDMA NIC or Soft-RoCE link — use --backend emulated".into(),
        ));
    }
    Ok(list)
}

/// Checks that the device exists before any connection is made; returns its name.
pub fn probe(device: Option<&str>) -> Result<String, BackendError> {
    let list = device_list()?;
    let names: Vec<String> = list.iter().map(|d| d.name()).collect();
    match device {
        None => Ok(names[0].clone()),
        Some(d) if names.iter().any(|n| n == d) => Ok(d.to_string()),
        Some(d) => Err(BackendError::Unavailable(format!("RDMA device '{d}' not found (devices: {})", names.join(", ")))),
    }
}

/// A real RC queue pair. Fields drop in declaration order: queue pair before its completion
/// queue, memory region and protection domain; the buffer last.
pub struct VerbsEndpoint {
    qp: BasicQueuePair,
    cq: Arc<BasicCompletionQueue>,
    mr: Arc<MemoryRegion>,
    _pd: Arc<ProtectionDomain>,
    channel: Option<Arc<CompletionChannel>>,
    ctx: Arc<DeviceContext>,
    buf: Vec<u8>,
    state: QpState,
    info: QpInfo,
    name: String,
    ib_port: u8,
    gid_index: u32,
    unacked_events: u32,
    /// Completions taken off the CQ but not yet handed out. sideway's `start_poll` takes up to 32
    /// completions off the CQ with one `ibv_poll_cq`; a caller that asks for fewer must get the
    /// rest on its next poll, or they are lost (the SEND server stopped at 176 of 200 messages:
    /// whenever two receive completions were queued at once, the second was dropped).
    pending: VecDeque<Completion>,
}

impl VerbsEndpoint {
    /// Opens the device and creates PD, buffer + MR, (channel,) CQ and the RC QP in RESET.
    pub fn open(cfg: &EndpointConfig) -> Result<VerbsEndpoint, BackendError> {
        let name = probe(cfg.device.as_deref())?;
        let list = device_list()?;
        let dev = list
            .iter()
            .find(|d| d.name() == name)
            .ok_or_else(|| BackendError::Unavailable(format!("RDMA device '{name}' vanished")))?;
        let ctx = dev.open().map_err(|e| verbs_err("ibv_open_device", e))?;
        let pd = ctx.alloc_pd().map_err(|e| verbs_err("ibv_alloc_pd", e))?;
        let buf = vec![0u8; cfg.buf_size.bytes() as usize];
        // SAFETY: `buf` lives in the endpoint and is dropped after the MR (field order), and its heap
        // allocation never moves; the NIC may write into it only while the MR exists.
        let mr = unsafe {
            pd.reg_mr(
                buf.as_ptr() as usize,
                buf.len(),
                AccessFlags::LocalWrite | AccessFlags::RemoteWrite | AccessFlags::RemoteRead,
            )
        }
        .map_err(|e| verbs_err("ibv_reg_mr", e))?;
        let channel = match cfg.poll {
            crate::types::PollMode::Event => {
                let ch = ctx.create_comp_channel().map_err(|e| verbs_err("ibv_create_comp_channel", e))?;
                ch.set_nonblocking(true).map_err(|e| verbs_err("fcntl(O_NONBLOCK)", e))?;
                Some(ch)
            }
            crate::types::PollMode::Busy => None,
        };
        let mut cqb = ctx.create_cq_builder();
        cqb.setup_cqe(cfg.rx_depth + cfg.tx_depth + 1);
        if let Some(ch) = &channel {
            cqb.setup_comp_channel(ch, 0);
        }
        let cq = cqb.build().map_err(|e| verbs_err("ibv_create_cq", e))?;
        let qp = pd
            .create_qp_builder()
            .setup_send_cq(Arc::clone(&cq))
            .setup_recv_cq(Arc::clone(&cq))
            .setup_max_send_wr(cfg.tx_depth)
            .setup_max_recv_wr(cfg.rx_depth)
            .build()
            .map_err(|e| verbs_err("ibv_create_qp", e))?;
        let port = ctx.query_port(cfg.ib_port).map_err(|e| verbs_err("ibv_query_port", e))?;
        let gid = ctx.query_gid(cfg.ib_port, cfg.gid_index).map_err(|e| verbs_err("ibv_query_gid", e))?;
        let info = QpInfo {
            lid: port.lid(),
            qpn: qp.qp_number(),
            psn: super::random24(),
            rkey: mr.rkey(),
            addr: buf.as_ptr() as u64,
            gid: gid.raw,
        };
        Ok(VerbsEndpoint {
            qp,
            cq,
            mr,
            _pd: pd,
            channel,
            ctx,
            buf,
            state: QpState::Reset,
            info,
            name,
            ib_port: cfg.ib_port,
            gid_index: cfg.gid_index,
            unacked_events: 0,
            pending: VecDeque::new(),
        })
    }

    fn cq_ptr(&self) -> *mut ibv_cq {
        // SAFETY: the CQ outlives `self.qp` and is only used while `self` is alive.
        unsafe { self.cq.cq().as_ptr() }
    }
}

fn wc_status(raw: u32) -> WcStatus {
    match raw {
        0 => WcStatus::Success,
        1 => WcStatus::LocalLengthError,
        5 => WcStatus::FlushError,
        9 => WcStatus::RemoteInvalidRequest,
        10 => WcStatus::RemoteAccessError,
        x => WcStatus::Other(x),
    }
}

fn wc_opcode(raw: u32) -> WcOpcode {
    match raw {
        0 => WcOpcode::Send,
        1 => WcOpcode::RdmaWrite,
        2 => WcOpcode::RdmaRead,
        129 => WcOpcode::RecvRdmaWithImm,
        _ => WcOpcode::Recv,
    }
}

impl Endpoint for VerbsEndpoint {
    fn kind(&self) -> BackendKind {
        BackendKind::Verbs
    }
    fn device_desc(&self) -> String {
        format!("{} port {} gid index {}", self.name, self.ib_port, self.gid_index)
    }
    fn local_info(&self) -> QpInfo {
        self.info
    }
    fn state(&self) -> QpState {
        self.state
    }
    fn to_init(&mut self) -> Result<(), BackendError> {
        let mut attr = QueuePairAttribute::new();
        attr.setup_state(QueuePairState::Init)
            .setup_pkey_index(0)
            .setup_port(self.ib_port)
            .setup_access_flags(AccessFlags::LocalWrite | AccessFlags::RemoteWrite | AccessFlags::RemoteRead);
        self.qp.modify(&attr).map_err(|e| verbs_err("ibv_modify_qp(INIT)", e))?;
        self.state = QpState::Init;
        Ok(())
    }
    fn to_rtr(&mut self, remote: &QpInfo) -> Result<(), BackendError> {
        let port = self.ctx.query_port(self.ib_port).map_err(|e| verbs_err("ibv_query_port", e))?;
        let mut attr = QueuePairAttribute::new();
        attr.setup_state(QueuePairState::ReadyToReceive)
            .setup_path_mtu(port.active_mtu())
            .setup_dest_qp_num(remote.qpn)
            .setup_rq_psn(remote.psn)
            .setup_max_dest_read_atomic(1)
            .setup_min_rnr_timer(12);
        let mut ah = AddressHandleAttribute::new();
        ah.setup_dest_lid(remote.lid).setup_port(self.ib_port).setup_service_level(0);
        if remote.gid != [0u8; 16] {
            let gid_index = u8::try_from(self.gid_index).map_err(|_| verbs_err("GID index", "above 255"))?;
            ah.setup_grh_src_gid_index(gid_index).setup_grh_dest_gid(&Gid { raw: remote.gid }).setup_grh_hop_limit(1);
        }
        attr.setup_address_vector(&ah);
        self.qp.modify(&attr).map_err(|e| verbs_err("ibv_modify_qp(RTR)", e))?;
        self.state = QpState::ReadyToReceive;
        Ok(())
    }
    fn to_rts(&mut self) -> Result<(), BackendError> {
        let mut attr = QueuePairAttribute::new();
        attr.setup_state(QueuePairState::ReadyToSend)
            .setup_sq_psn(self.info.psn)
            .setup_timeout(14)
            .setup_retry_cnt(7)
            .setup_rnr_retry(7)
            .setup_max_read_atomic(1);
        self.qp.modify(&attr).map_err(|e| verbs_err("ibv_modify_qp(RTS)", e))?;
        self.state = QpState::ReadyToSend;
        Ok(())
    }
    fn post_send(&mut self, wr: &SendWr) -> Result<(), BackendError> {
        if u64::from(wr.len) > self.buf.len() as u64 {
            return Err(BackendError::TooLong { len: wr.len, buf: self.buf.len() as u64 });
        }
        let (lkey, addr) = (self.mr.lkey(), self.buf.as_ptr() as u64);
        let mut guard = self.qp.start_post_send();
        let h = guard.construct_wr(wr.wr_id, WorkRequestFlags::Signaled);
        let local = match wr.op {
            Op::Write => h.setup_write(wr.rkey, wr.remote_addr),
            Op::WriteImm => h.setup_write_imm(wr.rkey, wr.remote_addr, wr.imm),
            Op::Read => h.setup_read(wr.rkey, wr.remote_addr),
            Op::Send => h.setup_send(),
        };
        // SAFETY: the SGE covers `len` bytes at the start of the registered buffer (checked above).
        unsafe { local.setup_sge(lkey, addr, wr.len) };
        guard.post().map_err(|e| verbs_err("ibv_post_send", e))
    }
    fn post_recv(&mut self, wr_id: u64, len: u32) -> Result<(), BackendError> {
        if u64::from(len) > self.buf.len() as u64 {
            return Err(BackendError::TooLong { len, buf: self.buf.len() as u64 });
        }
        let (lkey, addr) = (self.mr.lkey(), self.buf.as_ptr() as u64);
        let mut guard = self.qp.start_post_recv();
        let h = guard.construct_wr(wr_id);
        // SAFETY: the SGE covers `len` bytes at the start of the registered buffer (checked above).
        unsafe { h.setup_sge(lkey, addr, len) };
        guard.post().map_err(|e| verbs_err("ibv_post_recv", e))
    }
    fn poll_cq(&mut self, out: &mut Vec<Completion>, max: usize) -> Result<usize, BackendError> {
        if self.pending.is_empty() {
            let poller = match self.cq.start_poll() {
                Ok(p) => p,
                Err(PollCompletionQueueError::CompletionQueueEmpty) => return Ok(0),
                Err(e) => return Err(verbs_err("ibv_poll_cq", e)),
            };
            // Everything this poll took off the CQ is kept: dropping the poller drops its batch.
            for wc in poller {
                let opcode = wc_opcode(wc.opcode());
                self.pending.push_back(Completion {
                    wr_id: wc.wr_id(),
                    status: wc_status(wc.status()),
                    opcode,
                    byte_len: wc.byte_len(),
                    imm: (opcode == WcOpcode::RecvRdmaWithImm).then(|| wc.imm_data()),
                });
            }
        }
        let n = max.min(self.pending.len());
        out.extend(self.pending.drain(..n));
        Ok(n)
    }
    fn req_notify_cq(&mut self) -> Result<(), BackendError> {
        if self.channel.is_none() {
            return Err(verbs_err("ibv_req_notify_cq", "the endpoint was opened for busy polling"));
        }
        // SAFETY: the CQ pointer is valid for the endpoint's lifetime.
        let rc = unsafe { ibv_req_notify_cq(self.cq_ptr(), 0) };
        if rc != 0 {
            return Err(BackendError::Verbs { call: "ibv_req_notify_cq", err: std::io::Error::from_raw_os_error(rc) });
        }
        Ok(())
    }
    fn wait_cq_event(&mut self, timeout: Duration) -> Result<bool, BackendError> {
        let Some(ch) = &self.channel else {
            return Err(verbs_err("ibv_get_cq_event", "the endpoint was opened for busy polling"));
        };
        let mut pfd = libc::pollfd { fd: ch.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: one valid pollfd.
        let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
        if rc < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                return Ok(false);
            }
            return Err(BackendError::Verbs { call: "poll(completion channel)", err: e });
        }
        if rc == 0 {
            return Ok(false);
        }
        let mut cq: *mut ibv_cq = std::ptr::null_mut();
        let mut cq_ctx: *mut libc::c_void = std::ptr::null_mut();
        // SAFETY: the channel is valid; the out-pointers point at locals.
        let rc = unsafe { ibv_get_cq_event(ch.comp_channel().as_ptr(), &mut cq, &mut cq_ctx) };
        if rc != 0 {
            return Ok(false);
        }
        self.unacked_events += 1;
        // SAFETY: `cq` was returned by ibv_get_cq_event for our CQ; acknowledging is required before destroy.
        unsafe { ibv_ack_cq_events(cq, self.unacked_events) };
        self.unacked_events = 0;
        Ok(true)
    }
}
