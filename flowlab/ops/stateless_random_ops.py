"""Stateless random numbers: `tf.random.stateless_uniform`, `stateless_normal` and
`stateless_truncated_normal`, the same values for the same shape and seed pair on
every run, as TensorFlow draws them.

The seed [2] goes through StatelessRandomGetKeyCounter (TensorFlow's GenerateKey: the
seed words as a Philox counter under a fixed key, encrypted once, give the key and the
counter's high words), then StatelessRandomUniformV2 / StatelessRandomUniformIntV2 /
StatelessRandomNormalV2 / StatelessTruncatedNormalV2 draw from Philox at that key and
counter with the distributions of the stateful kernels (flowlab.kernels.random_kernels).
`alg` is TensorFlow's: AUTO_SELECT, which is Philox on a CPU.  Not differentiable.
Kernels: flowlab.kernels.stateless_random_kernels.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops import math_ops
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def

__all__ = ["stateless_uniform", "stateless_normal", "stateless_truncated_normal", "split", "fold_in"]

_AUTO_SELECT = 3


def _from_shape(op: Operation) -> list[Any]:
    from flowlab.ops.array_ops import constant_value_as_shape

    return [constant_value_as_shape(op.inputs[0])]


op_def("StatelessRandomGetKeyCounter", inputs=["seed: Tseed"], outputs=["key: uint64", "counter: uint64"],
       attrs=["Tseed: {int32, int64} = int64"], shape_fn=lambda op: [TensorShape([1]), TensorShape([2])])
_V2 = ["shape: Tshape", "key: uint64", "counter: uint64", "alg: int32"]
for _t in ("StatelessRandomUniformV2", "StatelessRandomNormalV2", "StatelessTruncatedNormalV2"):
    op_def(_t, inputs=_V2, outputs=["output: dtype"],
           attrs=["dtype: {float16, float32, float64} = float32", "Tshape: {int32, int64} = int32"],
           shape_fn=_from_shape)
op_def("StatelessRandomUniformIntV2", inputs=[*_V2, "minval: dtype", "maxval: dtype"], outputs=["output: dtype"],
       attrs=["dtype: {int32, int64, uint32, uint64}", "Tshape: {int32, int64} = int32"], shape_fn=_from_shape)
op_def("StatelessRandomUniformFullIntV2", inputs=_V2, outputs=["output: dtype"],
       attrs=["dtype: {int32, int64, uint32, uint64} = uint64", "Tshape: {int32, int64} = int32"],
       shape_fn=_from_shape)
for _t in ("StatelessRandomGetKeyCounter", "StatelessRandomUniformV2", "StatelessRandomNormalV2",
           "StatelessTruncatedNormalV2", "StatelessRandomUniformIntV2",
           "StatelessRandomUniformFullIntV2"):
    not_differentiable(_t)


def _key_counter(seed: Any) -> tuple[Tensor, Tensor]:
    s = convert_to_tensor(seed, name="seed")
    if s.dtype.base_dtype not in (dtypes.int32, dtypes.int64):
        s = math_ops.cast(s, dtypes.int64)
    key, counter = apply_op("StatelessRandomGetKeyCounter", seed=s, name="StatelessRandomGetKeyCounter")
    return key, counter


def _shape(shape: Any) -> Tensor:
    from flowlab.ops.array_ops import _index

    return _index(shape, "shape")


def _alg() -> Tensor:
    return convert_to_tensor(_AUTO_SELECT, dtype=dtypes.int32, name="alg")


def stateless_uniform(shape: Any, seed: Any, minval: Any = 0, maxval: Any = None, dtype: Any = dtypes.float32,
                      name: str | None = None, alg: str = "auto_select") -> Tensor:
    """Uniform values in [minval, maxval) (floats: maxval 1 by default), fixed by `seed`;
    integers over their whole range when minval and maxval are both None."""
    dtype = dtypes.as_dtype(dtype)
    if dtype.is_integer:
        if (minval is None) != (maxval is None):
            raise ValueError(
                f"For integer `dtype` argument {dtype}, argument `minval` and `maxval` must be "
                f"both None or not None. Got `minval`={minval} and `maxval`={maxval}.")
        if minval is not None and dtype in (dtypes.uint32, dtypes.uint64):
            raise ValueError(
                f"Argument `dtype` got invalid value {dtype} when argument `minval` is not None. "
                "Please don't use unsigned integers in this case.")
    elif maxval is None:
        maxval = 1
    with get_default_graph().name_scope(name or "stateless_random_uniform") as scope:
        shape_t = _shape(shape)
        if dtype.is_integer and minval is None:
            key, counter = _key_counter(seed)
            return apply_op("StatelessRandomUniformFullIntV2", shape=shape_t, key=key,
                            counter=counter, alg=_alg(), dtype=dtype, name=scope)
        lo = convert_to_tensor(minval, dtype=dtype, name="min")
        hi = convert_to_tensor(maxval, dtype=dtype, name="max")
        key, counter = _key_counter(seed)
        if dtype.is_integer:
            return apply_op("StatelessRandomUniformIntV2", shape=shape_t, key=key, counter=counter, alg=_alg(),
                            minval=lo, maxval=hi, name=scope)
        rnd = apply_op("StatelessRandomUniformV2", shape=shape_t, key=key, counter=counter, alg=_alg(), dtype=dtype,
                       name="StatelessRandomUniformV2")
        return math_ops.add(rnd * (hi - lo), lo, name=scope)


def _scaled(op_type: str, default: str, shape: Any, seed: Any, mean: Any, stddev: Any, dtype: Any,
            name: str | None) -> Tensor:
    dtype = dtypes.as_dtype(dtype)
    with get_default_graph().name_scope(name or default) as scope:
        shape_t = _shape(shape)
        mean_t = convert_to_tensor(mean, dtype=dtype, name="mean")
        std_t = convert_to_tensor(stddev, dtype=dtype, name="stddev")
        key, counter = _key_counter(seed)
        rnd = apply_op(op_type, shape=shape_t, key=key, counter=counter, alg=_alg(), dtype=dtype, name=op_type)
        return math_ops.add(rnd * std_t, mean_t, name=scope)


def stateless_normal(shape: Any, seed: Any, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = dtypes.float32,
                     name: str | None = None, alg: str = "auto_select") -> Tensor:
    """Normal values, fixed by `seed`."""
    return _scaled("StatelessRandomNormalV2", "stateless_random_normal", shape, seed, mean, stddev, dtype, name)


def stateless_truncated_normal(shape: Any, seed: Any, mean: Any = 0.0, stddev: Any = 1.0,
                               dtype: Any = dtypes.float32, name: str | None = None,
                               alg: str = "auto_select") -> Tensor:
    """Normal values within two standard deviations, fixed by `seed`."""
    return _scaled("StatelessTruncatedNormalV2", "stateless_truncated_normal", shape, seed, mean, stddev, dtype,
                   name)


def split(seed: Any, num: int = 2, alg: str = "auto_select") -> Tensor:
    """`num` new seeds (shape [num, 2], the seed's dtype) derived from `seed`
    (`tf.random.split`): full-range stateless uniform integers."""
    seed = convert_to_tensor(seed)
    return stateless_uniform([num, 2], seed=seed, dtype=seed.dtype, minval=None, maxval=None,
                             alg=alg)


def fold_in(seed: Any, data: Any, alg: str = "auto_select") -> Tensor:
    """A new seed [2] from `seed` and the integer `data` (`tf.random.fold_in`)."""
    from flowlab.ops.array_ops import stack

    data = convert_to_tensor(data)
    seed1 = stateless_uniform([], seed=seed, dtype=data.dtype, minval=None, maxval=None, alg=alg)
    return stack([seed1, data])
