//! `schedlab sched`'s seed-verbatim command line in depth: the scheduler part's -flowsets and
//! -alg/-alpha values, --client-cpus lists, and whole argument vectors (one argument per line)
//! whose result is then completed with a traffic program given as text. Any panic is a bug; an
//! accepted command line has flows and limits the harness can allocate.
#![no_main]
use libfuzzer_sys::fuzz_target;
use schedlab_fuzz::{str_args, text};
use schedlab_policy::{BuildOptions, Dialect, PolicySpec};
use schedlab_sched::config::{parse_argv, parse_cpu_list, parse_flowsets, queue_limits};
use schedlab_sched::traffic;

fuzz_target!(|data: &[u8]| {
    let whole = text(data);
    let first = whole.lines().next().unwrap_or("");
    if let Ok(f) = parse_flowsets(first) {
        assert!(!f.is_empty());
        assert!(f.iter().all(|w| w.weight >= 1 && w.max_len >= 1 && w.max_len <= traffic::MAX_PKT_LEN), "{first}");
    }
    let mut words = first.split_whitespace();
    if let Some(name) = words.next() {
        let alpha = words.next().and_then(|a| a.parse::<f64>().ok());
        if let Ok(alg) = PolicySpec::parse_with_alpha(name, alpha, Dialect::Sched) {
            assert_eq!(PolicySpec::parse(&alg.name(), Dialect::Sched).as_ref(), Ok(&alg), "{name}: the name parses back");
        }
    }
    if let Ok(c) = parse_cpu_list(first) {
        let mut d = c.clone();
        d.sort_unstable();
        d.dedup();
        assert_eq!(d.len(), c.len(), "CPUs are listed once");
    }
    let argv = str_args(data);
    if let Ok(Some(a)) = parse_argv(&argv) {
        assert!(a.threads >= 1 && a.queue >= 1 && a.batch >= 1);
        let (hi, lo) = queue_limits(a.qmax, a.qmin, a.flows.len(), a.threads);
        assert!(hi >= 1 && lo < hi, "queue limits {hi} {lo}");
        let _ = a.alg.build::<u32>(&BuildOptions::default().flows(&a.flows));
        // The traffic program every client would run without -f.
        let t = traffic::parse(traffic::DEFAULT_PROGRAM, "default", a.threads).expect("the default program parses");
        assert_eq!(t.programs.len(), a.threads);
    }
});
