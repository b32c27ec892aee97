"""The Ray backend against a real local cluster: a head node and a second worker node, started and
stopped here (bounded; no Ray process is left behind), with results equal to the local backend."""

from __future__ import annotations

import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

import pytest

# This module's Ray cluster authenticates with its own token (Ray >= 2.52 reads these; older Ray
# ignores them). Set before Ray is imported: the driver reads its authentication mode once. The
# token variable takes precedence over any token file, so a `~/.ray/auth_token` left by an
# earlier local `ray.init()` (Ray 2.59+ creates one) cannot make the nodes refuse each other.
TOKEN = secrets.token_hex(32)
os.environ["RAY_AUTH_MODE"] = "token"
os.environ["RAY_AUTH_TOKEN"] = TOKEN
os.environ.pop("RAY_AUTH_TOKEN_PATH", None)

import polars as pl  # noqa: E402

import schedlab  # noqa: E402

ray = pytest.importorskip("ray", reason="SKIP: ray is not installed (pip install './python[ray]')")

RAY = str(Path(sys.executable).with_name("ray"))
COMMON = ["--num-cpus", "1", "--object-store-memory", str(80 * 1024 * 1024), "--disable-usage-stats"]


def _run(args: list[str], timeout: float = 90) -> str:
    p = subprocess.run([RAY, *args], capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"ray {' '.join(args)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p.stdout + p.stderr


def _ray_processes(tmp: str) -> dict[int, str]:
    """This test's Ray processes: those whose command line names its temp folder, whose
    environment has its own HOME (every process the test's `ray start` spawned inherits it), or
    which hold a file open under its temp folder (Ray's agents rename themselves, `ray::...`, which
    can overwrite the command line and environment /proc shows, but they keep their logs there
    open). A user's own Ray processes match none and are left alone."""
    home = f"HOME={os.path.join(tmp, 'home')}".encode()
    out = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            env = (d / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if "pytest" in cmd:
            continue
        if tmp in cmd or home in env or _holds_open(d, tmp):
            out[int(d.name)] = cmd[:120]
    return out


def _holds_open(proc: Path, folder: str) -> bool:
    """Whether the process has a file open under `folder` (deleted files included)."""
    try:
        fds = list((proc / "fd").iterdir())
    except OSError:
        return False
    for fd in fds:
        try:
            if folder in os.readlink(fd):
                return True
        except OSError:
            continue
    return False


def _stop_ours(tmp: str) -> None:
    """Stops only this test's Ray (never `ray stop --force`, which kills every Ray process of the
    user): SIGTERM, up to 30 s for them to exit, then SIGKILL to whatever is left."""
    for pid in _ray_processes(tmp):
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    t0 = time.monotonic()
    while _ray_processes(tmp) and time.monotonic() - t0 < 30:
        time.sleep(0.5)
    for pid in _ray_processes(tmp):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    t0 = time.monotonic()
    while _ray_processes(tmp) and time.monotonic() - t0 < 10:
        time.sleep(0.2)


def _isolate(tmp: str) -> dict[str, str | None]:
    """Gives this test's Ray (the `ray start` processes and the driver) its own home folder, and
    the module's token, so nothing a user's earlier `ray.init()` left in the real home can reach
    it. Returns the previous values, for `_restore`."""
    home = os.path.join(tmp, "home")
    os.makedirs(home, exist_ok=True)
    ours = {
        "HOME": home,
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": TOKEN,
        "RAY_AUTH_TOKEN_PATH": None,
        "RAY_ADDRESS": None,
    }
    old = {k: os.environ.get(k) for k in ours}
    _restore(ours)
    return old


def _restore(values: dict[str, str | None]) -> None:
    for k, v in values.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _free_port() -> int:
    """A TCP port no one listens on now (the kernel's pick for port 0), for the head's GCS: a fixed
    port made two runs of the suite on one machine collide. `SCHEDLAB_RAY_PORT` sets one instead."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """`ray start --head` plus a second node joining it on this machine; yields the address."""
    tmp = tempfile.mkdtemp(prefix="schedlab-ray-")
    env_port = os.environ.get("SCHEDLAB_RAY_PORT") or str(_free_port())
    saved = _isolate(tmp)
    try:
        out = _run(["start", "--head", "--port", env_port, "--temp-dir", tmp, "--include-dashboard=false", *COMMON])
        m = re.search(r"--address='([^']+)'", out)
        address = m.group(1) if m else f"127.0.0.1:{env_port}"
        _run(["start", "--address", address, *COMMON])
        ray.init(address=address, log_to_driver=False)
        t0 = time.monotonic()
        while len([n for n in ray.nodes() if n["Alive"]]) < 2:
            if time.monotonic() - t0 > 60:
                raise RuntimeError("the second Ray node did not join within 60 s")
            time.sleep(0.5)
        yield address
    finally:
        if ray.is_initialized():
            ray.shutdown()
        _stop_ours(tmp)
        left = [f"{pid}: {cmd}" for pid, cmd in _ray_processes(tmp).items()]
        _restore(saved)
        subprocess.run(["rm", "-rf", tmp], check=False)
        assert not left, f"Ray processes left behind: {left}"


def test_ray_backend_equals_local_on_two_nodes(cluster: str, root: Path) -> None:
    spec = schedlab.load_spec(root / "sweeps" / "quick.toml")
    local = schedlab.sweep(spec, backend="local")
    on_ray = schedlab.sweep(spec, backend="ray")
    assert on_ray.equals(local), "same seeds, same table on Ray and locally"
    assert len([n for n in ray.nodes() if n["Alive"]]) == 2

    @ray.remote(num_cpus=1)
    def where() -> str:
        time.sleep(0.5)
        return ray.get_runtime_context().get_node_id()

    nodes = set(ray.get([where.remote() for _ in range(6)]))
    assert len(nodes) == 2, "tasks ran on both nodes"


def test_simulate_on_ray(cluster: str) -> None:
    a = schedlab.simulate(traffic=[40, 95], strategies=["RR", 30, "SF"], packets=20_000, seed=9, backend="ray")
    b = schedlab.simulate(traffic=[40, 95], strategies=["RR", 30, "SF"], packets=20_000, seed=9)
    assert a.equals(b)
    # Named workloads: the workload columns filled (W5 is in packets: null bytes per packet).
    a = schedlab.simulate(traffic=50, strategies=["FIFO"], workload=["w3", "w5"], packets=5_000, backend="ray")
    b = schedlab.simulate(traffic=50, strategies=["FIFO"], workload=["w3", "w5"], packets=5_000)
    assert a.equals(b)
    assert a.filter(pl.col("lengths") == "w3")["workload_bytes_per_pkt"].to_list()[0] == 1460
    assert a.filter(pl.col("lengths") == "w5")["workload_bytes_per_pkt"].is_null().all()
