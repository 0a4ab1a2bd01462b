"""`tf.contrib.layers` as TensorFlow 1.15 had it, for the names TF1 programs use:
initializers (`xavier_initializer`, `variance_scaling_initializer`), regularizers
(`l1_regularizer`, `l2_regularizer`, `sum_regularizer`, `apply_regularization`) and
the layers `fully_connected` (variables "fully_connected/weights" and ".../biases")
and `flatten`.

The contrib initializers are not tf.initializers': `variance_scaling_initializer`
draws a truncated normal of stddev sqrt(1.3 * factor / n) (or a uniform of limit
sqrt(3 * factor / n)), with n from the shape's fans as contrib computed them.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import GraphKeys, get_default_graph
from flowlab.layers import core as core_layers
from flowlab.layers import normalization as normalization_layers
from flowlab.ops import conv_ops, math_ops, nn_ops, random_ops
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.core_ops import identity
from flowlab.ops.init_ops import zeros_initializer
from flowlab.ops.variable_scope import get_variable, variable_scope
from flowlab.platform import tf_logging

__all__ = [
    "xavier_initializer", "xavier_initializer_conv2d", "variance_scaling_initializer",
    "l1_regularizer", "l2_regularizer", "l1_l2_regularizer", "sum_regularizer", "apply_regularization",
    "fully_connected", "flatten", "conv2d", "max_pool2d", "avg_pool2d", "dropout", "batch_norm",
]


def variance_scaling_initializer(factor: float = 2.0, mode: str = "FAN_IN", uniform: bool = False,
                                 seed: int | None = None, dtype: Any = dtypes.float32) -> Any:
    """An initializer with variance `factor / n` (n: fan in, fan out or their mean)."""
    if not dtypes.as_dtype(dtype).is_floating:
        raise TypeError("Cannot create initializer for non-floating point type.")
    if mode not in ("FAN_IN", "FAN_OUT", "FAN_AVG"):
        raise TypeError(f"Unknown mode {mode} [FAN_IN, FAN_OUT, FAN_AVG]")

    def _initializer(shape: Any, dtype: Any = dtype, partition_info: Any = None) -> Any:
        dtype = dtypes.as_dtype(dtype)
        if not dtype.is_floating:
            raise TypeError("Cannot create initializer for non-floating point type.")
        shape = [int(d) for d in shape]
        if shape:
            fan_in = float(shape[-2]) if len(shape) > 1 else float(shape[-1])
            fan_out = float(shape[-1])
        else:
            fan_in = fan_out = 1.0
        for dim in shape[:-2]:
            fan_in *= float(dim)
            fan_out *= float(dim)
        n = {"FAN_IN": fan_in, "FAN_OUT": fan_out, "FAN_AVG": (fan_in + fan_out) / 2.0}[mode]
        if uniform:
            limit = math.sqrt(3.0 * factor / n)
            return random_ops.random_uniform(shape, -limit, limit, dtype, seed=seed)
        return random_ops.truncated_normal(shape, 0.0, math.sqrt(1.3 * factor / n), dtype, seed=seed)

    return _initializer


def xavier_initializer(uniform: bool = True, seed: int | None = None, dtype: Any = dtypes.float32) -> Any:
    """Glorot's initializer: variance 1 / mean(fan_in, fan_out)."""
    return variance_scaling_initializer(factor=1.0, mode="FAN_AVG", uniform=uniform, seed=seed, dtype=dtype)


xavier_initializer_conv2d = xavier_initializer  # TensorFlow exports both names for one function


def _check_scale(scale: Any) -> bool:
    """False when the regularizer is disabled (scale 0)."""
    if isinstance(scale, numbers.Integral):
        raise ValueError(f"scale cannot be an integer: {scale}")
    if isinstance(scale, numbers.Real):
        if scale < 0.0:
            raise ValueError(f"Setting a scale less than 0 on a regularizer: {scale:g}")
        if scale == 0.0:
            tf_logging.info("Scale of 0 disables regularizer.")
            return False
    return True


def l1_regularizer(scale: float, scope: str | None = None) -> Any:
    """`weights -> scale * sum(|weights|)`."""
    if not _check_scale(scale):
        return lambda _: None

    def l1(weights: Any) -> Any:
        with get_default_graph().name_scope(scope or "l1_regularizer") as name:
            my_scale = convert_to_tensor(scale, dtype=weights.dtype.base_dtype, name="scale")
            return math_ops.multiply(my_scale, math_ops.reduce_sum(math_ops.abs(weights)), name=name)

    return l1


def l2_regularizer(scale: float, scope: str | None = None) -> Any:
    """`weights -> scale * sum(weights ** 2) / 2` (`tf.nn.l2_loss`)."""
    if not _check_scale(scale):
        return lambda _: None

    def l2(weights: Any) -> Any:
        with get_default_graph().name_scope(scope or "l2_regularizer") as name:
            my_scale = convert_to_tensor(scale, dtype=weights.dtype.base_dtype, name="scale")
            return math_ops.multiply(my_scale, nn_ops.l2_loss(weights), name=name)

    return l2


def sum_regularizer(regularizer_list: list[Any], scope: str | None = None) -> Any:
    """The sum of the regularizers' penalties (None ones left out)."""
    regularizer_list = [r for r in regularizer_list if r]
    if not regularizer_list:
        return None

    def total(weights: Any) -> Any:
        with get_default_graph().name_scope(scope or "sum_regularizer") as name:
            penalties = [p for p in (r(weights) for r in regularizer_list) if p is not None]
            return math_ops.add_n(penalties, name=name)

    return total


def l1_l2_regularizer(scale_l1: float = 1.0, scale_l2: float = 1.0, scope: str | None = None) -> Any:
    """`l1_regularizer(scale_l1) + l2_regularizer(scale_l2)`."""
    if isinstance(scale_l1, numbers.Integral):
        raise ValueError(f"scale_l1 cannot be an integer: {scale_l1}")
    if isinstance(scale_l2, numbers.Integral):
        raise ValueError(f"scale_l2 cannot be an integer: {scale_l2}")
    scope = scope or "l1_l2_regularizer"
    if scale_l1 == 0.0:
        return l2_regularizer(scale_l2, scope)
    if scale_l2 == 0.0:
        return l1_regularizer(scale_l1, scope)
    return sum_regularizer([l1_regularizer(scale_l1), l2_regularizer(scale_l2)], scope=scope)


def apply_regularization(regularizer: Any, weights_list: Any = None) -> Any:
    """The sum of `regularizer` over `weights_list` (default: the WEIGHTS collection),
    also added to REGULARIZATION_LOSSES."""
    g = get_default_graph()
    if not weights_list:
        weights_list = g.get_collection(GraphKeys.WEIGHTS)
    if not weights_list:
        raise ValueError("No weights to regularize.")
    with g.name_scope("get_regularization_penalty"):
        penalties = [p for p in (regularizer(w) for w in weights_list) if p is not None]
        summed = math_ops.add_n(penalties, name="get_regularization_penalty") if penalties else \
            convert_to_tensor(0.0)
    g.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, summed)
    return summed


# TensorFlow's default argument: one zeros initializer (biases_initializer=None means no biases).
_ZEROS = zeros_initializer()


def fully_connected(inputs: Any, num_outputs: int, activation_fn: Any = nn_ops.relu, normalizer_fn: Any = None,
                    normalizer_params: Any = None, weights_initializer: Any = None,
                    weights_regularizer: Any = None, biases_initializer: Any = _ZEROS,
                    biases_regularizer: Any = None, reuse: Any = None, variables_collections: Any = None,
                    outputs_collections: Any = None, trainable: bool = True, scope: Any = None) -> Any:
    """activation_fn(inputs @ weights + biases) (`tf.contrib.layers.fully_connected`):
    variables "<scope>/weights" (xavier-initialized) and "<scope>/biases"."""
    if not isinstance(num_outputs, numbers.Integral):
        raise ValueError(f"num_outputs type should be one of (<class 'int'>,), got {type(num_outputs)}.")
    x = convert_to_tensor(inputs)
    last = x.shape.as_list()[-1] if x.shape.ndims else None
    if last is None:
        raise ValueError("The last dimension of the inputs to `Dense` should be defined. Found `None`.")
    if weights_initializer is None:
        weights_initializer = xavier_initializer()
    dt = x.dtype.base_dtype
    g = get_default_graph()
    with variable_scope(scope, default_name="fully_connected", values=[x], reuse=reuse):
        weights = get_variable("weights", [last, num_outputs], dtype=dt, initializer=weights_initializer,
                               regularizer=weights_regularizer, trainable=trainable,
                               collections=_collections(variables_collections, "weights", trainable))
        if x.shape.ndims == 2:
            y = math_ops.matmul(x, weights)
        else:
            from flowlab.ops.tensordot_ops import tensordot

            y = tensordot(x, weights, [[x.shape.ndims - 1], [0]])
            y.set_shape(x.shape[:-1].concatenate([num_outputs]))
        if normalizer_fn is not None:
            y = normalizer_fn(y, **(normalizer_params or {}))
        elif biases_initializer is not None:
            biases = get_variable("biases", [num_outputs], dtype=dt, initializer=biases_initializer,
                                  regularizer=biases_regularizer, trainable=trainable,
                                  collections=_collections(variables_collections, "biases", trainable))
            y = nn_ops.bias_add(y, biases)
        if activation_fn is not None:
            y = activation_fn(y)
        for c in _as_list(outputs_collections):
            g.add_to_collection(c, y)
        return y


def _pair(v: Any) -> list[int]:
    return [int(v), int(v)] if isinstance(v, numbers.Integral) else [int(x) for x in v]


def conv2d(inputs: Any, num_outputs: int, kernel_size: Any, stride: Any = 1, padding: str = "SAME",
           data_format: str | None = None, rate: Any = 1, activation_fn: Any = nn_ops.relu,
           normalizer_fn: Any = None, normalizer_params: Any = None, weights_initializer: Any = None,
           weights_regularizer: Any = None, biases_initializer: Any = _ZEROS, biases_regularizer: Any = None,
           reuse: Any = None, variables_collections: Any = None, outputs_collections: Any = None,
           trainable: bool = True, scope: Any = None) -> Any:
    """activation_fn(conv2d(inputs, weights) + biases) (`tf.contrib.layers.conv2d`, 2-D
    inputs): variables "<scope>/weights" [kh, kw, in, num_outputs] and ".../biases",
    default scope "Conv", padding "SAME", ReLU."""
    fmt = data_format or "NHWC"
    if fmt not in ("NHWC", "NCHW"):
        raise ValueError("data_format has to be either NCHW or NHWC.")
    x = convert_to_tensor(inputs)
    if x.shape.ndims is not None and x.shape.ndims != 4:
        raise ValueError(f"Convolution not supported for input with rank {x.shape.ndims}")
    channels = x.shape.as_list()[1 if fmt == "NCHW" else 3] if x.shape.ndims else None
    if channels is None:
        raise ValueError("The channel dimension of the inputs should be defined. Found `None`.")
    kh, kw = _pair(kernel_size)
    sh, sw = _pair(stride)
    rh, rw = _pair(rate)
    dt = x.dtype.base_dtype
    g = get_default_graph()
    with variable_scope(scope, default_name="Conv", values=[x], reuse=reuse):
        weights = get_variable("weights", [kh, kw, channels, num_outputs], dtype=dt,
                               initializer=weights_initializer or xavier_initializer(),
                               regularizer=weights_regularizer, trainable=trainable,
                               collections=_collections(variables_collections, "weights", trainable))
        strides = [1, sh, sw, 1] if fmt == "NHWC" else [1, 1, sh, sw]
        dilations = [1, rh, rw, 1] if fmt == "NHWC" else [1, 1, rh, rw]
        y = conv_ops.conv2d(x, weights, strides=strides, padding=padding.upper(), data_format=fmt,
                            dilations=dilations)
        if normalizer_fn is not None:
            y = normalizer_fn(y, **(normalizer_params or {}))
        elif biases_initializer is not None:
            biases = get_variable("biases", [num_outputs], dtype=dt, initializer=biases_initializer,
                                  regularizer=biases_regularizer, trainable=trainable,
                                  collections=_collections(variables_collections, "biases", trainable))
            y = nn_ops.bias_add(y, biases, data_format=fmt)
        if activation_fn is not None:
            y = activation_fn(y)
        for c in _as_list(outputs_collections):
            g.add_to_collection(c, y)
        return y


def _pool2d(kind: str, inputs: Any, kernel_size: Any, stride: Any, padding: str, data_format: str,
            outputs_collections: Any, scope: Any) -> Any:
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError("data_format has to be either NCHW or NHWC.")
    kh, kw = _pair(kernel_size)
    sh, sw = _pair(stride)
    ksize = [1, kh, kw, 1] if data_format == "NHWC" else [1, 1, kh, kw]
    strides = [1, sh, sw, 1] if data_format == "NHWC" else [1, 1, sh, sw]
    pool = conv_ops.max_pool if kind == "MaxPool2D" else conv_ops.avg_pool
    with get_default_graph().name_scope(scope or kind):
        y = pool(inputs, ksize=ksize, strides=strides, padding=padding.upper(), data_format=data_format)
    for c in _as_list(outputs_collections):
        get_default_graph().add_to_collection(c, y)
    return y


def max_pool2d(inputs: Any, kernel_size: Any, stride: Any = 2, padding: str = "VALID", data_format: str = "NHWC",
               outputs_collections: Any = None, scope: Any = None) -> Any:
    """2-D max pooling (`tf.contrib.layers.max_pool2d`: stride 2, padding "VALID")."""
    return _pool2d("MaxPool2D", inputs, kernel_size, stride, padding, data_format, outputs_collections, scope)


def avg_pool2d(inputs: Any, kernel_size: Any, stride: Any = 2, padding: str = "VALID", data_format: str = "NHWC",
               outputs_collections: Any = None, scope: Any = None) -> Any:
    """2-D average pooling (`tf.contrib.layers.avg_pool2d`: stride 2, padding "VALID")."""
    return _pool2d("AvgPool2D", inputs, kernel_size, stride, padding, data_format, outputs_collections, scope)


def dropout(inputs: Any, keep_prob: float = 0.5, noise_shape: Any = None, is_training: Any = True,
            outputs_collections: Any = None, scope: Any = None, seed: int | None = None) -> Any:
    """Dropout keeping `keep_prob` of the values while `is_training`
    (`tf.contrib.layers.dropout`; in name scope "Dropout")."""
    with get_default_graph().name_scope(scope or "Dropout"):
        y = core_layers.dropout(inputs, rate=1 - keep_prob, noise_shape=noise_shape, seed=seed,
                                training=is_training)
    for c in _as_list(outputs_collections):
        get_default_graph().add_to_collection(c, y)
    return y


def batch_norm(inputs: Any, decay: float = 0.999, center: bool = True, scale: bool = False,
               epsilon: float = 0.001, activation_fn: Any = None, param_initializers: Any = None,
               param_regularizers: Any = None, updates_collections: Any = GraphKeys.UPDATE_OPS,
               is_training: Any = True, reuse: Any = None, variables_collections: Any = None,
               outputs_collections: Any = None, trainable: bool = True, batch_weights: Any = None,
               fused: Any = None, data_format: str = "NHWC", zero_debias_moving_mean: bool = False,
               scope: Any = None, renorm: bool = False, renorm_clipping: Any = None,
               renorm_decay: float = 0.99, adjustment: Any = None) -> Any:
    """Batch normalization (`tf.contrib.layers.batch_norm`): variables "BatchNorm/beta"
    (and "gamma" with `scale=True`), "moving_mean", "moving_variance"; the moving
    averages' updates go to `updates_collections` (None: they run with the output)."""
    if batch_weights is not None or zero_debias_moving_mean or renorm or adjustment is not None:
        raise ValueError("flowlab's contrib batch_norm does not implement batch_weights, "
                         "zero_debias_moving_mean, renorm or adjustment")
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError("data_format has to be either NCHW or NHWC.")
    del renorm_clipping, renorm_decay
    inits = dict(param_initializers or {})
    regs = dict(param_regularizers or {})
    g = get_default_graph()
    x = convert_to_tensor(inputs)
    updates = g.get_collection_ref(GraphKeys.UPDATE_OPS)
    before = len(updates)
    with variable_scope(scope, default_name="BatchNorm", values=[x], reuse=reuse) as sc:
        y = normalization_layers.batch_normalization(
            x, axis=1 if data_format == "NCHW" else -1, momentum=decay, epsilon=epsilon, center=center,
            scale=scale, beta_initializer=inits.get("beta"), gamma_initializer=inits.get("gamma"),
            moving_mean_initializer=inits.get("moving_mean"),
            moving_variance_initializer=inits.get("moving_variance"), beta_regularizer=regs.get("beta"),
            gamma_regularizer=regs.get("gamma"), training=is_training, trainable=trainable, name=sc,
            reuse=reuse, fused=fused)
        new_updates = updates[before:]
        if updates_collections is not GraphKeys.UPDATE_OPS:
            del updates[before:]
            if updates_collections is None:
                if new_updates:
                    with g.control_dependencies(new_updates):
                        y = identity(y)
            else:
                for c in _as_list(updates_collections):
                    for u in new_updates:
                        g.add_to_collection(c, u)
        if variables_collections is not None:
            for v in g.get_collection(GraphKeys.GLOBAL_VARIABLES, sc.name + "/"):
                short = v.op.name.rsplit("/", 1)[-1]
                extra = variables_collections.get(short) if isinstance(variables_collections, dict) \
                    else variables_collections
                for c in _as_list(extra):
                    g.add_to_collection(c, v)
        if activation_fn is not None:
            y = activation_fn(y)
    for c in _as_list(outputs_collections):
        g.add_to_collection(c, y)
    return y


def _as_list(x: Any) -> list[Any]:
    if x is None:
        return []
    return [x] if isinstance(x, str) else list(x)


def _collections(variables_collections: Any, name: str, trainable: bool) -> list[str]:
    base = [GraphKeys.GLOBAL_VARIABLES, GraphKeys.MODEL_VARIABLES]
    if isinstance(variables_collections, dict):
        extra = _as_list(variables_collections.get(name))
    else:
        extra = _as_list(variables_collections)
    if trainable:
        base.append(GraphKeys.TRAINABLE_VARIABLES)
    return base + [c for c in extra if c not in base]


def flatten(inputs: Any, outputs_collections: Any = None, scope: str | None = None) -> Any:
    """[batch, ...] -> [batch, k] (`tf.contrib.layers.flatten`, in name scope "Flatten")."""
    with get_default_graph().name_scope(scope or "Flatten"):
        y = core_layers.flatten(inputs)
    for c in _as_list(outputs_collections):
        get_default_graph().add_to_collection(c, y)
    return y
