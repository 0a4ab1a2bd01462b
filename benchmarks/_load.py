"""Neighbour processes for the benchmarks' `--load N`: the normal state of a laptop or a
Binder pod, where a second kernel or a Dask worker of a LocalCluster does NumPy work
beside the step being measured.

Each neighbour is a separate Python process multiplying 256x256 float32 matrices back
to back with NumPy's default BLAS threads (OpenBLAS starts one per core), until it is
stopped.  Pure-Python busy loops are not used: they do not reproduce the interaction
between two processes' BLAS thread pools that this load exists to show.

    with neighbours(1) as load:
        ...  # time the step
        load.gemms_per_s()  # how much work the neighbours did meanwhile

The processes are started and stopped here (terminated, then killed if they linger),
also when the body raises.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

# The neighbour: counts its GEMMs into a file so the benchmark can say how busy it was.
_NEIGHBOUR = r"""
import os, sys, numpy as np
rng = np.random.default_rng(int(sys.argv[2]))
a = rng.standard_normal((256, 256)).astype(np.float32)
b = rng.standard_normal((256, 256)).astype(np.float32)
path, n = sys.argv[1], 0
print("ready", flush=True)
while True:
    for _ in range(200):
        a @ b
    n += 200
    with open(path + ".tmp", "w") as f:
        f.write(str(n))
    os.replace(path + ".tmp", path)
"""


class Neighbours:
    """N running neighbour processes (see the module docstring)."""

    def __init__(self, count: int, workdir: str) -> None:
        self.count = count
        self._files = [os.path.join(workdir, f"neighbour{i}") for i in range(count)]
        env = {k: v for k, v in os.environ.items()
               if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
        self._procs = [subprocess.Popen([sys.executable, "-c", _NEIGHBOUR, path, str(i)],
                                        stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)
                       for i, path in enumerate(self._files)]
        for p in self._procs:
            line = p.stdout.readline() if p.stdout is not None else b""
            if line.strip() != b"ready":
                self.stop()
                raise RuntimeError(f"a --load neighbour process did not start (exit {p.poll()})")
        self._t0 = time.perf_counter()
        self._n0 = self._done()

    def _done(self) -> int:
        total = 0
        for path in self._files:
            try:
                with open(path) as f:
                    total += int(f.read() or 0)
            except (FileNotFoundError, ValueError):
                pass
        return total

    def gemms_per_s(self) -> float:
        """256x256 GEMMs per second that all neighbours did since they started."""
        return (self._done() - self._n0) / max(time.perf_counter() - self._t0, 1e-9)

    def stop(self) -> None:
        for p in self._procs:
            if p.poll() is None:
                p.terminate()
        for p in self._procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            if p.stdout is not None:
                p.stdout.close()


@contextmanager
def neighbours(count: int) -> Iterator[Neighbours | None]:
    """`count` neighbour processes while the body runs (None and nothing when 0)."""
    if count <= 0:
        yield None
        return
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        load = Neighbours(count, tmp)
        try:
            yield load
        finally:
            load.stop()
