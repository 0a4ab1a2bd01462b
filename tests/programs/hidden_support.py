"""Support for the hidden-check style programs (tests/programs/test_hidden_*.py).

A program is a function `prog(tf)` written against the TensorFlow 1.x API: it builds
a graph, opens its own Session(s), runs steps and returns plain results (arrays,
lists, names, booleans).  `same_results` runs it once with TensorFlow's
`tf.compat.v1` and once with flowlab, each in a fresh default graph, and compares
values and dtypes.  `same_error` asserts both raise the same class (and, when given,
that both messages contain a text).

TensorFlow 2.21 ships Keras 3, which removed `tf.nn.rnn_cell` and `tf.layers`; the
reference side gets TensorFlow's own legacy implementations of both (the same code
TensorFlow 1.x ran) through `tf_with_legacy_keras`.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import flowlab as fl
from tests.difftest import _compare


def run(module: Any, prog: Callable[[Any], Any]) -> Any:
    with module.Graph().as_default():
        return prog(module)


def same_results(tf: Any, prog: Callable[[Any], Any], rtol: float = 1e-5, atol: float = 1e-6) -> Any:
    expected = run(tf, prog)
    actual = run(fl, prog)
    _compare(expected, actual, rtol, atol, path=prog.__name__)
    return actual


def same_error(tf: Any, prog: Callable[[Any], Any], text: str | None = None) -> tuple[BaseException, BaseException]:
    errs = []
    for mod in (tf, fl):
        try:
            run(mod, prog)
        except Exception as e:  # noqa: BLE001 - compared below
            errs.append(e)
        else:
            raise AssertionError(f"{mod.__name__} did not raise")
    assert type(errs[0]).__name__ == type(errs[1]).__name__, errs
    if text is not None:
        for e in errs:
            assert text in str(e), (text, str(e))
    return errs[0], errs[1]


def tf_with_legacy_keras(tf: Any) -> Any:
    """`tf` (tf.compat.v1) with TensorFlow's legacy `nn.rnn_cell` and `layers`."""
    from tensorflow.python.keras.layers.legacy_rnn import rnn_cell_impl  # type: ignore[import-not-found]
    from tensorflow.python.keras.legacy_tf_layers import (  # type: ignore[import-not-found]
        convolutional,
        core,
        pooling,
    )

    shim = types.ModuleType("tf_compat_v1_legacy_keras")
    for k in dir(tf):
        if not k.startswith("__"):
            try:
                setattr(shim, k, getattr(tf, k))
            except Exception:  # noqa: BLE001, S112 - lazily loaded members that fail to load
                continue
    nn = types.SimpleNamespace(**{k: getattr(tf.nn, k) for k in dir(tf.nn) if not k.startswith("__")})
    nn.rnn_cell = rnn_cell_impl
    shim.nn = nn
    shim.layers = types.SimpleNamespace(dense=core.dense, flatten=core.flatten, dropout=core.dropout,
                                        conv2d=convolutional.conv2d, max_pooling2d=pooling.max_pooling2d,
                                        average_pooling2d=pooling.average_pooling2d)
    return shim
