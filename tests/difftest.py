"""Differential testing against TensorFlow 1.x graph mode.

    def test_add(tf1):
        assert_same(tf1, lambda tf: tf.add(tf.constant([1.0, 2.0]), 3.0))

`build(tf)` is called once with TensorFlow's `tf.compat.v1` and once with `flowlab`,
each inside a fresh graph; it returns fetches, or `(fetches, feed_dict)` where the
feed_dict keys are that module's placeholders.  Values and dtypes must match.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import flowlab as fl


def run_with(tf: Any, build: Callable[[Any], Any], init_variables: bool = True) -> Any:
    g = tf.Graph()
    with g.as_default():
        out = build(tf)
        fetches, feed = (out if isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], dict) else (out, None))
        init = tf.global_variables_initializer() if init_variables and hasattr(tf, "global_variables_initializer") else None
        with tf.Session(graph=g) as sess:
            if init is not None:
                sess.run(init)
            return sess.run(fetches, feed)


def assert_same(tf1: Any, build: Callable[[Any], Any], rtol: float = 1e-6, atol: float = 1e-6) -> Any:
    """Run `build` under TensorFlow and flowlab; assert equal values and dtypes."""
    expected = run_with(tf1, build)
    actual = run_with(fl, build)
    _compare(expected, actual, rtol, atol, path="result")
    return actual


def assert_same_error(tf1: Any, build: Callable[[Any], Any]) -> tuple[BaseException, BaseException]:
    """Both raise, with the same error class name; returns (tf_error, flowlab_error)."""
    errs = []
    for mod in (tf1, fl):
        try:
            run_with(mod, build)
        except Exception as e:  # noqa: BLE001 - we compare the classes below
            errs.append(e)
        else:
            raise AssertionError(f"{mod.__name__} did not raise")
    assert type(errs[0]).__name__ == type(errs[1]).__name__, (errs[0], errs[1])
    return errs[0], errs[1]


def _compare(e: Any, a: Any, rtol: float, atol: float, path: str) -> None:
    if isinstance(e, (list, tuple)):
        assert isinstance(a, (list, tuple)) and len(a) == len(e), f"{path}: {a!r} vs {e!r}"
        for i, (x, y) in enumerate(zip(e, a)):
            _compare(x, y, rtol, atol, f"{path}[{i}]")
        return
    if isinstance(e, dict):
        assert set(e) == set(a), path
        for k in e:
            _compare(e[k], a[k], rtol, atol, f"{path}[{k!r}]")
        return
    if e is None:
        assert a is None, f"{path}: expected None, got {a!r}"
        return
    ea, aa = np.asarray(e), np.asarray(a)
    assert ea.dtype == aa.dtype, f"{path}: dtype {aa.dtype} != TensorFlow's {ea.dtype}"
    assert ea.shape == aa.shape, f"{path}: shape {aa.shape} != TensorFlow's {ea.shape}"
    assert type(e) is type(a) or (isinstance(e, np.ndarray) == isinstance(a, np.ndarray)), (
        f"{path}: type {type(a)} != TensorFlow's {type(e)}"
    )
    if ea.dtype == object or ea.dtype.kind in "biuSU":
        np.testing.assert_array_equal(aa, ea, err_msg=path)
    else:
        np.testing.assert_allclose(aa, ea, rtol=rtol, atol=atol, err_msg=path, equal_nan=True)
