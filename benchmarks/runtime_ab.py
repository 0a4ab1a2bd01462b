"""runtime_ab: the same runtime micro-benchmarks under two source trees, interleaved.

For a change to the runtime (the master/task split), A/B the old and new tree on the
same machine in the same run: child processes alternate A, B, A, B, ... (one tree per
process: both are `flowlab`), each timing the figures below, and the parent prints the
medians per tree and the ratio B/A.  TensorFlow is not involved (the other benchmarks
compare with it); this one says whether a change moved flowlab.

    python benchmarks/runtime_ab.py OLD_TREE NEW_TREE [--rounds 5]

Figures (µs unless named): `null_step_run` / `null_step_callable` (assign_add on a
scalar by `run` / `make_callable`), `op_chain_per_op` (a 200-op scalar chain, per op),
`sendrecv_step` (a scalar crossing two CPUs, whole step), `while_loop_fused` (100
iterations of a scalar loop, fused), `mlp_step` (784-256-10 MLP, batch 64, one SGD
step by make_callable, one BLAS thread), `lookup_big_over_small` (a cached `run` in a graph with 20,000
other ops over one with none: the plan lookup should stay flat).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def _per_call(fn, calls: int, repeats: int = 5) -> float:
    fn()
    best = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(best)


def child() -> dict[str, float]:
    import numpy as np

    import flowlab as fl

    out: dict[str, float] = {}
    g = fl.Graph()
    with g.as_default():
        v = fl.Variable(0.0)
        inc = fl.assign_add(v, 1.0)
        s = fl.Session(graph=g)
        s.run(v.initializer)
        out["null_step_run"] = _per_call(lambda: s.run(inc), 3000)
        f = s.make_callable(inc)
        out["null_step_callable"] = _per_call(f, 5000)
        x = fl.constant(1.0)
        y = x
        for _ in range(200):
            y = y + 1.0
        out["op_chain_per_op"] = _per_call(lambda: s.run(y), 300) / 200
        out["lookup_small"] = _per_call(lambda: s.run(inc), 3000)
    g2 = fl.Graph()
    with g2.as_default():
        v2 = fl.Variable(0.0)
        inc2 = fl.assign_add(v2, 1.0)
        for i in range(20000):
            fl.constant(float(i))
        s2 = fl.Session(graph=g2)
        s2.run(v2.initializer)
        out["lookup_big_over_small"] = _per_call(lambda: s2.run(inc2), 3000) / out.pop("lookup_small")
    g3 = fl.Graph()
    with g3.as_default():
        with fl.device("/cpu:0"):
            a = fl.constant(1.0) * 2.0
        with fl.device("/cpu:1"):
            b = a + 1.0
        s3 = fl.Session(graph=g3, config=fl.ConfigProto(device_count={"CPU": 2}))
        out["sendrecv_step"] = _per_call(lambda: s3.run(b), 3000)
    g4 = fl.Graph()
    with g4.as_default():
        r = fl.while_loop(lambda i, x: i < 100, lambda i, x: (i + 1, x * 0.5 + 1.0), [fl.constant(0), fl.constant(0.0)])
        s4 = fl.Session(graph=g4)
        out["while_loop_fused"] = _per_call(lambda: s4.run(r), 300)
    g5 = fl.Graph()
    with g5.as_default():
        rng = np.random.RandomState(0)
        xs = fl.placeholder(fl.float32, [64, 784])
        ys = fl.placeholder(fl.int64, [64])
        w1 = fl.Variable(rng.randn(784, 256).astype(np.float32) * 0.05)
        w2 = fl.Variable(rng.randn(256, 10).astype(np.float32) * 0.05)
        logits = fl.matmul(fl.nn.relu(fl.matmul(xs, w1)), w2)
        loss = fl.reduce_mean(fl.nn.sparse_softmax_cross_entropy_with_logits(labels=ys, logits=logits))
        train = fl.train.GradientDescentOptimizer(0.1).minimize(loss)
        s5 = fl.Session(graph=g5)
        s5.run(fl.global_variables_initializer())
        step = s5.make_callable([train, loss], [xs, ys])
        xv, yv = rng.rand(64, 784).astype(np.float32), rng.randint(0, 10, 64)
        out["mlp_step"] = _per_call(lambda: step(xv, yv), 100)
    return out


def main() -> None:
    if os.environ.get("FLOWLAB_AB_CHILD"):
        print(json.dumps(child()))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
    for _ in range(args.rounds):
        for label in ("old", "new"):
            tree = os.path.abspath(getattr(args, label))
            # One BLAS thread: with two, a busy neighbour makes BLAS spin (issue 23's cliff)
            # and the MLP figure swings 20x between runs, hiding the runtime's own cost.
            env = {**os.environ, "FLOWLAB_AB_CHILD": "1", "PYTHONPATH": tree, "OPENBLAS_NUM_THREADS": "1",
                   "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
            r = subprocess.run([sys.executable, __file__], env=env, capture_output=True, text=True, check=True)
            runs[label].append(json.loads(r.stdout.strip().splitlines()[-1]))
    keys = list(runs["old"][0])
    med = {label: {k: statistics.median(x[k] for x in rs) for k in keys} for label, rs in runs.items()}
    print(json.dumps({
        "benchmark": "runtime_ab", "rounds": args.rounds, "old": args.old, "new": args.new,
        "median_old": med["old"], "median_new": med["new"],
        "new_over_old": {k: round(med["new"][k] / med["old"][k], 3) for k in keys},
    }, indent=2))


if __name__ == "__main__":
    main()
