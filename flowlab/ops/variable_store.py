"""The variable store: one graph's `get_variable` variables, by full name.

`_VariableStore.get_variable` is where `tf.get_variable` ends once the variable
scope has made the full name and merged its defaults: it applies the custom getter,
then creates the variable or returns the existing one as `reuse` says (False:
create, refuse an existing name; True: return, refuse a new name; AUTO_REUSE:
either), checks shape and dtype against an existing variable, picks the default
initializer (Glorot uniform for floats, zeros for the rest) and adds the
regularization loss.  Error messages are TensorFlow's.

With a `partitioner` (and a shape other than a scalar) it makes or reuses a
`PartitionedVariable` instead: shards `<name>/part_i` stored like any variable,
the container under `<name>` in a second dict.  A name is either partitioned or
not: asking for the other kind is TensorFlow's ValueError, as is a different
shard count on reuse.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable
from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import GraphKeys, get_default_graph
from flowlab.graph.tensor import Tensor
from flowlab.graph.tensor_shape import as_shape
from flowlab.ops import init_ops, slicing
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.partitioned_variables import (
    PartitionedVariable,
    PartitionInfo,
    call_partitioner,
    iter_slices,
    slice_dim_and_count,
)
from flowlab.ops.slice_spec import SaveSliceInfo
from flowlab.ops.variables import Variable


def _dtype_str(dt: dtypes.DType) -> str:
    return f"<dtype: '{dt.name}'>"


# --- the variable store --------------------------------------------------------------
class _VariableStore:
    """The variables created by `get_variable` in one graph, by full name."""

    def __init__(self) -> None:
        self._vars: dict[str, Variable] = {}
        self._partitioned_vars: dict[str, PartitionedVariable] = {}
        self._lock = threading.RLock()

    def get_variable(
        self, name: str, shape: Any = None, dtype: Any = dtypes.float32, initializer: Any = None,
        regularizer: Any = None, reuse: Any = None, trainable: bool | None = None,
        collections: Any = None, caching_device: Any = None, partitioner: Any = None,
        validate_shape: bool = True, use_resource: bool | None = None,
        custom_getter: Callable[..., Any] | None = None, constraint: Any = None, **unused: Any,
    ) -> Variable | PartitionedVariable:
        if custom_getter is not None and not callable(custom_getter):
            raise ValueError(f"Passed a custom_getter which is not callable: {custom_getter}")
        if use_resource:
            raise NotImplementedError(
                "Resource variables (use_resource=True) are not supported by flowlab; it "
                "implements TensorFlow 1.x reference variables."
            )
        try:
            dtype = dtypes.as_dtype(dtype).base_dtype
        except TypeError:
            pass

        def true_getter(name: str, shape: Any = None, dtype: Any = dtypes.float32, initializer: Any = None,
                        regularizer: Any = None, reuse: Any = None, trainable: bool | None = None,
                        collections: Any = None, caching_device: Any = None, partitioner: Any = None,
                        validate_shape: bool = True, use_resource: bool | None = None,
                        constraint: Any = None, **unused: Any) -> Variable | PartitionedVariable:
            is_scalar = shape is not None and isinstance(shape, (list, tuple)) and not shape
            if partitioner is not None and not is_scalar:
                if not callable(partitioner):
                    raise ValueError(f"Partitioner must be callable, but received: {partitioner}")
                with get_default_graph().name_scope(None):
                    return self._get_partitioned_variable(
                        name, partitioner, shape, dtype, initializer, regularizer, reuse,
                        trainable, collections, caching_device, validate_shape, constraint,
                    )
            # A partitioned variable is reused without naming its partitioner again.
            if reuse is True and partitioner is None and name in self._partitioned_vars:
                return self._get_partitioned_variable(
                    name, None, shape, dtype, initializer, regularizer, reuse, trainable,
                    collections, caching_device, validate_shape, constraint,
                )
            if f"{name}/part_0" in self._vars:
                raise ValueError(
                    "No partitioner was provided, but a partitioned version of the variable was "
                    f"found: {name}/part_0. Perhaps a variable of the same name was already "
                    "created with partitioning?"
                )
            return self._get_single_variable(
                name, shape, dtype, initializer, regularizer, reuse, trainable, collections,
                caching_device, validate_shape, constraint,
            )

        kwargs = dict(
            name=name, shape=shape, dtype=dtype, initializer=initializer, regularizer=regularizer,
            reuse=reuse, trainable=trainable, collections=collections,
            caching_device=caching_device, partitioner=partitioner, validate_shape=validate_shape,
            use_resource=use_resource, constraint=constraint,
        )
        with self._lock:
            if custom_getter is not None:
                return custom_getter(true_getter, **kwargs)
            return true_getter(**kwargs)

    def _get_single_variable(
        self, name: str, shape: Any, dtype: Any, initializer: Any, regularizer: Any, reuse: Any,
        trainable: bool | None, collections: Any, caching_device: Any, validate_shape: bool,
        constraint: Any, partition_info: PartitionInfo | None = None,
    ) -> Variable:
        from_value = initializer is not None and not callable(initializer)
        if shape is not None and from_value:
            raise ValueError("If initializer is a constant, do not specify shape.")
        dtype = dtypes.as_dtype(dtype)
        if shape is not None:
            shape = as_shape(shape)

        found = self._vars.get(name)
        if found is not None:
            if reuse is False:
                tb = "".join(
                    f'  File "{f.filename}", line {f.lineno}, in {f.name}\n'
                    for f in found.op.traceback[:5]
                )
                raise ValueError(
                    f"Variable {name} already exists, disallowed. Did you mean to set reuse=True "
                    f"or reuse=tf.AUTO_REUSE in VarScope? Originally defined at:\n\n{tb}"
                )
            if shape is not None and not shape.is_compatible_with(found.get_shape()):
                raise ValueError(
                    f"Trying to share variable {name}, but specified shape {shape} and found "
                    f"shape {found.get_shape()}."
                )
            if not dtype.is_compatible_with(found.dtype):
                raise ValueError(
                    f"Trying to share variable {name}, but specified dtype {dtype.name} and "
                    f"found dtype {found.dtype.name}."
                )
            return found

        if reuse is True:
            raise ValueError(
                f"Variable {name} does not exist, or was not created with tf.get_variable(). "
                "Did you mean to set reuse=tf.AUTO_REUSE in VarScope?"
            )
        if initializer is None:
            if shape is None:
                raise ValueError(
                    f"Variable {name} did not get an initializer, so its `shape` argument must "
                    "be specified."
                )
            initializer = _default_initializer(name, dtype)
        g = get_default_graph()
        variable_dtype: dtypes.DType | None = None
        with g.control_dependencies(None):  # TensorFlow's init_scope
            if from_value:
                init_val = initializer
            else:
                if inspect.isclass(initializer):
                    initializer = initializer()
                if shape is not None and shape.is_fully_defined():
                    if _accepts(initializer, "partition_info"):
                        init_val = functools.partial(
                            initializer, shape.as_list(), dtype=dtype, partition_info=partition_info
                        )
                    else:
                        init_val = functools.partial(initializer, shape.as_list(), dtype=dtype)
                    variable_dtype = dtype.base_dtype
                elif _needs_no_arguments(initializer):
                    init_val = initializer
                else:
                    raise ValueError(
                        "The initializer passed is not valid. It should be a callable with no "
                        "arguments and the shape should not be provided or an instance of "
                        "`tf.keras.initializers.*' and `shape` should be fully defined."
                    )
        v = Variable(
            initial_value=init_val, name=name, trainable=trainable, collections=collections,
            caching_device=caching_device, dtype=variable_dtype, validate_shape=validate_shape,
            constraint=constraint, shape=shape,
        )
        self._vars[name] = v
        if regularizer:
            # TensorFlow first calls the regularizer where get_variable was called (root
            # name scope) to see whether it returns a loss; doing the same keeps the
            # graph's op names identical to TensorFlow's.
            if regularizer(v) is not None:
                with g.colocate_with(v.op), g.name_scope(name + "/Regularizer/"):
                    loss = regularizer(v)
                if loss is not None:
                    g.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
        return v

    def _get_partitioned_variable(
        self, name: str, partitioner: Any, shape: Any, dtype: Any, initializer: Any,
        regularizer: Any, reuse: Any, trainable: bool | None, collections: Any,
        caching_device: Any, validate_shape: bool, constraint: Any,
    ) -> PartitionedVariable:
        """The PartitionedVariable `name` (shards `name/part_i`), made or reused as
        `reuse` says; a constant initializer is sliced per shard, a callable one is
        called per shard with its `partition_info`."""
        from_value = isinstance(initializer, Tensor)
        if name in self._vars:
            raise ValueError(
                "A partitioner was provided, but an unpartitioned version of the variable was "
                f"found: {name}.  Perhaps a variable of the same name was already created "
                "without partitioning?"
            )
        dtype = dtypes.as_dtype(dtype)
        shape = as_shape(shape)
        if from_value:
            shape = shape.merge_with(initializer.get_shape())
        partitions = None
        if not reuse or partitioner:
            partitions = call_partitioner(partitioner, shape, dtype)

        found = self._partitioned_vars.get(name)
        if found is not None:
            if reuse is False:
                raise ValueError(
                    f"Partitioned variable with name {name} already exists. Did you mean to set "
                    "reuse=True or reuse=tf.AUTO_REUSE in VarScope?"
                )
            if not shape.is_compatible_with(found.get_shape()):
                raise ValueError(
                    f"Trying to reuse partitioned variable {name}, but specified shape {shape} "
                    f"and found shape {found.get_shape()}."
                )
            if not dtype.is_compatible_with(found.dtype):
                raise ValueError(
                    f"Trying to reuse partitioned variable {name}, but specified dtype "
                    f"{dtype.name} and found dtype {found.dtype.name}."
                )
            if partitions is not None and found._get_partitions() != partitions:
                raise ValueError(
                    f"Trying to reuse partitioned variable {name}, but specified partitions "
                    f"{partitions} and found partitions {found._get_partitions()}."
                )
            return found
        if reuse is True:
            raise ValueError(
                f"PartitionedVariable {name} does not exist, or was not created with "
                "tf.get_variable(). Did you mean to set reuse=False or reuse=tf.AUTO_REUSE in "
                "VarScope?"
            )
        assert partitions is not None
        slice_dim, num_slices = slice_dim_and_count(partitions)
        if f"{name}/part_0" in self._vars:
            if f"{name}/part_{num_slices - 1}" not in self._vars:
                raise ValueError(
                    "Partitioner returned a different partitioning than what was already found.  "
                    f"Partitioner returned {num_slices} shards, and shard {name}/part_0 was "
                    f"found, but {name}/part_{num_slices - 1} was not."
                )
            if f"{name}/part_{num_slices}" in self._vars:
                raise ValueError(
                    "Partitioner returned a different partitioning than what was already found.  "
                    f"Partitioner returned {num_slices} shards, and shard {name}/part_0 was "
                    f"found, but so was the extra shard {name}/part_{num_slices}."
                )
        g = get_default_graph()
        shards = []
        for i, (offset, var_shape) in enumerate(iter_slices(shape.as_list(), num_slices, slice_dim)):
            info = PartitionInfo(full_shape=shape.as_list(), var_offset=offset)
            shard_name = f"{name}/part_{i}"
            init_shape: Any
            with g.name_scope(shard_name + "/PartitionedInitializer"):
                if initializer is None:
                    init, init_shape = _default_initializer(name, dtype), var_shape
                elif callable(initializer):
                    init, init_shape = initializer, var_shape
                else:
                    # A value for the whole variable: each shard takes its slice.
                    value = initializer if from_value else convert_to_tensor(initializer, dtype=dtype)
                    init = slicing.slice(value, offset, var_shape)
                    dtype = init.dtype.base_dtype
                    init_shape = None
            with g.name_scope(None):
                v = self._get_single_variable(
                    shard_name, init_shape, dtype, init, regularizer, reuse, trainable,
                    collections, caching_device, validate_shape, constraint, partition_info=info,
                )
            v._set_save_slice_info(SaveSliceInfo(name, shape.as_list(), offset, var_shape))
            shards.append(v)
        pv = PartitionedVariable(name=name, shape=shape, dtype=dtype, variable_list=shards,
                                 partitions=partitions)
        self._partitioned_vars[name] = pv
        return pv


def _default_initializer(name: str, dtype: dtypes.DType) -> Any:
    if dtype.is_floating:
        return init_ops.glorot_uniform_initializer()
    if dtype.is_integer or dtype.is_unsigned or dtype.is_bool or dtype.base_dtype is dtypes.string:
        return init_ops.zeros_initializer()
    raise ValueError(f"An initializer for variable {name} of {_dtype_str(dtype.base_dtype)} is required")


def _signature(fn: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def _accepts(fn: Any, arg: str) -> bool:
    sig = _signature(fn)
    return sig is not None and arg in sig.parameters


def _needs_no_arguments(fn: Any) -> bool:
    sig = _signature(fn)
    if sig is None:
        return False
    return all(
        p.default is not inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        for p in sig.parameters.values()
    )
