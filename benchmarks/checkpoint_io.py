"""checkpoint_io: Saver save/restore bandwidth against numpy.save/numpy.load.

Saves and restores a set of float32 variables (default 1 GiB in 8 variables) with
`tf.train.Saver` and writes/reads the same arrays with `numpy.save`/`numpy.load` in
the same run, to the same directory, alternating which goes first, and reports the
best of `--repeats` for each (GB/s, 1 GB = 1e9 bytes) and the ratios.  Target (issue 6):
flowlab at least half of NumPy's bandwidth in both directions.

    python benchmarks/checkpoint_io.py [--size-mb 1024] [--variables 8] [--repeats 4]
                                       [--dir /tmp/...]
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import emit  # noqa: E402

import flowlab as fl  # noqa: E402


def _timed(fn) -> float:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=1024.0, help="total MiB of variables")
    ap.add_argument("--variables", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=4)
    ap.add_argument("--dir", default=None, help="where to write (default: a temp dir)")
    args = ap.parse_args()

    n = max(1, args.variables)
    per = int(args.size_mb * 2**20 / 4 / n)
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(per, dtype=np.float32) for _ in range(n)]
    nbytes = sum(a.nbytes for a in arrays)

    root = tempfile.mkdtemp(prefix="flowlab-ckpt-bench-", dir=args.dir)
    try:
        g = fl.Graph()
        with g.as_default():
            vs = [fl.Variable(fl.zeros([per]), name=f"v{i}") for i in range(n)]
            saver = fl.train.Saver(vs, max_to_keep=1)
        sess = fl.Session(graph=g)
        for v, a in zip(vs, arrays):
            v.load(a, sess)
        prefix = os.path.join(root, "model.ckpt")

        def np_save() -> None:
            for i, a in enumerate(arrays):
                np.save(os.path.join(root, f"np{i}.npy"), a)

        def np_load() -> None:
            for i in range(n):
                np.load(os.path.join(root, f"np{i}.npy"))

        def fl_save() -> None:
            saver.save(sess, prefix, write_meta_graph=False)

        def fl_restore() -> None:
            saver.restore(sess, prefix)

        def clear() -> None:
            # Every write goes to fresh files: overwriting costs extra on some file
            # systems (ext4 flushes a file renamed or truncated over another).
            for f in glob.glob(os.path.join(root, "*")):
                os.remove(f)

        def numpy_side() -> None:
            clear()
            t["np_save"].append(_timed(np_save))
            t["np_load"].append(_timed(np_load))

        def flowlab_side() -> None:
            clear()
            t["fl_save"].append(_timed(fl_save))
            t["fl_restore"].append(_timed(fl_restore))

        t: dict[str, list[float]] = {"np_save": [], "np_load": [], "fl_save": [], "fl_restore": []}
        for r in range(args.repeats):
            # Alternate which side goes first: on a busy machine, files written
            # later in a round read back measurably slower.
            for side in ((numpy_side, flowlab_side) if r % 2 == 0 else (flowlab_side, numpy_side)):
                side()
        ok = all(np.array_equal(sess.run(v), a) for v, a in zip(vs, arrays))
        sess.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)

    bw = {k: nbytes / min(v) / 1e9 for k, v in t.items()}
    emit("checkpoint_io", {
        "bytes": nbytes, "variables": n, "repeats": args.repeats,
        "numpy_save_GBps": round(bw["np_save"], 3), "numpy_load_GBps": round(bw["np_load"], 3),
        "flowlab_save_GBps": round(bw["fl_save"], 3),
        "flowlab_restore_GBps": round(bw["fl_restore"], 3),
        "save_ratio": round(bw["fl_save"] / bw["np_save"], 3),
        "restore_ratio": round(bw["fl_restore"] / bw["np_load"], 3),
        "target_ratio": 0.5, "restored_values_equal": ok,
    })


if __name__ == "__main__":
    main()
