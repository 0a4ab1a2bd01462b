"""Shared test fixtures: a fresh default graph per test, and the TensorFlow peer."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import flowlab as fl  # noqa: E402


@pytest.fixture(autouse=True)
def fresh_graph():
    """Every test starts with an empty default graph."""
    fl.reset_default_graph()
    yield
    fl.reset_default_graph()


_TF = None


def _load_tf():
    global _TF
    if _TF is None:
        try:
            import tensorflow as tf_mod  # type: ignore[import-not-found]
        except Exception:  # not installed, or broken on this machine
            _TF = False
        else:
            v1 = tf_mod.compat.v1
            v1.disable_v2_behavior()
            _TF = v1
    return _TF


@pytest.fixture
def tf1():
    """TensorFlow's `tf.compat.v1` in graph mode, or skip when it is not installed."""
    tf = _load_tf()
    if tf is False:
        pytest.skip("tensorflow is not installed (pip install tensorflow-cpu)")
    tf.reset_default_graph()
    return tf
