//! The policy choice: `-alg` and the payload the policy schedules.

use schedlab_policy::{Alpha, AlphaSched, AnyPolicy, Drr, Fifo, FlowWeight, Qfq, Wf2qPlus};

/// The scheduling algorithm (`-alg`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Alg {
    Fifo,
    /// Deficit round robin, quantum = weight × max_len.
    Rr,
    Wf2qp,
    Qfq,
    /// Alpha scheduling with a fixed α; a client's burst is one message.
    Alpha(Alpha),
    /// Shortest remaining first (α = ∞); a client's burst is one message.
    Sf,
}

impl Alg {
    /// Bursts are single messages (message-level policies).
    pub fn message_level(self) -> bool {
        matches!(self, Alg::Alpha(_) | Alg::Sf)
    }
    /// Needs `-flowsets`.
    pub fn flow_level(self) -> bool {
        matches!(self, Alg::Rr | Alg::Wf2qp | Alg::Qfq)
    }
    /// Name as given to `-alg`.
    pub fn name(self) -> String {
        match self {
            Alg::Fifo => "fifo".into(),
            Alg::Rr => "rr".into(),
            Alg::Wf2qp => "wf2qp".into(),
            Alg::Qfq => "qfq".into(),
            Alg::Alpha(a) => format!("alpha {a}"),
            Alg::Sf => "sf".into(),
        }
    }
    /// The policy, with the very code the simulator runs.
    pub fn build<T: Copy>(self, flows: &[FlowWeight]) -> AnyPolicy<T> {
        match self {
            Alg::Fifo => AnyPolicy::Fifo(Fifo::new()),
            Alg::Rr => AnyPolicy::Drr(Drr::new(flows)),
            Alg::Wf2qp => AnyPolicy::Wf2qPlus(Wf2qPlus::new(flows)),
            Alg::Qfq => AnyPolicy::Qfq(Qfq::new(flows)),
            Alg::Alpha(a) => AnyPolicy::Alpha(AlphaSched::with_alpha(a)),
            Alg::Sf => AnyPolicy::Alpha(AlphaSched::shortest_first()),
        }
    }
}

/// The policy's payload: which client, which ring position (first packet of the message).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Item {
    pub client: u32,
    pub pos: u64,
}
