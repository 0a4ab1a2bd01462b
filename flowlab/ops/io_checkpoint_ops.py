"""Checkpoint I/O ops: SaveV2, RestoreV2, MergeV2Checkpoints, ShardedFilename, StringJoin.

The paper's section 4.3 (fault tolerance): a Save op writes the tensors it is given to
a checkpoint, a Restore op reads them back, and the Saver (flowlab.train.saver) wires
them to the variables: one SaveV2 per device writes that device's variables (through
reads of their `Ref` outputs), and RestoreV2's outputs feed `Assign` ops, whose
writes go through the step's undo log so a failed restore leaves the variables as
they were.

Signatures, attrs and default names are TensorFlow's:
    SaveV2(prefix: string, tensor_names: string[N], shape_and_slices: string[N],
           tensors: dtypes)                                 -> (nothing)
    RestoreV2(prefix, tensor_names, shape_and_slices; dtypes) -> tensors: dtypes
    MergeV2Checkpoints(checkpoint_prefixes: string[K], destination_prefix: string;
                       delete_old_dirs = true, allow_missing_files = false)
    ShardedFilename(basename, shard: int32, num_shards: int32) -> "basename-00001-of-00004"
    StringJoin(inputs: N * string; separator = "")          -> joined strings
`shape_and_slices` entries are "" (the whole tensor) or "<full shape> <slice>" as
documented in flowlab.kernels.checkpoint_format, which also documents the files.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.const_fold import constant_value
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def
from flowlab.ops.slice_spec import parse_shape_and_slice

__all__ = ["string_join"]


def _check_scalar(op: Operation, i: int, what: str) -> None:
    s = op.inputs[i].shape
    if s.ndims is not None and s.ndims != 0:
        raise ValueError(f"Shape must be rank 0 but is rank {s.ndims} for {what}")


def _check_vector(op: Operation, i: int, n: int | None, what: str) -> None:
    s = op.inputs[i].shape
    if s.ndims is None:
        return
    if s.ndims != 1:
        raise ValueError(f"Shape must be rank 1 but is rank {s.ndims} for {what}")
    d = s.as_tuple()[0]  # type: ignore[index]
    if n is not None and d is not None and d != n:
        raise ValueError(f"Dimension 0 in both shapes must be equal, but are {d} and {n}")


def _save_shape(op: Operation) -> list[Any]:
    n = len(op.get_attr("dtypes"))
    _check_scalar(op, 0, "'prefix'")
    _check_vector(op, 1, n, "'tensor_names'")
    _check_vector(op, 2, n, "'shape_and_slices'")
    return []


def _restore_shape(op: Operation) -> list[Any]:
    n = len(op.get_attr("dtypes"))
    _check_scalar(op, 0, "'prefix'")
    _check_vector(op, 1, n, "'tensor_names'")
    _check_vector(op, 2, n, "'shape_and_slices'")
    specs = constant_value(op.inputs[2])
    shapes: list[Any] = []
    for i in range(n):
        spec = None if specs is None else specs[i]
        if spec is None or not (spec.decode() if isinstance(spec, bytes) else str(spec)).strip():
            shapes.append(TensorShape(None))
            continue
        try:
            _, sl = parse_shape_and_slice(spec)
        except Exception as e:  # an OpError from the parser: a build-time ValueError here
            raise ValueError(str(e).split(": ", 1)[-1]) from None
        shapes.append(TensorShape([n_ for _, n_ in sl]))  # type: ignore[union-attr]
    return shapes


op_def(
    "SaveV2",
    inputs=["prefix: string", "tensor_names: string", "shape_and_slices: string",
            "tensors: dtypes"],
    attrs=["dtypes: list(type)"], shape_fn=_save_shape, stateful=True,
    doc="Write `tensors` (slices of named tensors) to the checkpoint `prefix`.",
)
op_def(
    "RestoreV2",
    inputs=["prefix: string", "tensor_names: string", "shape_and_slices: string"],
    outputs=["tensors: dtypes"], attrs=["dtypes: list(type)"], shape_fn=_restore_shape,
    stateful=True, doc="Read named tensors (or slices of them) from the checkpoint `prefix`.",
)
op_def(
    "MergeV2Checkpoints",
    inputs=["checkpoint_prefixes: string", "destination_prefix: string"],
    attrs=["delete_old_dirs: bool = true", "allow_missing_files: bool = false"],
    shape_fn=lambda op: [], stateful=True,
    doc="Merge one-shard checkpoints into one checkpoint with one data shard each.",
)
op_def(
    "ShardedFilename",
    inputs=["basename: string", "shard: int32", "num_shards: int32"],
    outputs=["filename: string"], shape_fn=lambda op: [TensorShape([])],
    doc='"basename-00001-of-00004"',
)


def _string_join_shape(op: Operation) -> list[Any]:
    out = TensorShape([])
    for t in op.inputs:
        s = t.shape
        if s.ndims == 0:
            continue
        if out.ndims == 0:
            out = s
            continue
        if not out.is_compatible_with(s):
            raise ValueError(f"Dimensions must be equal, but are {out} and {s}")
        out = out.merge_with(s)
    return [out]


op_def(
    "StringJoin", inputs=["inputs: N * string"], outputs=["output: string"],
    attrs=["N: int >= 0", "separator: string = ''"], shape_fn=_string_join_shape,
    doc="Elementwise concatenation of strings (scalars broadcast).",
)



for _t in ("SaveV2", "RestoreV2", "MergeV2Checkpoints", "ShardedFilename", "StringJoin"):
    not_differentiable(_t)


# --- builders (as tensorflow's io_ops / gen_io_ops) ---------------------------------------
def save_v2(prefix: Any, tensor_names: Any, shape_and_slices: Any, tensors: list[Any],
            name: str | None = None) -> Operation:
    ts = [convert_to_tensor(t) for t in tensors]
    return apply_op("SaveV2", prefix=prefix, tensor_names=tensor_names,
                    shape_and_slices=shape_and_slices, tensors=ts, name=name or "SaveV2")


def restore_v2(prefix: Any, tensor_names: Any, shape_and_slices: Any, dtypes_: list[Any],
               name: str | None = None) -> list[Tensor]:
    dts = [dtypes.as_dtype(d).base_dtype for d in dtypes_]
    out = apply_op("RestoreV2", prefix=prefix, tensor_names=tensor_names,
                   shape_and_slices=shape_and_slices, dtypes=dts, name=name or "RestoreV2")
    return list(out)


def merge_v2_checkpoints(checkpoint_prefixes: Any, destination_prefix: Any,
                         delete_old_dirs: bool = True, name: str | None = None) -> Operation:
    return apply_op("MergeV2Checkpoints", checkpoint_prefixes=checkpoint_prefixes,
                    destination_prefix=destination_prefix, delete_old_dirs=delete_old_dirs,
                    name=name or "MergeV2Checkpoints")


def sharded_filename(basename: Any, shard: Any, num_shards: Any, name: str | None = None) -> Tensor:
    return apply_op("ShardedFilename", basename=basename, shard=shard, num_shards=num_shards,
                    name=name or "ShardedFilename")


def string_join(inputs: list[Any], separator: str = "", name: str | None = None) -> Tensor:
    """Join strings elementwise (`tf.string_join`)."""
    ts = [convert_to_tensor(t, dtype=dtypes.string) for t in inputs]
    return apply_op("StringJoin", inputs=ts, separator=separator, name=name or "StringJoin")
