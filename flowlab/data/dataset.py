"""`tf.data.Dataset` in graph mode (TensorFlow 1.x's `tf.compat.v1.data.Dataset`).

A `Dataset` is a Python object holding one tensor, the `variant` output of a
dataset op (flowlab.ops.dataset_ops), and the structure of its elements
(flowlab.data.structure).  Each method builds one more op whose first input is this
dataset's variant, with the op types, input names and static shapes TensorFlow
builds (`Dataset.range(10).batch(4)` is RangeDataset -> BatchDatasetV2 with inputs
"batch_size" and "drop_remainder").  Functions are traced once into a function
graph (flowlab.data.function).  Elements are read only through an iterator
(flowlab.data.iterator).

    >>> ds = Dataset.from_tensor_slices(([1, 2, 3], [4., 5., 6.])).map(lambda a, b: a * 2)
    >>> ds.output_types, ds.output_shapes
    (tf.int32, TensorShape([]))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from flowlab.data import structure as st
from flowlab.data.function import DatasetFunction, trace
from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Tensor
from flowlab.graph.tensor_shape import TensorShape, as_shape
from flowlab.kernels.dataset_kernels import register_generator
from flowlab.kernels.dataset_values import AUTOTUNE
from flowlab.ops import dataset_ops as _dataset_ops  # noqa: F401  (declares the ops)
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.const_fold import constant_value

__all__ = ["Dataset", "TextLineDataset", "TFRecordDataset", "AUTOTUNE"]


def _int64(value: Any, name: str) -> Tensor:
    return convert_to_tensor(value, dtype=dtypes.int64, name=name)


def _static_int(t: Tensor) -> int | None:
    v = constant_value(t)
    return None if v is None else int(v)


class Dataset(st.Structured):
    """A sequence of elements; each method returns a new dataset (a new op)."""

    def __init__(self, variant: Tensor, structure: Any) -> None:
        self._variant_tensor = variant
        self._structure = structure

    def _out_attrs(self, structure: Any = None) -> dict[str, Any]:
        s = self._structure if structure is None else structure
        return {"output_types": st.type_attrs(s), "output_shapes": st.shape_attrs(s)}

    def _unary(self, op_type: str, structure: Any = None, **inputs: Any) -> Dataset:
        s = self._structure if structure is None else structure
        v = apply_op(op_type, input_dataset=self._variant_tensor, **inputs, **self._out_attrs(s))
        return Dataset(v, s)

    def __iter__(self) -> Any:
        raise RuntimeError(
            "`tf.data.Dataset` only supports Python-style iteration in eager mode or within "
            "tf.function.")

    def __repr__(self) -> str:
        return f"<Dataset element_spec={self._structure}>"

    # --- sources ----------------------------------------------------------------
    @staticmethod
    def from_tensors(tensors: Any, name: str | None = None) -> Dataset:
        """A dataset of one element, `tensors` (any nested structure)."""
        with get_default_graph().name_scope("normalize_element"):
            packed, flat = st.normalize(tensors)
        structure = st.map_structure(st.spec_of, packed)
        v = apply_op("TensorDataset", components=flat, output_shapes=st.shape_attrs(structure),
                     name="TensorDataset")
        return Dataset(v, structure)

    @staticmethod
    def from_tensor_slices(tensors: Any, name: str | None = None) -> Dataset:
        """A dataset of the slices of `tensors` along their first dimension."""
        with get_default_graph().name_scope("normalize_element"):
            packed, flat = st.normalize(tensors)
        if not flat:
            raise ValueError("Invalid `element`. `element` should not be empty.")
        first = None
        for t in flat:
            s = t.shape.with_rank_at_least(1)
            d = s[0].value if s.ndims is not None else None
            if first is None:
                first = d
            elif d is not None and first is not None and d != first:
                raise ValueError(
                    f"Dimensions {first} and {d} are not compatible")
        structure = st.map_structure(lambda t: st.TensorSpec(t.shape[1:], t.dtype), packed)
        v = apply_op("TensorSliceDataset", components=flat,
                     output_shapes=st.shape_attrs(structure), name="TensorSliceDataset")
        return Dataset(v, structure)

    @staticmethod
    def list_files(file_pattern: Any, shuffle: Any = None, seed: Any = None,
                   name: str | None = None) -> Dataset:
        """The file names matching `file_pattern` (a glob or a list of globs), shuffled
        unless `shuffle=False`; an InvalidArgumentError when iterated if nothing matched.
        The ops TensorFlow builds, under its name scope `list_files`."""
        from flowlab.ops import array_ops, check_ops, core_ops, io_ops, math_ops, string_ops

        g = get_default_graph()
        with g.name_scope("list_files"):
            shuffle = True if shuffle is None else shuffle
            pattern = convert_to_tensor(file_pattern, dtype=dtypes.string, name="file_pattern")
            matching = io_ops.matching_files(pattern)
            condition = math_ops.greater(array_ops.shape(matching)[0], 0, name="match_not_empty")
            message = math_ops.add("No files matched pattern: ",
                                   string_ops.reduce_join(pattern, separator=", "), name="message")
            assert_not_empty = check_ops.Assert(condition, [message], summarize=1, name="assert_not_empty")
            with g.control_dependencies([assert_not_empty]):
                matching = core_ops.identity(matching)
            structure = st.TensorSpec(TensorShape([]), dtypes.string)
            v = apply_op("TensorSliceDataset", components=[matching], is_files=True,
                         output_shapes=st.shape_attrs(structure), name="TensorSliceDataset")
            dataset = Dataset(v, structure)
            if shuffle:
                buffer_size = math_ops.maximum(array_ops.shape(matching, out_type=dtypes.int64)[0], 1)
                dataset = dataset.shuffle(buffer_size, seed=seed)
            return dataset

    @staticmethod
    def range(*args: Any, output_type: Any = dtypes.int64, name: str | None = None) -> Dataset:
        """`Dataset.range(stop)`, `range(start, stop)`, `range(start, stop, step)`."""
        if not 1 <= len(args) <= 3:
            raise ValueError(f"Invalid `args`. The length of `args` should be between 1 and 3 "
                             f"but was {len(args)}.")
        start, stop, step = ((0, args[0], 1) if len(args) == 1 else
                             (args[0], args[1], 1) if len(args) == 2 else args)
        ts = [_int64(start, "start"), _int64(stop, "stop"), _int64(step, "step")]
        structure = st.TensorSpec([], output_type)
        v = apply_op("RangeDataset", start=ts[0], stop=ts[1], step=ts[2],
                     output_types=[structure.dtype], output_shapes=[[]], name="RangeDataset")
        return Dataset(v, structure)

    @staticmethod
    def zip(datasets: Any, name: str | None = None) -> Dataset:
        """Elements of several datasets side by side (a nested structure of datasets)."""
        flat = st.flatten(datasets)
        for d in flat:
            if not isinstance(d, Dataset):
                raise TypeError(f"Invalid `datasets`. `datasets` must be a nested structure "
                                f"of `tf.data.Dataset` objects, but got {type(d).__name__}.")
        structure = st.pack(datasets, [d._structure for d in flat])
        v = apply_op("ZipDataset", input_datasets=[d._variant_tensor for d in flat],
                     output_types=st.type_attrs(structure),
                     output_shapes=st.shape_attrs(structure), name="ZipDataset")
        return Dataset(v, structure)

    @staticmethod
    def from_generator(generator: Callable[..., Any], output_types: Any, output_shapes: Any = None,
                       args: Any = None, output_signature: Any = None,
                       name: str | None = None) -> Dataset:
        """The values a Python generator yields, converted to `output_types` and checked
        against `output_shapes`; `generator(*args)` is called once per pass."""
        if not callable(generator):
            raise TypeError("`generator` must be a Python callable.")
        if output_signature is not None:
            structure = output_signature
        else:
            if output_types is None:
                raise TypeError("The `output_types` argument can not be None.")
            output_types = st.map_structure(dtypes.as_dtype, output_types)
            structure = st.from_types_and_shapes(output_types, output_shapes)
        flat_specs = st.flatten(structure)
        call_args = tuple(args) if args is not None else ()

        def convert(value: Any) -> tuple[Any, ...]:
            return _convert_generated(value, structure, flat_specs)

        def make() -> Any:
            return (convert(v) for v in generator(*call_args))

        v = apply_op("GeneratorDataset", token=register_generator(make),
                     output_types=st.type_attrs(structure),
                     output_shapes=st.shape_attrs(structure), name="GeneratorDataset")
        return Dataset(v, structure)

    def concatenate(self, dataset: Dataset, name: str | None = None) -> Dataset:
        """This dataset's elements, then `dataset`'s (same types and nesting; shapes
        become the most specific shape both fit)."""
        mine, theirs = st.flatten(self._structure), st.flatten(dataset._structure)
        if (st.map_structure(lambda _: 0, self._structure)
                != st.map_structure(lambda _: 0, dataset._structure)
                or [s.dtype for s in mine] != [s.dtype for s in theirs]):
            raise TypeError(
                f"Incompatible dataset elements:\n  {self._structure} vs.\n  "
                f"{dataset._structure}")
        flat = [st.TensorSpec(_most_specific(a.shape, b.shape), a.dtype)
                for a, b in zip(mine, theirs)]
        structure = st.pack(self._structure, flat)
        v = apply_op("ConcatenateDataset", input_dataset=self._variant_tensor,
                     another_dataset=dataset._variant_tensor, **self._out_attrs(structure))
        return Dataset(v, structure)

    def apply(self, transformation_func: Callable[[Dataset], Dataset]) -> Dataset:
        """`transformation_func(self)`, which must return a Dataset."""
        out = transformation_func(self)
        if not isinstance(out, Dataset):
            raise TypeError("`transformation_func` must return a `tf.data.Dataset` object. "
                            f"Got {type(out).__name__}.")
        return out

    # --- functions --------------------------------------------------------------
    def _trace(self, fn: Callable[..., Any], kind: str) -> DatasetFunction:
        if not callable(fn):
            raise TypeError(f"`{kind}` must be callable.")
        return trace(fn, self._structure, kind)

    def _fn_inputs(self, f: DatasetFunction) -> dict[str, Any]:
        captured = f.captured
        return {"other_arguments": captured,
                "Targuments": [t.dtype.base_dtype for t in captured]}

    def map(self, map_func: Callable[..., Any], num_parallel_calls: Any = None,
            deterministic: Any = None, name: str | None = None) -> Dataset:
        """`map_func` applied to each element (tuple elements as separate arguments)."""
        f = self._trace(map_func, "map_func")
        if isinstance(f.structure, Dataset):
            raise TypeError("`map_func` returned a dataset: use flat_map or interleave.")
        structure = st.map_structure(st.spec_of, f.structure)
        attrs = self._out_attrs(structure)
        if num_parallel_calls is None:
            v = apply_op("MapDataset", input_dataset=self._variant_tensor, f=f,
                         preserve_cardinality=True, **self._fn_inputs(f), **attrs)
        else:
            n = _int64(num_parallel_calls, "num_parallel_calls")
            v = apply_op("ParallelMapDatasetV2", input_dataset=self._variant_tensor, f=f,
                         num_parallel_calls=n, preserve_cardinality=True,
                         deterministic="default" if deterministic is None else
                         ("true" if deterministic else "false"),
                         **self._fn_inputs(f), **attrs)
        return Dataset(v, structure)

    def filter(self, predicate: Callable[..., Any], name: str | None = None) -> Dataset:
        """The elements for which `predicate` returns a scalar True."""
        f = self._trace(predicate, "predicate")
        out = f.outputs
        if (len(out) != 1 or not isinstance(out[0], Tensor) or out[0].dtype.base_dtype != dtypes.bool
                or out[0].shape.ndims not in (0, None)):
            got = st.map_structure(st.spec_of, f.structure) if not isinstance(f.structure, Dataset) \
                else f.structure
            raise ValueError(f"Invalid `predicate`. `predicate` must return a `tf.bool` scalar "
                             f"tensor, but its return type is {got}.")
        v = apply_op("FilterDataset", input_dataset=self._variant_tensor, predicate=f,
                     **self._fn_inputs(f), **self._out_attrs())
        return Dataset(v, self._structure)

    def _dataset_fn(self, map_func: Callable[..., Any]) -> DatasetFunction:
        f = self._trace(map_func, "map_func")
        if not isinstance(f.structure, Dataset):
            raise TypeError(f"`map_func` must return a `Dataset` object. Got "
                            f"{type(f.structure).__name__}.")
        return f

    def flat_map(self, map_func: Callable[..., Any], name: str | None = None) -> Dataset:
        """The datasets `map_func` returns for each element, one after another."""
        f = self._dataset_fn(map_func)
        structure = f.structure._structure
        v = apply_op("FlatMapDataset", input_dataset=self._variant_tensor, f=f,
                     **self._fn_inputs(f), **self._out_attrs(structure))
        return Dataset(v, structure)

    def interleave(self, map_func: Callable[..., Any], cycle_length: Any = None,
                   block_length: Any = None, num_parallel_calls: Any = None,
                   deterministic: Any = None, name: str | None = None) -> Dataset:
        """Elements of `cycle_length` datasets from `map_func`, `block_length` at a time
        (cycle_length None: AUTOTUNE, the number of CPUs)."""
        f = self._dataset_fn(map_func)
        structure = f.structure._structure
        cycle = _int64(AUTOTUNE if cycle_length is None else cycle_length, "cycle_length")
        block = _int64(1 if block_length is None else block_length, "block_length")
        v = apply_op("InterleaveDataset", input_dataset=self._variant_tensor, f=f,
                     cycle_length=cycle, block_length=block, **self._fn_inputs(f),
                     **self._out_attrs(structure))
        return Dataset(v, structure)

    # --- batching ---------------------------------------------------------------
    def batch(self, batch_size: Any, drop_remainder: bool = False,
              num_parallel_calls: Any = None, deterministic: Any = None,
              name: str | None = None) -> Dataset:
        """Consecutive elements stacked along a new first dimension."""
        size = _int64(batch_size, "batch_size")
        drop = convert_to_tensor(drop_remainder, dtype=dtypes.bool, name="drop_remainder")
        dim = _static_int(size) if constant_value(drop) else None
        structure = st.map_structure(
            lambda s: st.TensorSpec(TensorShape([dim]).concatenate(s.shape), s.dtype),
            self._structure)
        return self._unary("BatchDatasetV2", structure, batch_size=size, drop_remainder=drop)

    def padded_batch(self, batch_size: Any, padded_shapes: Any = None, padding_values: Any = None,
                     drop_remainder: bool = False, name: str | None = None) -> Dataset:
        """Elements padded to `padded_shapes` (None or -1 dims: the batch's largest) with
        `padding_values` (default 0, b"" for strings), then stacked."""
        flat = st.flatten(self._structure)
        if padded_shapes is None:
            for s in flat:
                if s.shape.ndims is None:
                    raise ValueError("You must provide `padded_shapes` argument because "
                                     "component has unknown rank.")
            shapes_flat = [s.shape for s in flat]  # unknown dims: the batch's largest
        else:
            shapes_flat = st._flatten_shapes(self._structure if not isinstance(
                self._structure, st.TensorSpec) else 0, padded_shapes) if not isinstance(
                self._structure, st.TensorSpec) else [as_shape(padded_shapes)]
        if padding_values is None:
            values_flat: list[Any] = [None] * len(flat)
        else:
            values_flat = st.flatten(padding_values) if not isinstance(
                self._structure, st.TensorSpec) else [padding_values]
        size = _int64(batch_size, "batch_size")
        shape_ts, value_ts = [], []
        for spec, want in zip(flat, shapes_flat):
            if spec.shape.ndims is not None and want.ndims != spec.shape.ndims:
                raise ValueError(
                    f"The padded shape {want} is not compatible with the shape {spec.shape} of "
                    f"the corresponding input component.")
            if spec.shape.ndims is not None and not want.is_compatible_with(spec.shape) and \
                    any(w is not None and s is not None and w < s
                        for w, s in zip(want.as_list(), spec.shape.as_list())):
                raise ValueError(
                    f"The padded shape {want} is not compatible with the shape {spec.shape} of "
                    f"the corresponding input component.")
            dims = [-1 if d is None else d for d in want.as_list()]
            shape_ts.append(convert_to_tensor(np.array(dims, dtype=np.int64), dtype=dtypes.int64))
        for i, spec in enumerate(flat):  # after every shape, as TensorFlow names them
            pv = values_flat[i]
            if pv is None:
                pv = b"" if spec.dtype == dtypes.string else np.zeros((), spec.dtype.as_numpy_dtype)
            value_ts.append(convert_to_tensor(pv, dtype=spec.dtype, name="padding_value"))
        drop = convert_to_tensor(drop_remainder, dtype=dtypes.bool, name="drop_remainder")
        dim = _static_int(size) if constant_value(drop) else None
        out_flat = [st.TensorSpec(TensorShape([dim]).concatenate(w), s.dtype)
                    for s, w in zip(flat, shapes_flat)]
        structure = st.pack(self._structure, out_flat)
        v = apply_op("PaddedBatchDatasetV2", input_dataset=self._variant_tensor, batch_size=size,
                     padded_shapes=shape_ts, padding_values=value_ts, drop_remainder=drop,
                     output_shapes=st.shape_attrs(structure))
        return Dataset(v, structure)

    def unbatch(self, name: str | None = None) -> Dataset:
        """The slices of each element along its first dimension."""
        for s in st.flatten(self._structure):
            if s.shape.ndims == 0:
                raise ValueError("Cannot unbatch an input with scalar components.")
        structure = st.map_structure(lambda s: st.TensorSpec(
            s.shape[1:] if s.shape.ndims is not None else TensorShape(None), s.dtype),
            self._structure)
        return self._unary("UnbatchDataset", structure)

    # --- order and amount -------------------------------------------------------
    def shuffle(self, buffer_size: Any, seed: Any = None, reshuffle_each_iteration: Any = None,
                name: str | None = None) -> Dataset:
        """Elements drawn at random from a buffer of `buffer_size` (TensorFlow's order
        for the same seeds)."""
        size = _int64(buffer_size, "buffer_size")
        seed_t, seed2_t = _dataset_seeds(seed)
        reshuffle = True if reshuffle_each_iteration is None else bool(reshuffle_each_iteration)
        v = apply_op("ShuffleDataset", input_dataset=self._variant_tensor, buffer_size=size,
                     seed=seed_t, seed2=seed2_t, reshuffle_each_iteration=reshuffle,
                     **self._out_attrs())
        return Dataset(v, self._structure)

    def repeat(self, count: Any = None, name: str | None = None) -> Dataset:
        """The dataset `count` times (None or -1: forever)."""
        return self._unary("RepeatDataset", count=_int64(-1 if count is None else count, "count"))

    def prefetch(self, buffer_size: Any, name: str | None = None) -> Dataset:
        """Elements produced ahead, on a background thread, up to `buffer_size`."""
        return self._unary("PrefetchDataset", buffer_size=_int64(buffer_size, "buffer_size"))

    def take(self, count: Any, name: str | None = None) -> Dataset:
        return self._unary("TakeDataset", count=_int64(count, "count"))

    def skip(self, count: Any, name: str | None = None) -> Dataset:
        return self._unary("SkipDataset", count=_int64(count, "count"))

    def cache(self, filename: str = "", name: str | None = None) -> Dataset:
        """The first pass is kept in memory and replayed (files: not supported)."""
        return self._unary("CacheDataset",
                           filename=convert_to_tensor(filename, dtype=dtypes.string,
                                                      name="filename"))

    # --- iterators (TensorFlow 1.x) -----------------------------------------------
    def make_one_shot_iterator(self) -> Any:
        from flowlab.data.iterator import make_one_shot_iterator

        return make_one_shot_iterator(self)

    def make_initializable_iterator(self, shared_name: str | None = None) -> Any:
        from flowlab.data.iterator import make_initializable_iterator

        return make_initializable_iterator(self, shared_name)


def _most_specific(a: TensorShape, b: TensorShape) -> TensorShape:
    """The shape both elements fit: dims equal in both are kept, others unknown."""
    if a.ndims is None or b.ndims is None or a.ndims != b.ndims:
        return TensorShape(None)
    return TensorShape([x if x == y else None for x, y in zip(a.as_list(), b.as_list())])


def _dataset_seeds(seed: Any) -> tuple[Tensor, Tensor]:
    """The (seed, seed2) int64 inputs of a random dataset op, built as TensorFlow's
    tf.data random_seed.get_seed builds them: a given seed2 goes through
    `where(seed == 0 and seed2 == 0, 2**31 - 1, seed2)` (never the "random" pair)."""
    from flowlab.ops.array_ops import where_v2
    from flowlab.ops.math_ops import equal, logical_and
    from flowlab.ops.random_ops import get_seed

    s1, s2 = get_seed(seed)
    seed_t = _int64(0 if s1 is None else s1, "seed")
    if s2 is None:
        return seed_t, _int64(0, "seed2")
    with get_default_graph().name_scope("seed2") as scope:
        s2_t = convert_to_tensor(s2, dtype=dtypes.int64)
        cond = logical_and(equal(seed_t, 0), equal(s2_t, 0))
        return seed_t, where_v2(cond, convert_to_tensor(2**31 - 1, dtype=dtypes.int64), s2_t,
                                name=scope)


def _convert_generated(value: Any, structure: Any, flat_specs: list[Any]) -> tuple[Any, ...]:
    from flowlab import errors

    if isinstance(structure, st.TensorSpec):
        leaves = [value]
    else:
        if not isinstance(value, (tuple, dict, list)):
            raise errors.InvalidArgumentError(
                None, None, "`generator` yielded an element that did not match the expected "
                f"structure. The expected structure was {st.types_of(structure)}, but the "
                f"yielded element was {value}.")
        leaves = _flatten_up_to(structure, value)
        if leaves is None or len(leaves) != len(flat_specs):
            raise errors.InvalidArgumentError(
                None, None, "`generator` yielded an element that did not match the expected "
                f"structure. The expected structure was {st.types_of(structure)}, but the "
                f"yielded element was {value}.")
    out = []
    for v, spec in zip(leaves, flat_specs):
        want = spec.dtype.as_numpy_dtype
        try:
            arr = np.asarray(v, dtype=object if spec.dtype == dtypes.string else None)
            if spec.dtype == dtypes.string:
                arr = np.vectorize(lambda s: s.encode() if isinstance(s, str) else s,
                                   otypes=[object])(arr) if arr.size else arr
            else:
                if arr.dtype.kind in "fc" and np.dtype(want).kind in "iub":
                    raise TypeError
                arr = arr.astype(want)
        except (TypeError, ValueError):
            raise errors.InvalidArgumentError(
                None, None, f"TypeError: `generator` yielded an element that could not be "
                f"converted to the expected type. The expected type was {spec.dtype.name}, but "
                f"the yielded element was {v}.") from None
        if spec.shape.ndims is not None and not TensorShape(arr.shape).is_compatible_with(spec.shape):
            raise errors.InvalidArgumentError(
                None, None, f"`generator` yielded an element of shape {list(arr.shape)} where "
                f"an element of shape {spec.shape} was expected.")
        out.append(arr)
    return tuple(out)


def _flatten_up_to(structure: Any, value: Any) -> list[Any] | None:
    """`value`'s leaves where `structure` has leaves (a leaf may be a list); None when
    the two do not fit."""
    if isinstance(structure, st.TensorSpec):
        return [value]
    if isinstance(structure, dict):
        if not isinstance(value, dict) or set(value) != set(structure):
            return None
        parts = [_flatten_up_to(structure[k], value[k]) for k in sorted(structure)]
    else:
        if not isinstance(value, (tuple, list)) or len(value) != len(structure):
            return None
        parts = [_flatten_up_to(s, v) for s, v in zip(structure, value)]
    if any(p is None for p in parts):
        return None
    return [x for p in parts for x in p]  # type: ignore[union-attr]


class TextLineDataset(Dataset):
    """The lines of text files (`tf.data.TextLineDataset`), without line ends."""

    def __init__(self, filenames: Any, compression_type: Any = None, buffer_size: Any = None,
                 num_parallel_reads: Any = None, name: str | None = None) -> None:
        v = _file_dataset("TextLineDataset", filenames, compression_type, buffer_size)
        super().__init__(v, st.TensorSpec([], dtypes.string))


class TFRecordDataset(Dataset):
    """The records of TFRecord files (`tf.data.TFRecordDataset`)."""

    def __init__(self, filenames: Any, compression_type: Any = None, buffer_size: Any = None,
                 num_parallel_reads: Any = None, name: str | None = None) -> None:
        v = _file_dataset("TFRecordDataset", filenames, compression_type, buffer_size)
        super().__init__(v, st.TensorSpec([], dtypes.string))


class FixedLengthRecordDataset(Dataset):
    """Records of `record_bytes` bytes from files, after `header_bytes` and before
    `footer_bytes` (`tf.data.FixedLengthRecordDataset`)."""

    def __init__(self, filenames: Any, record_bytes: Any, header_bytes: Any = None,
                 footer_bytes: Any = None, buffer_size: Any = None, compression_type: Any = None,
                 num_parallel_reads: Any = None, name: str | None = None) -> None:
        names = convert_to_tensor(filenames, dtype=dtypes.string, name="filenames")
        comp = convert_to_tensor("" if compression_type is None else compression_type,
                                 dtype=dtypes.string, name="compression_type")
        v = apply_op(
            "FixedLengthRecordDatasetV2", filenames=names,
            header_bytes=_int64(0 if header_bytes is None else header_bytes, "header_bytes"),
            record_bytes=_int64(record_bytes, "record_bytes"),
            footer_bytes=_int64(0 if footer_bytes is None else footer_bytes, "footer_bytes"),
            buffer_size=_int64(256 * 1024 if buffer_size is None else buffer_size, "buffer_size"),
            compression_type=comp, name="FixedLengthRecordDataset")
        super().__init__(v, st.TensorSpec([], dtypes.string))


def _file_dataset(op_type: str, filenames: Any, compression_type: Any, buffer_size: Any) -> Tensor:
    if isinstance(filenames, Dataset):
        raise TypeError("flowlab's file datasets take file names as a string tensor, not a "
                        "dataset of names.")
    names = convert_to_tensor(filenames, dtype=dtypes.string, name="filenames")
    if names.shape.ndims not in (None, 0, 1):
        raise TypeError("`filenames` must be a `tf.Tensor` of dtype `tf.string` with rank 0 "
                        "or 1.")
    comp = convert_to_tensor("" if compression_type is None else compression_type,
                             dtype=dtypes.string, name="compression_type")
    buf = _int64(256 * 1024 if buffer_size is None else buffer_size, "buffer_size")
    return apply_op(op_type, filenames=names, compression_type=comp,  # type: ignore[no-any-return]
                    buffer_size=buf, name=op_type)
