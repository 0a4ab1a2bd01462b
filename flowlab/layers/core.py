"""`tf.layers.Dense`, `Dropout`, `Flatten` and their functional forms.

Variables are "dense/kernel" and "dense/bias" and ops "dense/MatMul", "dense/BiasAdd",
"dense/Relu", as in TensorFlow (scoping: flowlab.layers.base).  Kernels default to
the scope's initializer (glorot-uniform for floats), biases to zeros; variables take
the input's floating dtype.  Regularizers add their loss to REGULARIZATION_LOSSES.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.tensor import Tensor
from flowlab.layers.base import Layer
from flowlab.layers.layer_args import channels_first, float_dtype
from flowlab.ops import array_ops, math_ops, nn_impl, nn_ops
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.constant_op import constant
from flowlab.ops.core_ops import identity
from flowlab.ops.init_ops import zeros_initializer

__all__ = ["Dense", "Dropout", "Flatten", "dense", "flatten", "dropout"]


class Dense(Layer):
    """activation(inputs @ kernel + bias) over the last dimension:
    `tf.layers.Dense(10, activation=tf.nn.relu)(x)` -> variables dense/kernel, dense/bias."""

    def __init__(self, units: int, activation: Any = None, use_bias: bool = True,
                 kernel_initializer: Any = None, bias_initializer: Any = None,
                 kernel_regularizer: Any = None, bias_regularizer: Any = None,
                 activity_regularizer: Any = None, kernel_constraint: Any = None,
                 bias_constraint: Any = None, trainable: bool = True, name: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(trainable=trainable, name=name, activity_regularizer=activity_regularizer, **kwargs)
        self.units = int(units)
        self.activation, self.use_bias = activation, use_bias
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint

    def build(self, input_shape: Any) -> None:
        last = input_shape.as_list()[-1] if input_shape is not None and input_shape.ndims else None
        if last is None:
            raise ValueError("The last dimension of the inputs to `Dense` should be defined. "
                             "Found `None`.")
        self.kernel = self.add_weight("kernel", [last, self.units], initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint)
        self.bias = (self.add_weight("bias", [self.units], initializer=self.bias_initializer or zeros_initializer(),
                                     regularizer=self.bias_regularizer, constraint=self.bias_constraint)
                     if self.use_bias else None)

    def call(self, inputs: Any) -> Tensor:
        x = convert_to_tensor(inputs)
        dt = self.kernel.dtype.base_dtype
        x = math_ops.cast(x, dt) if x.dtype.base_dtype != dt else x
        last = self.kernel.shape.as_list()[0]
        if x.shape.ndims == 2:
            y = math_ops.matmul(x, self.kernel)
        else:
            # TensorFlow uses a tensordot here; a reshape around one MatMul is the same.
            flat = array_ops.reshape(x, [-1, last])
            out_shape = array_ops.concat([array_ops.shape(x)[:-1], [self.units]], 0)
            y = array_ops.reshape(math_ops.matmul(flat, self.kernel), out_shape, name="Tensordot")
            y.set_shape(x.shape[:-1].concatenate([self.units]))
        if self.bias is not None:
            y = nn_ops.bias_add(y, self.bias)
        return self.activation(y) if self.activation is not None else y


class Dropout(Layer):
    """nn.dropout(inputs, rate) when called with `training` true (a bool; a tensor
    picks at run time), else the inputs unchanged (an Identity)."""

    def __init__(self, rate: float = 0.5, noise_shape: Any = None, seed: int | None = None,
                 name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name=name, **kwargs)
        self.rate, self.noise_shape, self.seed = rate, noise_shape, seed

    def call(self, inputs: Any, training: Any = False) -> Tensor:
        x = convert_to_tensor(inputs)
        if isinstance(training, (bool, np.bool_)):
            if not training or self.rate == 0:
                return identity(x)
            return nn_impl.dropout(x, rate=self.rate, noise_shape=self.noise_shape, seed=self.seed)
        # A boolean tensor: select between the two results (both are cheap).
        dropped = nn_impl.dropout(x, rate=self.rate, noise_shape=self.noise_shape, seed=self.seed)
        flag = math_ops.cast(training, dtypes.bool)
        return array_ops.where(array_ops.fill(array_ops.shape(x), flag), dropped, x)


class Flatten(Layer):
    """[batch, ...] -> [batch, prod(...)] (channels_first is moved last first)."""

    def __init__(self, data_format: str = "channels_last", name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name=name, **kwargs)
        self._channels_first = channels_first(data_format)
        self.data_format = data_format

    def call(self, inputs: Any) -> Tensor:
        x = convert_to_tensor(inputs)
        if self._channels_first and x.shape.ndims is not None and x.shape.ndims > 1:
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


def dense(inputs: Any, units: int, activation: Any = None, use_bias: bool = True,
          kernel_initializer: Any = None, bias_initializer: Any = None,
          kernel_regularizer: Any = None, bias_regularizer: Any = None,
          activity_regularizer: Any = None, kernel_constraint: Any = None,
          bias_constraint: Any = None, trainable: bool = True, name: str | None = None,
          reuse: Any = None) -> Tensor:
    """The functional form of `Dense`: `tf.layers.dense(x, 10, activation=tf.nn.relu)`."""
    x = convert_to_tensor(inputs)
    layer = Dense(units, activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
                  bias_regularizer, activity_regularizer, kernel_constraint, bias_constraint, trainable,
                  name=name, dtype=float_dtype(x), _scope=name, _reuse=reuse)
    return layer.apply(x)


def dropout(inputs: Any, rate: float = 0.5, noise_shape: Any = None, seed: int | None = None,
            training: Any = False, name: str | None = None) -> Tensor:
    """The functional form of `Dropout`."""
    return Dropout(rate, noise_shape, seed, name=name).apply(inputs, training=training)


def flatten(inputs: Any, name: str | None = None, data_format: str = "channels_last") -> Tensor:
    """The functional form of `Flatten`."""
    return Flatten(data_format, name=name).apply(inputs)
