"""tf.einsum against NumPy and TensorFlow: explicit and implicit equations, ellipses and
broadcasting, traces and diagonals, three or more operands, int and float dtypes,
gradients, names, and the errors for bad equations."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowlab as fl
from flowlab.ops.einsum_ops import parse
from tests.difftest import assert_same

RS = np.random.RandomState(7)
A, B, C = RS.randn(2, 3).astype(np.float32), RS.randn(3, 4).astype(np.float32), RS.randn(4).astype(np.float32)
T = RS.randn(2, 3, 4).astype(np.float32)
CASES = [
    ("ij,jk->ik", (A, B)), ("ij,jk", (A, B)), ("ij->ji", (A,)), ("ij->", (A,)), ("ij", (A,)), ("ii->i", (B[:3, :3],)),
    ("ii", (B[:3, :3],)), ("i,i->", (C, C)), ("i,j->ij", (C, C[:2])), ("bij,bjk->bik", (T[:, :, :3], T)),
    ("...ij,jk->...ik", (T, B.T)), ("bij,jk->bik", (T, B.T)), ("b i j , j k -> b i k", (T, B.T)),
    ("ij,jk,k->i", (A, B, C)), ("ij,jk,kl,l->i", (A, B, B.T @ B, C)),
    ("...j,j->...", (T, C)), ("ijk->kji", (T,)), ("bik,bjk->bij", (T, T)),
]


@pytest.mark.parametrize("eq,ops", CASES, ids=[c[0] for c in CASES])
def test_values_match_numpy(eq, ops):
    with fl.Graph().as_default(), fl.Session() as s:
        got = s.run(fl.einsum(eq, *ops))
    np.testing.assert_allclose(got, np.einsum(eq, *ops), rtol=1e-5, atol=1e-5)
    assert got.dtype == np.float32


def test_values_and_shapes_match_tensorflow(tf1):
    def build(tf):
        outs = [tf.einsum(eq, *[tf.constant(o) for o in ops]) for eq, ops in CASES]
        outs.append(tf.einsum("ij,jk->ik", tf.constant([[1, 2]]), tf.constant([[3], [4]])))
        outs.append(tf.einsum("ij,jk->ik", tf.constant(A.astype(np.float64)), tf.constant(B.astype(np.float64))))
        return outs

    out = assert_same(tf1, build, rtol=1e-5, atol=1e-5)
    shapes = []
    for mod in (tf1, fl):
        with mod.Graph().as_default():
            x = mod.placeholder(mod.float32, [None, 3, 4])
            y = mod.placeholder(mod.float32, [4, None])
            shapes.append([mod.einsum(e, x, y).shape.as_list() for e in ("bij,jk->bik", "bij,jk->kb", "...j,jk")])
    assert shapes[0] == shapes[1]
    assert out[-2].dtype == np.int32


def test_gradients_match_tensorflow(tf1):
    def build(tf):
        x = tf.Variable(T)
        w = tf.Variable(B.T)
        v = tf.Variable(C)
        ys = [tf.einsum("bij,jk->bik", x, w), tf.einsum("bij,j->bi", x, v), tf.einsum("...ij->...j", x),
              tf.einsum("bij,bkj->bik", x, x), tf.einsum("ij,jk,k->i", w, tf.transpose(w), v),
              tf.einsum("bij->", x), tf.einsum("i,j->ij", v, v), tf.einsum("ii", w[:3, :3]),
              tf.einsum("bii->bi", x[:, :, :3]), tf.einsum("iji,j->j", x[:, :2, :2], v[:2])]
        return [tf.gradients(tf.reduce_sum(tf.square(y)), [x, w, v], unconnected_gradients="zero") for y in ys]

    assert_same(tf1, build, rtol=1e-4, atol=1e-4)


def test_names_and_op_structure(tf1):
    got = []
    for mod in (tf1, fl):
        with mod.Graph().as_default() as g:
            a, b = mod.constant(A), mod.constant(B)
            y1 = mod.einsum("ij,jk->ik", a, b)
            y2 = mod.einsum("ij , jk", a, b, name="mine")
            ops = [(o.type, _text(o.get_attr("equation")), o.get_attr("N")) for o in g.get_operations()
                   if o.type == "Einsum"]
            got.append([y1.name, y2.name, ops])
    assert got[0] == got[1]
    assert got[1][2][0][1] == "ij,jk->ik"


def _text(v):
    return v.decode() if isinstance(v, bytes) else v


def test_implicit_output_rule():
    assert parse("ij,jk", 2) == (["ij", "jk"], "ik")
    assert parse("ba", 1) == (["ba"], "ab")
    assert parse("...ij,...jk", 2) == ([".ij", ".jk"], ".ik")


@pytest.mark.parametrize("eq,n,msg", [("ij,jk->ik", 1, "Expected 2 input"), ("ij->ik", 1, "output label"),
                                     ("i2->i", 1, "letters"), ("ij->i->j", 1, "more than one")])
def test_bad_equations(eq, n, msg):
    with fl.Graph().as_default(), pytest.raises(ValueError, match=msg):
        fl.einsum(eq, *[fl.constant(A)] * n)


def test_mismatched_dimensions_and_dtypes(tf1):
    for mod in (tf1, fl):
        with mod.Graph().as_default():
            with pytest.raises(ValueError):
                mod.einsum("ij,jk->ik", mod.constant(A), mod.constant(A))
            with pytest.raises((TypeError, ValueError)):
                mod.einsum("ij,jk->ik", mod.constant(A), mod.constant([[1], [2], [3]]))


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.sampled_from(["ij,jk->ik", "ij,jk->ki", "ij,jk->j",
                                                                               "ij,jk", "ij,kj->ik" ]))
def test_pairs_match_numpy(m, n, k, eq):
    a = np.arange(m * n, dtype=np.float64).reshape(m, n)
    b = np.arange(n * k, dtype=np.float64).reshape(n, k) - 1
    if eq == "ij,kj->ik":
        b = b.T
    with fl.Graph().as_default(), fl.Session() as s:
        np.testing.assert_allclose(s.run(fl.einsum(eq, a, b)), np.einsum(eq, a, b))
