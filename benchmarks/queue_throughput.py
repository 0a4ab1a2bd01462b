"""queue_throughput: the cost of handing a value through a FIFO queue in cached steps.

Figures (µs, median of repeats, same process for flowlab and TensorFlow 1.x):
- `pair_one_step_us`: one step that enqueues a scalar and dequeues it (the dequeue has
  a control dependency on the enqueue), run through `make_callable`.
- `pair_two_steps_us`: an enqueue step then a dequeue step (two callables), per pair.
- `null_step_us`: a step fetching a constant, for reference.
- `threaded_items_per_s`: one producer thread and one consumer thread moving
  `--items` scalars through a capacity-100 queue.
Target (issue 6): a FIFO enqueue+dequeue pair under 50 µs in a cached step.

    python benchmarks/queue_throughput.py [--calls N] [--items N]
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import emit, load_tf1, per_call_us, tf_session_config  # noqa: E402

import flowlab as fl  # noqa: E402
from flowlab.ops import data_flow_ops  # noqa: E402


def _fifo(tf):
    return getattr(tf, "FIFOQueue", None) or data_flow_ops.FIFOQueue


def bench(tf, cfg, calls: int, items: int) -> dict[str, float]:
    g = tf.Graph()
    with g.as_default():
        q = _fifo(tf)(100, tf.float32, shapes=[[]])
        enq = q.enqueue(tf.constant(1.0))
        with tf.control_dependencies([enq]):
            deq_after = q.dequeue()
        deq = q.dequeue()
        null = tf.constant(0.0)
    sess = tf.Session(graph=g, config=cfg)
    one = sess.make_callable(deq_after)
    e, d = sess.make_callable(enq), sess.make_callable(deq)

    def two() -> None:
        e()
        d()

    out = {
        "pair_one_step_us": per_call_us(one, calls),
        "pair_two_steps_us": per_call_us(two, calls),
        "null_step_us": per_call_us(sess.make_callable(null), calls),
    }

    def produce() -> None:
        for _ in range(items):
            e()

    t0 = time.perf_counter()
    th = threading.Thread(target=produce)
    th.start()
    for _ in range(items):
        d()
    th.join()
    out["threaded_items_per_s"] = items / (time.perf_counter() - t0)
    sess.close()
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--calls", type=int, default=5000)
    p.add_argument("--items", type=int, default=5000)
    args = p.parse_args()
    out: dict[str, object] = {"flowlab": bench(fl, None, args.calls, args.items)}
    tf1 = load_tf1()
    if tf1 is not None:
        out["tensorflow"] = bench(tf1, tf_session_config(tf1), args.calls, args.items)
    f = out["flowlab"]
    out["target_pair_us"] = 50.0
    out["meets_target"] = f["pair_one_step_us"] < 50.0  # type: ignore[index]
    emit("queue_throughput", out)


if __name__ == "__main__":
    main()
