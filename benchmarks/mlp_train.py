"""mlp_train: one training step of a 784-512-512-10 ReLU MLP, softmax cross entropy,
batch 128, Adam, float32 -- flowlab beside TensorFlow 1.x graph mode and PyTorch CPU
(each when installed), same process, same data.

    python benchmarks/mlp_train.py [--steps N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import emit, load_tf1, per_call_us, tf_session_config  # noqa: E402

import flowlab as fl  # noqa: E402

SIZES = [784, 512, 512, 10]
BATCH = 128


def data() -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], BATCH).astype(np.int32)
    ws = [(rng.standard_normal((a, b)) * np.sqrt(2.0 / a)).astype(np.float32)
          for a, b in zip(SIZES[:-1], SIZES[1:])]
    return x, y, ws


def bench_graph(tf, cfg, steps: int) -> dict[str, float]:
    x_val, y_val, ws = data()
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, SIZES[0]])
        y = tf.placeholder(tf.int32, [None])
        h = x
        for i, w0 in enumerate(ws):
            w = tf.Variable(w0)
            b = tf.Variable(tf.zeros([w0.shape[1]]))
            h = tf.matmul(h, w) + b
            if i < len(ws) - 1:
                h = tf.nn.relu(h)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=h))
        train = tf.train.AdamOptimizer(1e-3).minimize(loss)
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=g, config=cfg)
    sess.run(init)
    step = sess.make_callable([train, loss], [x, y])
    first = float(step(x_val, y_val)[1])
    us = per_call_us(lambda: step(x_val, y_val), steps, repeats=3)
    last = float(step(x_val, y_val)[1])
    sess.close()
    return {"step_ms": us / 1000.0, "first_loss": first, "loss_after": last}


def bench_torch(steps: int) -> dict[str, float] | None:
    try:
        import torch
    except Exception:
        return None
    torch.set_num_threads(2)
    x_val, y_val, ws = data()
    layers = []
    for i, w0 in enumerate(ws):
        lin = torch.nn.Linear(*w0.shape)
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(w0.T.copy()))
            lin.bias.zero_()
        layers.append(lin)
        if i < len(ws) - 1:
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers)
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    xt, yt = torch.from_numpy(x_val), torch.from_numpy(y_val.astype(np.int64))

    def step() -> None:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(xt), yt).backward()
        opt.step()

    return {"step_ms": per_call_us(step, steps, repeats=3) / 1000.0}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=30)
    args = p.parse_args()
    out: dict[str, object] = {"flowlab": bench_graph(fl, None, args.steps)}
    tf1 = load_tf1()
    if tf1 is not None:
        out["tensorflow"] = bench_graph(tf1, tf_session_config(tf1), args.steps)
        out["ratio_flowlab_over_tf"] = out["flowlab"]["step_ms"] / out["tensorflow"]["step_ms"]  # type: ignore[index]
    t = bench_torch(args.steps)
    if t is not None:
        out["pytorch"] = t
    emit("mlp_train", out)


if __name__ == "__main__":
    main()
