"""Convolutions by blocks of images (flowlab.kernels.conv_blocks).

Cache blocks: at any thread count a batch runs a few images at a time (im2col + GEMM
per block; filter backprop as partial sums in image order), and the input backprop of
a stride-1 convolution is a correlation of the padded out_backprop with the flipped
filter -- forward and both gradients equal TensorFlow's, and the correlation equals
the per-tap GEMMs + col2im it replaces (dilations, which TensorFlow's CPU gradients
lack), with a fallback for padding wider than the kernel.

Thread blocks (flowlab.kernels.intra_op.run_blocks): with intra-op threads the
blocks are shared out among them, and a single image shares the GEMMs' rows: forward
and both gradients equal TensorFlow's on shapes large enough to be cut -- odd sizes,
strides, VALID/SAME/explicit padding, dilations, several images -- and NCHW equals
NHWC."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from flowlab.kernels import conv_blocks, intra_op
from flowlab.runtime import thread_policy
from tests.difftest import assert_same, run_with

# Each is at least 2**22 multiply-adds per GEMM (intra_op.SHARD_MIN_WORK).
CASES = [  # x shape (NHWC), filter shape, strides, padding
    ((8, 20, 20, 16), (3, 3, 16, 32), 1, "SAME"),
    ((8, 41, 35, 8), (5, 3, 8, 24), 2, "VALID"),
    ((7, 37, 29, 12), (4, 4, 12, 20), [1, 3, 2, 1], "SAME"),
    ((4, 30, 26, 8), (3, 5, 8, 48), 1, [[0, 0], [2, 1], [0, 3], [0, 0]]),
    ((1, 70, 61, 16), (3, 3, 16, 32), 1, "SAME"),  # one image: row blocks of the GEMMs
]


@pytest.fixture
def three_intra_op_threads(monkeypatch):
    """Sessions choose 3 intra-op threads whatever the machine; counts the blocks run."""
    monkeypatch.setattr(thread_policy, "available_cores", lambda: 3)
    monkeypatch.setattr(thread_policy, "current_blas_threads", lambda: None)
    shared = []
    real = intra_op.run_blocks

    def counting(blocks, fn):
        shared.append(blocks)
        return real(blocks, fn)

    monkeypatch.setattr(intra_op, "run_blocks", counting)
    monkeypatch.setattr(conv_blocks, "run_blocks", counting)
    old = intra_op.intra_op_threads()
    yield shared
    intra_op.set_intra_op_threads(old)


def _conv_and_grads(x_val, f_val, strides, padding, dilations=1, data_format="NHWC",
                    dy_layout=None):
    """The conv, its input and filter gradients for a random out_backprop (generated
    NHWC; `dy_layout` transposes it to the op's layout)."""
    def build(tf):
        x = tf.placeholder(tf.float32, x_val.shape)
        f = tf.placeholder(tf.float32, f_val.shape)
        y = tf.nn.conv2d(x, f, strides, padding, data_format=data_format, dilations=dilations)
        shape = [int(d) for d in y.shape]
        if dy_layout is not None:
            shape = [shape[0], shape[2], shape[3], shape[1]]
        dy_val = np.random.RandomState(3).randn(*shape).astype(np.float32)
        dy = tf.constant(dy_val if dy_layout is None else dy_val.transpose(dy_layout))
        dx, df = tf.gradients(y, [x, f], grad_ys=dy)
        return [y, dx, df], {x: x_val, f: f_val}

    return build


def _data(xs, fs, seed):
    rs = np.random.RandomState(seed)
    x = rs.randn(*xs).astype(np.float32)
    return x, (rs.randn(*fs) / np.sqrt(fs[0] * fs[1] * fs[2])).astype(np.float32)


@pytest.mark.parametrize("xs, fs, strides, padding", CASES)
def test_sharded_convolution_equals_tensorflow(tf1, three_intra_op_threads, xs, fs, strides,
                                               padding):
    x, f = _data(xs, fs, sum(xs) + sum(fs))
    assert_same(tf1, _conv_and_grads(x, f, strides, padding), rtol=2e-4, atol=2e-4)
    # Forward, input and filter backprop each ran as several blocks.
    assert sum(1 for b in three_intra_op_threads if b > 1) >= 3, three_intra_op_threads


def test_sharded_dilated_convolution_equals_one_thread(monkeypatch, three_intra_op_threads):
    # TensorFlow's CPU kernels have no dilated gradients: the unsharded kernels are the
    # reference (tests/ops/test_conv_grad.py checks those against finite differences).
    x, f = _data((6, 33, 30, 16), (3, 3, 16, 24), 9)
    sharded = run_with(fl, _conv_and_grads(x, f, 1, "SAME", 2))
    assert sum(1 for b in three_intra_op_threads if b > 1) >= 3
    monkeypatch.setattr(thread_policy, "available_cores", lambda: 1)
    whole = run_with(fl, _conv_and_grads(x, f, 1, "SAME", 2))
    # The filter gradient sums 5940 products per element: blocks add in another order.
    for got, want, tol in zip(sharded, whole, (1e-5, 1e-5, 2e-4)):
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_sharded_nchw_equals_nhwc(three_intra_op_threads):
    rs = np.random.RandomState(11)
    x = rs.randn(10, 18, 21, 16).astype(np.float32)
    f = (rs.randn(3, 3, 16, 24) / 12).astype(np.float32)
    nhwc = run_with(fl, _conv_and_grads(x, f, [1, 2, 1, 1], "SAME"))
    nchw = run_with(fl, _conv_and_grads(x.transpose(0, 3, 1, 2), f, [1, 1, 2, 1], "SAME", 1, "NCHW",
                                        dy_layout=(0, 3, 1, 2)))
    np.testing.assert_allclose(nchw[0].transpose(0, 2, 3, 1), nhwc[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(nchw[1].transpose(0, 2, 3, 1), nhwc[1], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(nchw[2], nhwc[2], rtol=1e-4, atol=1e-4)
    assert sum(1 for b in three_intra_op_threads if b > 1) >= 6


@pytest.fixture
def one_intra_op_thread(monkeypatch):
    """Sessions choose 1 intra-op thread; records the thread blocks and cache blocks."""
    monkeypatch.setattr(thread_policy, "available_cores", lambda: 1)
    seen = {"thread": [], "cache": []}
    run, sub = intra_op.run_blocks, conv_blocks._sub_blocks
    monkeypatch.setattr(conv_blocks, "run_blocks", lambda b, fn: seen["thread"].append(b) or run(b, fn))

    def sub_blocks(lo, hi, step):
        blocks = sub(lo, hi, step)
        seen["cache"].append(len(blocks))
        return blocks

    monkeypatch.setattr(conv_blocks, "_sub_blocks", sub_blocks)
    old = intra_op.intra_op_threads()
    yield seen
    intra_op.set_intra_op_threads(old)


def test_one_intra_op_thread_runs_one_thread_block_of_cache_blocks(one_intra_op_thread):
    rs = np.random.RandomState(5)
    x, f = rs.randn(8, 20, 20, 16).astype(np.float32), rs.randn(3, 3, 16, 32).astype(np.float32)
    y, dx, df = run_with(fl, _conv_and_grads(x, f, 1, "SAME"))
    assert y.shape == (8, 20, 20, 32) and dx.shape == x.shape and df.shape == f.shape
    # Forward, input backprop (a correlation, so a forward) and filter backprop: one
    # thread block each, no helper thread.
    assert one_intra_op_thread["thread"] == [1, 1, 1]
    # 20*20 rows of 144 (forward, filter) or 288 (input backprop) float32 columns per
    # image: 2 MiB of columns hold 9 or 4 images.
    assert sorted(one_intra_op_thread["cache"]) == [1, 1, 2]


CACHE_CASES = CASES[:4] + [
    ((5, 12, 11, 6), (3, 2, 6, 10), 1, "VALID"),
    # padding wider than the kernel: the input backprop falls back to per-tap GEMMs
    ((4, 10, 9, 8), (2, 2, 8, 16), 1, [[0, 0], [3, 1], [0, 2], [0, 0]]),
    # one input channel: the columns built tap by tap
    ((6, 28, 28, 1), (5, 5, 1, 8), 1, "SAME"),
    ((5, 17, 15, 1), (3, 4, 1, 6), [1, 2, 3, 1], "VALID"),
]


@pytest.mark.parametrize("xs, fs, strides, padding", CACHE_CASES)
def test_cache_blocks_of_one_image_equal_tensorflow(tf1, monkeypatch, one_intra_op_thread, xs, fs,
                                                    strides, padding):
    monkeypatch.setattr(conv_blocks, "CACHE_BYTES", 1)  # one image per cache block
    x, f = _data(xs, fs, sum(xs) + 2 * sum(fs))
    assert_same(tf1, _conv_and_grads(x, f, strides, padding), rtol=2e-4, atol=2e-4)
    assert max(one_intra_op_thread["cache"]) == xs[0]


@pytest.mark.parametrize("strides, padding, dilations", [
    (1, "SAME", 1), (1, "SAME", 2), (1, "VALID", [1, 3, 2, 1]),
    (1, [[0, 0], [1, 0], [2, 3], [0, 0]], 2),
    (1, [[0, 0], [5, 0], [0, 0], [0, 0]], 1),  # wider than the kernel: per-tap GEMMs
    (2, "SAME", 1),  # strided: per-tap GEMMs
])
def test_input_backprop_by_correlation_equals_per_tap_gemms(monkeypatch, one_intra_op_thread,
                                                            strides, padding, dilations):
    x, f = _data((3, 13, 11, 5), (3, 4, 5, 7), 21)
    calls = []
    real = conv_blocks.input_grad_by_correlation

    def recording(*args):
        dx = real(*args)
        calls.append(dx is not None)
        return dx

    monkeypatch.setattr(conv_blocks, "input_grad_by_correlation", recording)
    got = run_with(fl, _conv_and_grads(x, f, strides, padding, dilations))
    monkeypatch.setattr(conv_blocks, "input_grad_by_correlation", lambda *args: None)
    want = run_with(fl, _conv_and_grads(x, f, strides, padding, dilations))
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[0], want[0])
    applies = strides == 1 and padding != [[0, 0], [5, 0], [0, 0], [0, 0]]
    assert calls == [applies]


@pytest.mark.parametrize("strides, dilations", [((1, 1), (1, 1)), ((2, 3), (1, 1)), ((1, 2), (2, 1))])
def test_single_channel_columns_by_taps_equal_the_window_copy(strides, dilations):
    x = np.random.RandomState(8).randn(5, 19, 17, 1).astype(np.float32)
    n, (kh, kw) = 5, (3, 4)
    (sh, sw), (dh, dw) = strides, dilations
    oh, ow = (19 - (kh - 1) * dh - 1) // sh + 1, (17 - (kw - 1) * dw - 1) // sw + 1
    s = x.strides
    win = np.lib.stride_tricks.as_strided(x, (n, oh, ow, kh, kw, 1),
                                          (s[0], s[1] * sh, s[2] * sw, s[1] * dh, s[2] * dw, s[3]))
    got = conv_blocks._columns(win, 1, 4)
    np.testing.assert_array_equal(got, win[1:4].reshape(3 * oh * ow, kh * kw))
