"""Ray overhead per sweep cell against the local backend, and Ray cells/s on 1 vs 2 nodes.

Starts a local Ray head (and, for the 2-node figures, a second node), runs the same small-cell
sweep on the local backend (1 worker) and on Ray, alternating, and prints medians. Run with the
venv's Python after `pip install './python[ray]'`:  python scripts/ray_overhead.py [REPS]
"""

from __future__ import annotations

import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import ray

import schedlab

RAY = str(Path(sys.executable).with_name("ray"))
COMMON = ["--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--object-store-memory", str(80 * 1024 * 1024), "--disable-usage-stats"]


def timed(f) -> float:
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def main(reps: int) -> None:
    cells = 40
    # Tiny cells (1000 packets): the time is almost all per-cell overhead.
    tiny = schedlab.load_spec("<tiny>", text=f'traffic = [50]\nstrategies = ["FIFO", 10]\npackets = 1000\nreplications = {cells}\n')
    # Real cells (the report's grid at 300k packets, 2 replications): compute dominates.
    real = schedlab.load_spec("<real>", text='traffic = [0.01, 1, 20, 50, 70, 80, 90, 95, 97, 98]\npackets = 300_000\nreplications = 2\n')
    tmp = tempfile.mkdtemp(prefix="schedlab-ray-bench-")
    out = subprocess.run([RAY, "start", "--head", "--port", "6393", "--temp-dir", tmp, "--include-dashboard=false", *COMMON], capture_output=True, text=True, check=True)
    address = re.search(r"--address='([^']+)'", out.stdout + out.stderr).group(1)
    try:
        ray.init(address=address, log_to_driver=False)
        schedlab.sweep(tiny, backend="ray")  # warm the workers
        res: dict[str, list[float]] = {"local-1 tiny": [], "ray-1node tiny": [], "local-1 real": [], "ray-1node real": []}
        for _ in range(reps):
            res["local-1 tiny"].append(timed(lambda: schedlab.sweep(tiny, workers=1)))
            res["ray-1node tiny"].append(timed(lambda: schedlab.sweep(tiny, backend="ray")))
            res["local-1 real"].append(timed(lambda: schedlab.sweep(real, workers=1)))
            res["ray-1node real"].append(timed(lambda: schedlab.sweep(real, backend="ray")))
        subprocess.run([RAY, "start", "--address", address, *COMMON], capture_output=True, check=True)
        while len([n for n in ray.nodes() if n["Alive"]]) < 2:
            time.sleep(0.5)
        schedlab.sweep(tiny, backend="ray")
        res["local-2 real"] = []
        res["ray-2nodes real"] = []
        for _ in range(reps):
            res["local-2 real"].append(timed(lambda: schedlab.sweep(real, workers=2)))
            res["ray-2nodes real"].append(timed(lambda: schedlab.sweep(real, backend="ray")))
        for k, v in res.items():
            n = cells if "tiny" in k else len(real)
            m = statistics.median(v)
            print(f"{k:>16}: median {m:.3f} s for {n} cells = {n / m:.2f} cells/s, {1000 * m / n:.1f} ms/cell  (runs: {', '.join(f'{x:.2f}' for x in v)})")
        lt, rt = statistics.median(res["local-1 tiny"]), statistics.median(res["ray-1node tiny"])
        print(f"Ray overhead per cell (tiny cells, 1 node vs local 1 worker): {1000 * (rt - lt) / cells:.1f} ms")
        print(f"Ray 2 nodes vs 1 node (real cells): {statistics.median(res['ray-1node real']) / statistics.median(res['ray-2nodes real']):.2f}x")
        print(f"local 2 vs 1 workers (real cells): {statistics.median(res['local-1 real']) / statistics.median(res['local-2 real']):.2f}x")
        print(f"load average: {open('/proc/loadavg').read().split()[:3]}")
    finally:
        ray.shutdown()
        subprocess.run([RAY, "stop", "--force"], capture_output=True)
        subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
