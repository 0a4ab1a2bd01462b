"""TensorFlow's `shape_and_slices` syntax for checkpoint slices: the string inputs of
SaveV2/RestoreV2 and a sharded variable's `save_slice_info`.

``""`` is the whole tensor; ``"10 4 0,5:-"`` is the full shape (10, 4) and the slice
rows 0..4, all columns: ``start,length`` or ``-`` per dimension.  Plain functions of
strings, used where the ops are built (static shapes) and by the checkpoint kernels.
`SaveSliceInfo` is where one shard sits in the tensor it is saved as part of; its
`spec` is TensorFlow's (``"10 4 4,3:0,4"``: every dimension as ``start,length``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flowlab import errors

__all__ = ["SaveSliceInfo", "Slice", "format_shape_and_slice", "parse_shape_and_slice"]

Slice = tuple[tuple[int, int], ...]  # (start, length) per dimension


def parse_shape_and_slice(spec: str | bytes) -> tuple[tuple[int, ...] | None, Slice | None]:
    """TensorFlow's ``shape_and_slices`` syntax -> (full shape, slice) or (None, None).

    ``"10 4 0,5:-"`` -> ((10, 4), ((0, 5), (0, 4)))."""
    if isinstance(spec, bytes):
        spec = spec.decode("utf-8")
    spec = spec.strip()
    if not spec:
        return None, None
    parts = spec.split(" ")
    try:
        full = tuple(int(p) for p in parts[:-1])
        dims = parts[-1].split(":") if parts[-1] else []
        if len(dims) != len(full) or any(d < 0 for d in full):
            raise ValueError
        sl = []
        for d, size in zip(dims, full):
            if d == "-":
                sl.append((0, size))
                continue
            start, length = (int(x) for x in d.split(","))
            if start < 0 or length < 0 or start + length > size:
                raise ValueError
            sl.append((start, length))
    except ValueError:
        raise errors.InvalidArgumentError(
            None, None, f"Invalid shape_and_slice spec '{spec}': expected '' or "
            "'<dim0> ... <dimN-1> <start>,<length>:...' with '-' for a whole dimension."
        ) from None
    return full, tuple(sl)


def format_shape_and_slice(full_shape: tuple[int, ...], sl: Slice) -> str:
    """The inverse of `parse_shape_and_slice`."""
    dims = ":".join(
        "-" if (s == 0 and n == size) else f"{s},{n}" for (s, n), size in zip(sl, full_shape)
    )
    return " ".join(str(d) for d in full_shape) + " " + dims


@dataclass
class SaveSliceInfo:
    """Where a variable sits in a larger (partitioned) tensor it is saved as part of
    (TensorFlow's `Variable.SaveSliceInfo`): set with `v._set_save_slice_info(...)`."""

    full_name: str
    full_shape: list[int]
    var_offset: list[int]
    var_shape: list[int]
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def spec(self) -> str:
        """The shape_and_slices string SaveV2/RestoreV2 get for this shard."""
        dims = ":".join(f"{o},{s}" for o, s in zip(self.var_offset, self.var_shape))
        return " ".join(str(d) for d in self.full_shape) + " " + dims
