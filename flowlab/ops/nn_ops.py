"""The nn ops (`tf.nn`) that are kernels in TensorFlow: activations, softmax and
log-softmax, BiasAdd, L2Loss, the softmax cross entropies (dense and sparse labels),
and InTopKV2 (StopGradient is a core op).

Each op is declared here (op type, attrs, shape function with TensorFlow's messages);
the CPU kernels live in `flowlab.kernels.nn_kernels`.  The builders follow TensorFlow
1.x: signatures (`dim` as the old name of `axis`, keyword-only `labels=`/`logits=`
for the losses), name scopes and default op names, and the reshapes/transposes that
TensorFlow wraps around the 2-D kernels (softmax along another axis, cross entropy of
higher-rank logits).  The functions TensorFlow composes from other ops (sigmoid cross
entropy, moments, dropout, ...) live in `flowlab.ops.nn_impl`.
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops import array_ops, math_ops
from flowlab.ops.builder import apply_op, convert_to_tensor, graph_of
from flowlab.ops.const_fold import constant_value
from flowlab.ops.core_ops import stop_gradient
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def

__all__ = [
    "relu", "relu6", "elu", "selu", "leaky_relu", "softplus", "softsign",
    "softmax", "log_softmax", "bias_add", "l2_loss",
    "softmax_cross_entropy_with_logits", "softmax_cross_entropy_with_logits_v2",
    "sparse_softmax_cross_entropy_with_logits", "in_top_k", "top_k",
]

# --- shape functions (TensorFlow's messages; the builder adds op name and shapes) ----


def _with_rank(s: TensorShape, rank: int) -> list[int | None]:
    if s.ndims is None:
        return [None] * rank
    if s.ndims != rank:
        raise ValueError(f"Shape must be rank {rank} but is rank {s.ndims}")
    return s.as_list()


def _with_rank_at_least(s: TensorShape, rank: int) -> None:
    if s.ndims is not None and s.ndims < rank:
        raise ValueError(f"Shape must be at least rank {rank} but is rank {s.ndims}")


def _merge_dim(a: int | None, b: int | None) -> int | None:
    if a is not None and b is not None and a != b:
        raise ValueError(f"Dimensions must be equal, but are {a} and {b}")
    return a if a is not None else b


def _same_shape(op: Operation) -> list[TensorShape]:
    return [op.inputs[0].shape]


def _softmax_shape(op: Operation) -> list[TensorShape]:
    s = op.inputs[0].shape
    _with_rank_at_least(s, 1)
    return [s]


def _bias_add_shape(op: Operation) -> list[Any]:
    value, bias = op.inputs[0].shape, op.inputs[1].shape
    (channels,) = _with_rank(bias, 1)
    nchw = op.get_attr("data_format") == "NCHW"
    if value.ndims is None:
        return [TensorShape(None)]
    _with_rank_at_least(value, 3 if nchw else 2)
    dims = value.as_list()
    axis = 1 if nchw else len(dims) - 1
    dims[axis] = _merge_dim(dims[axis], channels)
    return [dims]


def _broadcast_dims(a: TensorShape, b: TensorShape) -> list[int | None] | None:
    """NumPy broadcasting of two partial shapes, with TensorFlow's message."""
    if a.ndims is None or b.ndims is None:
        return None
    x, y = a.as_list(), b.as_list()
    n = max(len(x), len(y))
    x, y = [1] * (n - len(x)) + x, [1] * (n - len(y)) + y
    out: list[int | None] = []
    for p, q in zip(x, y):
        if p == 1 or q == 1:
            out.append(q if p == 1 else p)
        else:
            out.append(_merge_dim(p, q))
    return out


def _xent_shape(op: Operation) -> list[Any]:
    dims = _broadcast_dims(op.inputs[0].shape, op.inputs[1].shape)
    if dims is None:
        return [[None], [None, None]]
    if len(dims) != 2:
        raise ValueError(f"Shape must be broadcasted with rank 2, but is rank {len(dims)}")
    return [dims[:1], dims]


def _sparse_xent_shape(op: Operation) -> list[Any]:
    batch, classes = _with_rank(op.inputs[0].shape, 2)
    (labels,) = _with_rank(op.inputs[1].shape, 1)
    batch = _merge_dim(batch, labels)
    return [[batch], [batch, classes]]


def _in_top_k_shape(op: Operation) -> list[Any]:
    batch, _ = _with_rank(op.inputs[0].shape, 2)
    (targets,) = _with_rank(op.inputs[1].shape, 1)
    _with_rank(op.inputs[2].shape, 0)
    return [[_merge_dim(batch, targets)]]


def _top_k_shape(op: Operation) -> list[Any]:
    s = op.inputs[0].shape
    _with_rank_at_least(s, 1)
    _with_rank(op.inputs[1].shape, 0)
    k = constant_value(op.inputs[1])
    k = None if k is None else int(k)
    if k is not None and k < 0:
        raise ValueError(f"Dimension size, given by scalar input 1, must be non-negative but is {k}")
    if s.ndims is None:
        return [None, None]
    dims = s.as_list()
    if k is not None and dims[-1] is not None and dims[-1] < k:
        raise ValueError(f"input must have last dimension >= k = {k} but is {dims[-1]}")
    out = dims[:-1] + [k]
    return [out, out]


# --- declarations -------------------------------------------------------------------
_FLOAT = "T: {float16, float32, float64}"
_RELU_TYPES = "T: {float32, float64, int32, uint8, int16, int8, int64, uint16, float16, uint32, uint64}"
_ACTIVATION = dict(inputs=["features: T"], outputs=["activations: T"], shape_fn=_same_shape)

op_def("Relu", attrs=[_RELU_TYPES], doc="max(features, 0).", **_ACTIVATION)  # type: ignore[arg-type]
op_def("Relu6", attrs=[_RELU_TYPES], doc="min(max(features, 0), 6).", **_ACTIVATION)  # type: ignore[arg-type]
op_def("Elu", attrs=[_FLOAT], doc="exp(x) - 1 if x < 0 else x.", **_ACTIVATION)  # type: ignore[arg-type]
op_def("Selu", attrs=[_FLOAT], doc="Scaled ELU (Klambauer et al. 2017).", **_ACTIVATION)  # type: ignore[arg-type]
op_def(
    "LeakyRelu", attrs=["alpha: float = 0.2", "T: {float16, float32, float64} = float32"],
    doc="x if x > 0 else alpha * x.", **_ACTIVATION,  # type: ignore[arg-type]
)
op_def("Softplus", attrs=[_FLOAT], doc="log(exp(x) + 1), computed stably.", **_ACTIVATION)  # type: ignore[arg-type]
op_def("Softsign", attrs=[_FLOAT], doc="x / (abs(x) + 1).", **_ACTIVATION)  # type: ignore[arg-type]
op_def(
    "Softmax", inputs=["logits: T"], outputs=["softmax: T"], attrs=[_FLOAT],
    shape_fn=_softmax_shape, doc="Softmax over the last dimension.",
)
op_def(
    "LogSoftmax", inputs=["logits: T"], outputs=["logsoftmax: T"], attrs=[_FLOAT],
    shape_fn=_softmax_shape, doc="Log-softmax over the last dimension.",
)
op_def(
    "BiasAdd", inputs=["value: T", "bias: T"], outputs=["output: T"],
    attrs=["T: numeric", "data_format: string = 'NHWC'"], shape_fn=_bias_add_shape,
    doc="value + bias along the channel dimension (last for NHWC, 1 for NCHW).",
)
op_def(
    "L2Loss", inputs=["t: T"], outputs=["output: T"], attrs=[_FLOAT],
    shape_fn=lambda op: [TensorShape([])], doc="sum(t ** 2) / 2.",
)
op_def(
    "SoftmaxCrossEntropyWithLogits", inputs=["features: T", "labels: T"],
    outputs=["loss: T", "backprop: T"], attrs=[_FLOAT], shape_fn=_xent_shape,
    doc="Per-row cross entropy of softmax(features) against labels (broadcast to 2-D).",
)
op_def(
    "SparseSoftmaxCrossEntropyWithLogits", inputs=["features: T", "labels: Tlabels"],
    outputs=["loss: T", "backprop: T"],
    attrs=[_FLOAT, "Tlabels: {int32, int64} = int64"], shape_fn=_sparse_xent_shape,
    doc="Per-row cross entropy of softmax(features) against class indices.",
)
op_def(
    "InTopKV2", inputs=["predictions: float32", "targets: T", "k: T"], outputs=["precision: bool"],
    attrs=["T: {int32, int64} = int32"], shape_fn=_in_top_k_shape,
    doc="Whether each target is among the k largest predictions of its row.",
)
op_def(
    "TopKV2", inputs=["input: T", "k: Tk"], outputs=["values: T", "indices: index_type"],
    attrs=[
        "sorted: bool = true", "T: real", "Tk: {int16, int32, int64} = int32",
        "index_type: {int16, int32, int64} = int32",
    ],
    shape_fn=_top_k_shape, doc="The k largest entries of each row (last dimension) and their indices.",
)
not_differentiable("InTopKV2")


# --- helpers ------------------------------------------------------------------------


@contextlib.contextmanager
def _name_scope(name: str | None, default: str, values: Any = ()) -> Iterator[str]:
    """TensorFlow's `ops.name_scope(name, default, values)`: the values' graph, and a
    scope whose string (ending in "/") names the op that gives the result."""
    g = graph_of(values)
    with g.as_default(), g.name_scope(name or default) as scope:
        yield scope


def _axis_arg(axis: Any, dim: Any, axis_name: str = "axis", dim_name: str = "dim") -> Any:
    if axis is not None and dim is not None:
        raise ValueError(f"Cannot specify both '{axis_name}' and '{dim_name}'")
    return axis if axis is not None else dim


def _require_both(fn: str, labels: Any, logits: Any) -> None:
    if labels is None or logits is None:
        raise ValueError(
            f"Both `labels` and `logits` must be provided for {fn}"
            f"Received: labels={labels} and logits={logits}"
        )




# --- activations --------------------------------------------------------------------
def relu(features: Any, name: str | None = None) -> Tensor:
    """max(features, 0), elementwise: `tf.nn.relu([-1., 2.])` -> [0., 2.]."""
    return apply_op("Relu", features=features, name=name or "Relu")


def relu6(features: Any, name: str | None = None) -> Tensor:
    """min(max(features, 0), 6), elementwise."""
    with _name_scope(name, "Relu6", [features]) as scope:
        features = convert_to_tensor(features, name="features")
        return apply_op("Relu6", features=features, name=scope)


def elu(features: Any, name: str | None = None) -> Tensor:
    """exp(x) - 1 for x < 0, else x."""
    return apply_op("Elu", features=features, name=name or "Elu")


def selu(features: Any, name: str | None = None) -> Tensor:
    """scale * (alpha * (exp(x) - 1) if x < 0 else x), with the SELU constants."""
    return apply_op("Selu", features=features, name=name or "Selu")


def leaky_relu(features: Any, alpha: float = 0.2, name: str | None = None) -> Tensor:
    """x if x > 0 else alpha * x; integer features are cast to float32 first."""
    with _name_scope(name, "LeakyRelu", [features, alpha]) as scope:
        features = convert_to_tensor(features, name="features")
        if features.dtype.is_integer:
            features = math_ops.cast(features, dtypes.float32)
        if isinstance(alpha, np.ndarray):
            alpha = alpha.item()
        # The attr is a 32-bit float in TensorFlow's op registry.
        return apply_op("LeakyRelu", features=features, alpha=float(np.float32(alpha)), name=scope)


def softplus(features: Any, name: str | None = None) -> Tensor:
    """log(exp(x) + 1), without overflow for large |x|."""
    return apply_op("Softplus", features=features, name=name or "Softplus")


def softsign(features: Any, name: str | None = None) -> Tensor:
    """x / (abs(x) + 1)."""
    return apply_op("Softsign", features=features, name=name or "Softsign")


# --- softmax ------------------------------------------------------------------------
def _on_axis(op_type: str, logits: Any, axis: Any, name: str | None) -> Tensor:
    """Apply a last-axis op along `axis`, transposing `axis` to the end and back."""
    logits = convert_to_tensor(logits)
    if axis is None:
        axis = -1
    if isinstance(axis, Tensor):
        value = constant_value(axis)
        if value is None:
            raise ValueError(f"{op_type}: a Tensor `axis` must have a statically known value")
        axis = int(value)
    ndims = logits.shape.ndims
    if axis == -1 or (ndims is not None and axis == ndims - 1):
        return apply_op(op_type, logits=logits, name=name or op_type)
    if ndims is None:
        raise ValueError(f"{op_type} along axis {axis} needs a tensor of known rank")
    if not -ndims <= axis < ndims:
        raise errors.InvalidArgumentError(
            None, None,
            f"`dim` must be in the range [{-ndims}, {ndims}) where {ndims} is the number of "
            f"dimensions in the input. Received: dim={axis}",
        )
    # TensorFlow swaps `axis` with the last axis through a permutation computed in the
    # graph (Rank, Range, ConcatV2); the same ops here keep later op seeds aligned.
    dim: Any = axis
    rank = array_ops.rank(logits)
    if dim < 0:
        dim = dim + rank
    input_rank = array_ops.rank(logits)
    dim_axis = dim % ndims
    swapped = _swap_axis(logits, dim_axis, math_ops.subtract(input_rank, 1))
    out = apply_op(op_type, logits=swapped, name=op_type)
    out = _swap_axis(out, dim_axis, math_ops.subtract(input_rank, 1), name=name)
    out.set_shape(logits.shape)
    return out


def _swap_axis(x: Tensor, dim_index: Any, last_index: Tensor, name: str | None = None) -> Tensor:
    perm = array_ops.concat(
        [math_ops.range(dim_index), [last_index], math_ops.range(dim_index + 1, last_index), [dim_index]], 0
    )
    return array_ops.transpose(x, perm, name=name or "transpose")


def softmax(logits: Any, axis: Any = None, name: str | None = None, dim: Any = None) -> Tensor:
    """exp(logits) / reduce_sum(exp(logits), axis), computed stably (TF1: `dim`)."""
    return _on_axis("Softmax", logits, _axis_arg(axis, dim), name)


def log_softmax(logits: Any, axis: Any = None, name: str | None = None, dim: Any = None) -> Tensor:
    """logits - log(reduce_sum(exp(logits), axis)), computed stably (TF1: `dim`)."""
    return _on_axis("LogSoftmax", logits, _axis_arg(axis, dim), name)


# --- BiasAdd, L2Loss ----------------------------------------------------------------
def bias_add(value: Any, bias: Any, data_format: str | None = None, name: str | None = None) -> Tensor:
    """value + bias, bias 1-D along the channel axis: last for 'N...C', 1 for 'NC...'."""
    if data_format is not None:
        if data_format.startswith("NC"):
            data_format = "NCHW"
        elif data_format.startswith("N") and data_format.endswith("C"):
            data_format = "NHWC"
        else:
            raise ValueError(
                "`data_format` must be of the form `N...C` or `NC...`. "
                f"Received: data_format={data_format}"
            )
    with _name_scope(name, "BiasAdd", [value, bias]) as scope:
        value = convert_to_tensor(value, name="input")
        try:
            bias = convert_to_tensor(bias, dtype=value.dtype, name="bias")
        except ValueError as e:
            raise ValueError(f"bias: {e}") from None
        return apply_op("BiasAdd", value=value, bias=bias, data_format=data_format, name=scope)


def l2_loss(t: Any, name: str | None = None) -> Tensor:
    """sum(t ** 2) / 2, a scalar: `tf.nn.l2_loss([3., 4.])` -> 12.5."""
    return apply_op("L2Loss", t=t, name=name or "L2Loss")


# --- softmax cross entropies --------------------------------------------------------
def _flatten_outer_dims(x: Tensor) -> Tensor:
    """x as a matrix [-1, last dim], built from the same ops as in TensorFlow (the op
    count matters: it seeds random ops created later under a graph-level seed)."""
    rank = array_ops.rank(x)
    last = array_ops.slice(array_ops.shape(x), [math_ops.subtract(rank, 1)], [1])
    out = array_ops.reshape(x, array_ops.concat([[-1], last], 0))
    dims = x.shape.as_list() if x.shape.ndims is not None else None
    if dims is not None and all(d is not None for d in dims[:-1]):
        out.set_shape([int(np.prod(dims[:-1], dtype=np.int64)), dims[-1]])
    return out


def softmax_cross_entropy_with_logits_v2(
    labels: Any = None, logits: Any = None, axis: Any = None, name: str | None = None, dim: Any = None
) -> Tensor:
    """Cross entropy of softmax(logits) against the distributions `labels`, along `axis`
    (TF1: `dim`); gradients flow into both labels and logits."""
    _require_both("softmax_cross_entropy_with_logits", labels, logits)
    axis = _axis_arg(axis, dim)
    if axis is None:
        axis = -1
    with _name_scope(name, "softmax_cross_entropy_with_logits", [logits, labels]) as scope:
        logits = convert_to_tensor(logits, name="logits")
        labels = convert_to_tensor(labels, name="labels")
        half = logits.dtype.base_dtype is dtypes.float16
        precise = math_ops.cast(logits, dtypes.float32) if half else logits
        if labels.dtype.base_dtype is not precise.dtype.base_dtype:
            labels = math_ops.cast(labels, precise.dtype)
        input_rank = array_ops.rank(precise)
        shape = logits.shape
        ndims = shape.ndims
        if axis != -1 and not (ndims is not None and axis == ndims - 1):
            if ndims is None:
                raise ValueError("softmax_cross_entropy_with_logits along an axis needs a known rank")
            a = axis % ndims
            perm = [i for i in range(ndims) if i != a] + [a]
            precise = array_ops.transpose(precise, perm)
            labels = array_ops.transpose(labels, perm)
        input_shape = array_ops.shape(precise)
        precise = _flatten_outer_dims(precise)
        labels = _flatten_outer_dims(labels)
        cost = apply_op("SoftmaxCrossEntropyWithLogits", features=precise, labels=labels, name=scope)[0]
        output_shape = array_ops.slice(input_shape, [0], [math_ops.subtract(input_rank, 1)])
        cost = array_ops.reshape(cost, output_shape)
        if ndims is not None:
            dims = shape.as_list()
            del dims[axis]
            cost.set_shape(dims)
        return math_ops.cast(cost, dtypes.float16) if half else cost


def softmax_cross_entropy_with_logits(
    _sentinel: Any = None, labels: Any = None, logits: Any = None, dim: Any = -1,
    name: str | None = None, axis: Any = None,
) -> Tensor:
    """TF1's deprecated version: like the _v2 one, but no gradient flows into labels."""
    if _sentinel is not None:
        raise ValueError(
            "Only call `softmax_cross_entropy_with_logits` with named arguments "
            "(labels=..., logits=..., ...)."
        )
    _require_both("softmax_cross_entropy_with_logits", labels, logits)
    dim = _axis_arg(axis, None if dim == -1 and axis is not None else dim)
    with _name_scope(name, "softmax_cross_entropy_with_logits_sg", [logits, labels]) as scope:
        labels = stop_gradient(labels, name="labels_stop_gradient")
    return softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits, axis=dim, name=scope)


def sparse_softmax_cross_entropy_with_logits(
    _sentinel: Any = None, labels: Any = None, logits: Any = None, name: str | None = None
) -> Tensor:
    """Cross entropy of softmax(logits) against class indices `labels` (int32/int64,
    shape logits.shape[:-1]); a label outside [0, classes) fails the step."""
    if _sentinel is not None:
        raise ValueError(
            "Only call `sparse_softmax_cross_entropy_with_logits` with named arguments "
            "(labels=..., logits=..., ...)."
        )
    _require_both("sparse_softmax_cross_entropy_with_logits", labels, logits)
    with _name_scope(name, "SparseSoftmaxCrossEntropyWithLogits", [labels, logits]):
        labels = convert_to_tensor(labels)
        logits = convert_to_tensor(logits)
        half = logits.dtype.base_dtype is dtypes.float16
        precise = math_ops.cast(logits, dtypes.float32) if half else logits
        lshape, xshape = labels.shape, logits.shape
        labels_shape = array_ops.shape(labels)
        if xshape.ndims == 0:
            raise ValueError(f"`logits` cannot be a scalar. Received logits={logits}`")
        if xshape.ndims is not None and lshape.ndims is not None and lshape.ndims != xshape.ndims - 1:
            raise ValueError(
                "`labels.shape.rank` must equal `logits.shape.rank - 1`. Received: "
                f"labels.shape={lshape} of rank {lshape.ndims} and logits.shape={xshape} "
                f"of rank {xshape.ndims}"
            )
        outer = xshape[:-1]
        if lshape.is_fully_defined() and outer.is_fully_defined() and lshape != outer:
            raise ValueError(
                "`labels.shape` must equal `logits.shape` except for the last dimension. "
                f"Received: labels.shape={lshape} and logits.shape={xshape}"
            )
        op_name = name or "SparseSoftmaxCrossEntropyWithLogits"
        if xshape.ndims == 2:
            cost = apply_op(
                "SparseSoftmaxCrossEntropyWithLogits", features=precise, labels=labels, name=op_name
            )[0]
        else:
            # TensorFlow also asserts shape(labels) == shape(logits)[:-1] here when the
            # static shapes are not fully known; a mismatch fails in the kernel instead.
            num_classes = array_ops.shape(logits)[array_ops.rank(logits) - 1]
            cost = apply_op(
                "SparseSoftmaxCrossEntropyWithLogits",
                features=array_ops.reshape(precise, [-1, num_classes]),
                labels=array_ops.reshape(labels, [-1]), name=op_name,
            )[0]
            cost = array_ops.reshape(cost, labels_shape)
            cost.set_shape(lshape)
        return math_ops.cast(cost, dtypes.float16) if half else cost


TopKV2 = collections.namedtuple("TopKV2", ["values", "indices"])


def top_k(
    input: Any, k: Any = 1, sorted: bool = True, index_type: Any = dtypes.int32,  # noqa: A002
    name: str | None = None,
) -> TopKV2:
    """The k largest entries along the last dimension, largest first, and their indices
    (ties: the lower index first): `values, indices = tf.nn.top_k(x, 2)`."""
    values, indices = apply_op(
        "TopKV2", input=input, k=k, sorted=sorted, index_type=index_type, name=name or "TopKV2"
    )
    return TopKV2(values, indices)


def in_top_k(predictions: Any, targets: Any, k: Any, name: str | None = None) -> Tensor:
    """Whether targets[i] is among the k largest of predictions[i] (float32 [batch,
    classes]); ties count in the target's favour, non-finite rows give False."""
    with _name_scope(name, "in_top_k", [predictions, targets]):
        return apply_op(
            "InTopKV2", predictions=predictions, targets=targets, k=k, name=name or "InTopKV2"
        )
