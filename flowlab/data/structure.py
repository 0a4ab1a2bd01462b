"""The structure of a dataset's elements: a nested Python structure (tuples, lists,
dicts, namedtuples) of `TensorSpec` leaves, each a dtype and a static shape.

A dataset op sees only the flat list of components (`flatten`), in TensorFlow's
order (dict values by sorted key); the Python side packs them back (`pack`).
`output_types` and `output_shapes` (TensorFlow 1.x's names) are the same structure
with dtypes and TensorShapes as leaves.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor_shape import TensorShape, as_shape
from flowlab.ops import cond as _nest


class TensorSpec:
    """A component's dtype and static shape (`tf.TensorSpec`)."""

    __slots__ = ("dtype", "shape", "name")

    def __init__(self, shape: Any, dtype: Any = dtypes.float32, name: str | None = None) -> None:
        self.shape = as_shape(shape)
        self.dtype = dtypes.as_dtype(dtype).base_dtype
        self.name = name

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TensorSpec) and self.dtype == other.dtype
                and self.shape.as_list() == other.shape.as_list()
                if self.shape.ndims is not None and other.shape.ndims is not None
                else isinstance(other, TensorSpec) and self.dtype == other.dtype
                and self.shape.ndims == other.shape.ndims)

    def __hash__(self) -> int:
        return hash(self.dtype)

    def __repr__(self) -> str:
        return f"TensorSpec(shape={self.shape}, dtype={self.dtype!r}, name={self.name!r})"


class Structured:
    """TensorFlow 1.x's structure properties of a Dataset or an Iterator, from its
    `_structure` (a nest of TensorSpecs)."""

    _structure: Any

    @property
    def element_spec(self) -> Any:
        return self._structure

    @property
    def output_types(self) -> Any:
        return types_of(self._structure)

    @property
    def output_shapes(self) -> Any:
        return shapes_of(self._structure)

    @property
    def output_classes(self) -> Any:
        return classes_of(self._structure)


def flatten(structure: Any) -> list[Any]:
    return _nest.flatten(structure)


def pack(structure: Any, flat: list[Any]) -> Any:
    return _nest.pack_sequence_as(structure, list(flat))


def map_structure(fn: Any, structure: Any) -> Any:
    return pack(structure, [fn(x) for x in flatten(structure)])


def spec_of(t: Any) -> TensorSpec:
    return TensorSpec(t.shape, t.dtype.base_dtype)


def types_of(structure: Any) -> Any:
    return map_structure(lambda s: s.dtype, structure)


def shapes_of(structure: Any) -> Any:
    return map_structure(lambda s: s.shape, structure)


def classes_of(structure: Any) -> Any:
    from flowlab.graph.tensor import Tensor

    return map_structure(lambda s: Tensor, structure)


def shape_attrs(structure: Any) -> list[Any]:
    """The flat `output_shapes` attr (None for an unknown rank)."""
    return [None if s.shape.ndims is None else s.shape.as_list() for s in flatten(structure)]


def type_attrs(structure: Any) -> list[dtypes.DType]:
    return [s.dtype for s in flatten(structure)]


def from_types_and_shapes(output_types: Any, output_shapes: Any = None) -> Any:
    """A structure of TensorSpecs from TF1's (output_types, output_shapes) pair."""
    types_flat = flatten(output_types)
    if output_shapes is None:
        shapes_flat = [TensorShape(None)] * len(types_flat)
    else:
        shapes_flat = _flatten_shapes(output_types, output_shapes)
        if len(shapes_flat) != len(types_flat):
            raise ValueError(
                f"The two structures don't have the same number of elements. First structure: "
                f"{output_types}, second structure: {output_shapes}.")
    return pack(output_types, [TensorSpec(s, t) for t, s in zip(types_flat, shapes_flat)])


def _flatten_shapes(types: Any, shapes: Any) -> list[TensorShape]:
    """Shapes structured as `types`, where a shape may be a list of dims (not a nest)."""
    if isinstance(types, dict):
        return [s for k in sorted(types) for s in _flatten_shapes(types[k], shapes[k])]
    if isinstance(types, (list, tuple)):
        return [s for t, sh in zip(types, shapes) for s in _flatten_shapes(t, sh)]
    return [as_shape(shapes)]


def normalize(value: Any, name: str = "component") -> tuple[Any, list[Any]]:
    """(structure of tensors, flat tensors) for a user's nested value: leaves become
    tensors named `component_<i>` (TensorFlow's normalize_element); lists are
    converted as one tensor each (a list is a value, not a structure)."""
    from flowlab.ops.builder import convert_to_tensor

    def is_structure(x: Any) -> bool:
        return isinstance(x, (tuple, dict))

    leaves: list[Any] = []

    def walk(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: walk(x[k]) for k in x}
        if isinstance(x, tuple):
            items = [walk(v) for v in x]
            return type(x)(*items) if hasattr(x, "_fields") else tuple(items)
        leaves.append(x)
        return _Leaf(len(leaves) - 1)

    skeleton = walk(value) if is_structure(value) else walk(value)
    order = [leaf.i for leaf in flatten(skeleton)]
    tensors: dict[int, Any] = {}
    for pos, i in enumerate(order):
        tensors[i] = convert_to_tensor(leaves[i], name=f"{name}_{pos}")
    flat = [tensors[i] for i in order]
    return pack(skeleton, flat), flat


class _Leaf:
    __slots__ = ("i",)

    def __init__(self, i: int) -> None:
        self.i = i
