"""Random ops with TensorFlow 1.x seed semantics.

Ops: RandomUniform, RandomUniformInt, RandomStandardNormal, TruncatedNormal,
RandomShuffle, Multinomial.  All are stateful: each op keeps a Philox generator per
session (see `flowlab.kernels.random_kernels`), so successive runs of one op give
successive samples and two sessions built from the same seeds give the same ones.

Seeds (`get_seed`, TensorFlow's `random_seed.get_seed`): an op gets the pair
(seed, seed2) from the graph-level seed (`set_random_seed`, stored on `Graph.seed`)
and its own `seed` argument:

* graph seed and op seed: (graph seed, op seed);
* graph seed only: the op seed is a per-graph counter (0, 1, 2, ... for successive
  calls that need one), so a graph rebuilt in the same order repeats its samples;
* op seed only: (DEFAULT_GRAPH_SEED, op seed);
* neither: (None, None), stored as (0, 0) in the op: the kernel seeds itself from the
  operating system, so each session draws different numbers.

Seeds are reduced modulo 2**31 - 1, and a pair that would be (0, 0) becomes
(0, 2**31 - 1), as in TensorFlow, so that a user's seed 0 stays deterministic.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import Dimension, TensorShape, dimension_value
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.const_fold import constant_value
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def

__all__ = [
    "get_seed", "random_normal", "random_uniform", "truncated_normal", "random_shuffle",
    "multinomial", "categorical", "random",
]

DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2**31 - 1
_SEED_COUNTER = "random_ops.op_seed_counter"


def _truncate_seed(seed: int) -> int:
    return int(seed) % _MAXINT32


def get_seed(op_seed: int | None) -> tuple[int | None, int | None]:
    """The (seed, seed2) pair a random op uses, from the graph seed and `op_seed`.

    >>> g = flowlab.Graph()
    >>> with g.as_default():
    ...     flowlab.set_random_seed(1)
    ...     get_seed(None), get_seed(None), get_seed(7)
    ((1, 0), (1, 1), (1, 7))
    """
    g = get_default_graph()
    global_seed = g.seed
    if global_seed is not None:
        if op_seed is None:
            # TensorFlow 2.x graph mode counts per graph (older releases used the
            # id of the last op); the counter lives and dies with the graph.
            with g._lock:
                op_seed = g._scratch.get(_SEED_COUNTER, 0)
                g._scratch[_SEED_COUNTER] = op_seed + 1
        seeds: tuple[int | None, int | None] = (
            _truncate_seed(global_seed), _truncate_seed(op_seed),
        )
    elif op_seed is not None:
        seeds = DEFAULT_GRAPH_SEED, _truncate_seed(op_seed)
    else:
        seeds = None, None
    if seeds == (0, 0):
        return 0, _MAXINT32
    return seeds


# --- shape functions ------------------------------------------------------------------
def _shape_from_shape_tensor(t: Tensor) -> TensorShape:
    """The static output shape described by a 1-D shape tensor (TensorFlow's
    `MakeShapeFromShapeTensor`): known values where constant, else unknown dims."""
    s = t.shape
    if s.ndims is not None and s.ndims != 1:
        raise ValueError(f"Shape must be rank 1 but is rank {s.ndims}")
    value = constant_value(t)
    if value is not None:
        dims = [None if int(d) < 0 else int(d) for d in np.asarray(value).reshape(-1)]
        return TensorShape(dims)
    if s.ndims == 1 and s.as_list()[0] is not None:
        return TensorShape([None] * s.as_list()[0])
    return TensorShape(None)


def _from_shape_input(op: Operation) -> list[TensorShape]:
    return [_shape_from_shape_tensor(op.inputs[0])]


def _uniform_int_shape(op: Operation) -> list[TensorShape]:
    for i, which in ((1, "minval"), (2, "maxval")):
        shape = op.inputs[i].shape
        if shape.ndims is not None and shape.ndims != 0:
            dims = ",".join("?" if d is None else str(d) for d in shape.as_list())
            raise ValueError(f"{which} must be a scalar; got a tensor of shape [{dims}]")
    return _from_shape_input(op)


def _shuffle_shape(op: Operation) -> list[TensorShape]:
    return [op.inputs[0].shape]


def _multinomial_shape(op: Operation) -> list[TensorShape]:
    logits = op.inputs[0].shape
    if logits.ndims is not None and logits.ndims != 2:
        raise ValueError(f"Shape must be rank 2 but is rank {logits.ndims}")
    ns = op.inputs[1].shape
    if ns.ndims is not None and ns.ndims != 0:
        raise ValueError(f"Shape must be rank 0 but is rank {ns.ndims}")
    batch = None if logits.ndims is None else logits.as_list()[0]
    n = constant_value(op.inputs[1])
    return [TensorShape([batch, None if n is None else int(n)])]


_SEED_ATTRS = ["seed: int = 0", "seed2: int = 0"]

for _name, _doc in (
    ("RandomUniform", "Uniform floats in [0, 1)."),
    ("RandomStandardNormal", "Standard normal floats (Box-Muller)."),
    ("TruncatedNormal", "Standard normal floats with |x| < 2, redrawn otherwise."),
):
    op_def(
        _name, inputs=["shape: T"], outputs=["output: dtype"],
        attrs=_SEED_ATTRS + ["dtype: {float16, float32, float64}", "T: {int32, int64}"],
        shape_fn=_from_shape_input, stateful=True, doc=_doc,
    )
    not_differentiable(_name)

op_def(
    "RandomUniformInt", inputs=["shape: T", "minval: Tout", "maxval: Tout"],
    outputs=["output: Tout"],
    attrs=_SEED_ATTRS + ["Tout: {int32, int64}", "T: {int32, int64}"],
    shape_fn=_uniform_int_shape, stateful=True,
    doc="Uniform integers in [minval, maxval).",
)
op_def(
    "RandomShuffle", inputs=["value: T"], outputs=["output: T"],
    attrs=_SEED_ATTRS + ["T: type"], shape_fn=_shuffle_shape, stateful=True,
    doc="`value` with its first dimension shuffled.",
)
op_def(
    "Multinomial", inputs=["logits: T", "num_samples: int32"], outputs=["output: output_dtype"],
    attrs=_SEED_ATTRS + ["T: real", "output_dtype: {int32, int64} = int64"],
    shape_fn=_multinomial_shape, stateful=True,
    doc="Class indices drawn from the categorical distributions of each row of `logits`.",
)
not_differentiable("RandomUniformInt")
not_differentiable("RandomShuffle")
not_differentiable("Multinomial")


# --- builders ---------------------------------------------------------------------------
def _shape_tensor(shape: Any) -> Tensor:
    """A 1-D int32 (or int64) tensor for `shape`, named "shape" (TensorFlow's rule)."""
    if isinstance(shape, TensorShape):
        shape = shape.as_list()
    if isinstance(shape, (tuple, list)):
        if not shape:
            return convert_to_tensor(shape, dtype=dtypes.int32, name="shape")
        # Unwrap Dimension objects only; anything else is converted as it is.
        shape = tuple(dimension_value(d) if isinstance(d, Dimension) else d for d in shape)
    return convert_to_tensor(shape, name="shape")


def _seed_attrs(seed: int | None) -> dict[str, int]:
    s1, s2 = get_seed(seed)
    return {"seed": s1 or 0, "seed2": s2 or 0}


def _set_static_shape(t: Tensor, shape: Any) -> None:
    if isinstance(shape, Tensor):
        return
    try:
        t.set_shape(TensorShape(shape))
    except (TypeError, ValueError):
        pass


def _float_dtype(dtype: Any, what: str) -> dtypes.DType:
    dt = dtypes.as_dtype(dtype).base_dtype
    if dt not in (dtypes.float16, dtypes.float32, dtypes.float64):
        raise TypeError(
            f"Value passed to parameter 'dtype' has DataType {dt.name} not in list of allowed "
            f"values: float16, float32, float64 ({what})"
        )
    return dt


def _normal_like(op_type: str, default: str, shape: Any, mean: Any, stddev: Any,
                 dtype: Any, seed: int | None, name: str | None) -> Tensor:
    dt = _float_dtype(dtype, default)
    g = get_default_graph()
    with g.name_scope(name or default) as scope:
        shape_t = _shape_tensor(shape)
        mean_t = convert_to_tensor(mean, dtype=dt, name="mean")
        stddev_t = convert_to_tensor(stddev, dtype=dt, name="stddev")
        rnd = apply_op(op_type, name=op_type, shape=shape_t, dtype=dt, **_seed_attrs(seed))
        mul = apply_op("Mul", name="mul", x=rnd, y=stddev_t)
        value = apply_op("AddV2", name=scope, x=mul, y=mean_t)
    _set_static_shape(value, shape)
    return value


def random_normal(shape: Any, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = dtypes.float32,
                  seed: int | None = None, name: str | None = None) -> Tensor:
    """Normal samples: `RandomStandardNormal * stddev + mean` (`tf.random_normal`).

    >>> set_random_seed(1); x = random_normal([2, 3], seed=2)
    """
    return _normal_like("RandomStandardNormal", "random_normal", shape, mean, stddev, dtype,
                        seed, name)


def truncated_normal(shape: Any, mean: Any = 0.0, stddev: Any = 1.0,
                     dtype: Any = dtypes.float32, seed: int | None = None,
                     name: str | None = None) -> Tensor:
    """Normal samples more than two standard deviations from the mean redrawn
    (`tf.truncated_normal`)."""
    return _normal_like("TruncatedNormal", "truncated_normal", shape, mean, stddev, dtype,
                        seed, name)


def random_uniform(shape: Any, minval: Any = 0, maxval: Any = None, dtype: Any = dtypes.float32,
                   seed: int | None = None, name: str | None = None) -> Tensor:
    """Uniform samples in [minval, maxval) (`tf.random_uniform`).

    Floats: `RandomUniform` scaled and shifted unless the range is the default [0, 1).
    Integers: `RandomUniformInt`; `maxval` is required.
    """
    dt = dtypes.as_dtype(dtype).base_dtype
    accepted = (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64)
    if dt not in accepted:
        raise ValueError(
            f"Argument `dtype` got invalid value {dt!r}. Accepted dtypes are "
            f"({', '.join(repr(d) for d in accepted)})."
        )
    if maxval is None:
        if dt.is_integer:
            raise ValueError(f"Must specify maxval for integer dtype {dt!r}")
        maxval = 1
    g = get_default_graph()
    with g.name_scope(name or "random_uniform") as scope:
        shape_t = _shape_tensor(shape)
        minval_is_zero = type(minval) is int and minval == 0
        maxval_is_one = type(maxval) is int and maxval == 1
        if not minval_is_zero or not maxval_is_one or dt.is_integer:
            minval = convert_to_tensor(minval, dtype=dt, name="min")
            maxval = convert_to_tensor(maxval, dtype=dt, name="max")
        seeds = _seed_attrs(seed)
        if dt.is_integer:
            result = apply_op(
                "RandomUniformInt", name=scope, shape=shape_t, minval=minval, maxval=maxval,
                **seeds,
            )
        else:
            result = apply_op("RandomUniform", name="RandomUniform", shape=shape_t, dtype=dt,
                              **seeds)
            if minval_is_zero:
                if not maxval_is_one:
                    result = apply_op("Mul", name="Mul", x=result, y=maxval)
            else:
                span = apply_op("Sub", name="sub", x=maxval, y=minval)
                mul = apply_op("Mul", name="mul", x=result, y=span)
                result = apply_op("AddV2", name=scope, x=mul, y=minval)
    _set_static_shape(result, shape)
    return result


def random_shuffle(value: Any, seed: int | None = None, name: str | None = None) -> Tensor:
    """`value` with its first dimension randomly permuted (`tf.random_shuffle`)."""
    seeds = _seed_attrs(seed)
    g = get_default_graph()
    # Inputs are converted inside the op's own scope ("RandomShuffle/value"), as
    # TensorFlow's generated wrappers do.
    with g.name_scope(name or "RandomShuffle") as scope:
        value = convert_to_tensor(value, name="value")
        return apply_op("RandomShuffle", name=scope, value=value, **seeds)


def _categorical(scope: str, logits: Any, num_samples: Any, dtype: Any, seed: int | None,
                 name: str | None) -> Tensor:
    g = get_default_graph()
    with g.name_scope(name or scope):
        logits = convert_to_tensor(logits, name="logits")
        dt = dtypes.as_dtype(dtype).base_dtype if dtype else dtypes.int64
        if dt not in (dtypes.int32, dtypes.int64):
            raise ValueError(
                f"Argument `dtype` got invalid value {dt!r}. Accepted dtypes are "
                "(tf.int32, tf.int64)."
            )
        seeds = _seed_attrs(seed)
        with g.name_scope("Multinomial") as op_scope:
            num_samples = convert_to_tensor(num_samples, dtype=dtypes.int32, name="num_samples")
            return apply_op("Multinomial", name=op_scope, logits=logits,
                            num_samples=num_samples, output_dtype=dt, **seeds)


def multinomial(logits: Any, num_samples: Any, seed: int | None = None, name: str | None = None,
                output_dtype: Any = None) -> Tensor:
    """`num_samples` class indices per row of `logits` [batch, classes] (`tf.multinomial`)."""
    return _categorical("multinomial", logits, num_samples, output_dtype, seed, name)


def categorical(logits: Any, num_samples: Any, dtype: Any = None, seed: int | None = None,
                name: str | None = None) -> Tensor:
    """Same as `multinomial` (`tf.random.categorical`)."""
    return _categorical("categorical", logits, num_samples, dtype, seed, name)


class _RandomNamespace:
    """`tf.random.*`: the TensorFlow 1.x names of this module under `tf.random`."""

    normal = staticmethod(random_normal)
    uniform = staticmethod(random_uniform)
    truncated_normal = staticmethod(truncated_normal)
    shuffle = staticmethod(random_shuffle)
    multinomial = staticmethod(multinomial)
    categorical = staticmethod(categorical)
    get_seed = staticmethod(get_seed)
    DEFAULT_GRAPH_SEED = DEFAULT_GRAPH_SEED

    @staticmethod
    def set_random_seed(seed: int | None) -> None:
        get_default_graph().seed = seed

    def __getattr__(self, name: str) -> Any:
        # `tf.random.log_uniform_candidate_sampler`, ...: declared in their own module,
        # which takes its seeds from this one.
        from flowlab.ops import candidate_sampling_ops, stateless_random_ops

        if name in candidate_sampling_ops.__all__:
            return getattr(candidate_sampling_ops, name)
        if name in stateless_random_ops.__all__:
            return getattr(stateless_random_ops, name)
        raise AttributeError(f"module 'flowlab.random' has no attribute {name!r}")


random = _RandomNamespace()
