#!/usr/bin/env python3
"""An independent evaluation of the closed forms of crates/sim/src/theory.rs (issue 36).

It reads a table of crates/workload/tables (step reading, 1460 B per packet), and prints the
FIFO, RR and SF mean latencies per size bucket and over all messages, as the numbers pinned in
the `workloads` test of theory.rs. It shares no code with the crate: lengths are taken atom by
atom, the sums are written out as the module doc states them, and RR's linear system is solved
by Gauss-Seidel sweeps over the atoms (the crate uses prefix sums over ranges).

Usage: theory_numbers.py w2|w4 LOAD_PERCENT LOW-HIGH [LOW-HIGH ...]
Model: report service S = 0.5 + Exp(0.5): E[S] = 1, E[S^2] = 1.25.
"""
import math
import os
import sys

TABLES = {"w2": "w2-google-search-rpc.txt", "w4": "w4-facebook-hadoop.txt"}
ES, ES2 = 1.0, 1.25


def lengths(name):
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "..", "workload", "tables", TABLES[name])
    p, prev = {}, 0.0
    for line in open(path):
        if not line.strip() or line.startswith("#"):
            continue
        size, cdf = map(float, line.split())
        mass, prev = cdf - prev, cdf
        if mass > 0:
            k = max(1, math.ceil(size / 1460))
            p[k] = p.get(k, 0.0) + mass
    total = sum(p.values())
    return {k: v / total for k, v in sorted(p.items())}


def closed_forms(p, rho):
    ex = sum(k * v for k, v in p.items())
    ex2 = sum(k * k * v for k, v in p.items())
    lam = rho / (ex * ES)
    var = ES2 - ES * ES
    r = ES2 / (2 * ES)
    eb2 = lambda n: n * var + n * n * ES * ES
    wb = lam * (ex * var + ex2 * ES * ES) / (2 * (1 - rho))
    fifo = {k: wb + (k - 1) * ES for k in p}
    # SF: E[V_k] / (1 - rho_<k) + sum_{m=1}^{k-1} E[S] / (1 - rho_<m).
    rho_lt = lambda k: lam * ES * sum(v * n for n, v in p.items() if n < k)
    sf = {}
    for k in p:
        num = sum(v * eb2(n) for n, v in p.items() if n <= k)
        num += sum(v * ((n - k - 1) * ES2 + eb2(k + 1)) for n, v in p.items() if n > k)
        ev = lam * num / (2 * (1 - lam * ES * sum(v * n for n, v in p.items() if n <= k)))
        sf[k] = ev / (1 - rho_lt(k)) + sum(ES / (1 - rho_lt(m)) for m in range(1, k))
    # RR: T_1 = rho R + E[S] lam sum p T_L; T_{j+1} = T_j + E[S](1 + n_j),
    # n_j = lam (sum_{L>j} p (T_{L-j} + T_j) + sum_{L<=j} p (T_j - T_{j-L})).
    m = max(p)
    t = [s * ES / (1 - rho) for s in range(m + 1)]
    t[0] = 0.0
    for _ in range(100000):
        before = t[:]
        t[1] = rho * r + ES * lam * sum(v * t[n] for n, v in p.items())
        for j in range(1, m):
            n_j = 0.0
            for n, v in p.items():
                n_j += v * (t[n - j] + t[j]) if n > j else v * (t[j] - t[j - n])
            t[j + 1] = t[j] + ES * (1 + lam * n_j)
        if max(abs(a - b) / max(a, 1e-300) for a, b in zip(t[1:], before[1:])) < 1e-12:
            break
    rr = {k: t[k] for k in p}
    return fifo, rr, sf


def main():
    name, load = sys.argv[1], float(sys.argv[2])
    groups = [tuple(map(int, g.split("-"))) for g in sys.argv[3:]] + [(1, 10**9)]
    p = lengths(name)
    forms = closed_forms(p, load / 100)
    for lo, hi in groups:
        w = sum(v for k, v in p.items() if lo <= k <= hi)
        vals = [sum(v * f[k] for k, v in p.items() if lo <= k <= hi) / w for f in forms]
        label = "all" if hi == 10**9 else f"{lo}-{hi}"
        print(f"{name} {load:g}% {label}: FIFO {vals[0]:.6f} RR {vals[1]:.6f} SF {vals[2]:.6f}")


if __name__ == "__main__":
    main()
