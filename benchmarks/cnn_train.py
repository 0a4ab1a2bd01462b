"""cnn_train: one SGD step of a small convolutional net on 28x28x1 inputs, batch 64,
float32 -- conv5x5x32 (SAME) - relu - maxpool2 - conv5x5x64 - relu - maxpool2 -
fc1024 - relu - fc10 - softmax cross entropy.  flowlab beside TensorFlow 1.x graph mode,
PyTorch CPU (when installed) and a hand-written NumPy step, same process, same data,
same number of threads (2) for every BLAS.

    python benchmarks/cnn_train.py [--steps N] [--rounds R] [--threads T] [--load N] [--tf-inter-op N]

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

BATCH = 64
LR = 0.01
THREADS = 2


def data() -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Inputs, labels and the initial weights [conv1, b1, conv2, b2, fc1, b3, fc2, b4]."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, 28, 28, 1)).astype(np.float32)
    y = rng.integers(0, 10, BATCH).astype(np.int32)

    def he(shape: tuple[int, ...], fan_in: int) -> np.ndarray:
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    ws = [he((5, 5, 1, 32), 25), np.zeros(32, np.float32),
          he((5, 5, 32, 64), 800), np.zeros(64, np.float32),
          he((7 * 7 * 64, 1024), 3136), np.zeros(1024, np.float32),
          he((1024, 10), 1024), np.zeros(10, np.float32)]
    return x, y, ws


def graph_step(tf: Any, cfg: Any, tasks: list[Any] | None = None) -> Callable[[], float]:
    x_val, y_val, ws = data()
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 28, 28, 1])
        y = tf.placeholder(tf.int32, [None])
        v = [tf.Variable(w) for w in ws]
        h = x
        for k in (0, 2):
            h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(h, v[k], [1, 1, 1, 1], "SAME"), v[k + 1]))
            h = tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
        h = tf.reshape(h, [-1, 7 * 7 * 64])
        h = tf.nn.relu(tf.matmul(h, v[4]) + v[5])
        logits = tf.matmul(h, v[6]) + v[7]
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                             logits=logits))
        train = tf.train.GradientDescentOptimizer(LR).minimize(loss)
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=g, config=cfg) if tasks is None else tf.Session(graph=g, config=cfg, tasks=tasks)
    sess.run(init)
    step = sess.make_callable([train, loss], [x, y])
    return lambda: float(step(x_val, y_val)[1])


def torch_step(threads: int) -> Callable[[], float] | None:
    try:
        import torch
    except Exception:
        return None
    torch.set_num_threads(threads)
    x_val, y_val, ws = data()
    nn = torch.nn
    model = nn.Sequential(
        nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(7 * 7 * 64, 1024), nn.ReLU(), nn.Linear(1024, 10))
    with torch.no_grad():
        # Same weights: HWIO -> OIHW; the fc1 rows follow NHWC flattening -> NCHW.
        model[0].weight.copy_(torch.from_numpy(ws[0].transpose(3, 2, 0, 1).copy()))
        model[3].weight.copy_(torch.from_numpy(ws[2].transpose(3, 2, 0, 1).copy()))
        fc1 = ws[4].reshape(7, 7, 64, 1024).transpose(2, 0, 1, 3).reshape(3136, 1024)
        model[7].weight.copy_(torch.from_numpy(fc1.T.copy()))
        model[9].weight.copy_(torch.from_numpy(ws[6].T.copy()))
        for k in (0, 3, 7, 9):
            model[k].bias.zero_()
    opt = torch.optim.SGD(model.parameters(), LR)
    xt = torch.from_numpy(x_val.transpose(0, 3, 1, 2).copy())
    yt = torch.from_numpy(y_val.astype(np.int64))

    def step() -> float:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(xt), yt)
        loss.backward()
        opt.step()
        return float(loss)

    return step


# --- NumPy by hand ------------------------------------------------------------------
def _windows(xp: np.ndarray, k: int) -> np.ndarray:
    n, h, w, c = xp.shape
    s = xp.strides
    return np.lib.stride_tricks.as_strided(
        xp, (n, h - k + 1, w - k + 1, k, k, c), (s[0], s[1], s[2], s[1], s[2], s[3]),
        writeable=False)


def _conv(x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n, h, wd, c = x.shape
    xp = np.pad(x, ((0, 0), (2, 2), (2, 2), (0, 0)))
    cols = _windows(xp, 5).reshape(n * h * wd, 25 * c)
    return (cols @ w.reshape(25 * c, -1)).reshape(n, h, wd, -1), cols


def _conv_dx(dy: np.ndarray, w: np.ndarray) -> np.ndarray:
    # The input gradient of a SAME 5x5 convolution is a SAME convolution of dy with the
    # filter rotated by 180 degrees and in/out channels swapped.
    return _conv(dy, w[::-1, ::-1].transpose(0, 1, 3, 2).copy())[0]


def _pool(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n, h, w, c = x.shape
    r = x.reshape(n, h // 2, 2, w // 2, 2, c)
    y = r.max(axis=(2, 4))
    return y, r == y[:, :, None, :, None, :]


def _unpool(dy: np.ndarray, mask: np.ndarray) -> np.ndarray:
    n, h, _, w, _, c = mask.shape
    # Ties send the gradient to every maximum here; with random inputs there are none.
    return (mask * dy[:, :, None, :, None, :]).reshape(n, h * 2, w * 2, c)


def numpy_step() -> Callable[[], float]:
    x, y, ws = data()
    ws = [w.copy() for w in ws]
    lr = np.float32(LR)

    def step() -> float:
        c1, b1, c2, b2, f1, b3, f2, b4 = ws
        a1, cols1 = _conv(x, c1)
        r1 = np.maximum(a1 + b1, 0)
        p1, m1 = _pool(r1)
        a2, cols2 = _conv(p1, c2)
        r2 = np.maximum(a2 + b2, 0)
        p2, m2 = _pool(r2)
        flat = p2.reshape(BATCH, -1)
        h3 = np.maximum(flat @ f1 + b3, 0)
        z = h3 @ f2 + b4
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z)
        s = e.sum(axis=1, keepdims=True)
        loss = float(np.mean(np.log(s[:, 0]) - z[np.arange(BATCH), y]))
        dz = e / s
        dz[np.arange(BATCH), y] -= 1
        dz /= BATCH
        g_f2, g_b4 = h3.T @ dz, dz.sum(0)
        dh3 = (dz @ f2.T) * (h3 > 0)
        g_f1, g_b3 = flat.T @ dh3, dh3.sum(0)
        dr2 = _unpool((dh3 @ f1.T).reshape(p2.shape), m2) * (r2 > 0)
        g_c2, g_b2 = (cols2.T @ dr2.reshape(-1, 64)).reshape(c2.shape), dr2.sum((0, 1, 2))
        dr1 = _unpool(_conv_dx(dr2, c2), m1) * (r1 > 0)
        g_c1, g_b1 = (cols1.T @ dr1.reshape(-1, 32)).reshape(c1.shape), dr1.sum((0, 1, 2))
        for w, g in zip(ws, (g_c1, g_b1, g_c2, g_b2, g_f1, g_b3, g_f2, g_b4)):
            w -= lr * g
        return loss

    return step


def main() -> None:
    compare_training_steps("cnn_train", graph_step, numpy_step, torch_step, steps=3, threads=THREADS)


if __name__ == "__main__":
    main()
