"""`tf.test.compute_gradient` / `compute_gradient_error`: TensorFlow 1.x's gradient
checker, which TF1 unit tests use on their ops.

The theoretical Jacobian comes from `tf.gradients` with a one-hot `grad_ys` fed
for each element of `y`; the numeric one from central differences, feeding `x`
moved by +-`delta` one element at a time.  Both are [x_size, y_size] arrays, run in
the default session, as TensorFlow computes them (real dtypes; complex `x` or `y`
are refused).

    with self.cached_session():
        x = tf.constant(x_np)
        err = tf.test.compute_gradient_error(x, [2, 3], tf.tanh(x), [2, 3])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.tensor import Tensor
from flowlab.ops.constant_op import constant
from flowlab.ops.core_ops import identity
from flowlab.ops.gradients_impl import gradients
from flowlab.ops.indexed_slices import IndexedSlices
from flowlab.runtime.session import get_default_session

__all__ = ["compute_gradient", "compute_gradient_error"]

_ALLOWED = (dtypes.float16, dtypes.float32, dtypes.float64)


def _size(shape: Any) -> int:
    return int(np.prod([int(d) for d in shape], dtype=np.int64)) if len(shape) else 1


def _feeds(extra: dict[Any, Any], feeds: dict[Any, Any]) -> dict[Any, Any]:
    return {**extra, **feeds}


def _session() -> Any:
    sess = get_default_session()
    if sess is None:
        raise ValueError("compute_gradient needs a default session: run it inside `with sess.as_default()` "
                         "or a TestCase's `with self.cached_session():`.")
    return sess


def _dx_and_dy(x: Any, y: Any, y_shape: Any) -> tuple[Any, Any]:
    with x.graph.as_default():
        dy_orig = constant(1.0, shape=y_shape, dtype=y.dtype.base_dtype)
        dy = identity(dy_orig)
    grads = gradients(y, x, dy)
    assert len(grads) == 1
    return grads[0], dy_orig


def _theoretical(x: Any, x_shape: Any, x_data: np.ndarray, dy: Any, dy_shape: Any, dx: Any,
                 extra: dict[Any, Any]) -> np.ndarray:
    sess = _session()
    x_size, dy_size = _size(x_shape), _size(dy_shape)
    x_val_size = _size(x_shape[1:])  # the rows of a sparse (IndexedSlices) gradient
    jacobian = np.zeros((x_size, dy_size), dtype=x.dtype.base_dtype.as_numpy_dtype)
    dy_data = np.zeros(dy_shape, dtype=dy.dtype.base_dtype.as_numpy_dtype)
    flat = dy_data.reshape(-1)
    for col in range(dy_size):
        flat[col] = 1
        if isinstance(dx, IndexedSlices):
            indices, values = sess.run([dx.indices, dx.values], feed_dict=_feeds(extra, {x: x_data, dy: dy_data}))
            for i, v in zip(indices, values):
                jacobian[i * x_val_size:(i + 1) * x_val_size, col] += np.asarray(v).reshape(-1)
        else:
            assert isinstance(dx, Tensor), "dx = " + str(dx)
            backprop = sess.run(dx, feed_dict=_feeds(extra, {x: x_data, dy: dy_data}))
            jacobian[:, col] = np.asarray(backprop).reshape(-1)
        flat[col] = 0
    if not dy_size:
        backprop = sess.run(dx, feed_dict=_feeds(extra, {x: x_data, dy: dy_data}))
        if np.asarray(backprop).shape != tuple(x_shape):
            raise ValueError(f"Empty gradient has wrong shape: expected {tuple(x_shape)}, "
                             f"got {np.asarray(backprop).shape}")
        if np.any(backprop):
            raise ValueError("Empty tensor with nonzero gradients")
    return jacobian


def _numeric(x: Any, x_shape: Any, x_data: np.ndarray, y: Any, y_shape: Any, delta: float,
             extra: dict[Any, Any]) -> np.ndarray:
    sess = _session()
    x_size, y_size = _size(x_shape), _size(y_shape)
    x_data = np.asarray(x_data, dtype=x.dtype.base_dtype.as_numpy_dtype)  # a 0-d array, not a scalar
    jacobian = np.zeros((x_size, y_size), dtype=x.dtype.base_dtype.as_numpy_dtype)
    scale = np.asarray(2 * delta, dtype=y.dtype.base_dtype.as_numpy_dtype)[()]
    for row in range(x_size):
        x_pos, x_neg = x_data.copy(), x_data.copy()
        x_pos.reshape(-1)[row] += delta
        y_pos = sess.run(y, feed_dict=_feeds(extra, {x: x_pos}))
        x_neg.reshape(-1)[row] -= delta
        y_neg = sess.run(y, feed_dict=_feeds(extra, {x: x_neg}))
        jacobian[row, :] = (np.asarray(y_pos - y_neg) / scale).reshape(-1)
    return jacobian


def _one(x: Any, x_shape: Any, dx: Any, y: Any, y_shape: Any, dy: Any, x_init_value: Any, delta: float,
         extra: dict[Any, Any]) -> tuple[np.ndarray, np.ndarray]:
    t, t2 = x.dtype.base_dtype, y.dtype.base_dtype
    assert t in _ALLOWED, f"Don't support type {t.name} for x"
    assert t2 in _ALLOWED, f"Don't support type {t2.name} for y"
    if x_init_value is not None:
        i_shape = list(x_init_value.shape)
        assert list(x_shape) == i_shape, f"x_shape = {x_shape}, init_data shape = {i_shape}"
        x_data = x_init_value
    else:
        x_data = np.random.random_sample(x_shape).astype(t.as_numpy_dtype)
    return (_theoretical(x, x_shape, x_data, dy, y_shape, dx, extra),
            _numeric(x, x_shape, x_data, y, y_shape, delta, extra))


def compute_gradient(x: Any, x_shape: Any, y: Any, y_shape: Any, x_init_value: Any = None, delta: float = 1e-3,
                     init_targets: Any = None, extra_feed_dict: Any = None) -> Any:
    """(theoretical, numeric) Jacobians of `y` with respect to `x` (a list of such
    pairs when `x` is a list of tensors)."""
    extra = dict(extra_feed_dict or {})
    if init_targets is not None:
        assert isinstance(init_targets, (list, tuple))
        for init in init_targets:
            init.run()
    if isinstance(x, list):
        inits = x_init_value if x_init_value is not None else [None] * len(x)
        pairs = [_dx_and_dy(xi, y, y_shape) for xi in x]
        return [_one(xi, si, dxi, y, y_shape, dyi, ii, delta, extra)
                for xi, si, (dxi, dyi), ii in zip(x, x_shape, pairs, inits)]
    dx, dy = _dx_and_dy(x, y, y_shape)
    return _one(x, x_shape, dx, y, y_shape, dy, x_init_value, delta, extra)


def compute_gradient_error(x: Any, x_shape: Any, y: Any, y_shape: Any, x_init_value: Any = None,
                           delta: float = 1e-3, init_targets: Any = None, extra_feed_dict: Any = None) -> Any:
    """The largest absolute difference between the theoretical and numeric Jacobians."""
    grad = compute_gradient(x, x_shape, y, y_shape, x_init_value, delta, init_targets, extra_feed_dict)
    if isinstance(grad, tuple):
        grad = [grad]
    error: Any = 0
    for j_t, j_n in grad:
        if j_t.size or j_n.size:
            error = np.maximum(error, np.fabs(j_t - j_n).max())
    return error
