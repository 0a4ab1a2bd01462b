"""`tf.layers` (TensorFlow 1.x functional layers) built from ops and `get_variable`.

Each call opens a variable scope named `name` or, when None, a unique default
("dense", "dense_1", ...), so that variables are "dense/kernel" and "dense/bias" and
ops "dense/MatMul", "dense/BiasAdd", "dense/Relu", as in TensorFlow.  Kernels default
to the scope's initializer (glorot-uniform for floats), biases to zeros; `reuse=True`
(or an enclosing reusing scope) shares an existing layer's variables.  Variables take
the input's floating dtype.  Regularizers add their loss to REGULARIZATION_LOSSES.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.graph import GraphKeys, get_default_graph
from flowlab.graph.tensor import Tensor
from flowlab.ops import array_ops, conv_ops, math_ops, nn_impl, nn_ops
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.constant_op import constant
from flowlab.ops.core_ops import identity
from flowlab.ops.init_ops import zeros_initializer
from flowlab.ops.variable_scope import get_variable, variable_scope

__all__ = ["dense", "conv2d", "conv2d_transpose", "flatten", "max_pooling2d", "average_pooling2d", "dropout"]


def _pair(value: Any, name: str) -> list[int]:
    if isinstance(value, (int, np.integer)):
        return [int(value)] * 2
    value = [int(v) for v in value]
    if len(value) != 2:
        raise ValueError(f"The `{name}` argument must be a tuple of 2 integers. Received: {value}")
    return value


def _data_format(data_format: str) -> str:
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError("The `data_format` argument must be one of \"channels_first\", "
                         f"\"channels_last\". Received: {data_format}")
    return "NHWC" if data_format == "channels_last" else "NCHW"


def _padding(padding: str) -> str:
    if padding.lower() not in ("valid", "same"):
        raise ValueError("The `padding` argument must be a list/tuple or one of \"valid\", "
                         f"\"same\" (or \"causal\", only for `Conv1D). Received: {padding}")
    return padding.upper()


def _float_dtype(x: Tensor) -> dtypes.DType:
    dt = x.dtype.base_dtype
    return dt if dt.is_floating else dtypes.float32


def _weight(name: str, shape: list[int], dtype: dtypes.DType, initializer: Any,
            regularizer: Any, constraint: Any, trainable: bool) -> Any:
    v = get_variable(name, shape, dtype=dtype, initializer=initializer, trainable=trainable,
                     constraint=constraint)
    if regularizer is not None and not getattr(v, "_regularized", False):
        g = get_default_graph()
        with g.name_scope(v.op.name + "/Regularizer/"):
            loss = regularizer(v)
        if loss is not None:
            g.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
        v._regularized = True  # reused layers do not add the loss twice
    return v


def _finish(y: Tensor, activation: Any, activity_regularizer: Any) -> Tensor:
    if activation is not None:
        y = activation(y)
    if activity_regularizer is not None:
        g = get_default_graph()
        with g.name_scope("ActivityRegularizer"):
            loss = activity_regularizer(y)
        if loss is not None:
            g.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
    return y


def dense(inputs: Any, units: int, activation: Any = None, use_bias: bool = True,
          kernel_initializer: Any = None, bias_initializer: Any = None,
          kernel_regularizer: Any = None, bias_regularizer: Any = None,
          activity_regularizer: Any = None, kernel_constraint: Any = None,
          bias_constraint: Any = None, trainable: bool = True, name: str | None = None,
          reuse: Any = None) -> Tensor:
    """activation(inputs @ kernel + bias) over the last dimension:
    `tf.layers.dense(x, 10, activation=tf.nn.relu)` -> variables dense/kernel, dense/bias."""
    x = convert_to_tensor(inputs)
    last = x.shape.as_list()[-1] if x.shape.ndims else None
    if last is None:
        raise ValueError("The last dimension of the inputs to a Dense layer should be "
                         f"defined. Found None. Full input shape received: {x.shape}")
    dt = _float_dtype(x)
    with variable_scope(name, default_name="dense", values=[x], reuse=reuse):
        kernel = _weight("kernel", [last, units], dt, kernel_initializer, kernel_regularizer,
                         kernel_constraint, trainable)
        x = math_ops.cast(x, dt) if x.dtype.base_dtype != dt else x
        rank = x.shape.ndims
        if rank == 2:
            y = math_ops.matmul(x, kernel)
        else:
            # TensorFlow uses a tensordot here; a reshape around one MatMul is the same.
            flat = array_ops.reshape(x, [-1, last])
            out_shape = array_ops.concat([array_ops.shape(x)[:-1], [units]], 0)
            y = array_ops.reshape(math_ops.matmul(flat, kernel), out_shape, name="Tensordot")
            y.set_shape(x.shape[:-1].concatenate([units]))
        if use_bias:
            bias = _weight("bias", [units], dt, bias_initializer or zeros_initializer(),
                           bias_regularizer, bias_constraint, trainable)
            y = nn_ops.bias_add(y, bias)
        return _finish(y, activation, activity_regularizer)


def conv2d(inputs: Any, filters: int, kernel_size: Any, strides: Any = (1, 1),
           padding: str = "valid", data_format: str = "channels_last", dilation_rate: Any = (1, 1),
           activation: Any = None, use_bias: bool = True, kernel_initializer: Any = None,
           bias_initializer: Any = None, kernel_regularizer: Any = None,
           bias_regularizer: Any = None, activity_regularizer: Any = None,
           kernel_constraint: Any = None, bias_constraint: Any = None, trainable: bool = True,
           name: str | None = None, reuse: Any = None) -> Tensor:
    """2-D convolution layer: kernel [kh, kw, in, filters] ("conv2d/kernel"), bias."""
    x = convert_to_tensor(inputs)
    fmt = _data_format(data_format)
    if x.shape.ndims is not None and x.shape.ndims != 4:
        raise ValueError(f"Input 0 of layer conv2d is incompatible with the layer: expected "
                         f"ndim=4, found ndim={x.shape.ndims}. Full shape received: {x.shape}")
    channels = x.shape.as_list()[1 if fmt == "NCHW" else 3] if x.shape.ndims else None
    if channels is None:
        raise ValueError("The channel dimension of the inputs should be defined. Found `None`.")
    kh, kw = _pair(kernel_size, "kernel_size")
    s, d = _pair(strides, "strides"), _pair(dilation_rate, "dilation_rate")
    dt = _float_dtype(x)
    with variable_scope(name, default_name="conv2d", values=[x], reuse=reuse):
        kernel = _weight("kernel", [kh, kw, channels, filters], dt, kernel_initializer,
                         kernel_regularizer, kernel_constraint, trainable)
        y = conv_ops.conv2d(x, kernel, strides=s, padding=_padding(padding), data_format=fmt,
                            dilations=d)
        if use_bias:
            bias = _weight("bias", [filters], dt, bias_initializer or zeros_initializer(),
                           bias_regularizer, bias_constraint, trainable)
            y = nn_ops.bias_add(y, bias, data_format=fmt)
        return _finish(y, activation, activity_regularizer)


def _deconv_length(size: Any, kernel: int, padding: str, stride: int, dilation: int) -> Any:
    """Keras' deconv_output_length without output_padding: the transposed convolution's
    output size along one axis (an int, or a scalar tensor when `size` is one)."""
    kernel = kernel + (kernel - 1) * (dilation - 1)
    if padding == "VALID":
        return size * stride + max(kernel - stride, 0)
    return size * stride


def conv2d_transpose(inputs: Any, filters: int, kernel_size: Any, strides: Any = (1, 1),
                     padding: str = "valid", data_format: str = "channels_last", activation: Any = None,
                     use_bias: bool = True, kernel_initializer: Any = None, bias_initializer: Any = None,
                     kernel_regularizer: Any = None, bias_regularizer: Any = None,
                     activity_regularizer: Any = None, kernel_constraint: Any = None,
                     bias_constraint: Any = None, trainable: bool = True, name: str | None = None,
                     reuse: Any = None) -> Tensor:
    """Transposed 2-D convolution layer, as Keras' Conv2DTranspose builds it: kernel
    [kh, kw, filters, in] ("conv2d_transpose/kernel"), an output shape stacked from the
    batch size and each spatial size times the stride (plus the overhang with "valid")."""
    x = convert_to_tensor(inputs)
    fmt = _data_format(data_format)
    if x.shape.ndims is not None and x.shape.ndims != 4:
        raise ValueError(f"Input 0 of layer conv2d_transpose is incompatible with the layer: expected "
                         f"ndim=4, found ndim={x.shape.ndims}. Full shape received: {x.shape}")
    h_axis, w_axis, c_axis = (2, 3, 1) if fmt == "NCHW" else (1, 2, 3)
    dims = x.shape.as_list() if x.shape.ndims else [None] * 4
    if dims[c_axis] is None:
        raise ValueError("The channel dimension of the inputs should be defined. Found `None`.")
    kh, kw = _pair(kernel_size, "kernel_size")
    sh, sw = _pair(strides, "strides")
    pad = _padding(padding)
    dt = _float_dtype(x)
    with variable_scope(name, default_name="conv2d_transpose", values=[x], reuse=reuse):
        kernel = _weight("kernel", [kh, kw, filters, dims[c_axis]], dt, kernel_initializer,
                         kernel_regularizer, kernel_constraint, trainable)
        shape = array_ops.shape(x)
        height = dims[h_axis] if dims[h_axis] is not None else shape[h_axis]
        width = dims[w_axis] if dims[w_axis] is not None else shape[w_axis]
        out_h = _deconv_length(height, kh, pad, sh, 1)
        out_w = _deconv_length(width, kw, pad, sw, 1)
        sizes = [shape[0], filters, out_h, out_w] if fmt == "NCHW" else [shape[0], out_h, out_w, filters]
        stride4 = [1, 1, sh, sw] if fmt == "NCHW" else [1, sh, sw, 1]
        y = conv_ops.conv2d_transpose(x, kernel, array_ops.stack(sizes), strides=stride4, padding=pad,
                                      data_format=fmt)
        static = [dims[0], filters, None, None] if fmt == "NCHW" else [dims[0], None, None, filters]
        for axis, size, k, st in ((h_axis, dims[h_axis], kh, sh), (w_axis, dims[w_axis], kw, sw)):
            static[axis] = None if size is None else _deconv_length(size, k, pad, st, 1)
        y.set_shape(static)
        if use_bias:
            bias = _weight("bias", [filters], dt, bias_initializer or zeros_initializer(),
                           bias_regularizer, bias_constraint, trainable)
            y = nn_ops.bias_add(y, bias, data_format=fmt)
        return _finish(y, activation, activity_regularizer)


def _pool(kind: str, inputs: Any, pool_size: Any, strides: Any, padding: str,
          data_format: str, name: str | None) -> Tensor:
    fmt = _data_format(data_format)
    k, s = _pair(pool_size, "pool_size"), _pair(strides, "strides")
    fn = conv_ops.max_pool if kind == "max_pooling2d" else conv_ops.avg_pool
    with variable_scope(name, default_name=kind, values=[inputs]):
        return fn(inputs, ksize=k, strides=s, padding=_padding(padding), data_format=fmt)


def max_pooling2d(inputs: Any, pool_size: Any, strides: Any, padding: str = "valid",
                  data_format: str = "channels_last", name: str | None = None) -> Tensor:
    """Max pooling layer ("max_pooling2d/MaxPool")."""
    return _pool("max_pooling2d", inputs, pool_size, strides, padding, data_format, name)


def average_pooling2d(inputs: Any, pool_size: Any, strides: Any, padding: str = "valid",
                      data_format: str = "channels_last", name: str | None = None) -> Tensor:
    """Average pooling layer ("average_pooling2d/AvgPool")."""
    return _pool("average_pooling2d", inputs, pool_size, strides, padding, data_format, name)


def flatten(inputs: Any, name: str | None = None, data_format: str = "channels_last") -> Tensor:
    """[batch, ...] -> [batch, prod(...)] (channels_first is moved last first)."""
    fmt = _data_format(data_format)
    with variable_scope(name, default_name="flatten", values=[inputs]):
        x = convert_to_tensor(inputs)
        if fmt == "NCHW" and x.shape.ndims is not None and x.shape.ndims > 1:
            x = array_ops.transpose(x, [0] + list(range(2, x.shape.ndims)) + [1])
        if x.shape.ndims == 1:
            return array_ops.expand_dims(x, 1)
        # TensorFlow's Flatten.call: a `Const` shape when one dimension is unknown at
        # most, else the batch size read at run time (autopacked as `Reshape/shape`).
        rest = x.shape[1:]
        batch = x.shape.as_list()[0] if x.shape.ndims else None
        if rest.is_fully_defined():
            return array_ops.reshape(x, constant([-1, int(np.prod(rest.as_list()))]))
        if batch is not None:
            return array_ops.reshape(x, constant([int(batch), -1]))
        return array_ops.reshape(x, [array_ops.shape(x)[0], -1])


def dropout(inputs: Any, rate: float = 0.5, noise_shape: Any = None, seed: int | None = None,
            training: Any = False, name: str | None = None) -> Tensor:
    """nn.dropout(inputs, rate) when `training` (a bool; a tensor picks at run time),
    else the inputs unchanged (an Identity)."""
    with variable_scope(name, default_name="dropout", values=[inputs]):
        x = convert_to_tensor(inputs)
        if isinstance(training, (bool, np.bool_)):
            if not training or rate == 0:
                return identity(x)
            return nn_impl.dropout(x, rate=rate, noise_shape=noise_shape, seed=seed)
        # A boolean tensor: select between the two results (both are cheap).
        dropped = nn_impl.dropout(x, rate=rate, noise_shape=noise_shape, seed=seed)
        flag = math_ops.cast(training, dtypes.bool)
        return array_ops.where(array_ops.fill(array_ops.shape(x), flag), dropped, x)
