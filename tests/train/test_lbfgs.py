"""flowlab.train.LBFGSOptimizer: a convex quadratic (converges in a few iterations) and
Rosenbrock, iterate by iterate against a NumPy L-BFGS written here with the same history
size, pair-skipping rule, initial scaling and step rule (fixed or Armijo backtracking)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import flowlab as fl

A = np.array([[3.0, 1.0, 0.0], [1.0, 4.0, 1.0], [0.0, 1.0, 2.0]])
B = np.array([1.0, 2.0, 3.0])


def _np_lbfgs(f: Any, grad: Any, x0: np.ndarray, iters: int, m: int, lr: float,
              armijo: bool, c1: float = 1e-4, shrink: float = 0.5, max_bt: int = 20) -> list[np.ndarray]:
    """Reference: the iterates x_1..x_iters."""
    x, hist, prev, out = x0.astype(np.float64), [], None, []
    for _ in range(iters):
        g = grad(x)
        if prev is not None:
            s, y = x - prev[0], g - prev[1]
            if y @ s > 1e-10:
                hist = (hist + [(s, y, 1.0 / (y @ s))])[-m:]
        q, alphas = g.copy(), []
        for s, y, r in reversed(hist):
            a = r * (s @ q)
            alphas.append(a)
            q = q - a * y
        gamma = (hist[-1][0] @ hist[-1][1]) / (hist[-1][1] @ hist[-1][1]) if hist else 1.0
        r_ = gamma * q
        for (s, y, r), a in zip(hist, reversed(alphas)):
            r_ = r_ + s * (a - r * (y @ r_))
        d = -r_
        if g @ d >= 0:
            d = -g
        t = lr
        if armijo:
            k = 0
            while k < max_bt and f(x + t * d) > f(x) + c1 * t * (g @ d):
                t, k = t * shrink, k + 1
        prev = (x, g)
        x = x + t * d
        out.append(x)
    return out


def _quad(tf: Any, x: Any) -> Any:
    return 0.5 * tf.reduce_sum(x * tf.reshape(tf.matmul(A, tf.reshape(x, [3, 1])), [3])) - tf.reduce_sum(B * x)


def _rosen(tf: Any, v: Any) -> Any:
    x, y = v[0], v[1]
    return tf.square(1.0 - x) + 100.0 * tf.square(y - tf.square(x))


def _np_rosen(v: np.ndarray) -> float:
    return (1 - v[0]) ** 2 + 100 * (v[1] - v[0] ** 2) ** 2


def _np_rosen_grad(v: np.ndarray) -> np.ndarray:
    return np.array([-2 * (1 - v[0]) - 400 * v[0] * (v[1] - v[0] ** 2), 200 * (v[1] - v[0] ** 2)])


def _run(build: Any, iters: int) -> list[np.ndarray]:
    with fl.Graph().as_default():
        x, train = build()
        with fl.Session() as s:
            s.run(fl.global_variables_initializer())
            out = []
            for _ in range(iters):
                s.run(train)
                out.append(s.run(x))
    return out


@pytest.mark.parametrize("armijo", [False, True])
def test_quadratic_converges(armijo: bool) -> None:
    def build() -> Any:
        x = fl.Variable(np.zeros(3), name="x")
        opt = fl.train.LBFGSOptimizer(learning_rate=1.0, history_size=5)
        fn = (lambda vs: _quad(fl, vs[0])) if armijo else None
        return x, opt.minimize(_quad(fl, x), loss_fn=fn)

    xs = _run(build, 12)
    np.testing.assert_allclose(xs[-1], np.linalg.solve(A, B), atol=1e-8)
    ref = _np_lbfgs(lambda v: 0.5 * v @ A @ v - B @ v, lambda v: A @ v - B, np.zeros(3), 12, 5, 1.0, armijo)
    # near the optimum the Armijo test compares losses equal to rounding: first 8 iterates
    np.testing.assert_allclose(xs[:8], ref[:8], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("m", [1, 3])
def test_rosenbrock_armijo_matches_numpy(m: int) -> None:
    x0 = np.array([-1.2, 1.0])

    def build() -> Any:
        v = fl.Variable(x0, name="v")
        opt = fl.train.LBFGSOptimizer(learning_rate=1.0, history_size=m)
        return v, opt.minimize(_rosen(fl, v), loss_fn=lambda vs: _rosen(fl, vs[0]))

    iters = 30
    xs = _run(build, iters)
    ref = _np_lbfgs(_np_rosen, _np_rosen_grad, x0, iters, m, 1.0, True)
    np.testing.assert_allclose(xs[:20], ref[:20], rtol=1e-7, atol=1e-9)
    assert _np_rosen(xs[-1]) < _np_rosen(x0)


def test_rosenbrock_fixed_step_matches_numpy() -> None:
    x0 = np.array([-1.2, 1.0])

    def build() -> Any:
        v = fl.Variable(x0, name="v")
        return v, fl.train.LBFGSOptimizer(learning_rate=1e-3, history_size=4).minimize(_rosen(fl, v))

    xs = _run(build, 10)
    ref = _np_lbfgs(_np_rosen, _np_rosen_grad, x0, 10, 4, 1e-3, False)
    np.testing.assert_allclose(xs, ref, rtol=1e-9, atol=1e-12)


def test_several_variables_and_global_step() -> None:
    with fl.Graph().as_default():
        a = fl.Variable(np.ones((2, 2)), name="a")
        b = fl.Variable(np.zeros(3), name="b")
        gs = fl.Variable(0, name="global_step", trainable=False)
        loss = fl.reduce_sum(fl.square(a - 2.0)) + fl.reduce_sum(fl.square(b + 1.0))
        train = fl.train.LBFGSOptimizer(learning_rate=0.5).minimize(loss, global_step=gs)
        with fl.Session() as s:
            s.run(fl.global_variables_initializer())
            for _ in range(6):
                s.run(train)
            av, bv, step = s.run([a, b, gs])
    np.testing.assert_allclose(av, 2.0, atol=1e-6)
    np.testing.assert_allclose(bv, -1.0, atol=1e-6)
    assert step == 6


def test_two_optimizers_keep_separate_history() -> None:
    with fl.Graph().as_default():
        a = fl.Variable(np.ones(2), name="a")
        b = fl.Variable(np.ones(3), name="b")
        opt = fl.train.LBFGSOptimizer()
        ta = opt.minimize(fl.reduce_sum(fl.square(a - 3.0)), var_list=[a])
        tb = opt.minimize(fl.reduce_sum(fl.square(b + 2.0)), var_list=[b])
        names = {v.op.name for v in fl.global_variables()}
        assert {"LBFGS_history/S", "LBFGS_history_1/S"} <= names
        with fl.Session() as s:
            s.run(fl.global_variables_initializer())
            for _ in range(4):
                s.run([ta, tb])
            np.testing.assert_allclose(s.run(a), 3.0, atol=1e-6)
            np.testing.assert_allclose(s.run(b), -2.0, atol=1e-6)


def test_errors() -> None:
    with fl.Graph().as_default():
        a = fl.Variable(1.0)
        c = fl.Variable(2.0)
        with pytest.raises(ValueError, match="history_size"):
            fl.train.LBFGSOptimizer(history_size=0)
        with pytest.raises(ValueError, match="No gradient"):
            fl.train.LBFGSOptimizer().minimize(a * 2.0, var_list=[a, c])
        d = fl.Variable(np.float64(1.0))
        with pytest.raises(ValueError, match="one dtype"):
            fl.train.LBFGSOptimizer().minimize(a * 2.0 + fl.cast(d, fl.float32), var_list=[a, d])
