"""placement_quality: greedy placement vs. one device vs. round-robin on a
model-parallel graph (white paper section 3.2.1).

The graph: `--towers` independent towers, each a chain of `--depth` (size x size)
float32 matmuls, summed at the end, over `--cpus` virtual CPU devices of one process.
Three placements of the same graph:

* one_device: everything on /cpu:0 (TensorFlow's choice for unpinned ops);
* round_robin: op i of the graph pinned to /cpu:(i % cpus), in creation order;
* greedy: `ConfigProto(placement_strategy="greedy")`, the cost-model simulation.

For each: the predicted step time (the placement replayed on the cost model,
`flowlab.runtime.master.cost_model.simulate`), the measured step time, and how many
devices and cross-device edges it uses.  Measured times depend on the partitioned
executor and on how many cores BLAS already uses per matmul.

    python benchmarks/placement_quality.py [--towers 4] [--depth 4] [--size 512] [--cpus 4]
        [--graph-ops 10000]

It also reports what placing the whole graph once per version costs
(`whole_graph_cost`: CPU ms to place a `--graph-ops` chain with `GraphPlacement`, to
read one step's placement from it, and to place the step on its own, per strategy).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import emit, per_call_us  # noqa: E402

import flowlab as fl  # noqa: E402
from flowlab.runtime.master.cost_model import CostModel, simulate  # noqa: E402
from flowlab.runtime.master.optimize import optimization  # noqa: E402


def build(towers: int, depth: int, size: int, cpus: int, round_robin: bool):
    rs = np.random.RandomState(0)
    counter = [0]

    def pin():
        d = fl.device(f"/cpu:{counter[0] % cpus}" if round_robin else None)
        counter[0] += 1
        return d

    outs = []
    for t in range(towers):
        with pin():
            h = fl.constant(rs.rand(size, size).astype(np.float32) / size, name=f"x{t}")
        with pin():
            w = fl.constant(rs.rand(size, size).astype(np.float32) / size, name=f"w{t}")
        for i in range(depth):
            with pin():
                h = fl.matmul(h, w, name=f"tower{t}/mm{i}")
        with pin():
            outs.append(fl.reduce_sum(h, name=f"tower{t}/sum"))
    with pin():
        return fl.add_n(outs, name="total")


def measure(args: argparse.Namespace, strategy: str, round_robin: bool, cm: CostModel) -> dict[str, object]:
    g = fl.Graph()
    with g.as_default():
        total = build(args.towers, args.depth, args.size, args.cpus, round_robin)
    cfg = fl.ConfigProto(
        device_count={"CPU": args.cpus}, placement_strategy=strategy, cost_model=cm,
        inter_op_parallelism_threads=args.cpus,
    )
    sess = fl.Session(graph=g, config=cfg)
    value = sess.run(total)
    placement = sess.placement(total)
    opt = optimization(sess, total)
    predicted, _ = simulate(opt.ops, placement.device_of, cm, opt.inputs_of)
    cross = sum(
        1 for op in opt.ops for t in opt.inputs_of(op)
        if t.op.name in placement.device_of and placement.device_of[t.op.name] is not placement.device_of[op.name]
    )
    step_us = per_call_us(lambda: sess.run(total), args.calls, repeats=5)
    sess.close()
    return {
        "value": float(value),
        "predicted_ms": predicted * 1e3,
        "measured_ms": step_us / 1e3,
        "devices_used": len({d.name for d in placement.device_of.values()}),
        "cross_device_edges": cross,
    }


def whole_graph_cost(n_ops: int, cpus: int) -> dict[str, dict[str, float]]:
    """CPU ms: the whole-graph placement of an `n_ops` chain, one step read from it, and
    the same step placed alone (the per-step placement of session 2)."""
    from flowlab.runtime.task.device import local_devices
    from flowlab.runtime.master.placement import GraphPlacement, place
    from flowlab.runtime.master.prune import prune

    g = fl.Graph()
    with g.as_default():
        x = fl.constant(1.0)
        for _ in range(n_ops // 2):
            x = fl.add(x, 1.0)
    devs = local_devices({"CPU": cpus})
    ops = prune([x], [], [])
    out: dict[str, dict[str, float]] = {}
    for strategy in ("first", "greedy"):
        t0 = time.process_time()
        whole = GraphPlacement(devs, strategy=strategy).update(g)
        t1 = time.process_time()
        place(ops, devs, strategy=strategy, whole=whole)
        t2 = time.process_time()
        place(ops, devs, strategy=strategy)
        t3 = time.process_time()
        out[strategy] = {"whole_graph_ms": (t1 - t0) * 1e3, "step_from_whole_ms": (t2 - t1) * 1e3,
                         "step_alone_ms": (t3 - t2) * 1e3, "ops": len(g.get_operations())}
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--towers", type=int, default=4)
    p.add_argument("--depth", type=int, default=4)
    p.add_argument("--size", type=int, default=512)
    p.add_argument("--cpus", type=int, default=4)
    p.add_argument("--calls", type=int, default=10)
    p.add_argument("--graph-ops", type=int, default=10000)
    args = p.parse_args()
    cm = CostModel()
    out: dict[str, object] = {
        "graph": f"{args.towers} towers x {args.depth} matmuls of {args.size}x{args.size} float32",
        "cpus": args.cpus,
        "cost_model": {
            "flops_per_second_cpu": cm.flops_per_second["CPU"],
            "transfer_latency_s": cm.transfer_latency,
            "device_startup_s": cm.device_startup,
        },
        "one_device": measure(args, "first", False, cm),
        "round_robin": measure(args, "first", True, cm),
        "greedy": measure(args, "greedy", False, cm),
    }
    one = out["one_device"]
    for k in ("round_robin", "greedy"):
        fig = out[k]
        fig["predicted_speedup_vs_one_device"] = one["predicted_ms"] / fig["predicted_ms"]  # type: ignore[index]
        fig["measured_speedup_vs_one_device"] = one["measured_ms"] / fig["measured_ms"]  # type: ignore[index]
    out["whole_graph_cost"] = whole_graph_cost(args.graph_ops, args.cpus)
    emit("placement_quality", out)


if __name__ == "__main__":
    main()
