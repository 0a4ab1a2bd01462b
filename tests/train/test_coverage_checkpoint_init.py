"""tf.train.init_from_checkpoint and tf.train.checkpoints_iterator, beside TensorFlow:
a checkpoint written by each library, variables of a new graph initialized from it by
name, by variable object and by scope, and the errors of bad maps."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

import flowlab as fl

RS = np.random.RandomState(16)
W, B, E = RS.randn(3, 2).astype(np.float32), RS.randn(2).astype(np.float32), RS.randn(4).astype(np.float32)


def _write(tf: Any, root: str) -> str:
    with tf.Graph().as_default():
        with tf.variable_scope("old"):
            tf.get_variable("w", initializer=W)
            tf.get_variable("b", initializer=B)
        tf.get_variable("emb", initializer=E)
        saver = tf.train.Saver()
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            return saver.save(s, os.path.join(root, "model.ckpt"), global_step=3)


def _load(tf: Any, root: str) -> Any:
    with tf.Graph().as_default():
        with tf.variable_scope("new"):
            w = tf.get_variable("w", [3, 2])
            b = tf.get_variable("b", [2])
        emb = tf.get_variable("table", [4])
        other = tf.get_variable("other", [4], initializer=tf.ones_initializer())
        tf.train.init_from_checkpoint(root, {"old/": "new/"})
        tf.train.init_from_checkpoint(os.path.join(root, "model.ckpt-3"), {"emb": emb})
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            vals = s.run([w, b, emb, other])
        errors = []
        for mapping in ({"missing": "table"}, {"old/w": "other"}, {"old": "new/"}):
            try:
                tf.train.init_from_checkpoint(root, mapping)
            except ValueError as e:
                errors.append(str(e).split(" checkpoint")[0].split(" (")[0])
        return vals, errors


def test_init_from_checkpoint(tf1: Any, tmp_path: Any) -> None:
    a, b = str(tmp_path / "tf"), str(tmp_path / "fl")
    _write(tf1, a)
    _write(fl, b)
    ea, aa = _load(tf1, a), _load(fl, b)
    for x, y in zip(ea[0], aa[0]):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(aa[0][0], W)
    assert [e.replace(a, "ROOT") for e in ea[1]] == [e.replace(b, "ROOT") for e in aa[1]]


def _iterate(tf: Any, root: str) -> Any:
    _write(tf, root)
    seen = [os.path.basename(p) for p in tf.train.checkpoints_iterator(root, timeout=0.5)]
    calls: list[int] = []
    it = tf.train.checkpoints_iterator(root, timeout=0.2, timeout_fn=lambda: calls.append(1) or len(calls) > 1)
    seen2 = [os.path.basename(p) for p in it]
    return seen, seen2, len(calls)


def test_checkpoints_iterator(tf1: Any, tmp_path: Any) -> None:
    assert _iterate(tf1, str(tmp_path / "tf")) == _iterate(fl, str(tmp_path / "fl"))


def test_bad_directory(tf1: Any, tmp_path: Any) -> None:
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            tf.get_variable("v", [1])
            with pytest.raises((ValueError, tf.errors.NotFoundError)):
                tf.train.init_from_checkpoint(str(tmp_path), {"v": "v"})
