"""Variable initializers (TensorFlow 1.x `tf.*_initializer`).

An initializer is a callable object `init(shape, dtype=None, partition_info=None)`
that *builds graph ops* producing the initial value; `tf.get_variable` calls it under
"<var>/Initializer/".  Nothing random happens here: the random initializers build
`random_uniform` / `truncated_normal` / `random_normal` ops (flowlab.ops.random_ops),
whose seeds follow TensorFlow's graph-level plus op-level rule, so a seeded model
initializes to the same numbers every session.

The classes (`Zeros`, `GlorotUniform`, ...) are also exported under their TF1
function-style names (`zeros_initializer`, `glorot_uniform_initializer`, ...), which
are the classes themselves, as in TensorFlow.  `partition_info` (sharded variables)
is accepted; its `full_shape` sets the fans of the scaling initializers.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.tensor import Tensor

# TensorFlow 1.x's top-level names; the classes stay reachable as `tf.initializers.*`
# and as attributes of this module.
__all__ = [
    "zeros_initializer", "ones_initializer", "constant_initializer", "random_uniform_initializer",
    "random_normal_initializer", "truncated_normal_initializer", "uniform_unit_scaling_initializer",
    "variance_scaling_initializer", "glorot_uniform_initializer", "glorot_normal_initializer",
    "initializers",
]


def _float_dtype(dtype: Any) -> dtypes.DType:
    dt = dtypes.as_dtype(dtype)
    if not dt.is_floating:
        raise ValueError(f"Argument `dtype` is expected to be floating point. Received: {dt}.")
    return dt


class Initializer:
    """Base class: `__call__(shape, dtype=None, partition_info=None) -> Tensor`."""

    dtype: dtypes.DType = dtypes.float32

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        raise NotImplementedError

    def get_config(self) -> dict[str, Any]:
        return {}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Initializer:
        return cls(**config)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


class Zeros(Initializer):
    """All zeros (False for bool, b"" for string)."""

    def __init__(self, dtype: Any = dtypes.float32) -> None:
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        from flowlab.ops.array_ops import zeros

        return zeros(shape, self.dtype if dtype is None else dtype)

    def get_config(self) -> dict[str, Any]:
        return {"dtype": self.dtype.name}


class Ones(Initializer):
    """All ones."""

    def __init__(self, dtype: Any = dtypes.float32) -> None:
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        from flowlab.ops.array_ops import ones

        return ones(shape, self.dtype if dtype is None else dtype)

    def get_config(self) -> dict[str, Any]:
        return {"dtype": self.dtype.name}


class Constant(Initializer):
    """`value` (a scalar, list or array) laid out as `tf.constant(value, shape=shape)`:
    fewer values than elements repeat the last one; more is a ValueError.

        tf.get_variable("x", [2, 4], initializer=tf.constant_initializer([0, 1, 2]))
    """

    def __init__(self, value: Any = 0, dtype: Any = dtypes.float32, verify_shape: bool = False) -> None:
        if not (np.isscalar(value) or isinstance(value, (list, tuple, np.ndarray))):
            raise TypeError(
                f"Invalid type for initial value={value} of type: {type(value).__name__}. "
                "Expected Python scalar, list or tuple of values, or numpy.ndarray."
            )
        self.value = value
        self.dtype = dtypes.as_dtype(dtype)
        self._verify_shape = verify_shape

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None,
                 verify_shape: bool | None = None) -> Tensor:
        from flowlab.ops.constant_op import constant

        if verify_shape is None:
            verify_shape = self._verify_shape
        return constant(self.value, dtype=self.dtype if dtype is None else dtype, shape=shape,
                        verify_shape=verify_shape)

    def get_config(self) -> dict[str, Any]:
        return {"value": self.value, "dtype": self.dtype.name}


class RandomUniform(Initializer):
    """Uniform in [minval, maxval) (maxval defaults to 1 for floats)."""

    def __init__(self, minval: Any = 0.0, maxval: Any = None, seed: int | None = None,
                 dtype: Any = dtypes.float32) -> None:
        self.minval, self.maxval, self.seed = minval, maxval, seed
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        from flowlab.ops.random_ops import random_uniform

        return random_uniform(shape, self.minval, self.maxval, self.dtype if dtype is None else dtype,
                              seed=self.seed)

    def get_config(self) -> dict[str, Any]:
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed, "dtype": self.dtype.name}


class RandomNormal(Initializer):
    """Normal with `mean` and `stddev`."""

    def __init__(self, mean: Any = 0.0, stddev: Any = 1.0, seed: int | None = None,
                 dtype: Any = dtypes.float32) -> None:
        self.mean, self.stddev, self.seed = mean, stddev, seed
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        from flowlab.ops.random_ops import random_normal

        return random_normal(shape, self.mean, self.stddev, self.dtype if dtype is None else dtype,
                             seed=self.seed)

    def get_config(self) -> dict[str, Any]:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed, "dtype": self.dtype.name}


class TruncatedNormal(RandomNormal):
    """Normal with values beyond two standard deviations redrawn (the usual choice
    for weights)."""

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        from flowlab.ops.random_ops import truncated_normal

        return truncated_normal(shape, self.mean, self.stddev, self.dtype if dtype is None else dtype,
                                seed=self.seed)


class UniformUnitScaling(Initializer):
    """Uniform in ±sqrt(3 / input_size) * factor, input_size = prod(shape[:-1])."""

    def __init__(self, factor: float = 1.0, seed: int | None = None, dtype: Any = dtypes.float32) -> None:
        self.factor, self.seed = factor, seed
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        from flowlab.ops.random_ops import random_uniform

        scale_shape = shape if partition_info is None else partition_info.full_shape
        input_size = 1.0
        for d in list(scale_shape)[:-1]:
            input_size *= float(d)
        limit = math.sqrt(3 / max(input_size, 1.0)) * self.factor
        return random_uniform(shape, -limit, limit, self.dtype if dtype is None else dtype,
                              seed=self.seed)

    def get_config(self) -> dict[str, Any]:
        return {"factor": self.factor, "seed": self.seed, "dtype": self.dtype.name}


def _compute_fans(shape: Any) -> tuple[int, int]:
    shape = [int(d) for d in shape]
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = 1
    for d in shape[:-2]:
        receptive *= d
    return shape[-2] * receptive, shape[-1] * receptive


class VarianceScaling(Initializer):
    """Samples scaled to the fans: variance `scale / n` with n = fan_in, fan_out or
    their mean; "truncated_normal" (alias "normal"), "untruncated_normal" or
    "uniform" (limit sqrt(3 * scale / n))."""

    def __init__(self, scale: float = 1.0, mode: str = "fan_in", distribution: str = "truncated_normal",
                 seed: int | None = None, dtype: Any = dtypes.float32) -> None:
        if scale <= 0.0:
            raise ValueError(f"Argument `scale` must be a positive float. Received: {scale}")
        if mode not in {"fan_in", "fan_out", "fan_avg"}:
            raise ValueError(
                f"Argument `mode` should be one of ('fan_in', 'fan_out', 'fan_avg'). Received: {mode}"
            )
        distribution = distribution.lower()
        if distribution not in {"normal", "uniform", "truncated_normal", "untruncated_normal"}:
            raise ValueError(
                "Argument `distribution` should be one of ('normal', uniform', "
                f"'truncated_normal', 'untruncated_normal'). Received: {distribution}"
            )
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        from flowlab.ops.random_ops import random_normal, random_uniform, truncated_normal

        dtype = self.dtype if dtype is None else dtype
        fan_in, fan_out = _compute_fans(shape if partition_info is None else partition_info.full_shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, n)
        if self.distribution in ("normal", "truncated_normal"):
            # The standard deviation of a unit normal truncated to [-2, 2].
            stddev = math.sqrt(scale) / 0.87962566103423978
            return truncated_normal(shape, 0.0, stddev, dtype, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return random_normal(shape, 0.0, math.sqrt(scale), dtype, seed=self.seed)
        limit = math.sqrt(3.0 * scale)
        return random_uniform(shape, -limit, limit, dtype, seed=self.seed)

    def get_config(self) -> dict[str, Any]:
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed, "dtype": self.dtype.name}


class GlorotUniform(VarianceScaling):
    """Xavier uniform: limit sqrt(6 / (fan_in + fan_out)); get_variable's default."""

    def __init__(self, seed: int | None = None, dtype: Any = dtypes.float32) -> None:
        super().__init__(scale=1.0, mode="fan_avg", distribution="uniform", seed=seed, dtype=dtype)

    def get_config(self) -> dict[str, Any]:
        return {"seed": self.seed, "dtype": self.dtype.name}


class GlorotNormal(VarianceScaling):
    """Xavier normal (truncated): stddev sqrt(2 / (fan_in + fan_out)) / 0.8796..."""

    def __init__(self, seed: int | None = None, dtype: Any = dtypes.float32) -> None:
        super().__init__(scale=1.0, mode="fan_avg", distribution="truncated_normal", seed=seed, dtype=dtype)

    def get_config(self) -> dict[str, Any]:
        return {"seed": self.seed, "dtype": self.dtype.name}


# TensorFlow 1.x names: the classes themselves (tf.zeros_initializer() is an instance).
zeros_initializer = Zeros
ones_initializer = Ones
constant_initializer = Constant
random_uniform_initializer = RandomUniform
random_normal_initializer = RandomNormal
truncated_normal_initializer = TruncatedNormal
uniform_unit_scaling_initializer = UniformUnitScaling
variance_scaling_initializer = VarianceScaling
glorot_uniform_initializer = GlorotUniform
glorot_normal_initializer = GlorotNormal


def lecun_normal(seed: int | None = None) -> VarianceScaling:
    return VarianceScaling(scale=1.0, mode="fan_in", distribution="truncated_normal", seed=seed)


def lecun_uniform(seed: int | None = None) -> VarianceScaling:
    return VarianceScaling(scale=1.0, mode="fan_in", distribution="uniform", seed=seed)


def he_normal(seed: int | None = None) -> VarianceScaling:
    return VarianceScaling(scale=2.0, mode="fan_in", distribution="truncated_normal", seed=seed)


def he_uniform(seed: int | None = None) -> VarianceScaling:
    return VarianceScaling(scale=2.0, mode="fan_in", distribution="uniform", seed=seed)


class _Initializers:
    """`tf.initializers.*` (TF1): the same classes under their short names."""

    zeros = Zeros
    ones = Ones
    constant = Constant
    random_uniform = RandomUniform
    random_normal = RandomNormal
    truncated_normal = TruncatedNormal
    uniform_unit_scaling = UniformUnitScaling
    variance_scaling = VarianceScaling
    glorot_uniform = GlorotUniform
    glorot_normal = GlorotNormal
    lecun_normal = staticmethod(lecun_normal)
    lecun_uniform = staticmethod(lecun_uniform)
    he_normal = staticmethod(he_normal)
    he_uniform = staticmethod(he_uniform)

    @property
    def orthogonal(self) -> type:
        from flowlab.ops.init_matrix_ops import Orthogonal

        return Orthogonal

    @property
    def identity(self) -> type:
        from flowlab.ops.init_matrix_ops import Identity

        return Identity

    @staticmethod
    def global_variables() -> Any:
        from flowlab.ops.variables import global_variables_initializer

        return global_variables_initializer()

    @staticmethod
    def local_variables() -> Any:
        from flowlab.ops.variables import local_variables_initializer

        return local_variables_initializer()

    @staticmethod
    def tables_initializer(name: str = "init_all_tables") -> Any:
        from flowlab.ops.variables import tables_initializer

        return tables_initializer(name)

    @staticmethod
    def variables(var_list: Any, name: str = "init") -> Any:
        from flowlab.ops.variables import variables_initializer

        return variables_initializer(var_list, name)


initializers = _Initializers()
