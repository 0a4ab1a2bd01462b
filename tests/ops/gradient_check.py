"""The table-driven gradient check: symbolic gradients against central differences.

`TABLE` maps an op type to the cases that exercise its gradient.  A test module adds
its entries with the decorator:

    @grad_case("MatMul", RS.randn(2, 3), RS.randn(3, 4))
    def _(tf, a, b):                 # a, b: float64 placeholders of those shapes
        return tf.matmul(a, b)       # the graph must contain a MatMul op

`check_case` builds the graph in a fresh Graph, takes the symbolic gradient of
`sum(y * w)` (w: fixed random weights, so no symmetric cancellation) with respect to
every placeholder, and compares it with central differences in float64.  A None
gradient counts as zeros; an IndexedSlices gradient is scattered to dense.

`TABLE_MODULES` are the test modules that fill the table (math, nn, array/state/random);
`load_table()` imports them and every other tests/ops/test_*.py that calls `grad_case`
(so a new op family adds its entries in its own test module), and the coverage test in test_gradients.py walks the op
registry against it: an op with a gradient function and no entry fails, and so does
an op neither differentiable nor declared not differentiable.
"""

from __future__ import annotations

import importlib
import pathlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import flowlab as fl
from flowlab.ops.gradients_impl import _load_gradient_modules, gradients
from flowlab.ops.indexed_slices import IndexedSlicesValue

TABLE_MODULES = ("tests.ops.test_math_grad", "tests.ops.test_nn_grad", "tests.ops.test_array_grad")
_HERE = pathlib.Path(__file__).parent


@dataclass
class GradCase:
    op_type: str
    build: Callable[..., Any]
    inputs: list[np.ndarray]
    eps: float = 1e-6
    rtol: float = 1e-5
    atol: float = 1e-6
    where: str = field(default="")

    @property
    def id(self) -> str:
        return f"{self.op_type}-{self.where}"


TABLE: dict[str, list[GradCase]] = {}


def grad_case(op_type: str, *inputs: Any, eps: float = 1e-6, rtol: float = 1e-5,
              atol: float = 1e-6) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register `build(tf, *placeholders) -> y` as a gradient case of `op_type`."""

    def register(build: Callable[..., Any]) -> Callable[..., Any]:
        where = f"{build.__module__.rsplit('.', 1)[-1]}:{build.__code__.co_firstlineno}"
        cases = TABLE.setdefault(op_type, [])
        if any(c.where == where for c in cases):  # module imported twice
            return build
        vals = [np.asarray(v, dtype=np.float64) for v in inputs]
        cases.append(GradCase(op_type, build, vals, eps, rtol, atol, where))
        return build

    return register


def load_table() -> dict[str, list[GradCase]]:
    _load_gradient_modules()
    # Cases live beside the op families' own tests too (tests/sparse).
    extra = sorted(
        f"tests.{p.parent.name}.{p.stem}" for d in (_HERE, _HERE.parent / "sparse")
        for p in d.glob("test_*.py") if "grad_case(" in p.read_text()
    )
    for name in dict.fromkeys([*TABLE_MODULES, *extra]):
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name != name:
                raise
    return TABLE


def _dense(v: Any, shape: tuple[int, ...]) -> np.ndarray:
    if v is None:
        return np.zeros(shape)
    if isinstance(v, IndexedSlicesValue):
        out = np.zeros(shape)
        np.add.at(out, np.asarray(v.indices), np.asarray(v.values))
        return out
    return np.broadcast_to(np.asarray(v, dtype=np.float64), shape)


def check_case(case: GradCase) -> None:
    """Assert symbolic == numeric gradient for one case."""
    g = fl.Graph()
    with g.as_default():
        xs = [fl.placeholder(fl.float64, v.shape, name=f"x{i}") for i, v in enumerate(case.inputs)]
        y = case.build(fl, *xs)
        types = {op.type for op in g.get_operations()}
        assert case.op_type in types, f"the case for {case.op_type} builds no {case.op_type} op: {types}"
        y = fl.cast(y, fl.float64) if y.dtype != fl.float64 else y
        w = fl.placeholder(fl.float64, name="w")
        loss = fl.reduce_sum(y * w)
        grads = gradients(loss, xs)
        feed = dict(zip(xs, case.inputs))
        with fl.Session(graph=g) as sess:
            y0 = np.asarray(sess.run(y, feed))
            wv = np.random.RandomState(1).uniform(0.5, 1.5, y0.shape)
            feed[w] = wv
            fetch = [gr for gr in grads if gr is not None]
            got = iter(sess.run(fetch, feed))
            symbolic = [_dense(None if gr is None else next(got), v.shape) for gr, v in zip(grads, case.inputs)]

            def f(vals: list[np.ndarray]) -> float:
                return float(np.sum(np.asarray(sess.run(y, dict(zip(xs, vals)))) * wv))

            for i, v in enumerate(case.inputs):
                numeric = np.zeros(v.shape)
                for j in np.ndindex(v.shape):
                    hi = [a.copy() for a in case.inputs]
                    lo = [a.copy() for a in case.inputs]
                    hi[i][j] += case.eps
                    lo[i][j] -= case.eps
                    numeric[j] = (f(hi) - f(lo)) / (2 * case.eps)
                np.testing.assert_allclose(
                    symbolic[i], numeric, rtol=case.rtol, atol=case.atol,
                    err_msg=f"{case.op_type} ({case.where}): gradient of input {i}",
                )
