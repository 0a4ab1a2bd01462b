"""Partitioned (sharded) variables: `PartitionedVariable`, the partitioners, and how a
full shape is cut into shards.

A partitioned variable is TensorFlow 1.x's: a list of ordinary `Variable` shards
``<name>/part_0``, ``<name>/part_1``, ... cut along one axis, each carrying a
`SaveSliceInfo` (full name, full shape, offset, shard shape) so that a Saver writes
one checkpoint entry under the full name with one slice per shard.  The container
itself is no variable: it is in no collection (the shards are), it cannot be used
as a reference, and converting it to a tensor concatenates the shards
(``<name>/ConcatPartitions/concat`` then an Identity named ``<name>``).

Invariants (TensorFlow's, checked where a partitioned variable is made):
* the partitioner returns one count >= 1 per dimension, at most one of them > 1;
* shards are cut by `iter_slices`: the first ``dim % n`` shards get one extra row;
* the shard list is sorted by offset, every shard's full shape is the container's.

The partitioners (`fixed_size_partitioner`, `min_max_variable_partitioner`,
`variable_axis_size_partitioner`) are TensorFlow's arithmetic, to the rounding.
`get_variable(partitioner=...)` lives in flowlab.ops.variable_store (creation,
reuse, error messages); `create_partitioned_variables` in flowlab.ops.variable_scope.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Tensor
from flowlab.graph.tensor_shape import TensorShape, dimension_value
from flowlab.ops import array_ops
from flowlab.ops.builder import register_tensor_conversion_function
from flowlab.ops.core_ops import identity
from flowlab.ops.variables import Variable

__all__ = [
    "PartitionedVariable", "fixed_size_partitioner", "min_max_variable_partitioner",
    "variable_axis_size_partitioner",
]

Partitioner = Callable[..., Sequence[int]]


class PartitionInfo:
    """Where one shard sits in the full variable, as initializers see it
    (`partition_info=`: TensorFlow's `_PartitionInfo`)."""

    __slots__ = ["_full_shape", "_var_offset"]

    def __init__(self, full_shape: Sequence[int], var_offset: Sequence[int]) -> None:
        if not isinstance(full_shape, (list, tuple)):
            raise TypeError("`full_shape` must be a sequence (like tuple or list) instead of "
                            + type(full_shape).__name__)
        if not isinstance(var_offset, (list, tuple)):
            raise TypeError("`var_offset` must be a sequence (like tuple or list) instead of "
                            + type(var_offset).__name__)
        if len(var_offset) != len(full_shape):
            raise ValueError(
                f"Expected equal length, but `var_offset` is of length {len(var_offset)} while "
                f"full_shape is of length {len(full_shape)}."
            )
        for offset, size in zip(var_offset, full_shape):
            if offset < 0 or offset >= size:
                raise ValueError(
                    f"Expected 0 <= offset < shape but found offset={offset}, shape={size} for "
                    f"var_offset={var_offset}, full_shape={full_shape}"
                )
        self._full_shape = full_shape
        self._var_offset = var_offset

    @property
    def full_shape(self) -> Sequence[int]:
        return self._full_shape

    @property
    def var_offset(self) -> Sequence[int]:
        return self._var_offset

    def single_offset(self, shape: Sequence[int]) -> int:
        """The offset along the one partitioned dimension (0 when not partitioned)."""
        dim = self.single_slice_dim(shape)
        return 0 if dim is None else self._var_offset[dim]

    def single_slice_dim(self, shape: Sequence[int]) -> int | None:
        """The dimension `shape` (a shard's) is cut along; None if it is whole."""
        if not isinstance(shape, (tuple, list)):
            raise TypeError("`shape` must be a sequence (like tuple or list) instead of "
                            + type(shape).__name__)
        if len(shape) != len(self._full_shape):
            raise ValueError(
                f"Expected equal length, but received shape={shape} of length {len(shape)} "
                f"while self.full_shape={self._full_shape} is of length {len(self._full_shape)}."
            )
        for i, n in enumerate(shape):
            if self._var_offset[i] + n > self._full_shape[i]:
                raise ValueError(
                    f"With self.var_offset={self._var_offset}, a partition of shape={shape} would "
                    f"exceed self.full_shape={self._full_shape} in dimension {i}."
                )
        dim = None
        for i, n in enumerate(shape):
            if n == self._full_shape[i]:
                continue
            if dim is not None:
                raise ValueError(
                    f"Cannot use single_slice_dim() with shape={shape} and self.full_shape="
                    f"{self._full_shape} since slice dim could be either dimension {i} or {dim}."
                )
            dim = i
        return dim


# --- cutting a shape ---------------------------------------------------------------------
def call_partitioner(partitioner: Partitioner, shape: TensorShape, dtype: dtypes.DType) -> list[int]:
    """`partitioner(shape=, dtype=)`, checked as TensorFlow checks it."""
    if not shape.is_fully_defined():
        raise ValueError(
            f"Shape of a new partitioned variable must be fully defined, but instead was {shape}."
        )
    if shape.ndims < 1:
        raise ValueError(f"A partitioned Variable must have rank at least 1, shape: {shape}")
    slicing = partitioner(shape=shape, dtype=dtype)
    if not isinstance(slicing, Sequence):
        raise ValueError(f"Partitioner must return a sequence, but saw: {slicing}")
    if len(slicing) != shape.ndims:
        raise ValueError(
            "Partitioner returned a partition list that does not match the Variable's rank: "
            f"{slicing} vs. {shape}"
        )
    if any(p < 1 for p in slicing):
        raise ValueError(f"Partitioner returned zero partitions for some axes: {slicing}")
    if sum(p > 1 for p in slicing) > 1:
        raise ValueError(
            f"Can only slice a variable along one dimension: shape: {shape}, partitioning: {slicing}"
        )
    return slicing  # type: ignore[return-value]  # TensorFlow keeps the partitioner's own sequence


def slice_dim_and_count(slicing: Sequence[int]) -> tuple[int, int]:
    """(the partitioned axis, its shard count); (0, 1) when nothing is cut."""
    for dim, n in enumerate(slicing):
        if n > 1:
            return dim, n
    return 0, 1


def iter_slices(full_shape: list[int], num_slices: int, slice_dim: int) -> Iterator[tuple[list[int], list[int]]]:
    """(offset, shape) of each shard; the first ``dim % n`` shards get one extra row."""
    excess = full_shape[slice_dim] % num_slices
    offset = [0] * len(full_shape)
    base = full_shape[slice_dim] // num_slices
    for i in range(num_slices):
        shape = list(full_shape)
        shape[slice_dim] = base + (1 if i < excess else 0)
        yield list(offset), shape
        offset[slice_dim] += shape[slice_dim]


# --- the container -----------------------------------------------------------------------
class PartitionedVariable:
    """A variable stored as shards (`tf.PartitionedVariable`).

        with tf.variable_scope("lm", partitioner=tf.fixed_size_partitioner(3)):
            emb = tf.get_variable("emb", [10, 4])
        [v.name for v in emb]       # ['lm/emb/part_0:0', 'lm/emb/part_1:0', 'lm/emb/part_2:0']
        tf.convert_to_tensor(emb)   # the (10, 4) concatenation, "lm/emb:0"
        tf.nn.embedding_lookup(emb, ids)   # one Gather per shard, on its device
    """

    def __init__(self, name: str, shape: Any, dtype: Any, variable_list: Any, partitions: Any) -> None:
        if not isinstance(variable_list, (list, tuple)):
            raise TypeError(f"variable_list is not a list or tuple: {variable_list}")
        if not isinstance(partitions, (list, tuple)):
            raise TypeError(f"partitions is not a list or tuple: {partitions}")
        if not all(p >= 1 for p in partitions):
            raise ValueError(f"partition values must be positive: {partitions}")
        if not variable_list:
            raise ValueError("variable_list may not be empty")
        if not all(u._get_save_slice_info() is not None for u in variable_list):
            raise ValueError(
                "All variables must have a save_slice_info available: "
                f"{[u.name for u in variable_list]}"
            )
        if len(shape) != len(partitions):
            raise ValueError(f"len(shape) != len(partitions): {shape} vs. {partitions}")
        for v in variable_list:
            if v._get_save_slice_info().full_shape != shape:
                raise ValueError(
                    f"All variables' full shapes must match shape: {shape}; but full shapes "
                    f"were: {[v._get_save_slice_info().full_shape]}"
                )
        self._variable_list: list[Variable] = sorted(
            variable_list, key=lambda u: u._get_save_slice_info().var_offset
        )
        self._name = name
        self._shape = shape
        self._dtype = dtype
        self._partitions = partitions

    def __iter__(self) -> Iterator[Variable]:
        """The shards, in offset order."""
        return iter(self._variable_list)

    def __len__(self) -> int:
        axes = self._partition_axes()
        if len(axes) > 1:
            raise ValueError(f"Cannot get a length for {len(axes)} > 1 partition axes")
        return len(self._variable_list)

    def __repr__(self) -> str:
        return (f"<flowlab.PartitionedVariable '{self._name}' shape={TensorShape(self._shape)} "
                f"dtype={dtypes.as_dtype(self._dtype).name} partitions={list(self._partitions)}>")

    def _partition_axes(self) -> list[int]:
        if all(p == 1 for p in self._partitions):
            return [0]
        return [i for i, p in enumerate(self._partitions) if p > 1]

    def _concat(self) -> Tensor:
        """The concatenated value, built in the current control-dependency scope."""
        g = self._variable_list[0].graph
        with g.as_default():
            if len(self._variable_list) == 1:
                with g.name_scope(None):
                    return identity(self._variable_list[0], name=self._name)
            axes = self._partition_axes()
            if len(axes) > 1:
                raise NotImplementedError(
                    f"Cannot concatenate along more than one dimension: {axes}.  Multi-axis "
                    "partition concat is not supported"
                )
            with g.name_scope(self._name + "/ConcatPartitions/"):
                concatenated = array_ops.concat(self._variable_list, axes[0])
            with g.name_scope(None):
                return identity(concatenated, name=self._name)

    def as_tensor(self) -> Tensor:
        """The concatenated value, free of the surrounding control dependencies (as
        reading a Variable is)."""
        g = self._variable_list[0].graph
        with g.as_default(), g.control_dependencies(None):
            return self._concat()

    @property
    def name(self) -> str:
        return self._name

    @property
    def dtype(self) -> dtypes.DType:
        return self._dtype

    @property
    def shape(self) -> TensorShape:
        return self.get_shape()

    @property
    def graph(self) -> Any:
        return self._variable_list[0].graph

    def get_shape(self) -> TensorShape:
        return self._shape

    def _get_variable_list(self) -> list[Variable]:
        return self._variable_list

    def _get_partitions(self) -> Any:
        return self._partitions

    # --- assignment: one op per shard ---------------------------------------------------
    def _apply_assign_fn(self, assign_fn: Callable[[Variable, Any], Any], value: Any) -> list[Any]:
        axes = self._partition_axes()
        if len(axes) > 1:
            raise NotImplementedError(
                f"Cannot do assign action along more than one dimension: {axes}.  Multi-axis "
                "partition assign action is not supported "
            )
        if isinstance(value, list):
            if len(value) != len(self._variable_list):
                raise ValueError(
                    f"Assigning a list of {len(value)} values to a PartitionedVariable of "
                    f"{len(self._variable_list)} shards."
                )
            values = value
        elif isinstance(value, PartitionedVariable):
            values = list(value)
        else:
            sizes = [dimension_value(v.shape[axes[0]]) for v in self._variable_list]
            with self.graph.as_default():
                values = array_ops.split(value, sizes, axis=axes[0])
        return [assign_fn(v, values[i]) for i, v in enumerate(self._variable_list)]

    def assign(self, value: Any, use_locking: bool = False, name: str | None = None,
               read_value: bool = True) -> list[Any]:
        """Assign `value` (the full value, a list of shard values, or another
        PartitionedVariable): one Assign per shard."""
        out = self._apply_assign_fn(
            lambda v, x: v.assign(x, use_locking=use_locking, name=name, read_value=read_value), value)
        return out if read_value else [a.op if isinstance(a, Tensor) else a for a in out]

    def assign_add(self, value: Any, use_locking: bool = False, name: str | None = None,
                   read_value: bool = True) -> list[Any]:
        out = self._apply_assign_fn(
            lambda v, x: v.assign_add(x, use_locking=use_locking, name=name, read_value=read_value), value)
        return out if read_value else [a.op if isinstance(a, Tensor) else a for a in out]

    def assign_sub(self, value: Any, use_locking: bool = False, name: str | None = None,
                   read_value: bool = True) -> list[Any]:
        out = self._apply_assign_fn(
            lambda v, x: v.assign_sub(x, use_locking=use_locking, name=name, read_value=read_value), value)
        return out if read_value else [a.op if isinstance(a, Tensor) else a for a in out]


def _to_tensor(v: PartitionedVariable, dtype: Any = None, name: str | None = None,
               as_ref: bool = False) -> Tensor:
    if dtype is not None and not dtypes.as_dtype(dtype).is_compatible_with(v.dtype):
        raise ValueError(
            f"Incompatible type conversion requested to type '{dtypes.as_dtype(dtype).name}' for "
            f"variable of type '{v.dtype.name}'"
        )
    if as_ref:
        raise NotImplementedError("PartitionedVariable doesn't support being used as a reference.")
    return v.as_tensor()


register_tensor_conversion_function(PartitionedVariable, _to_tensor)


# --- partitioners --------------------------------------------------------------------------
def _element_size(dtype: Any, bytes_per_string_element: int) -> int:
    dtype = dtypes.as_dtype(dtype)
    return bytes_per_string_element if dtype.base_dtype is dtypes.string else dtype.size


def fixed_size_partitioner(num_shards: int, axis: int = 0) -> Partitioner:
    """`num_shards` shards along `axis` (fewer if the axis is shorter)."""

    def _partitioner(shape: TensorShape, **unused_args: Any) -> list[int]:
        partitions = [1] * len(shape)
        partitions[axis] = min(num_shards, shape.dims[axis].value)
        return partitions

    return _partitioner


def min_max_variable_partitioner(max_partitions: int = 1, axis: int = 0,
                                 min_slice_size: int = 256 << 10,
                                 bytes_per_string_element: int = 16) -> Partitioner:
    """As many shards as keep each at least `min_slice_size` bytes, at most
    `max_partitions` (and at most the axis length)."""

    def _partitioner(shape: TensorShape, dtype: Any) -> list[int]:
        if axis >= len(shape):
            raise ValueError(
                f"Cannot partition variable along axis {axis} when shape is only {shape}"
            )
        total = shape.num_elements() * _element_size(dtype, bytes_per_string_element)
        partitions = [1] * len(shape)
        partitions[axis] = max(1, min(shape.dims[axis].value, max_partitions,
                                      int(math.ceil(total / min_slice_size))))
        return partitions

    return _partitioner


def variable_axis_size_partitioner(max_shard_bytes: int, axis: int = 0,
                                   bytes_per_string_element: int = 16,
                                   max_shards: int | None = None) -> Partitioner:
    """Shards along `axis` of at most `max_shard_bytes` each where one axis allows it
    (then one row per shard), at most `max_shards`."""
    if max_shard_bytes < 1 or bytes_per_string_element < 1:
        raise ValueError(
            "Both max_shard_bytes and bytes_per_string_element must be positive. "
            f"Currently, max_shard_bytes is {max_shard_bytes} and"
            f"bytes_per_string_element is {bytes_per_string_element}"
        )
    if max_shards and max_shards < 1:
        raise ValueError("max_shards must be positive.")

    def _partitioner(shape: TensorShape, dtype: Any) -> list[int]:
        if not isinstance(shape, TensorShape):
            raise ValueError(f"shape is not a TensorShape: {shape}")
        if not shape.is_fully_defined():
            raise ValueError(f"shape is not fully defined: {shape}")
        size = _element_size(dtype, bytes_per_string_element)
        partitions = [1] * shape.ndims
        bytes_per_slice = 1.0 * (shape.num_elements() / shape.dims[axis].value) * size
        slices_per_shard = max(1, math.floor(max_shard_bytes / bytes_per_slice))
        shards = int(math.ceil(1.0 * shape.dims[axis].value / slices_per_shard))
        if max_shards:
            shards = min(max_shards, shards)
        partitions[axis] = shards
        return partitions

    return _partitioner

