"""`tf.layers.BatchNormalization` and `tf.layers.batch_normalization`: TensorFlow 1.x's
batch-norm layer.

The layer's variable scope ("batch_normalization", "batch_normalization_1", ...) holds
gamma, beta (trainable) and moving_mean, moving_variance (not trainable).  A 4-D input
normalized over axis 1 or 3 takes the fused path (one FusedBatchNormV3 op, whose batch
variance is Bessel-corrected); other inputs take `tf.nn.moments` + `batch_normalization`
(biased variance), as TensorFlow's layer does.  In training the moving statistics are
updated by `var -= (var - batch_stat) * (1 - momentum)` ops ("AssignMovingAvg",
"AssignMovingAvg_1") added to tf.GraphKeys.UPDATE_OPS, so the usual
`with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS))` pattern works.
A boolean tensor `training` selects both paths with `tf.cond` and turns the update's decay
to 0 when it is False.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Tensor
from flowlab.layers.base import Layer
from flowlab.ops import array_ops, math_ops, nn_impl, state_ops
from flowlab.ops.batch_norm import fused_batch_norm
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.const_fold import constant_value
from flowlab.ops.init_ops import ones_initializer, zeros_initializer

__all__ = ["BatchNormalization", "batch_normalization"]


def _select(training: Any, on: Any, off: Any) -> Any:
    """TensorFlow's smart_cond: a Python/constant `training` picks one branch."""
    if isinstance(training, Tensor):
        value = constant_value(training)
        if value is None:
            from flowlab.ops.cond import cond
            return cond(training, on, off)
        training = bool(value)
    return on() if training else off()


class BatchNormalization(Layer):
    """Batch normalization layer (Ioffe & Szegedy 2015), TensorFlow 1.x's legacy layer.

    `axis` is the channel (feature) axis; `momentum` that of the moving averages;
    `epsilon` is added to the variance; `center` / `scale` add beta / multiply by gamma.
    `fused`: None picks the fused op when possible (4-D input, axis 1 or 3); True
    demands it.  Called with `training` (a Python bool or boolean tensor): batch
    statistics, and moving-average updates in `updates` and UPDATE_OPS, when true; the
    moving statistics when false.  renorm, virtual_batch_size and adjustment are not
    implemented (ValueError).
    """

    def __init__(self, axis: int = -1, momentum: float = 0.99, epsilon: float = 1e-3,
                 center: bool = True, scale: bool = True, beta_initializer: Any = None,
                 gamma_initializer: Any = None, moving_mean_initializer: Any = None,
                 moving_variance_initializer: Any = None, beta_regularizer: Any = None,
                 gamma_regularizer: Any = None, beta_constraint: Any = None, gamma_constraint: Any = None,
                 renorm: bool = False, renorm_clipping: Any = None, renorm_momentum: float = 0.99,
                 fused: bool | None = None, trainable: bool = True, virtual_batch_size: Any = None,
                 adjustment: Any = None, name: str | None = None, **kwargs: Any) -> None:
        if renorm or virtual_batch_size is not None or adjustment is not None:
            raise ValueError("flowlab's batch_normalization does not implement renorm, "
                             "virtual_batch_size or adjustment")
        del renorm_clipping, renorm_momentum
        super().__init__(trainable=trainable, name=name, **kwargs)
        self.axis, self.momentum, self.epsilon = axis, momentum, epsilon
        self.center, self.scale, self.fused = center, scale, fused
        self.beta_initializer, self.gamma_initializer = beta_initializer, gamma_initializer
        self.moving_mean_initializer = moving_mean_initializer
        self.moving_variance_initializer = moving_variance_initializer
        self.beta_regularizer, self.gamma_regularizer = beta_regularizer, gamma_regularizer
        self.beta_constraint, self.gamma_constraint = beta_constraint, gamma_constraint

    def build(self, input_shape: Any) -> None:
        ndims = input_shape.ndims if input_shape is not None else None
        if ndims is None:
            raise ValueError(f"Input has undefined rank: {input_shape}")
        ax = self.axis + ndims if self.axis < 0 else self.axis
        if not 0 <= ax < ndims:
            raise ValueError(f"Invalid axis: {self.axis}")
        c = input_shape.dims[ax]
        c = getattr(c, "value", c)
        if c is None:
            raise ValueError(f"Input has undefined `axis` dimension. Input shape: {input_shape}")
        can_fuse = ndims == 4 and ax in (1, 3)
        if self.fused and not can_fuse:
            raise ValueError("Passing `fused=True` is only supported when the input is 4-D and "
                             "axis is 1 or 3 (flowlab)")
        self._ax, self._c, self._ndims = ax, c, ndims
        self._use_fused = can_fuse if self.fused is None else bool(self.fused)
        in_dtype = self._dtype or dtypes.float32
        pdtype = dtypes.float32 if in_dtype in (dtypes.float16,) or not in_dtype.is_floating else in_dtype
        self.gamma = self.add_weight("gamma", [c], dtype=pdtype, initializer=self.gamma_initializer or ones_initializer(),
                                     regularizer=self.gamma_regularizer,
                                     constraint=self.gamma_constraint) if self.scale else None
        self.beta = self.add_weight("beta", [c], dtype=pdtype, initializer=self.beta_initializer or zeros_initializer(),
                                    regularizer=self.beta_regularizer,
                                    constraint=self.beta_constraint) if self.center else None
        self.moving_mean = self.add_weight("moving_mean", [c], dtype=pdtype, trainable=False,
                                           initializer=self.moving_mean_initializer or zeros_initializer())
        self.moving_variance = self.add_weight("moving_variance", [c], dtype=pdtype, trainable=False,
                                               initializer=self.moving_variance_initializer or ones_initializer())

    def call(self, inputs: Any, training: Any = False) -> Tensor:
        inputs = convert_to_tensor(inputs)
        ax, c, ndims = self._ax, self._c, self._ndims
        momentum, epsilon = self.momentum, self.epsilon
        gamma, beta = self.gamma, self.beta
        moving_mean, moving_var = self.moving_mean, self.moving_variance
        in_dtype = inputs.dtype.base_dtype
        pdtype = moving_mean.dtype.base_dtype
        if self._use_fused:
            fmt = "NCHW" if ax == 1 else "NHWC"
            g = gamma if gamma is not None else array_ops.ones([c], dtype=pdtype)
            b = beta if beta is not None else array_ops.zeros([c], dtype=pdtype)

            def train() -> Any:
                return fused_batch_norm(inputs, g, b, epsilon=epsilon, data_format=fmt,
                                        is_training=True)

            def infer() -> Any:
                return fused_batch_norm(inputs, g, b, moving_mean, moving_var, epsilon=epsilon,
                                        data_format=fmt, is_training=False)

            y, mean, var = _select(training, train, infer)
        else:
            axes = [i for i in range(ndims) if i != ax]
            bshape = [1] * ndims
            bshape[ax] = c
            reshape = (lambda t: t if ax == ndims - 1 or t is None
                       else array_ops.reshape(t, bshape))
            x32 = math_ops.cast(inputs, pdtype) if pdtype != in_dtype else inputs

            def stats_train() -> Any:
                return nn_impl.moments(x32, axes)

            def stats_infer() -> Any:
                return moving_mean, moving_var

            mean, var = _select(training, stats_train, stats_infer)
            y = nn_impl.batch_normalization(x32, reshape(mean), reshape(var), reshape(beta),
                                            reshape(gamma), epsilon)
            if pdtype != in_dtype:
                y = math_ops.cast(y, in_dtype)
        training_value = training
        if isinstance(training, Tensor):
            v = constant_value(training)
            training_value = None if v is None else bool(v)
        if training_value or training_value is None:
            if training_value is None:
                decay = _select(training, lambda: convert_to_tensor(1.0 - momentum, dtype=pdtype),
                                lambda: convert_to_tensor(0.0, dtype=pdtype))
            else:
                decay = None
            g = get_default_graph()
            for variable, value in ((moving_mean, mean), (moving_var, var)):
                with g.name_scope("AssignMovingAvg") as scope:
                    d = decay if decay is not None else convert_to_tensor(1.0 - momentum, dtype=pdtype,
                                                                          name="decay")
                    delta = (variable - math_ops.cast(value, pdtype)) * d
                    update = state_ops.assign_sub(variable, delta, name=scope)
                self.add_update(update)
        return y


def batch_normalization(
    inputs: Any, axis: int = -1, momentum: float = 0.99, epsilon: float = 1e-3,
    center: bool = True, scale: bool = True, beta_initializer: Any = None,
    gamma_initializer: Any = None, moving_mean_initializer: Any = None,
    moving_variance_initializer: Any = None, beta_regularizer: Any = None,
    gamma_regularizer: Any = None, beta_constraint: Any = None, gamma_constraint: Any = None,
    training: Any = False, trainable: bool = True, name: str | None = None, reuse: Any = None,
    renorm: bool = False, renorm_clipping: Any = None, renorm_momentum: float = 0.99,
    fused: bool | None = None, virtual_batch_size: Any = None, adjustment: Any = None,
) -> Tensor:
    """The functional form of `BatchNormalization`: the normalized tensor, of the
    input's dtype (`training` as in the class's call)."""
    layer = BatchNormalization(
        axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
        beta_initializer=beta_initializer, gamma_initializer=gamma_initializer,
        moving_mean_initializer=moving_mean_initializer,
        moving_variance_initializer=moving_variance_initializer, beta_regularizer=beta_regularizer,
        gamma_regularizer=gamma_regularizer, beta_constraint=beta_constraint,
        gamma_constraint=gamma_constraint, renorm=renorm, renorm_clipping=renorm_clipping,
        renorm_momentum=renorm_momentum, fused=fused, trainable=trainable,
        virtual_batch_size=virtual_batch_size, adjustment=adjustment, name=name, _scope=name,
        _reuse=reuse)
    return layer.apply(inputs, training=training)
