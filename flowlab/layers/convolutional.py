"""`tf.layers.Conv1D/2D/3D`, `Conv2DTranspose`, `Conv3DTranspose`, `SeparableConv1D/2D`
and their functional forms, as TensorFlow 1.x's Keras-based layers build them.

Variables: "conv2d/kernel" ([k..., in, filters]; transposed: [k..., filters, in]),
"conv2d/bias"; separable: "separable_conv2d/depthwise_kernel" ([k..., in, multiplier]),
"pointwise_kernel" ([1..., in * multiplier, filters]), "bias".  1-D layers run the 2-D
op over an inserted axis (TensorFlow's conv1d); 3-D ones Conv3D / Conv3DBackpropInputV2.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph.tensor import Tensor
from flowlab.layers.base import Layer
from flowlab.layers.layer_args import channels_first, float_dtype, nn_format, ntuple, padding_name
from flowlab.ops import array_ops, conv3d_ops, conv_ops, nn_ops
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.depthwise_conv_ops import separable_conv2d as nn_separable_conv2d
from flowlab.ops.init_ops import zeros_initializer

__all__ = ["Conv1D", "Conv2D", "Conv3D", "Conv2DTranspose", "Conv3DTranspose", "SeparableConv1D",
           "SeparableConv2D", "conv1d", "conv2d", "conv3d", "conv2d_transpose", "conv3d_transpose",
           "separable_conv1d", "separable_conv2d"]


def _deconv_length(size: Any, kernel: int, padding: str, stride: int, dilation: int) -> Any:
    """Keras' deconv_output_length without output_padding: the transposed convolution's
    output size along one axis (an int, or a scalar tensor when `size` is one)."""
    kernel = kernel + (kernel - 1) * (dilation - 1)
    if padding == "VALID":
        return size * stride + max(kernel - stride, 0)
    return size * stride


class _Conv(Layer):
    """The convolution layers' shared configuration, input checks and bias."""

    rank = 2

    def __init__(self, filters: int, kernel_size: Any, strides: Any = 1, padding: str = "valid",
                 data_format: str = "channels_last", dilation_rate: Any = 1, activation: Any = None,
                 use_bias: bool = True, kernel_initializer: Any = None, bias_initializer: Any = None,
                 kernel_regularizer: Any = None, bias_regularizer: Any = None,
                 activity_regularizer: Any = None, kernel_constraint: Any = None,
                 bias_constraint: Any = None, trainable: bool = True, name: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(trainable=trainable, name=name, activity_regularizer=activity_regularizer, **kwargs)
        r = self.rank
        self.filters = int(filters)
        self.kernel_size = ntuple(kernel_size, r, "kernel_size")
        self.strides = ntuple(strides, r, "strides")
        self.padding = padding_name(padding)
        self.data_format = data_format
        self._first = channels_first(data_format)
        self.dilation_rate = ntuple(dilation_rate, r, "dilation_rate")
        self.activation, self.use_bias = activation, use_bias
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint

    def _channels(self, input_shape: Any) -> int:
        nd = self.rank + 2
        if input_shape is not None and input_shape.ndims is not None and input_shape.ndims != nd:
            # TensorFlow's message, its doubled colon included; more leading batch
            # dimensions (which Keras allows) are not implemented.
            want = f"min_ndim={nd}" if input_shape.ndims < nd else f"ndim={nd} (flowlab)"
            raise ValueError(f"Input 0 of layer {self.name} is incompatible with the layer: : expected "
                             f"{want}, found ndim={input_shape.ndims}. Full shape received: "
                             f"{tuple(input_shape.as_list())}")
        dims = input_shape.as_list() if input_shape is not None and input_shape.ndims else [None] * nd
        c = dims[1 if self._first else -1]
        if c is None:
            raise ValueError("The channel dimension of the inputs should be defined. Found `None`.")
        return int(c)

    def _add_bias(self) -> None:
        self.bias = (self.add_weight("bias", [self.filters], initializer=self.bias_initializer or zeros_initializer(),
                                     regularizer=self.bias_regularizer, constraint=self.bias_constraint)
                     if self.use_bias else None)

    def _finish(self, y: Tensor) -> Tensor:
        if self.bias is not None:
            if not self._first:
                y = nn_ops.bias_add(y, self.bias)
            elif self.rank == 2:
                y = nn_ops.bias_add(y, self.bias, data_format="NCHW")
            else:
                y = y + array_ops.reshape(self.bias, [1, self.filters] + [1] * self.rank)
        return self.activation(y) if self.activation is not None else y

    def build(self, input_shape: Any) -> None:
        c = self._channels(input_shape)
        self.kernel = self.add_weight("kernel", self.kernel_size + [c, self.filters],
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint)
        self._add_bias()

    def call(self, inputs: Any) -> Tensor:
        x = convert_to_tensor(inputs)
        fmt = nn_format(self.data_format, self.rank)
        if self.rank == 1:
            y = conv_ops.conv1d(x, self.kernel, stride=self.strides[0], padding=self.padding,
                                data_format=fmt, dilations=self.dilation_rate[0])
        elif self.rank == 2:
            y = conv_ops.conv2d(x, self.kernel, strides=self.strides, padding=self.padding,
                                data_format=fmt, dilations=self.dilation_rate)
        else:
            full = ([1, 1] + self.strides) if self._first else ([1] + self.strides + [1])
            dil = ([1, 1] + self.dilation_rate) if self._first else ([1] + self.dilation_rate + [1])
            y = conv3d_ops.conv3d(x, self.kernel, strides=full, padding=self.padding, data_format=fmt,
                                  dilations=dil)
        return self._finish(y)


class Conv1D(_Conv):
    """1-D convolution layer over [batch, width, channels]."""
    rank = 1


class Conv2D(_Conv):
    """2-D convolution layer over [batch, height, width, channels]."""
    rank = 2


class Conv3D(_Conv):
    """3-D convolution layer over [batch, depth, height, width, channels]."""
    rank = 3


class _ConvTranspose(_Conv):
    """Transposed convolution: kernel [k..., filters, in]; the output shape is stacked
    from the batch size and each spatial size times the stride (plus the overhang with
    "valid")."""

    def build(self, input_shape: Any) -> None:
        c = self._channels(input_shape)
        self.kernel = self.add_weight("kernel", self.kernel_size + [self.filters, c],
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint)
        self._add_bias()

    def call(self, inputs: Any) -> Tensor:
        x = convert_to_tensor(inputs)
        r = self.rank
        axes = list(range(2, 2 + r)) if self._first else list(range(1, 1 + r))
        dims = x.shape.as_list() if x.shape.ndims else [None] * (r + 2)
        shape = array_ops.shape(x)
        sizes = []
        for i, axis in enumerate(axes):
            size = dims[axis] if dims[axis] is not None else shape[axis]
            sizes.append(_deconv_length(size, self.kernel_size[i], self.padding, self.strides[i],
                                        self.dilation_rate[i]))
        out = [shape[0], self.filters, *sizes] if self._first else [shape[0], *sizes, self.filters]
        full = ([1, 1] + self.strides) if self._first else ([1] + self.strides + [1])
        fmt = nn_format(self.data_format, r)
        if r == 2:
            y = conv_ops.conv2d_transpose(x, self.kernel, array_ops.stack(out), strides=full,
                                          padding=self.padding, data_format=fmt)
        else:
            y = conv3d_ops.conv3d_backprop_input_v2(array_ops.stack(out), self.kernel, x, strides=full,
                                                    padding=self.padding, data_format=fmt,
                                                    name="conv3d_transpose")
        static = [dims[0], self.filters] + [None] * r if self._first else [dims[0]] + [None] * r + [self.filters]
        for i, axis in enumerate(axes):
            static[axis] = None if dims[axis] is None else _deconv_length(
                dims[axis], self.kernel_size[i], self.padding, self.strides[i], self.dilation_rate[i])
        y.set_shape(static)
        return self._finish(y)


class Conv2DTranspose(_ConvTranspose):
    """Transposed 2-D convolution layer (Keras' Conv2DTranspose)."""
    rank = 2


class Conv3DTranspose(_ConvTranspose):
    """Transposed 3-D convolution layer (Keras' Conv3DTranspose)."""
    rank = 3


class _SeparableConv(_Conv):
    """A depthwise convolution ([k..., in, depth_multiplier]) then a pointwise one
    ([1..., in * depth_multiplier, filters]), as tf.nn.separable_conv2d."""

    def __init__(self, filters: int, kernel_size: Any, strides: Any = 1, padding: str = "valid",
                 data_format: str = "channels_last", dilation_rate: Any = 1, depth_multiplier: int = 1,
                 activation: Any = None, use_bias: bool = True, depthwise_initializer: Any = None,
                 pointwise_initializer: Any = None, bias_initializer: Any = None,
                 depthwise_regularizer: Any = None, pointwise_regularizer: Any = None,
                 bias_regularizer: Any = None, activity_regularizer: Any = None,
                 depthwise_constraint: Any = None, pointwise_constraint: Any = None,
                 bias_constraint: Any = None, trainable: bool = True, name: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate, activation,
                         use_bias, None, bias_initializer, None, bias_regularizer, activity_regularizer,
                         None, bias_constraint, trainable, name, **kwargs)
        self.depth_multiplier = int(depth_multiplier)
        self.depthwise_initializer, self.pointwise_initializer = depthwise_initializer, pointwise_initializer
        self.depthwise_regularizer, self.pointwise_regularizer = depthwise_regularizer, pointwise_regularizer
        self.depthwise_constraint, self.pointwise_constraint = depthwise_constraint, pointwise_constraint

    def build(self, input_shape: Any) -> None:
        c = self._channels(input_shape)
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel", self.kernel_size + [c, self.depth_multiplier],
            initializer=self.depthwise_initializer, regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint)
        self.pointwise_kernel = self.add_weight(
            "pointwise_kernel", [1] * self.rank + [c * self.depth_multiplier, self.filters],
            initializer=self.pointwise_initializer, regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint)
        self._add_bias()

    def call(self, inputs: Any) -> Tensor:
        x = convert_to_tensor(inputs)
        fmt = "NCHW" if self._first else "NHWC"
        dk, pk = self.depthwise_kernel, self.pointwise_kernel
        strides, rate = list(self.strides), list(self.dilation_rate)
        if self.rank == 1:
            # Keras' SeparableConv1D: a 2-D one over an inserted height-1 axis.
            spatial = 2 if self._first else 1
            x = array_ops.expand_dims(x, spatial)
            dk, pk = array_ops.expand_dims(dk, 0), array_ops.expand_dims(pk, 0)
            strides, rate = [1] + strides, [1] + rate
        full = [1, 1] + strides if self._first else [1] + strides + [1]
        y = nn_separable_conv2d(x, dk, pk, strides=full, padding=self.padding, rate=rate, data_format=fmt)
        if self.rank == 1:
            y = array_ops.squeeze(y, [spatial])
        return self._finish(y)


class SeparableConv1D(_SeparableConv):
    """Depthwise-separable 1-D convolution layer."""
    rank = 1


class SeparableConv2D(_SeparableConv):
    """Depthwise-separable 2-D convolution layer."""
    rank = 2


def _functional(cls: type, inputs: Any, args: tuple, kwargs: dict[str, Any]) -> Tensor:
    """`cls(*args, **kwargs, name=name, _scope=name, _reuse=reuse).apply(inputs)`."""
    x = convert_to_tensor(inputs)
    name, reuse = kwargs.pop("name", None), kwargs.pop("reuse", None)
    layer = cls(*args, **kwargs, name=name, dtype=float_dtype(x), _scope=name, _reuse=reuse)
    return layer.apply(x)


def conv1d(inputs: Any, filters: int, kernel_size: Any, *args: Any, **kwargs: Any) -> Tensor:
    """Functional `Conv1D` (same arguments, plus `name` and `reuse`)."""
    return _functional(Conv1D, inputs, (filters, kernel_size, *args), kwargs)


def conv2d(inputs: Any, filters: int, kernel_size: Any, *args: Any, **kwargs: Any) -> Tensor:
    """Functional `Conv2D`: kernel [kh, kw, in, filters] ("conv2d/kernel"), bias."""
    return _functional(Conv2D, inputs, (filters, kernel_size, *args), kwargs)


def conv3d(inputs: Any, filters: int, kernel_size: Any, *args: Any, **kwargs: Any) -> Tensor:
    """Functional `Conv3D`."""
    return _functional(Conv3D, inputs, (filters, kernel_size, *args), kwargs)


def conv2d_transpose(inputs: Any, filters: int, kernel_size: Any, strides: Any = (1, 1),
                     padding: str = "valid", data_format: str = "channels_last", *args: Any,
                     **kwargs: Any) -> Tensor:
    """Functional `Conv2DTranspose` (no dilation_rate argument, as in TensorFlow 1.x)."""
    return _functional(Conv2DTranspose, inputs, (filters, kernel_size, strides, padding, data_format, 1, *args),
                       kwargs)


def conv3d_transpose(inputs: Any, filters: int, kernel_size: Any, strides: Any = (1, 1, 1),
                     padding: str = "valid", data_format: str = "channels_last", *args: Any,
                     **kwargs: Any) -> Tensor:
    """Functional `Conv3DTranspose`."""
    return _functional(Conv3DTranspose, inputs, (filters, kernel_size, strides, padding, data_format, 1, *args),
                       kwargs)


def separable_conv1d(inputs: Any, filters: int, kernel_size: Any, *args: Any, **kwargs: Any) -> Tensor:
    """Functional `SeparableConv1D`."""
    return _functional(SeparableConv1D, inputs, (filters, kernel_size, *args), kwargs)


def separable_conv2d(inputs: Any, filters: int, kernel_size: Any, *args: Any, **kwargs: Any) -> Tensor:
    """Functional `SeparableConv2D`."""
    return _functional(SeparableConv2D, inputs, (filters, kernel_size, *args), kwargs)
