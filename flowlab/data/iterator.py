"""`tf.data` iterators in graph mode (TensorFlow 1.x's `tf.compat.v1.data.Iterator`).

An `Iterator` holds the `resource` handle of an iterator op and the element
structure.  `make_initializable_iterator(ds)` is IteratorV2 + MakeIterator (the
`initializer`, run again to start over); `Iterator.from_structure` is an IteratorV2
that any dataset of that structure can initialize (`make_initializer`, a
reinitializable iterator); `make_one_shot_iterator(ds)` starts by itself the first
time it runs.  `get_next()` is IteratorGetNext: each run gives the next element,
OutOfRangeError after the last.

    >>> it = tf.data.make_one_shot_iterator(tf.data.Dataset.range(3))
    >>> x = it.get_next()        # sess.run(x) -> 0, 1, 2, then OutOfRangeError
"""

from __future__ import annotations

from typing import Any

from flowlab.data import structure as st
from flowlab.graph import dtypes
from flowlab.graph.tensor import Tensor
from flowlab.ops.builder import apply_op

__all__ = ["Iterator", "make_one_shot_iterator", "make_initializable_iterator",
           "get_output_types", "get_output_shapes", "get_output_classes"]


class Iterator(st.Structured):
    """A handle to an iterator on a device and the structure of its elements."""

    def __init__(self, iterator_resource: Tensor, initializer: Any, structure: Any) -> None:
        self._iterator_resource = iterator_resource
        self._initializer = initializer
        self._structure = structure

    @staticmethod
    def from_structure(output_types: Any, output_shapes: Any = None, shared_name: str | None = None,
                       output_classes: Any = None) -> Iterator:
        """An uninitialized iterator for datasets of this structure
        (`make_initializer(ds)` starts it over `ds`)."""
        output_types = st.map_structure(dtypes.as_dtype, output_types)
        structure = st.from_types_and_shapes(output_types, output_shapes)
        handle = apply_op("IteratorV2", shared_name=shared_name or "", container="",
                          output_types=st.type_attrs(structure),
                          output_shapes=st.shape_attrs(structure), name="Iterator")
        return Iterator(handle, None, structure)

    @staticmethod
    def from_string_handle(string_handle: Any, output_types: Any, output_shapes: Any = None,
                           output_classes: Any = None) -> Iterator:
        """The iterator a string handle names, chosen at run time by feeding the handle
        (a feedable iterator): `sess.run(it.string_handle())` gives the handles."""
        from flowlab.ops.builder import convert_to_tensor

        output_types = st.map_structure(dtypes.as_dtype, output_types)
        structure = st.from_types_and_shapes(output_types, output_shapes)
        h = convert_to_tensor(string_handle, dtype=dtypes.string)
        handle = apply_op("IteratorFromStringHandleV2", string_handle=h,
                          output_types=st.type_attrs(structure),
                          output_shapes=st.shape_attrs(structure))
        return Iterator(handle, None, structure)

    @property
    def initializer(self) -> Any:
        if self._initializer is None:
            raise ValueError("The iterator does not have an initializer. This means it was "
                             "likely created using `tf.data.Dataset.make_one_shot_iterator()`. "
                             "For an initializable iterator, use "
                             "`tf.data.Dataset.make_initializable_iterator()` instead.")
        return self._initializer

    # --- ops ------------------------------------------------------------------------
    def make_initializer(self, dataset: Any, name: str | None = None) -> Any:
        """The op that starts this iterator over `dataset` (same structure)."""
        mine = st.flatten(self._structure)
        theirs = st.flatten(dataset._structure)
        if len(mine) != len(theirs) or _shape_of_structure(self._structure) != \
                _shape_of_structure(dataset._structure):
            raise TypeError(
                f"Expected output types {self.output_types} but got dataset with output types "
                f"{dataset.output_types}.")
        if [s.dtype for s in mine] != [s.dtype for s in theirs]:
            raise TypeError(
                f"Expected output types {self.output_types} but got dataset with output types "
                f"{dataset.output_types}.")
        for a, b in zip(mine, theirs):
            if not a.shape.is_compatible_with(b.shape):
                raise TypeError(
                    f"Expected output shapes compatible with {self.output_shapes} but got "
                    f"dataset with output shapes {dataset.output_shapes}.")
        return apply_op("MakeIterator", dataset=dataset._variant_tensor,
                        iterator=self._iterator_resource, name=name or "MakeIterator")

    def get_next(self, name: str | None = None) -> Any:
        """The next element (IteratorGetNext): a nested structure of tensors."""
        outs = apply_op("IteratorGetNext", iterator=self._iterator_resource,
                        output_types=st.type_attrs(self._structure),
                        output_shapes=st.shape_attrs(self._structure),
                        name=name or "IteratorGetNext")
        if not isinstance(outs, list):
            outs = [outs]
        return st.pack(self._structure, outs)

    def string_handle(self, name: str | None = None) -> Tensor:
        return apply_op("IteratorToStringHandle",  # type: ignore[no-any-return]
                        resource_handle=self._iterator_resource,
                        name=name or "IteratorToStringHandle")


def _shape_of_structure(s: Any) -> Any:
    return st.map_structure(lambda _: 0, s)


def _check_no_placeholder(dataset: Any) -> None:
    """TensorFlow refuses a one-shot iterator whose dataset depends on a placeholder
    (it captures the dataset's inputs by value into a function)."""
    seen: set[int] = set()
    stack = [dataset._variant_tensor.op]
    while stack:
        op = stack.pop()
        if id(op) in seen:
            continue
        seen.add(id(op))
        if op.type in ("Placeholder", "PlaceholderWithDefault"):
            raise ValueError(
                f"Cannot capture a placeholder (name:{op.name}, type:{op.type}) by value.")
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)


def make_one_shot_iterator(dataset: Any) -> Iterator:
    """An iterator that starts over `dataset` by itself (`tf.data.make_one_shot_iterator`)."""
    _check_no_placeholder(dataset)
    s = dataset._structure
    handle = apply_op("OneShotIterator", dataset=dataset._variant_tensor,
                      output_types=st.type_attrs(s), output_shapes=st.shape_attrs(s),
                      name="OneShotIterator")
    it = Iterator(handle, None, s)
    it.string_handle()  # TensorFlow's builders make one too (same graph, same names)
    return it


def make_initializable_iterator(dataset: Any, shared_name: str | None = None) -> Iterator:
    """An iterator whose `initializer` (re)starts it over `dataset`."""
    s = dataset._structure
    handle = apply_op("IteratorV2", shared_name=shared_name or "", container="",
                      output_types=st.type_attrs(s), output_shapes=st.shape_attrs(s),
                      name="IteratorV2")
    init = apply_op("MakeIterator", dataset=dataset._variant_tensor, iterator=handle,
                    name="MakeIterator")
    it = Iterator(handle, init, s)
    it.string_handle()  # as TensorFlow's builder
    return it


def get_output_types(dataset_or_iterator: Any) -> Any:
    return dataset_or_iterator.output_types


def get_output_shapes(dataset_or_iterator: Any) -> Any:
    return dataset_or_iterator.output_shapes


def get_output_classes(dataset_or_iterator: Any) -> Any:
    return dataset_or_iterator.output_classes
