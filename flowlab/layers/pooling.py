"""`tf.layers.MaxPooling1D/2D/3D`, `AveragePooling1D/2D/3D` and their functional forms.

Ops are named inside the layer's scope ("max_pooling2d/MaxPool"); the 1-D layers pool
in 2-D over an inserted axis (Keras' Pooling1D: ExpandDims, MaxPool, Squeeze), the 3-D
ones run MaxPool3D / AvgPool3D.  No variables.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph.tensor import Tensor
from flowlab.layers.base import Layer
from flowlab.layers.layer_args import channels_first, nn_format, ntuple, padding_name
from flowlab.ops import array_ops, conv_ops, pool3d_ops
from flowlab.ops.builder import convert_to_tensor

__all__ = ["MaxPooling1D", "MaxPooling2D", "MaxPooling3D", "AveragePooling1D", "AveragePooling2D",
           "AveragePooling3D", "max_pooling1d", "max_pooling2d", "max_pooling3d", "average_pooling1d",
           "average_pooling2d", "average_pooling3d"]


class _Pooling(Layer):
    rank = 2
    kind = "max"

    def __init__(self, pool_size: Any, strides: Any, padding: str = "valid",
                 data_format: str = "channels_last", name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name=name, **kwargs)
        self.pool_size = ntuple(pool_size, self.rank, "pool_size")
        self.strides = ntuple(strides if strides is not None else pool_size, self.rank, "strides")
        self.padding = padding_name(padding)
        self.data_format = data_format
        self._first = channels_first(data_format)

    def call(self, inputs: Any) -> Tensor:
        x = convert_to_tensor(inputs)
        k, s = list(self.pool_size), list(self.strides)
        if self.rank == 3:
            fn = pool3d_ops.max_pool3d if self.kind == "max" else pool3d_ops.avg_pool3d
            full_k = [1, 1] + k if self._first else [1] + k + [1]
            full_s = [1, 1] + s if self._first else [1] + s + [1]
            return fn(x, full_k, full_s, self.padding, data_format=nn_format(self.data_format, 3))
        fn = conv_ops.max_pool if self.kind == "max" else conv_ops.avg_pool
        fmt = "NCHW" if self._first else "NHWC"
        if self.rank == 1:
            # Keras' Pooling1D: [batch, steps, c] -> [batch, steps, 1, c], pool, squeeze.
            axis = 3 if self._first else 2
            y = fn(array_ops.expand_dims(x, axis), ksize=k + [1], strides=s + [1], padding=self.padding,
                   data_format=fmt)
            return array_ops.squeeze(y, [axis])
        return fn(x, ksize=k, strides=s, padding=self.padding, data_format=fmt)


class MaxPooling1D(_Pooling):
    """Max pooling over [batch, steps, channels]."""
    rank, kind = 1, "max"


class MaxPooling2D(_Pooling):
    """Max pooling over [batch, height, width, channels] ("max_pooling2d/MaxPool")."""
    rank, kind = 2, "max"


class MaxPooling3D(_Pooling):
    """Max pooling over [batch, depth, height, width, channels]."""
    rank, kind = 3, "max"


class AveragePooling1D(_Pooling):
    """Average pooling over [batch, steps, channels]."""
    rank, kind = 1, "avg"


class AveragePooling2D(_Pooling):
    """Average pooling over [batch, height, width, channels] ("average_pooling2d/AvgPool")."""
    rank, kind = 2, "avg"


class AveragePooling3D(_Pooling):
    """Average pooling over [batch, depth, height, width, channels]."""
    rank, kind = 3, "avg"


def _pool(cls: type, inputs: Any, pool_size: Any, strides: Any, padding: str, data_format: str,
          name: str | None) -> Tensor:
    return cls(pool_size, strides, padding=padding, data_format=data_format, name=name).apply(inputs)


def max_pooling1d(inputs: Any, pool_size: Any, strides: Any, padding: str = "valid",
                  data_format: str = "channels_last", name: str | None = None) -> Tensor:
    """Functional `MaxPooling1D`."""
    return _pool(MaxPooling1D, inputs, pool_size, strides, padding, data_format, name)


def max_pooling2d(inputs: Any, pool_size: Any, strides: Any, padding: str = "valid",
                  data_format: str = "channels_last", name: str | None = None) -> Tensor:
    """Functional `MaxPooling2D`."""
    return _pool(MaxPooling2D, inputs, pool_size, strides, padding, data_format, name)


def max_pooling3d(inputs: Any, pool_size: Any, strides: Any, padding: str = "valid",
                  data_format: str = "channels_last", name: str | None = None) -> Tensor:
    """Functional `MaxPooling3D`."""
    return _pool(MaxPooling3D, inputs, pool_size, strides, padding, data_format, name)


def average_pooling1d(inputs: Any, pool_size: Any, strides: Any, padding: str = "valid",
                      data_format: str = "channels_last", name: str | None = None) -> Tensor:
    """Functional `AveragePooling1D`."""
    return _pool(AveragePooling1D, inputs, pool_size, strides, padding, data_format, name)


def average_pooling2d(inputs: Any, pool_size: Any, strides: Any, padding: str = "valid",
                      data_format: str = "channels_last", name: str | None = None) -> Tensor:
    """Functional `AveragePooling2D`."""
    return _pool(AveragePooling2D, inputs, pool_size, strides, padding, data_format, name)


def average_pooling3d(inputs: Any, pool_size: Any, strides: Any, padding: str = "valid",
                      data_format: str = "channels_last", name: str | None = None) -> Tensor:
    """Functional `AveragePooling3D`."""
    return _pool(AveragePooling3D, inputs, pool_size, strides, padding, data_format, name)
