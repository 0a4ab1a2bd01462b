"""Convolution and pooling ops: values against NumPy loops and TensorFlow, shapes, errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import flowlab as fl
from flowlab import errors
from tests.difftest import assert_same, run_with

RS = np.random.RandomState(0)


def _out(size: int, k: int, s: int, d: int, padding: str) -> tuple[int, int]:
    eff = (k - 1) * d + 1
    if padding == "VALID":
        return (size - eff) // s + 1, 0
    out = -(-size // s)
    return out, max((out - 1) * s + eff - size, 0) // 2


def naive_conv(x: np.ndarray, f: np.ndarray, s: tuple[int, int], d: tuple[int, int],
               padding: str) -> np.ndarray:
    """The definition, one output element at a time (NHWC, groups allowed)."""
    n, h, w, c = x.shape
    kh, kw, cg, o = f.shape
    g = c // cg
    og = o // g
    oh, pt = _out(h, kh, s[0], d[0], padding)
    ow, pl = _out(w, kw, s[1], d[1], padding)
    y = np.zeros((n, oh, ow, o))
    for i in range(oh):
        for j in range(ow):
            for a in range(kh):
                for b in range(kw):
                    r, q = i * s[0] + a * d[0] - pt, j * s[1] + b * d[1] - pl
                    if 0 <= r < h and 0 <= q < w:
                        for gi in range(g):
                            y[:, i, j, gi * og:(gi + 1) * og] += (
                                x[:, r, q, gi * cg:(gi + 1) * cg] @ f[a, b, :, gi * og:(gi + 1) * og])
    return y


def naive_pool(x: np.ndarray, k: tuple[int, int], s: tuple[int, int], padding: str,
               reduce: Any) -> np.ndarray:
    n, h, w, c = x.shape
    oh, pt = _out(h, k[0], s[0], 1, padding)
    ow, pl = _out(w, k[1], s[1], 1, padding)
    y = np.zeros((n, oh, ow, c), x.dtype)
    for i in range(oh):
        for j in range(ow):
            r0, q0 = i * s[0] - pt, j * s[1] - pl
            win = x[:, max(r0, 0):r0 + k[0], max(q0, 0):q0 + k[1], :]
            y[:, i, j, :] = reduce(win, axis=(1, 2))
    return y


def _run(t: Any, feed: dict | None = None) -> Any:
    with fl.Session() as s:
        return s.run(t, feed)


CONFIGS = [
    # x shape, filter shape, strides, dilations, padding
    ((2, 5, 5, 3), (3, 3, 3, 4), (1, 1), (1, 1), "SAME"),
    ((2, 5, 5, 3), (3, 3, 3, 4), (1, 1), (1, 1), "VALID"),
    ((1, 7, 6, 2), (3, 2, 2, 5), (2, 2), (1, 1), "SAME"),
    ((1, 7, 6, 2), (3, 2, 2, 5), (2, 3), (1, 1), "VALID"),
    ((3, 8, 9, 1), (2, 3, 1, 2), (1, 1), (2, 2), "SAME"),
    ((3, 8, 9, 1), (2, 3, 1, 2), (1, 1), (2, 1), "VALID"),
    ((1, 4, 4, 3), (1, 1, 3, 2), (1, 1), (1, 1), "SAME"),
    ((2, 6, 6, 4), (4, 4, 4, 1), (3, 3), (1, 1), "SAME"),
    ((1, 3, 3, 2), (3, 3, 2, 2), (1, 1), (1, 1), "VALID"),
    ((1, 5, 5, 6), (3, 3, 3, 4), (1, 1), (1, 1), "SAME"),  # two groups
]


@pytest.mark.parametrize("xs,fs,s,d,padding", CONFIGS)
def test_conv2d_matches_numpy_loop(xs: Any, fs: Any, s: Any, d: Any, padding: str) -> None:
    x, f = RS.randn(*xs), RS.randn(*fs)
    y = fl.nn.conv2d(fl.constant(x), fl.constant(f), strides=list(s), padding=padding, dilations=list(d))
    got = _run(y)
    want = naive_conv(x, f, s, d, padding)
    assert got.dtype == np.float64 and got.shape == want.shape == tuple(y.shape.as_list())
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("xs,fs,s,d,padding", CONFIGS)
def test_conv2d_and_backprops_match_tensorflow(tf1: Any, xs: Any, fs: Any, s: Any, d: Any,
                                               padding: str) -> None:
    x, f = RS.randn(*xs).astype(np.float32), RS.randn(*fs).astype(np.float32)

    def build(tf: Any) -> Any:
        xp, fp = tf.placeholder(tf.float32, xs), tf.placeholder(tf.float32, fs)
        y = tf.nn.conv2d(xp, fp, strides=list(s), padding=padding, dilations=list(d))
        dy = tf.constant(np.random.RandomState(3).randn(*y.shape.as_list()).astype(np.float32))
        if d != (1, 1) or xs[3] != fs[2]:  # TensorFlow's CPU kernels have no such backprops
            return [y], {xp: x, fp: f}
        s4, d4 = [1, *s, 1], [1, *d, 1]
        dx = tf.nn.conv2d_backprop_input(xs, fp, dy, strides=s4, padding=padding, dilations=d4)
        df = tf.nn.conv2d_backprop_filter(xp, fs, dy, strides=s4, padding=padding, dilations=d4)
        return [y, dx, df], {xp: x, fp: f}

    assert_same(tf1, build, rtol=1e-4, atol=1e-4)


def test_conv2d_float64_float16_and_nchw(tf1: Any) -> None:
    x, f = RS.randn(2, 6, 5, 3), RS.randn(3, 3, 3, 2)

    def build(tf: Any) -> Any:
        y64 = tf.nn.conv2d(tf.constant(x), tf.constant(f), [1, 2, 1, 1], "SAME")
        y16 = tf.nn.conv2d(tf.constant(x, tf.float16), tf.constant(f, tf.float16), 1, "VALID")
        return [y64, y16]

    assert_same(tf1, build, rtol=1e-2, atol=1e-2)
    xc = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    y = fl.nn.conv2d(fl.constant(xc), fl.constant(f), [1, 1, 2, 1], "SAME", data_format="NCHW")
    assert y.shape.as_list() == [2, 2, 3, 5]
    want = naive_conv(x, f, (2, 1), (1, 1), "SAME").transpose(0, 3, 1, 2)
    np.testing.assert_allclose(_run(y), want, rtol=1e-10)


def test_nchw_backprops_and_pools_match_nhwc() -> None:
    x, f = RS.randn(2, 6, 5, 4), RS.randn(3, 2, 4, 3)
    xc = x.transpose(0, 3, 1, 2)
    t = lambda a: np.transpose(a, (0, 2, 3, 1))  # noqa: E731
    g = fl.Graph()
    with g.as_default():
        yn = fl.nn.conv2d(x, f, 2, "SAME")
        yc = fl.nn.conv2d(xc, f, 2, "SAME", data_format="NCHW")
        dy = RS.randn(*yn.shape.as_list())
        sn, sc = [1, 2, 2, 1], [1, 1, 2, 2]
        dxn = fl.nn.conv2d_backprop_input(x.shape, f, dy, sn, "SAME")
        dxc = fl.nn.conv2d_backprop_input(xc.shape, f, dy.transpose(0, 3, 1, 2), sc, "SAME",
                                          data_format="NCHW")
        dfn = fl.nn.conv2d_backprop_filter(x, f.shape, dy, sn, "SAME")
        dfc = fl.nn.conv2d_backprop_filter(xc, f.shape, dy.transpose(0, 3, 1, 2), sc, "SAME",
                                           data_format="NCHW")
        pn = fl.nn.max_pool(x, 3, 2, "SAME")
        pc = fl.nn.max_pool(xc, 3, 2, "SAME", data_format="NCHW")
        an = fl.nn.avg_pool(x, 3, 2, "SAME")
        ac = fl.nn.avg_pool(xc, 3, 2, "SAME", data_format="NCHW")
        with fl.Session() as s:
            v = s.run([yn, yc, dxn, dxc, dfn, dfc, pn, pc, an, ac])
    for a, b in [(0, 1), (2, 3), (6, 7), (8, 9)]:
        np.testing.assert_allclose(v[a], t(v[b]), rtol=1e-12)
    np.testing.assert_allclose(v[4], v[5], rtol=1e-12)


def test_conv2d_graph_node_matches_tensorflow(tf1: Any) -> None:
    def node(tf: Any) -> Any:
        g = tf.Graph()
        with g.as_default():
            y = tf.nn.conv2d(tf.zeros([1, 5, 5, 2]), tf.zeros([3, 3, 2, 4]), 2, "SAME",
                             dilations=[1, 1])
            p = tf.nn.max_pool(y, [2, 2], [1, 1], "VALID", name="pool")
            a = tf.nn.avg_pool(y, 2, 2, "SAME")
            t = tf.nn.conv2d_transpose(y, tf.zeros([3, 3, 2, 4]), [1, 5, 5, 2], 2)
            return [(o.op.type, o.op.name, o.shape.as_list(),
                     [list(o.op.get_attr(k)) for k in ("strides",)])
                    for o in (y, p, a, t)] + [list(p.op.get_attr("ksize"))]

    assert node(tf1) == node(fl)


def test_conv2d_transpose_matches_tensorflow(tf1: Any) -> None:
    v, f = RS.randn(2, 3, 3, 4).astype(np.float32), RS.randn(3, 3, 5, 4).astype(np.float32)
    assert_same(tf1, lambda tf: [
        tf.nn.conv2d_transpose(v, f, [2, 6, 6, 5], 2, "SAME"),
        tf.nn.conv2d_transpose(v, f, [2, 7, 7, 5], [1, 2, 2, 1], "VALID"),
    ], rtol=1e-4, atol=1e-4)


def test_explicit_padding_matches_tensorflow(tf1: Any) -> None:
    x, f = RS.randn(1, 4, 5, 2).astype(np.float32), RS.randn(2, 3, 2, 3).astype(np.float32)
    pads = [[0, 0], [1, 2], [0, 3], [0, 0]]
    small = [[0, 0], [1, 0], [0, 1], [0, 0]]  # pooling pads must be smaller than the window
    assert_same(tf1, lambda tf: [tf.nn.conv2d(x, f, [1, 2, 1, 1], pads),
                                 tf.nn.max_pool(x, 2, 1, small)], rtol=1e-4, atol=1e-4)


POOLS = [
    ((2, 5, 5, 3), (2, 2), (2, 2), "SAME"),
    ((2, 5, 5, 3), (2, 2), (2, 2), "VALID"),
    ((1, 7, 6, 2), (3, 3), (2, 2), "SAME"),
    ((1, 7, 6, 2), (3, 2), (1, 2), "VALID"),
    ((1, 4, 4, 1), (4, 4), (1, 1), "SAME"),
    ((3, 6, 6, 4), (1, 1), (1, 1), "VALID"),
    ((1, 3, 8, 2), (3, 3), (3, 3), "SAME"),
]


@pytest.mark.parametrize("xs,k,s,padding", POOLS)
def test_pools_match_numpy_loop(xs: Any, k: Any, s: Any, padding: str) -> None:
    x = RS.randn(*xs).astype(np.float32)
    mx = _run(fl.nn.max_pool(x, list(k), list(s), padding))
    av = _run(fl.nn.avg_pool(x, list(k), list(s), padding))
    assert mx.dtype == av.dtype == np.float32
    np.testing.assert_array_equal(mx, naive_pool(x, k, s, padding, np.max))
    np.testing.assert_allclose(av, naive_pool(x, k, s, padding, np.mean), rtol=1e-5)


@pytest.mark.parametrize("xs,k,s,padding", POOLS)
def test_pools_and_gradients_match_tensorflow(tf1: Any, xs: Any, k: Any, s: Any, padding: str) -> None:
    x = RS.randn(*xs).astype(np.float32)

    def build(tf: Any) -> Any:
        from flowlab.ops.gradients_impl import gradients
        grads = tf.gradients if tf is not fl else gradients
        xp = tf.placeholder(tf.float32, xs)
        mx = tf.nn.max_pool(xp, list(k), list(s), padding)
        av = tf.nn.avg_pool(xp, list(k), list(s), padding)
        w = tf.constant(np.random.RandomState(2).randn(*mx.shape.as_list()).astype(np.float32))
        gm, ga = grads(tf.reduce_sum(mx * w), xp)[0], grads(tf.reduce_sum(av * w), xp)[0]
        return [mx, av, gm, ga], {xp: x}

    assert_same(tf1, build, rtol=1e-5, atol=1e-5)


def test_max_pool_integer_and_float64(tf1: Any) -> None:
    xi = RS.randint(-50, 50, (2, 5, 4, 3)).astype(np.int32)
    xd = RS.randn(1, 5, 5, 2)
    assert_same(tf1, lambda tf: [tf.nn.max_pool(xi, 3, 2, "SAME"),
                                 tf.nn.max_pool(tf.constant(xi, tf.int64), 2, 1, "VALID"),
                                 tf.nn.max_pool(xd, 2, 2, "SAME"),
                                 tf.nn.avg_pool(xd, 3, 2, "SAME")])


def test_max_pool_grad_ties_go_to_first_maximum(tf1: Any) -> None:
    x = np.array([[1.0, 3.0, 3.0], [3.0, 0.0, 3.0], [2.0, 3.0, 1.0]], np.float32).reshape(1, 3, 3, 1)

    def build(tf: Any) -> Any:
        from flowlab.ops.gradients_impl import gradients
        grads = tf.gradients if tf is not fl else gradients
        xp = tf.constant(x)
        return grads(tf.reduce_sum(tf.nn.max_pool(xp, 2, 1, "SAME")), xp)[0]

    assert_same(tf1, build)


def test_max_pool_grad_tiling_windows_with_ties_and_nan(tf1: Any) -> None:
    # Windows that tile the input take a whole-array path; ReLU zeros tie, NaN and
    # -inf windows and VALID leftovers fall back to (or must agree with) the scan.
    x = np.maximum(RS.randn(2, 7, 9, 3), 0).astype(np.float32)
    x[0, 0, 0, 0] = np.nan
    x[1, 2:4, 2:4, 1] = -np.inf
    clean = np.nan_to_num(x, nan=0.5)
    dys = {p: RS.randn(2, h, w, 3).astype(np.float32) for p, h, w in [("VALID", 3, 4),
                                                                    ("SAME", 4, 5)]}

    def grad(tf: Any, v: Any, padding: str, fmt: str = "NHWC") -> Any:
        y = tf.nn.max_pool(v, 2, 2, padding, data_format=fmt)
        dy = dys[padding] if fmt == "NHWC" else dys[padding].transpose(0, 3, 1, 2)
        return tf.gradients(y, v, dy)[0]

    def build(tf: Any) -> Any:
        xc, xn = tf.constant(clean), tf.constant(x)
        return [grad(tf, xc, "VALID"), grad(tf, xn, "VALID"), grad(tf, xc, "SAME"),
                grad(tf, xn, "SAME")]

    assert_same(tf1, build)
    nhwc = _run(grad(fl, fl.constant(clean), "VALID"))
    nchw = _run(grad(fl, fl.constant(clean.transpose(0, 3, 1, 2)), "VALID", "NCHW"))
    np.testing.assert_array_equal(nchw.transpose(0, 2, 3, 1), nhwc)


@pytest.mark.parametrize("one_image_blocks", [False, True])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_max_pool_grad_tiling_windows_send_inf_and_nan_gradients_to_the_maximum_only(
        tf1: Any, k: int, one_image_blocks: bool, monkeypatch: Any) -> None:
    # TensorFlow scatters each gradient into zeros: an inf or NaN gradient reaches its
    # window's maximum alone, and every other element is +0.0, even where the gradient
    # is negative.  (A product by a 0/1 mask gives NaN and -0.0 there.)  Compared bit
    # for bit, with ReLU zeros making ties, whole and in cache blocks of one image.
    from flowlab.kernels import pool_kernels

    x = np.maximum(RS.randn(3, 6 * k, 4 * k, 5), 0).astype(np.float32)
    if one_image_blocks:
        monkeypatch.setattr(pool_kernels, "POOL_BLOCK_BYTES", x[0].nbytes)
    x[2] = RS.randn(6 * k, 4 * k, 5)  # no ties
    dy = RS.randn(3, 6, 4, 5).astype(np.float32)
    dy[0, 0, 0, :3] = [np.inf, -np.inf, np.nan]
    dy[1, 2, 3, 4] = np.nan
    dy[2, 5, 1, 0] = -np.inf

    def build(tf: Any) -> Any:
        v = tf.constant(x)
        return tf.gradients(tf.nn.max_pool(v, k, k, "VALID"), v, dy)[0]

    expected, actual = run_with(tf1, build), run_with(fl, build)
    assert actual.dtype == expected.dtype == np.float32
    np.testing.assert_array_equal(actual.view(np.uint32), expected.view(np.uint32))
    assert k == 1 or np.count_nonzero(np.isnan(expected)) == 2  # the NaN gradients' maxima only


def test_max_pool_grad_padding_never_chosen(tf1: Any) -> None:
    x = np.full((1, 3, 3, 1), -np.inf, np.float32)
    dy = np.arange(1, 5, dtype=np.float32).reshape(1, 2, 2, 1)

    def build(tf: Any) -> Any:
        v = tf.constant(x)
        return tf.gradients(tf.nn.max_pool(v, 2, 2, "SAME"), v, dy)[0]

    assert_same(tf1, build)


def test_empty_tensors() -> None:
    y = fl.nn.conv2d(np.zeros((0, 4, 4, 2), np.float32), np.ones((3, 3, 2, 5), np.float32), 1, "SAME")
    p = fl.nn.max_pool(np.zeros((2, 4, 4, 0), np.float32), 2, 2, "VALID")
    z = fl.nn.conv2d(np.ones((1, 4, 4, 2), np.float32), np.ones((3, 3, 2, 0), np.float32), 1, "SAME")
    vy, vp, vz = _run([y, p, z])
    assert vy.shape == (0, 4, 4, 5) and vp.shape == (2, 2, 2, 0) and vz.shape == (1, 4, 4, 0)


def test_build_time_errors() -> None:
    x = fl.placeholder(fl.float32, [2, 5, 5, 3])
    with pytest.raises(ValueError, match=r"Depth of input \(3\) is not a multiple of input depth "
                       r"of filter \(2\).*Conv2D"):
        fl.nn.conv2d(x, fl.zeros([3, 3, 2, 4]), 1, "SAME")
    with pytest.raises(ValueError, match="Negative dimension size caused by subtracting 9 from 5"):
        fl.nn.conv2d(x, fl.zeros([9, 3, 3, 4]), 1, "VALID")
    with pytest.raises(ValueError, match="Shape must be rank 4 but is rank 3"):
        fl.nn.conv2d(fl.zeros([5, 5, 3]), fl.zeros([3, 3, 3, 4]), 1, "SAME")
    with pytest.raises(ValueError, match="padding.*'FOO' not in"):
        fl.nn.conv2d(x, fl.zeros([3, 3, 3, 4]), 1, "FOO")
    with pytest.raises(ValueError, match="strides should be of length 1, 2 or 4"):
        fl.nn.conv2d(x, fl.zeros([3, 3, 3, 4]), [1, 1, 1], "SAME")
    with pytest.raises(TypeError):
        fl.nn.conv2d(x, fl.zeros([3, 3, 3, 4], fl.float64), 1, "SAME")
    with pytest.raises(TypeError):
        fl.nn.avg_pool(fl.zeros([1, 4, 4, 1], fl.int32), 2, 2, "SAME")
    with pytest.raises(ValueError, match="Negative dimension size"):
        fl.nn.max_pool(x, 6, 1, "VALID")
    with pytest.raises(ValueError, match=r"""'AvgPool' Op passed string 'EXPLICIT' not in: "SAME", "VALID"\."""):  # noqa: E501
        fl.nn.avg_pool(x, 2, 2, "EXPLICIT")
    with pytest.raises(ValueError, match="Sliding window strides field must specify 4 dimensions"):
        fl.nn.conv2d_backprop_input([2, 5, 5, 3], fl.zeros([3, 3, 3, 4]), fl.zeros([2, 5, 5, 4]),
                                    [1, 1], "SAME")


def test_runtime_errors() -> None:
    x = fl.placeholder(fl.float32)
    f = fl.placeholder(fl.float32)
    y = fl.nn.conv2d(x, f, 1, "SAME")
    with fl.Session() as s:
        with pytest.raises(errors.InvalidArgumentError, match="evenly divisible by filter depth: 6 vs 4"):
            s.run(y, {x: np.zeros((1, 4, 4, 6)), f: np.zeros((3, 3, 4, 2))})
        with pytest.raises(errors.InvalidArgumentError, match="must be 4-dimensional"):
            s.run(y, {x: np.zeros((4, 4, 6)), f: np.zeros((3, 3, 6, 2))})
        with pytest.raises(errors.InvalidArgumentError, match="strides in the batch and depth"):
            s.run(fl.nn.conv2d(x, f, [2, 1, 1, 1], "SAME"),
                  {x: np.zeros((1, 4, 4, 1)), f: np.zeros((1, 1, 1, 1))})
        with pytest.raises(errors.InvalidArgumentError, match="batch or depth"):
            s.run(fl.nn.max_pool(x, [1, 2, 2, 2], 1, "SAME"), {x: np.zeros((1, 4, 4, 2))})
        with pytest.raises(errors.InvalidArgumentError, match="Computed output size would be negative"):
            s.run(fl.nn.conv2d(x, f, 1, "VALID"), {x: np.zeros((1, 2, 2, 1)), f: np.zeros((3, 3, 1, 1))})


def test_kernels_do_not_mutate_inputs() -> None:
    x, f = RS.randn(1, 5, 5, 2), RS.randn(3, 3, 2, 2)
    x0, f0 = x.copy(), f.copy()
    xp, fp = fl.placeholder(fl.float64), fl.placeholder(fl.float64)
    y = fl.nn.conv2d(xp, fp, 2, "SAME")
    dy = RS.randn(1, 3, 3, 2)
    dx = fl.nn.conv2d_backprop_input([1, 5, 5, 2], fp, dy, [1, 2, 2, 1], "SAME")
    m = fl.nn.max_pool(xp, 2, 2, "SAME")
    _run([y, dx, m], {xp: x, fp: f})
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(f, f0)


try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover
    given = None

if given is not None:

    @settings(max_examples=25, deadline=None)
    @given(n=st.integers(1, 2), h=st.integers(1, 7), w=st.integers(1, 7), cg=st.integers(1, 3),
           groups=st.integers(1, 2), og=st.integers(1, 3), kh=st.integers(1, 3),
           kw=st.integers(1, 3), sh=st.integers(1, 3), sw=st.integers(1, 3),
           dh=st.integers(1, 2), dw=st.integers(1, 2), padding=st.sampled_from(["SAME", "VALID"]))
    def test_conv2d_and_backprops_property(n: int, h: int, w: int, cg: int, groups: int, og: int,
                                           kh: int, kw: int, sh: int, sw: int, dh: int, dw: int,
                                           padding: str) -> None:
        """Forward against the loop; backprops against the adjoint identity
        <conv(x, f), dy> == <x, dx(dy)> == <f, df(dy)>."""
        if padding == "VALID" and (h < (kh - 1) * dh + 1 or w < (kw - 1) * dw + 1):
            return
        rs = np.random.RandomState(n * 1000 + h * 100 + w)
        x, f = rs.randn(n, h, w, cg * groups), rs.randn(kh, kw, cg, og * groups)
        s4, d4 = [1, sh, sw, 1], [1, dh, dw, 1]
        with fl.Graph().as_default():
            y = fl.nn.conv2d(x, f, s4, padding, dilations=d4)
            dy = rs.randn(*y.shape.as_list())
            dx = fl.nn.conv2d_backprop_input(list(x.shape), f, dy, s4, padding, dilations=d4)
            df = fl.nn.conv2d_backprop_filter(x, list(f.shape), dy, s4, padding, dilations=d4)
            vy, vdx, vdf = _run([y, dx, df])
        np.testing.assert_allclose(vy, naive_conv(x, f, (sh, sw), (dh, dw), padding),
                                   rtol=1e-9, atol=1e-9)
        inner = float(np.sum(vy * dy))
        assert float(np.sum(x * vdx)) == pytest.approx(inner, rel=1e-9, abs=1e-9)
        assert float(np.sum(f * vdf)) == pytest.approx(inner, rel=1e-9, abs=1e-9)
