"""Differential helpers for tf.data: drain an iterator under TensorFlow and flowlab.

`drain(tf, build)` builds `build(tf) -> Dataset` in a fresh graph, makes an iterator
(one-shot, or initializable when `initializable=True`), runs `get_next` until
OutOfRangeError and returns the elements plus the static types and shapes.
`assert_same_elements` compares both: values, dtypes, order, static structure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import flowlab as fl


def _flat(x: Any) -> list[Any]:
    if isinstance(x, dict):
        return [v for k in sorted(x) for v in _flat(x[k])]
    if isinstance(x, (tuple, list)):
        return [v for e in x for v in _flat(e)]
    return [x]


def drain(tf: Any, build: Callable[[Any], Any], initializable: bool = False,
          limit: int = 10_000) -> tuple[list[Any], Any, Any]:
    g = tf.Graph()
    with g.as_default():
        ds = build(tf)
        types, shapes = ds.output_types, ds.output_shapes
        it = (tf.data.make_initializable_iterator(ds) if initializable
              else tf.data.make_one_shot_iterator(ds))
        nxt = it.get_next()
        out = []
        with tf.Session(graph=g) as sess:
            if initializable:
                sess.run(it.initializer)
            for _ in range(limit):
                try:
                    out.append(sess.run(nxt))
                except tf.errors.OutOfRangeError:
                    break
            else:
                raise AssertionError("the dataset did not end")
            # The end is sticky: the next call is OutOfRangeError again.
            try:
                sess.run(nxt)
            except tf.errors.OutOfRangeError:
                pass
            else:
                raise AssertionError("get_next after the end did not raise OutOfRangeError")
    return out, types, shapes


def _shape_list(s: Any) -> Any:
    return None if s.ndims is None else s.as_list()


def assert_same_elements(tf1: Any, build: Callable[[Any], Any], **kw: Any) -> list[Any]:
    exp, etypes, eshapes = drain(tf1, build, **kw)
    got, gtypes, gshapes = drain(fl, build, **kw)
    assert [t.name for t in _flat(gtypes)] == [t.name for t in _flat(etypes)]
    assert [_shape_list(s) for s in _flat_shapes(gshapes)] == \
        [_shape_list(s) for s in _flat_shapes(eshapes)]
    assert len(got) == len(exp), (len(got), len(exp))
    for i, (e, g) in enumerate(zip(exp, got)):
        ef, gf = _flat(e), _flat(g)
        assert type(e) is type(g) or isinstance(e, dict) == isinstance(g, dict), (i, e, g)
        assert len(ef) == len(gf)
        for a, b in zip(ef, gf):
            a, b = np.asarray(a), np.asarray(b)
            assert a.dtype == b.dtype, (i, a.dtype, b.dtype)
            assert a.shape == b.shape, (i, a.shape, b.shape)
            if a.dtype.kind in "OS":
                assert a.tolist() == b.tolist(), (i, a, b)
            else:
                np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-6, err_msg=f"element {i}")
    return got


def _flat_shapes(x: Any) -> list[Any]:
    if isinstance(x, dict):
        return [v for k in sorted(x) for v in _flat_shapes(x[k])]
    if isinstance(x, (tuple, list)) and not hasattr(x, "as_list"):
        return [v for e in x for v in _flat_shapes(e)]
    return [x]
