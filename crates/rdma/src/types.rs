//! Units and small value types at the boundary: the operation, the message size, the polling
//! mode, and the queue-pair address that the two ends exchange before they talk.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};
use std::str::FromStr;

use schedlab_report::results::rdma::{RdmaOp, RdmaPoll, RdmaQp};
use serde::Serialize;
use thiserror::Error;

/// Errors in the values a user types or a peer sends.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ParseError {
    #[error("unknown RDMA operation '{0}': use -O 0 (WRITE), 1 (READ), 2 (WRITE_IMM) or 3 (SEND)")]
    UnknownOp(String),
    #[error("message size must be a positive number of bytes (got '{0}')")]
    BadSize(String),
    #[error("message size {0} bytes is larger than one RDMA work request can carry (max {max} bytes)", max = u32::MAX)]
    SizeTooLarge(u64),
    #[error("queue-pair address line is malformed: {0}")]
    BadQpInfo(String),
}

/// The RDMA operation each work request performs (`-O`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Op {
    /// RDMA WRITE into the server's registered buffer; the server sees no completion.
    Write,
    /// RDMA READ from the server's registered buffer; the server sees no completion.
    Read,
    /// RDMA WRITE with immediate: consumes one pre-posted receive at the server.
    WriteImm,
    /// SEND: consumes one pre-posted receive at the server, data lands in the receive buffer.
    Send,
}

impl Op {
    /// All operations, in `-O` number order.
    pub const ALL: [Op; 4] = [Op::Write, Op::Read, Op::WriteImm, Op::Send];

    /// The `-O` number.
    pub fn number(self) -> u8 {
        match self {
            Op::Write => 0,
            Op::Read => 1,
            Op::WriteImm => 2,
            Op::Send => 3,
        }
    }

    /// The name used in output and in the wire protocol.
    pub fn name(self) -> &'static str {
        match self {
            Op::Write => "WRITE",
            Op::Read => "READ",
            Op::WriteImm => "WRITE_IMM",
            Op::Send => "SEND",
        }
    }

    /// perftest's test title for this operation.
    pub fn title(self) -> &'static str {
        match self {
            Op::Write => "RDMA_Write BW Test",
            Op::Read => "RDMA_Read BW Test",
            Op::WriteImm => "RDMA_Write_Imm BW Test",
            Op::Send => "Send BW Test",
        }
    }

    /// True when the receiver must pre-post receives (and sees one completion per message).
    pub fn needs_receives(self) -> bool {
        matches!(self, Op::WriteImm | Op::Send)
    }
}

impl From<Op> for RdmaOp {
    fn from(op: Op) -> RdmaOp {
        match op {
            Op::Write => RdmaOp::Write,
            Op::Read => RdmaOp::Read,
            Op::WriteImm => RdmaOp::WriteImm,
            Op::Send => RdmaOp::Send,
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Op {
    type Err = ParseError;
    /// Accepts the `-O` number or the name (case-insensitive).
    fn from_str(s: &str) -> Result<Op, ParseError> {
        let t = s.trim();
        Op::ALL
            .into_iter()
            .find(|op| t == op.number().to_string() || t.eq_ignore_ascii_case(op.name()))
            .ok_or_else(|| ParseError::UnknownOp(s.to_string()))
    }
}

/// Bytes per message: positive and small enough for one work request's scatter/gather entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct MsgSize(u32);

impl MsgSize {
    /// A size; zero is refused.
    pub fn new(bytes: u64) -> Result<MsgSize, ParseError> {
        if bytes == 0 {
            return Err(ParseError::BadSize("0".into()));
        }
        u32::try_from(bytes).map(MsgSize).map_err(|_| ParseError::SizeTooLarge(bytes))
    }
    /// The size in bytes.
    pub fn bytes(self) -> u32 {
        self.0
    }
}

impl FromStr for MsgSize {
    type Err = ParseError;
    /// A byte count, optionally with a binary suffix: `4096`, `64K`, `1M`, `1G`.
    fn from_str(s: &str) -> Result<MsgSize, ParseError> {
        let t = s.trim();
        let (digits, mult) = match t.char_indices().last() {
            Some((i, c)) if c.is_ascii_alphabetic() => {
                let m: u64 = match c.to_ascii_uppercase() {
                    'K' => 1 << 10,
                    'M' => 1 << 20,
                    'G' => 1 << 30,
                    _ => return Err(ParseError::BadSize(s.to_string())),
                };
                (&t[..i], m)
            }
            _ => (t, 1),
        };
        let n: u64 = digits.parse().map_err(|_| ParseError::BadSize(s.to_string()))?;
        MsgSize::new(n.checked_mul(mult).ok_or_else(|| ParseError::BadSize(s.to_string()))?).map_err(|e| {
            if let ParseError::BadSize(_) = e {
                ParseError::BadSize(s.to_string())
            } else {
                e
            }
        })
    }
}

/// How completions are waited for (`-e`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PollMode {
    /// Spin on the completion queue (the default).
    Busy,
    /// Arm the completion queue and sleep until the completion event arrives.
    Event,
}

impl PollMode {
    /// Name for output.
    pub fn name(self) -> &'static str {
        match self {
            PollMode::Busy => "busy",
            PollMode::Event => "event",
        }
    }
}

impl From<PollMode> for RdmaPoll {
    fn from(p: PollMode) -> RdmaPoll {
        match p {
            PollMode::Busy => RdmaPoll::Busy,
            PollMode::Event => RdmaPoll::Event,
        }
    }
}

impl From<QpInfo> for RdmaQp {
    fn from(q: QpInfo) -> RdmaQp {
        RdmaQp { lid: q.lid, qpn: q.qpn, psn: q.psn, rkey: q.rkey, addr: q.addr, gid: q.gid }
    }
}

/// What one end tells the other before connecting its reliable-connection queue pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct QpInfo {
    /// Local identifier (InfiniBand). The emulated backend puts its wire's TCP port here.
    pub lid: u16,
    /// Queue pair number (24 bits).
    pub qpn: u32,
    /// Initial packet sequence number (24 bits).
    pub psn: u32,
    /// Remote key of the registered buffer.
    pub rkey: u32,
    /// Virtual address of the registered buffer.
    pub addr: u64,
    /// Global identifier (RoCE: the IPv4-mapped or IPv6 address of the port).
    pub gid: [u8; 16],
}

impl QpInfo {
    /// The GID as an IPv6 address (IPv4-mapped addresses come back as IPv4).
    pub fn gid_ip(&self) -> IpAddr {
        let v6 = Ipv6Addr::from(self.gid);
        match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        }
    }

    /// The GID for an IP address (IPv4 becomes IPv4-mapped, as RoCE v2 does).
    pub fn gid_of(ip: IpAddr) -> [u8; 16] {
        match ip {
            IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
            IpAddr::V6(v6) => v6.octets(),
        }
    }

    /// The GID in the usual colon form (`0000:0000:...`).
    pub fn gid_string(&self) -> String {
        self.gid.chunks(2).map(|c| format!("{:02x}{:02x}", c[0], c[1])).collect::<Vec<_>>().join(":")
    }

    /// One line of the exchange protocol.
    pub fn to_line(&self) -> String {
        format!(
            "QP lid={:#06x} qpn={:#08x} psn={:#08x} rkey={:#010x} addr={:#018x} gid={}",
            self.lid,
            self.qpn,
            self.psn,
            self.rkey,
            self.addr,
            self.gid_string()
        )
    }

    /// Parses [`QpInfo::to_line`]'s output.
    pub fn from_line(line: &str) -> Result<QpInfo, ParseError> {
        let bad = |what: &str| ParseError::BadQpInfo(format!("{what} in '{}'", line.trim()));
        let mut words = line.split_whitespace();
        if words.next() != Some("QP") {
            return Err(bad("missing 'QP' tag"));
        }
        let mut info = QpInfo { lid: 0, qpn: 0, psn: 0, rkey: 0, addr: 0, gid: [0; 16] };
        let mut seen = 0u8;
        for w in words {
            let (k, v) = w.split_once('=').ok_or_else(|| bad("field without '='"))?;
            let hex = |v: &str| u64::from_str_radix(v.trim_start_matches("0x"), 16).map_err(|_| bad(k));
            match k {
                "lid" => info.lid = u16::try_from(hex(v)?).map_err(|_| bad(k))?,
                "qpn" => info.qpn = u32::try_from(hex(v)?).map_err(|_| bad(k))?,
                "psn" => info.psn = u32::try_from(hex(v)?).map_err(|_| bad(k))?,
                "rkey" => info.rkey = u32::try_from(hex(v)?).map_err(|_| bad(k))?,
                "addr" => info.addr = hex(v)?,
                "gid" => {
                    let parts: Vec<&str> = v.split(':').collect();
                    if parts.len() != 8 {
                        return Err(bad("gid"));
                    }
                    for (i, p) in parts.iter().enumerate() {
                        let x = u16::from_str_radix(p, 16).map_err(|_| bad("gid"))?;
                        info.gid[2 * i..2 * i + 2].copy_from_slice(&x.to_be_bytes());
                    }
                }
                _ => return Err(bad("unknown field")),
            }
            seen |= match k {
                "lid" => 1,
                "qpn" => 2,
                "psn" => 4,
                "rkey" => 8,
                "addr" => 16,
                _ => 32,
            };
        }
        if seen != 63 {
            return Err(bad("missing field"));
        }
        Ok(info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_parse_by_number_and_name() {
        for op in Op::ALL {
            assert_eq!(op.number().to_string().parse::<Op>(), Ok(op));
            assert_eq!(op.name().to_lowercase().parse::<Op>(), Ok(op));
        }
        let e = "4".parse::<Op>().unwrap_err();
        assert!(e.to_string().contains("unknown RDMA operation '4'"), "{e}");
        assert!("".parse::<Op>().is_err());
    }

    #[test]
    fn sizes_refuse_zero_and_overflow() {
        assert_eq!("4096".parse::<MsgSize>().unwrap().bytes(), 4096);
        assert_eq!("64K".parse::<MsgSize>().unwrap().bytes(), 65536);
        assert_eq!("1G".parse::<MsgSize>().unwrap().bytes(), 1 << 30);
        assert_eq!("1000000000".parse::<MsgSize>().unwrap().bytes(), 1_000_000_000);
        assert!(matches!("0".parse::<MsgSize>(), Err(ParseError::BadSize(_))));
        assert!(matches!("-5".parse::<MsgSize>(), Err(ParseError::BadSize(_))));
        assert!(matches!("8G".parse::<MsgSize>(), Err(ParseError::SizeTooLarge(_))));
        assert!(matches!("12X".parse::<MsgSize>(), Err(ParseError::BadSize(_))));
    }

    #[test]
    fn qp_info_round_trips() {
        let info = QpInfo {
            lid: 0x1234,
            qpn: 0xabcdef,
            psn: 0x123456,
            rkey: 0xdeadbeef,
            addr: 0x7fff_0000_1000,
            gid: QpInfo::gid_of("10.0.0.7".parse().unwrap()),
        };
        let line = info.to_line();
        assert_eq!(QpInfo::from_line(&line).unwrap(), info);
        assert_eq!(info.gid_ip(), "10.0.0.7".parse::<IpAddr>().unwrap());
        assert!(QpInfo::from_line("QP lid=0x1 qpn=0x2").is_err());
        assert!(QpInfo::from_line("XX").is_err());
        assert!(QpInfo::from_line(&line.replace("qpn=", "qpn=zz")).is_err());
    }
}
