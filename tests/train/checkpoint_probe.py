"""The probes of issue 16, rerun: prints figures (JSON), asserts nothing.

    .venv/bin/python -m tests.train.checkpoint_probe [--kills 10] [--mb 200]

1. A `mb`-MB variable saved again and again (one path, and `global_step` paths, each
   sharded and not), the process SIGKILLed at random moments: how many kills leave a
   restorable, consistent newest checkpoint, the bytes left behind by the kills, and
   what is left after the next save (all bytes, and those of leftovers: temporary
   files, part directories, data files no index names; with `global_step` paths
   each restarted Saver keeps its own newest `max_to_keep` complete checkpoints, as
   in TensorFlow, so the directory grows by complete checkpoints).
2. Crafted index files: the peak memory (tracemalloc) of reading them, beside their
   size.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import tempfile
import time
import tracemalloc

import numpy as np

from flowlab import errors
from flowlab.kernels import checkpoint_format as fmt
from tests.train import checkpoint_kill_child as child


def _size_of(d: str) -> int:
    total = 0
    for root, _dirs, files in os.walk(d):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return total


def _leftover_bytes(d: str) -> int:
    """Bytes of files no restorable checkpoint uses (temporary files, part
    directories, data files no index names)."""
    named = set()
    for n in os.listdir(d):
        if n.endswith(".index"):
            try:
                with fmt.CheckpointReader(os.path.join(d, n[: -len(".index")])) as r:
                    named.update(r.data_files)
            except errors.OpError:
                pass
    total = 0
    for n in os.listdir(d):
        path = os.path.join(d, n)
        if ".tmp-" in n or "_temp" in n or (".data-" in n and n not in named):
            total += _size_of(path) if os.path.isdir(path) else os.path.getsize(path)
    return total


def kills(ctx, mb: int, n: int, sharded: bool, global_step: bool, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    size = mb * (1 << 20) // 4
    d = tempfile.mkdtemp(prefix="probe-")
    progress = ctx.RawValue("q", 0)
    ok, durations = 0, []
    try:
        for _ in range(n):
            before = progress.value
            p = ctx.Process(target=child.save_loop, args=(d, size, sharded, global_step, 10**6, progress))
            p.start()
            t0 = time.monotonic()
            while progress.value == before and p.is_alive():
                time.sleep(0.002)
            durations.append(time.monotonic() - t0)
            time.sleep(rng.uniform(0, 1.5 * durations[-1] / max(1, progress.value - before)))
            p.kill()
            p.join()
            path = child.latest(d, global_step)
            try:
                with fmt.CheckpointReader(path) as r:
                    step, big = int(r.get_tensor("step")), r.get_tensor("big")
                ok += bool((big == step).all()) and step >= progress.value
            except (errors.OpError, TypeError):
                pass
        left, left_over = _size_of(d), _leftover_bytes(d)
        p = ctx.Process(target=child.save_loop, args=(d, size, sharded, global_step, 1, progress))
        p.start()
        p.join()
        one, one_over = _size_of(d), _leftover_bytes(d)
        return {"mb": mb, "sharded": sharded, "global_step": global_step, "kills": n,
                "restorable_after_kill": ok, "bytes_on_disk_after_kills": left,
                "leftover_bytes_after_kills": left_over, "bytes_on_disk_after_next_save": one,
                "leftover_bytes_after_next_save": one_over}
    finally:
        shutil.rmtree(d, ignore_errors=True)


def crafted() -> list[dict]:
    out = []
    d = tempfile.mkdtemp(prefix="probe-")
    try:
        p = os.path.join(d, "m")
        for what, claim in (("string claiming 2e9 bytes", 2 * 10**9),
                            ("string claiming 1e10 bytes", 10**10),
                            ("shape of 1e12 float32", None)):
            if claim is None:
                fmt.save_tensors(p, ["s"], [np.zeros(3, np.float32)])
            else:
                fmt.save_tensors(p, ["s"], [np.array([b"x" * 40], dtype=object)])
            doc = json.loads(open(p + ".index").read())
            piece = doc["tensors"]["s"]["slices"][0]
            if claim is None:
                doc["tensors"]["s"]["shape"] = [10**6, 10**6]
                piece["length"] = 4 * 10**12
            else:
                piece["length"] = claim
                piece["sum64"] = [0] * -(-claim // fmt.CRC_BLOCK)
            open(p + ".index", "w").write(json.dumps(doc))
            tracemalloc.start()
            try:
                with fmt.CheckpointReader(p) as r:
                    r.get_tensor("s")
                result = "read"
            except errors.DataLossError as e:
                result = f"DataLossError: {e}"[:160]
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            out.append({"probe": what, "files_bytes": _size_of(d), "peak_bytes": peak,
                        "result": result})
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--mb", type=int, default=200)
    args = ap.parse_args()
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["flowlab", "tests.train.checkpoint_kill_child"])
    rows = [kills(ctx, args.mb, args.kills, sharded, gs, seed)
            for seed, (sharded, gs) in enumerate([(False, False), (True, False), (False, True), (True, True)])]
    print(json.dumps({"kills": rows, "crafted": crafted()}, indent=1))


if __name__ == "__main__":
    main()
