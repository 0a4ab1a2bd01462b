"""Shared test fixtures: a fresh default graph per test, and the TensorFlow peer."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# The tests pin their reference here and nowhere else: TensorFlow turns its oneDNN kernels on
# by default on CPUs with AVX512_VNNI/AVX512_BF16/AMX, and they rename ops in the
# runtime graphs (`_MklMatMul`), treat NaN rows of softmax differently and skip some
# argument checks -- so the same test passed on one machine and failed on another.
# With oneDNN off TensorFlow runs its portable Eigen kernels on every CPU.  It must be
# set before tensorflow is imported (its C++ runtime reads it once, at load time).
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"

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
            _check_reference_pinned()
            v1 = tf_mod.compat.v1
            v1.disable_v2_behavior()
            _TF = v1
    return _TF


def _check_reference_pinned() -> None:
    """Fail loudly when tensorflow was imported before this file could pin it."""
    from tensorflow.python.util import _pywrap_util_port  # type: ignore[import-not-found]

    if _pywrap_util_port.IsMklEnabled():
        raise RuntimeError(
            "TensorFlow runs with oneDNN on: something imported tensorflow before "
            "tests/conftest.py set TF_ENABLE_ONEDNN_OPTS=0")


@pytest.fixture
def tf1():
    """TensorFlow's `tf.compat.v1` in graph mode, or skip when it is not installed."""
    tf = _load_tf()
    if tf is False:
        pytest.skip("tensorflow is not installed (pip install tensorflow-cpu)")
    tf.reset_default_graph()
    return tf


def pytest_addoption(parser):
    parser.addoption(
        "--serialize-task-messages", action="store_true",
        help="Every Session's task is a SerializingTask: each task-interface message and "
             "reply crosses Dask's serialization (tests/runtime/serializing_task.py).")


def pytest_configure(config):
    if config.getoption("--serialize-task-messages"):
        from flowlab.runtime import session as session_mod
        from tests.runtime.serializing_task import SerializingTask

        session_mod.LocalTask = SerializingTask  # type: ignore[misc]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if config.getoption("--serialize-task-messages"):
        from tests.runtime.serializing_task import MESSAGES

        terminalreporter.write_line(f"task messages serialized: {MESSAGES['count']}")
