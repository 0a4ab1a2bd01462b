"""mlp_train: one training step of a 784-512-512-10 ReLU MLP, softmax cross entropy,
batch 128, Adam, float32 -- flowlab beside TensorFlow 1.x graph mode and PyTorch CPU
(each when installed) and the best hand-written NumPy step we have (state updated in
place), same process, same data, the same number of BLAS / intra-op threads each.

    python benchmarks/mlp_train.py [--steps N] [--rounds R] [--threads T] [--load N] [--tf-inter-op N]

`--load N` runs N neighbour processes doing NumPy GEMMs meanwhile (benchmarks/_load.py).
`--tf-inter-op N` gives TensorFlow N inter-op threads (default 2, its own choice on two
cores: with `--threads 1` it then runs independent kernels side by side, where the other
peers run one at a time).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _rounds import compare_training_steps  # noqa: E402

SIZES = [784, 512, 512, 10]
BATCH = 128


def data() -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], BATCH).astype(np.int32)
    ws = [(rng.standard_normal((a, b)) * np.sqrt(2.0 / a)).astype(np.float32)
          for a, b in zip(SIZES[:-1], SIZES[1:])]
    return x, y, ws


def build(tf: Any) -> tuple[Any, Any, list[Any], dict[Any, Any]]:
    """The TF1 program (for flowlab or TensorFlow): graph, initializer, [train, loss]
    and the feed dict of the benchmark's batch."""
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
    return g, init, [train, loss], {x: x_val, y: y_val}


def graph_step(tf: Any, cfg: Any, tasks: list[Any] | None = None) -> Callable[[], float]:
    g, init, fetches, feeds = build(tf)
    sess = tf.Session(graph=g, config=cfg) if tasks is None else tf.Session(graph=g, config=cfg, tasks=tasks)
    sess.run(init)
    step = sess.make_callable(fetches, list(feeds))
    values = list(feeds.values())
    return lambda: float(step(*values)[1])


def torch_step(threads: int) -> Callable[[], float] | None:
    try:
        import torch
    except Exception:
        return None
    torch.set_num_threads(threads)
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

    def step() -> float:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(xt), yt)
        loss.backward()
        opt.step()
        return float(loss)

    return step


def numpy_step() -> Callable[[], float]:
    """Adam on a hand-written step: GEMMs in BLAS-friendly layouts, every temporary
    reused in place, and the parameters and slots updated in place (flowlab does that
    too since session 5, but only after the step's last op, and only for arrays that
    nothing else holds: flowlab/runtime/task/deferred_updates.py)."""
    x, y, ws0 = data()
    params = []
    for w0 in ws0:
        params += [w0.copy(), np.zeros(w0.shape[1], np.float32)]
    ms = [np.zeros_like(p) for p in params]
    vs = [np.zeros_like(p) for p in params]
    b1, b2, eps, lr = np.float32(0.9), np.float32(0.999), np.float32(1e-8), np.float32(1e-3)
    power = [np.float32(1), np.float32(1)]
    rows = np.arange(BATCH)
    # NumPy vectorizes maximum of two arrays but not of an array and a scalar: the
    # ReLU against a zero array is 1.5-4% of this step faster (session 4).
    zeros = [np.zeros((BATCH, n), np.float32) for n in SIZES[1:-1]]

    def step() -> float:
        hs = [x]
        for i in range(0, len(params), 2):
            z = hs[-1] @ params[i]
            z += params[i + 1]
            if i < len(params) - 2:
                np.maximum(z, zeros[i // 2], out=z)
            hs.append(z)
        z = hs.pop()
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        s = e.sum(axis=1)
        loss = float(np.mean(np.log(s) - z[rows, y]))
        e /= s[:, None]
        e[rows, y] -= 1
        e *= np.float32(1.0 / BATCH)
        dz, grads = e, [None] * len(params)
        for i in range(len(params) - 2, -1, -2):
            h = hs[i // 2]
            grads[i], grads[i + 1] = h.T @ dz, dz.sum(axis=0)
            if i:
                dz = dz @ params[i].T
                dz *= h > 0
        power[0] *= b1
        power[1] *= b2
        alpha = lr * np.sqrt(1 - power[1]) / (1 - power[0])
        for p, m, v, g in zip(params, ms, vs, grads):
            t = g - m
            t *= 1 - b1
            m += t
            u = g * g
            u -= v
            u *= 1 - b2
            v += u
            np.sqrt(v, out=u)
            u += eps
            np.multiply(m, alpha, out=t)
            t /= u
            p -= t
        return loss

    return step


def main() -> None:
    compare_training_steps("mlp_train", graph_step, numpy_step, torch_step, steps=10, threads=2)


if __name__ == "__main__":
    main()
