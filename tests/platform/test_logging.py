"""tf.logging against TensorFlow's: names, levels, verbosity and what reaches the
"tensorflow" logger."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

import flowlab as fl

LEVELS = ["DEBUG", "INFO", "WARN", "ERROR", "FATAL"]


def test_names_and_levels(tf1):
    for n in LEVELS:
        assert getattr(fl.logging, n) == getattr(tf1.logging, n)
    ours = {n for n in dir(fl.logging) if not n.startswith("_")}
    theirs = {n for n in dir(tf1.logging) if not n.startswith("_")}
    assert theirs <= ours


@pytest.mark.parametrize("fn,level", [("debug", 10), ("info", 20), ("warn", 30), ("warning", 30),
                                      ("error", 40), ("fatal", 50)])
def test_records_reach_the_tensorflow_logger(caplog, fn, level):
    old = fl.logging.get_verbosity()
    fl.logging.set_verbosity(fl.logging.DEBUG)
    try:
        with caplog.at_level(logging.DEBUG, logger="tensorflow"):
            getattr(fl.logging, fn)("step %d: %s", 3, "ok")
        rec = caplog.records[-1]
        assert (rec.name, rec.levelno, rec.getMessage()) == ("tensorflow", level, "step 3: ok")
        assert rec.filename == "test_logging.py"  # the caller, not flowlab's module
        assert fl.logging.get_verbosity() == fl.logging.DEBUG
    finally:
        fl.logging.set_verbosity(old)


def test_log_first_n_every_n_and_if(caplog):
    fl.logging.set_verbosity(fl.logging.INFO)
    with caplog.at_level(logging.INFO, logger="tensorflow"):
        for i in range(7):
            fl.logging.log_first_n(fl.logging.INFO, "first %d", 2, i)
            fl.logging.log_every_n(fl.logging.INFO, "every %d", 3, i)
            fl.logging.log_if(fl.logging.INFO, "if %d", i == 5, i)
    msgs = [r.getMessage() for r in caplog.records]
    assert [m for m in msgs if m.startswith("first")] == ["first 0", "first 1"]
    assert [m for m in msgs if m.startswith("every")] == ["every 0", "every 3", "every 6"]
    assert [m for m in msgs if m.startswith("if")] == ["if 5"]
    with pytest.raises(NotImplementedError):
        fl.logging.flush()


SCRIPT = """
import os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
if sys.argv[1] == "tf":
    import tensorflow.compat.v1 as tf
else:
    import flowlab as tf
print(tf.logging.get_verbosity())
tf.logging.info("hidden")
tf.logging.warn("shown %d", 1)
tf.logging.set_verbosity(tf.logging.INFO)
tf.logging.info("now shown")
tf.logging.error("bad")
"""


def test_output_as_tensorflow(tf1):
    outs = []
    for which in ("tf", "fl"):
        p = subprocess.run([sys.executable, "-c", SCRIPT, which], capture_output=True, text=True, timeout=120)
        err = [line for line in p.stderr.splitlines() if ":tensorflow:" in line]
        outs.append((p.stdout, err))
    assert outs[1] == outs[0]
    assert outs[1][1] == ["WARNING:tensorflow:shown 1", "INFO:tensorflow:now shown", "ERROR:tensorflow:bad"]
