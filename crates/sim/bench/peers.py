#!/usr/bin/env python3
"""Same-run peer benchmark: schedlab sim against Ciw, SimPy and ns-3 on the report's single outlet.

One outlet, Poisson message arrivals with the report's lengths (1-5 packets uniform with 90%, 20
packets with 10%; mean 4.7), FIFO, deterministic one-time-unit packet service (`schedlab sim
--service det`), at each load, every simulator run as a whole process for the same number of
arrival packets. It then

  * checks agreement: per load and message length, every pair of simulators' 95% intervals
    (batch means within a run, pooled over the rounds, whose seeds differ) overlap, and each mean lies within 2 half-widths of M/G/1 theory (printed by
    schedlab sim; recomputed here, Pollaczek-Khinchine, and the two must match);
  * prints arrival packets per CPU second of each process (user + sys of the child: one core,
    since every peer and `schedlab sim --threads 1` is single-threaded), median over --reps runs,
    the peers run alternately (order rotated per round), and each peer's ratio to schedlab.

A priority row: Ciw's preemptive-resume priority classes by message length (shorter first), and
the same in SimPy (a PreemptiveResource), checked against each other and the M/G/1
preemptive-resume priority formula, beside schedlab's SF, which is
*not* the same discipline (see docs/guide/sim.md, "Against other simulators").

  crates/sim/bench/peers.py                 # 500k packets per run, 3 rounds: about 5 minutes here
  crates/sim/bench/peers.py --big           # 2M packets per run, 5 rounds (about 15 CPU minutes)
  crates/sim/bench/peers.py --self-test     # the agreement logic and theory on fixed numbers

Ciw and SimPy go into a venv under target/peers-venv (pip, never system-wide); the ns-3 program is
compiled with g++ against Debian's libns3-dev (pkg-config). A peer that cannot be set up prints
SKIP with the reason. Every child has a timeout (--timeout). Exit status 1 when a check fails.
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
LENGTHS = [1, 2, 3, 4, 5, 20]
PRETTY = {"ciw": "Ciw", "simpy": "SimPy", "ns3": "ns-3"}
PROBS = [0.18, 0.18, 0.18, 0.18, 0.18, 0.10]


def fifo_theory(load):
    """Mean latency per length (arrival to the start of the last packet), M/G/1 FIFO, message service = length."""
    es = sum(l * p for l, p in zip(LENGTHS, PROBS))
    es2 = sum(l * l * p for l, p in zip(LENGTHS, PROBS))
    lam = load / es
    wq = lam * es2 / (2 * (1 - load))
    return {l: wq + l - 1 for l in LENGTHS}


def prio_theory(load):
    """M/G/1 preemptive-resume priority, class = length, shorter first: mean sojourn - 1 per length."""
    es = sum(l * p for l, p in zip(LENGTHS, PROBS))
    lam = load / es
    out = {}
    for k, l in enumerate(LENGTHS):
        sig_hi = sum(lam * PROBS[i] * LENGTHS[i] for i in range(k + 1))
        sig_lo = sig_hi - lam * PROBS[k] * l
        r = sum(lam * PROBS[i] * LENGTHS[i] ** 2 / 2 for i in range(k + 1))
        out[l] = l / (1 - sig_lo) + r / ((1 - sig_lo) * (1 - sig_hi)) - 1
    return out


def agreement(results, theory, names):
    """results: name -> {length: (mean, hw)}. Returns (ok, lines): pairwise interval overlap, theory within 2 hw."""
    ok = True
    notes = []
    for l in LENGTHS:
        for i, a in enumerate(names):
            ma, ha = results[a][l]
            if theory is not None and abs(ma - theory[l]) > 2 * ha:
                ok = False
                notes.append(f"length {l}: {a} {ma:.3f} ± {ha:.3f} is more than 2 half-widths from theory {theory[l]:.3f}")
            for b in names[i + 1:]:
                mb, hb = results[b][l]
                if abs(ma - mb) > ha + hb:
                    ok = False
                    notes.append(f"length {l}: {a} {ma:.3f} ± {ha:.3f} and {b} {mb:.3f} ± {hb:.3f} do not overlap")
    return ok, notes


def pool(runs):
    """Independent runs (seeds 1..n) of equal length -> (packets per run, {length: (mean, hw)}, analytic):
    the mean of the runs' means, and a half-width sqrt(sum hw_i^2) / n (independent estimates)."""
    n = len(runs)
    cells = {}
    for l in LENGTHS:
        ms = [r[1][l][0] for r in runs]
        hs = [r[1][l][1] for r in runs]
        cells[l] = (sum(ms) / n, sum(h * h for h in hs) ** 0.5 / n)
    return statistics.median_low(r[0] for r in runs), cells, runs[0][2]


def self_test():
    t = fifo_theory(0.5)
    assert abs(t[1] - 5.308510638297872) < 1e-12, t  # schedlab sim's printed FIFO (theory), det service, 50%
    assert abs(fifo_theory(0.9)[20] - (0.9 / 4.7 * 49.9 / 0.2 + 19)) < 1e-9  # lambda E[S^2] / 2(1 - rho) + 19
    p = prio_theory(0.5)
    # the shortest class sees only its own kind: M/D/1 with service 1 and load lam*0.18
    lam1 = 0.5 / 4.7 * 0.18
    assert abs(p[1] - (1 + lam1 / (2 * (1 - lam1)) - 1)) < 1e-12, p
    assert p[1] < p[2] < p[5] < p[20]
    good = {"a": {l: (t[l], 0.3) for l in LENGTHS}, "b": {l: (t[l] + 0.5, 0.3) for l in LENGTHS}}
    assert agreement(good, t, ["a", "b"])[0]
    bad = {"a": good["a"], "b": {l: (t[l] + 0.7, 0.3) for l in LENGTHS}}
    ok, notes = agreement(bad, t, ["a", "b"])
    assert not ok and any("do not overlap" in n for n in notes), notes
    far = {"a": {l: (t[l] + 0.7, 0.3) for l in LENGTHS}}
    ok, notes = agreement(far, t, ["a"])
    assert not ok and any("from theory" in n for n in notes), notes
    pooled = pool([(10, {l: (1.0, 0.3) for l in LENGTHS}, None), (12, {l: (2.0, 0.4) for l in LENGTHS}, None)])
    assert pooled[0] == 10 and abs(pooled[1][1][0] - 1.5) < 1e-12 and abs(pooled[1][5][1] - 0.25) < 1e-12, pooled
    print("peers.py self-test: ok")


def run_child(cmd, timeout):
    """Runs cmd; returns (stdout, cpu seconds of the child, wall seconds). Raises on failure or timeout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return p.stdout, cpu, wall


def setup_python(venv, timeout):
    py = venv / "bin" / "python"
    have = py.exists() and subprocess.run([py, "-c", "import ciw, simpy"], capture_output=True).returncode == 0
    if not have:
        try:
            if not py.exists():
                subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=timeout)
            r = subprocess.run([py, "-m", "pip", "install", "-q", "ciw", "simpy"], capture_output=True, text=True,
                               timeout=timeout)
            if r.returncode != 0:
                return None, f"pip install ciw simpy into {venv} failed: {r.stderr.strip()[-300:]}"
        except (subprocess.SubprocessError, OSError) as e:
            return None, f"could not create the venv {venv}: {e}"
    versions = {}
    for mod in ("ciw", "simpy"):
        r = subprocess.run([py, "-c", f"import {mod}; print({mod}.__version__)"], capture_output=True, text=True)
        versions[mod] = r.stdout.strip() if r.returncode == 0 else None
    return py, versions


def setup_ns3(out, timeout):
    src = HERE / "peers_ns3.cc"
    mods = ["ns3-core", "ns3-network", "ns3-point-to-point"]
    if shutil.which("pkg-config") is None or shutil.which("g++") is None:
        return None, "pkg-config or g++ not found"
    r = subprocess.run(["pkg-config", "--modversion", "ns3-core"], capture_output=True, text=True)
    if r.returncode != 0:
        return None, "ns-3 not found by pkg-config (Debian: apt-get install libns3-dev)"
    version = r.stdout.strip()
    if out.exists() and out.stat().st_mtime >= src.stat().st_mtime:
        return out, version
    cflags = subprocess.run(["pkg-config", "--cflags"] + mods, capture_output=True, text=True, check=True).stdout.split()
    libs = subprocess.run(["pkg-config", "--libs"] + mods, capture_output=True, text=True, check=True).stdout.split()
    # Debian's .pc files name libgsl.so, which only libgsl-dev installs; libns3 links GSL itself.
    libs = [t for t in libs if not t.startswith("/") or os.path.exists(t)]
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        c = subprocess.run(["g++", "-O2", "-std=c++17", "-o", str(out), str(src)] + cflags + libs,
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"compiling {src} took longer than {timeout} s"
    if c.returncode != 0:
        return None, f"compiling {src} failed: {c.stderr.strip()[-300:]}"
    return out, version


def parse_peer(stdout):
    d = json.loads(stdout)
    return d["packets"], {int(k): (v["mean"], v["hw"]) for k, v in d["lengths"].items()}


def parse_schedlab(stdout, label):
    d = json.loads(stdout)
    st = d["statistics"][0]
    strat = next(s for s in st["strategies"] if s["label"] == label)
    cells = {c["len"]: (c["mean"], c["ci95"]) for c in strat["cells"] if c["len"] in LENGTHS}
    analytic = {c["len"]: c.get("analytic") for c in strat["cells"] if c["len"] in LENGTHS}
    return d["runs"][0]["packets_in"], cells, analytic


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog="See the module docstring for details.")
    ap.add_argument("--packets", type=int, default=500_000, help="arrival packets per run [500000]")
    ap.add_argument("--reps", type=int, default=3, help="rounds, seeds 1..N: speed is the median, agreement pools them [3]")
    ap.add_argument("--loads", default="50,90", help="loads in percent [50,90]")
    ap.add_argument("--big", action="store_true", help="2M packets, 5 rounds (about 15 CPU minutes; far longer in wall time on a shared machine)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds allowed to each child [600]")
    ap.add_argument("--schedlab", default=os.environ.get("SCHEDLAB", str(ROOT / "target/release/schedlab")),
                    help="the binary [$SCHEDLAB or target/release/schedlab]")
    ap.add_argument("--venv", default=str(ROOT / "target/peers-venv"), help="venv for Ciw and SimPy [target/peers-venv]")
    ap.add_argument("--only", default="schedlab,ciw,simpy,ns3", help="peers to run beside schedlab (always run) [all]")
    ap.add_argument("--no-prio", action="store_true", help="leave out the priority row")
    ap.add_argument("--self-test", action="store_true", help="check the agreement logic and theory, run nothing")
    a = ap.parse_args()
    if a.self_test:
        self_test()
        return 0
    if a.big:
        a.packets, a.reps = 2_000_000, 5
    loads = [float(x) for x in a.loads.split(",")]
    only = set(a.only.split(","))

    peers = {}  # name -> (executable, version)
    skips = {}
    sl = Path(a.schedlab)
    if not sl.exists():
        print(f"schedlab: {sl} not found (cargo build --release -p schedlab, or --schedlab PATH)", file=sys.stderr)
        return 2
    ver = subprocess.run([sl, "--version"], capture_output=True, text=True).stdout.strip()
    if "ciw" in only or "simpy" in only:
        py, info = setup_python(Path(a.venv), a.timeout)
        for mod in ("ciw", "simpy"):
            if mod not in only:
                continue
            if py is None:
                skips[mod] = info
            elif info.get(mod) is None:
                skips[mod] = f"import {mod} failed in {a.venv}"
            else:
                peers[mod] = (py, info[mod])
    if "ns3" in only:
        exe, info = setup_ns3(ROOT / "target/peers/peers_ns3", a.timeout)
        if exe is None:
            skips["ns3"] = info
        else:
            peers["ns3"] = (exe, info)
    for name, why in skips.items():
        print(f"SKIP {name}: {why}")

    def command(name, load, disc, seed=1):
        if name == "schedlab":
            return [str(sl), "sim", "-t", f"{load:g}", "-a", "FIFO" if disc == "fifo" else "SF", "--service", "det",
                    "--packets", str(a.packets), "--threads", "1", "--quiet", "--seed", str(seed), "--json", "-"]
        if name in ("ciw", "simpy"):
            return [str(peers[name][0]), str(HERE / "peers_sim.py"), "--peer", name, "--load", f"{load / 100:g}",
                    "--packets", str(a.packets), "--disc", disc, "--seed", str(seed)]
        return [str(peers[name][0]), f"{load / 100:g}", str(a.packets), str(seed)]

    rows = []  # (load, disc, [names])
    for load in loads:
        rows.append((load, "fifo", [n for n in ("schedlab", "ciw", "simpy", "ns3") if n == "schedlab" or n in peers]))
        if not a.no_prio:
            rows.append((load, "prio", ["schedlab"] + [n for n in ("ciw", "simpy") if n in peers]))

    cpu = {}  # (load, disc, name) -> [cpu s]
    rates = {}  # (load, disc, name) -> [arrival packets / cpu s]
    wall = {}
    runs = {}  # (load, disc, name) -> [(packets, cells, analytic)], one per round (seed = round)
    failed = []
    print(f"# peers: {a.packets:,} arrival packets per run, {a.reps} rounds (seeds 1..{a.reps}), loads {a.loads}%, service det")
    print(f"# {ver}; " + "; ".join(f"{n} {v[1]}" for n, v in peers.items()))
    for rnd in range(a.reps):
        for load, disc, names in rows:
            k = rnd % len(names)
            for name in names[k:] + names[:k]:  # alternate: rotate the order each round
                key = (load, disc, name)
                if key in failed:
                    continue
                try:
                    stdout, c, w = run_child(command(name, load, disc, seed=rnd + 1), a.timeout)
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    print(f"FAIL {name} at {load:g}% {disc}: {e}")
                    failed.append(key)
                    continue
                cpu.setdefault(key, []).append(c)
                wall.setdefault(key, []).append(w)
                r = parse_schedlab(stdout, "FIFO" if disc == "fifo" else "SF") if name == "schedlab" \
                    else parse_peer(stdout) + (None,)
                runs.setdefault(key, []).append(r)
                rates.setdefault(key, []).append(r[0] / c if c > 0 else float("inf"))
        print(f"# round {rnd + 1}/{a.reps} done", file=sys.stderr)

    all_ok = not failed
    out = {k: pool(v) for k, v in runs.items()}
    print("\n## Agreement: mean latency per length (time units) ± 95% half-width, pooled over the rounds' seeds\n")
    for load, disc, names in rows:
        names = [n for n in names if (load, disc, n) in out]
        if disc == "fifo":
            theory = fifo_theory(load / 100)
            sl_theory = out.get((load, disc, "schedlab"), (0, {}, {}))[2]
            for l in LENGTHS:
                if sl_theory and (sl_theory.get(l) is None or abs(sl_theory[l] - theory[l]) > 1e-9 * max(1, theory[l])):
                    print(f"FAIL theory: schedlab prints {sl_theory[l]} for length {l}, this script {theory[l]}")
                    all_ok = False
            judged = names
            head = f"{load:g}% FIFO, theory M/G/1 (Pollaczek-Khinchine; schedlab's FIFO (theory) row)"
        else:
            theory = prio_theory(load / 100)
            judged = [n for n in names if n != "schedlab"]
            peers = " and ".join(PRETTY.get(n, n) for n in judged) or "no peer with priority classes ran"
            head = (f"{load:g}% priority: preemptive-resume classes by length vs M/G/1 theory ({peers}); "
                    "schedlab SF (packet-granular SRPT, not the same discipline; not judged) beside it")
        print(f"{head}:\n")
        print("| length | theory | " + " | ".join(n if not (disc == "prio" and n == "schedlab") else "schedlab SF"
                                            for n in names) + " |")
        print("|---:|---:|" + "---:|" * len(names))
        for l in LENGTHS:
            cells = [f"{out[(load, disc, n)][1][l][0]:.3f} ± {out[(load, disc, n)][1][l][1]:.3f}" for n in names]
            print(f"| {l} | {theory[l]:.3f} | " + " | ".join(cells) + " |")
        if not judged:
            print("\nnot judged: no simulator of this discipline ran beside schedlab\n")
            continue
        ok, notes = agreement({n: out[(load, disc, n)][1] for n in judged}, theory, judged)
        all_ok &= ok
        verdict = "agree" if ok else "DISAGREE"
        rule = "each within 2 half-widths of theory"
        if len(judged) > 1:
            rule = "every pair's intervals overlap; " + rule
        print(f"\n{verdict}: {', '.join(judged)} ({rule})")
        for n in notes:
            print(f"  {n}")
        print()

    print("## Speed: arrival packets per CPU second (one core), median of the rounds\n")
    print("| load | discipline | simulator | packets (median) | CPU s (median) | wall s (median) | M packets/CPU s (median) | schedlab / it |")
    print("|---:|---|---|---:|---:|---:|---:|---:|")
    for load, disc, names in rows:
        base = None
        for n in names:
            key = (load, disc, n)
            if key not in cpu:
                continue
            c = statistics.median(cpu[key])
            pk = int(out[key][0])
            rate = statistics.median(rates[key])
            if n == "schedlab":
                base = rate
            ratio = "1" if n == "schedlab" else (f"{base / rate:.1f}x" if base else "-")
            label = {"fifo": "FIFO", "prio": "SF" if n == "schedlab" else "prio classes"}[disc]
            print(f"| {load:g}% | {label} | {n} | {pk:,} | {c:.3f} | {statistics.median(wall[key]):.3f} | "
                  f"{rate / 1e6:.3f} | {ratio} |")
    for name, why in skips.items():
        print(f"\nSKIP {name}: {why}")
    print("\nverdict: " + ("all checks pass" if all_ok else "a check FAILED (above)"))
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
