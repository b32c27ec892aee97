//! What one `predict` run is: plain data, built by [`crate::cli`] from the command line or by code.

use schedlab_policy::{FlowWeight, PolicySpec};
use schedlab_sched::config::Args;
use schedlab_sched::harness;
use schedlab_sched::traffic::Spec;
use schedlab_sched::units::{Bps, Nanos};

/// One workload, the policies to answer it with, and how often.
#[derive(Debug)]
pub struct Config {
    /// The harness's settings (`schedlab sched`'s, traffic program loaded), prepared by
    /// [`Config::new`]: messages and the scheduler's trace recorded, the drain appended.
    pub sched: Args,
    /// The policies, each run on the harness and through the simulator.
    pub algs: Vec<PolicySpec>,
    /// Silence appended to every client's program so queues empty.
    pub drain: Nanos,
    /// Runs per policy (`--repeat`, at least 1); the policies take turns.
    pub repeat: usize,
    /// The command line recorded in the result (program name first; empty from code).
    pub command: Vec<String>,
}

impl Config {
    /// Prepares `sched`'s settings for a comparison: every message and the scheduler's trace are
    /// recorded, no timestamp files are written, and `drain` of silence ends every client's program.
    pub fn new(mut sched: Args, algs: Vec<PolicySpec>, drain: Nanos, repeat: usize) -> Config {
        let cfg = &mut sched.cfg;
        cfg.messages = true;
        cfg.trace = true;
        cfg.ts_limit = 0;
        for prog in cfg.traffic.programs.iter_mut() {
            if !prog.is_empty() {
                prog.push(Spec::fixed(drain, Bps(0), 1500, 1));
            }
        }
        Config { sched, algs, drain, repeat: repeat.max(1), command: Vec::new() }
    }

    /// The harness's configuration for one policy; flow-level policies without enough `-flowsets`
    /// get weight 1 per client.
    pub fn harness(&self, alg: &PolicySpec) -> harness::Config {
        let mut cfg = self.sched.cfg.clone();
        cfg.alg = alg.clone();
        // The simulator has no scheduler queue limit: run the harness without one (sched's default
        // -qmax of 20 per flow would drop packets the model keeps).
        cfg.qmax = u64::MAX;
        cfg.qmin = 0;
        if alg.flow_level() && cfg.flows.len() < cfg.threads {
            let max_len = cfg.traffic.programs.iter().flatten().map(|s| s.pkt_len).max().unwrap_or(1500);
            cfg.flows = vec![FlowWeight::new(1, max_len); cfg.threads];
        }
        cfg
    }
}
