"""CPU kernels of the checkpoint ops (flowlab.ops.io_checkpoint_ops).

SaveV2 receives the values of the variables it saves (the runtime reads each
variable's `VariableState` into a stable snapshot: stored arrays are never mutated)
and saves them atomically: a temporary data file, then one rename of the index
switches to it (flowlab.kernels.checkpoint_commit); MergeV2Checkpoints does the same
with the parts of a sharded save.  RestoreV2 returns arrays; the Saver's Assign
ops store them through `step.write_var`, so a step that fails part-way rolls the
variables back.  Both run on a pool thread (`expensive`): file I/O releases the GIL.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels import checkpoint_format as fmt
from flowlab.kernels.registry import kernel


def _str(x: Any) -> str:
    return x.decode("utf-8") if isinstance(x, bytes) else str(x)


def _strings(x: Any, what: str, n: int | None = None) -> list[str]:
    arr = np.asarray(x, dtype=object)
    if arr.ndim != 1 or (n is not None and arr.shape[0] != n):
        want = "a vector" if n is None else f"a vector of {n} strings"
        raise errors.InvalidArgumentError(
            None, None, f"{what} must be {want}, got shape {list(arr.shape)}"
        )
    return [_str(v) for v in arr.tolist()]


def _prefix(x: Any) -> str:
    if np.ndim(x) != 0:
        raise errors.InvalidArgumentError(
            None, None, f"Input prefix should be a single string, got shape {list(np.shape(x))}"
        )
    p = _str(np.asarray(x, dtype=object)[()])
    if not p:
        raise errors.InvalidArgumentError(None, None, "The checkpoint prefix must not be empty.")
    return p


@kernel("SaveV2", devices=("CPU",), expensive=True)
def save_v2(ctx: Any, prefix: Any, tensor_names: Any, shape_and_slices: Any, *tensors: Any) -> None:
    n = len(tensors)
    names = _strings(tensor_names, "tensor_names", n)
    specs = _strings(shape_and_slices, "shape_and_slices", n)
    path = _prefix(prefix)
    try:
        fmt.save_tensors(path, names, list(tensors), specs)
    except (FileNotFoundError, NotADirectoryError) as e:
        raise errors.NotFoundError(None, None, f"{os.path.dirname(path)}; {e.strerror}") from None
    except PermissionError as e:
        raise errors.PermissionDeniedError(None, None, f"{path}; {e.strerror}") from None
    except OSError as e:
        raise errors.UnknownError(None, None, f"Failed to write checkpoint {path}: {e}") from None
    return None


@kernel("RestoreV2", devices=("CPU",), expensive=True)
def restore_v2(ctx: Any, prefix: Any, tensor_names: Any, shape_and_slices: Any) -> list[Any]:
    dts = ctx.attrs["dtypes"]
    names = _strings(tensor_names, "tensor_names", len(dts))
    specs = _strings(shape_and_slices, "shape_and_slices", len(dts))
    out = []
    with fmt.CheckpointReader(_prefix(prefix)) as reader:
        for name, spec, dt in zip(names, specs, dts):
            np_dt = object if dt.name == "string" else dt.as_numpy_dtype
            v = reader.read(name, spec, np_dt)
            if v.ndim == 0:
                out.append(v[()])
            else:
                # A fresh array nobody else holds: read-only, so Assign keeps it uncopied.
                v.flags.writeable = False
                out.append(v)
    return out


@kernel("MergeV2Checkpoints", devices=("CPU",), expensive=True)
def merge_v2_checkpoints(ctx: Any, checkpoint_prefixes: Any, destination_prefix: Any) -> None:
    sources = _strings(checkpoint_prefixes, "checkpoint_prefixes")
    if ctx.attrs["allow_missing_files"]:
        sources = [s for s in sources if fmt.checkpoint_exists(s)]
    dest = _prefix(destination_prefix)
    try:
        fmt.merge_checkpoints(sources, dest, ctx.attrs["delete_old_dirs"])
    except PermissionError as e:
        raise errors.PermissionDeniedError(None, None, f"{dest}; {e.strerror}") from None
    except OSError as e:
        raise errors.UnknownError(None, None, f"Failed to write checkpoint {dest}: {e}") from None
    return None


@kernel("ShardedFilename", devices=("CPU",))
def sharded_filename(ctx: Any, basename: Any, shard: Any, num_shards: Any) -> Any:
    return np.bytes_(f"{_prefix(basename)}-{int(shard):05d}-of-{int(num_shards):05d}".encode())


@kernel("StringJoin", devices=("CPU",))
def string_join(ctx: Any, *inputs: Any) -> Any:
    sep = ctx.attrs["separator"]
    sep = sep if isinstance(sep, bytes) else str(sep).encode()
    arrs = [np.asarray(x, dtype=object) for x in inputs]
    shape: tuple[int, ...] = ()
    for a in arrs:
        if a.ndim:
            if shape and a.shape != shape:
                raise errors.InvalidArgumentError(
                    None, None, f"Input shapes do not match: {list(shape)} vs. {list(a.shape)}"
                )
            shape = a.shape
    if not shape:
        return np.bytes_(sep.join(_b(a[()]) for a in arrs))
    flat = [np.broadcast_to(a, shape).ravel() for a in arrs]
    out = np.empty(int(np.prod(shape)), dtype=object)
    for i in range(out.size):
        out[i] = sep.join(_b(f[i]) for f in flat)
    return out.reshape(shape)


def _b(x: Any) -> bytes:
    return x if isinstance(x, bytes) else str(x).encode("utf-8")
