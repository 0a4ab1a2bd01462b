"""`tf.data` ops: datasets and iterators as nodes of the dataflow graph.

A dataset op (`TensorSliceDataset`, `MapDataset`, `BatchDatasetV2`, ...) outputs a
scalar `variant`: at run time, an immutable description of a sequence of elements
(flowlab.kernels.dataset_kernels).  Transformations take their input dataset's
variant as their first input, so a pipeline is a chain of ops that placement puts
on a CPU like any op and that the pictures show.  Nothing is read or computed when a
dataset op runs; elements are produced when an iterator pulls them.

An iterator op (`IteratorV2`) outputs a `resource` handle to an iterator living in
its device's resource manager, as a queue does (flowlab.ops.data_flow_ops);
`MakeIterator` points it at a dataset (the initializer), `IteratorGetNext` pulls
one element (OutOfRangeError at the end).  `OneShotIterator` takes the dataset's
variant as an input and starts from it the first time it runs (TensorFlow's takes a
function that builds the dataset; see docs/notes/tf-data.md).

Functions (`map`'s, `filter`'s predicate, `flat_map`'s, `interleave`'s) are `func`
attrs holding a traced function graph (flowlab.data.function); the tensors they
capture from the outer graph are the `other_arguments` inputs, as in TensorFlow.
Every op here is stateful so that no graph pass folds or merges it.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def

__all__: list[str] = []

_OUT = ["output_types: list(type) >= 1", "output_shapes: list(shape) >= 1"]
_META = "metadata: string = ''"


def _scalar(op: Any) -> list[Any]:
    return [TensorShape([])]


def _components(op: Any) -> list[Any]:
    return [TensorShape(s) if s is not None else TensorShape(None)
            for s in op.get_attr("output_shapes")]


def _dataset(name: str, inputs: list[str], attrs: list[str], doc: str) -> None:
    op_def(name, inputs=inputs, outputs=["handle: variant"], attrs=attrs, shape_fn=_scalar,
           stateful=True, doc=doc)
    not_differentiable(name)


# --- sources ----------------------------------------------------------------------
_dataset("TensorDataset", ["components: Toutput_types"],
         ["Toutput_types: list(type) >= 1", "output_shapes: list(shape) >= 1", _META],
         "A dataset of one element: the components.")
_dataset("TensorSliceDataset", ["components: Toutput_types"],
         ["Toutput_types: list(type) >= 1", "output_shapes: list(shape) >= 1",
          "is_files: bool = false", _META, "replicate_on_split: bool = false"],
         "A dataset of the slices of the components along their first dimension.")
_dataset("RangeDataset", ["start: int64", "stop: int64", "step: int64"],
         [*_OUT, _META, "replicate_on_split: bool = false"],
         "A dataset of start, start + step, ... up to (excluding) stop.")
_dataset("ZipDataset", ["input_datasets: N * variant"], [*_OUT, "N: int >= 1", _META],
         "A dataset of tuples, one element of each input; ends with the shortest.")
_dataset("TextLineDataset", ["filenames: string", "compression_type: string", "buffer_size: int64"],
         [_META], "The lines of text files, without their line ends.")
_dataset("TFRecordDataset", ["filenames: string", "compression_type: string", "buffer_size: int64"],
         [_META], "The records of TFRecord files, lengths and CRCs checked.")
_dataset("FixedLengthRecordDatasetV2",
         ["filenames: string", "header_bytes: int64", "record_bytes: int64",
          "footer_bytes: int64", "buffer_size: int64", "compression_type: string"],
         [_META], "The fixed-length records of files, between a header and a footer.")
_dataset("ConcatenateDataset", ["input_dataset: variant", "another_dataset: variant"],
         [*_OUT, _META], "The elements of the first dataset, then those of the second.")
_dataset("GeneratorDataset", [], [*_OUT, "token: string", _META],
         "The elements a Python generator yields (the callable is found by `token` in "
         "this process's registry, as py_func's are).")

# --- transformations --------------------------------------------------------------
_FN = ["f: func", "Targuments: list(type) >= 0", *_OUT]
_dataset("MapDataset", ["input_dataset: variant", "other_arguments: Targuments"],
         [*_FN, "use_inter_op_parallelism: bool = true", "preserve_cardinality: bool = false",
          "force_synchronous: bool = false", _META],
         "`f` applied to each element.")
_dataset("ParallelMapDatasetV2",
         ["input_dataset: variant", "other_arguments: Targuments", "num_parallel_calls: int64"],
         [*_FN, "use_inter_op_parallelism: bool = true", "deterministic: string = 'default'",
          "preserve_cardinality: bool = false", _META],
         "`f` applied to each element, up to num_parallel_calls at a time, in order.")
_dataset("FilterDataset", ["input_dataset: variant", "other_arguments: Targuments"],
         ["predicate: func", "Targuments: list(type) >= 0", *_OUT, _META],
         "The elements for which the predicate is true.")
_dataset("FlatMapDataset", ["input_dataset: variant", "other_arguments: Targuments"],
         [*_FN, _META], "The concatenation of the datasets `f` makes of each element.")
_dataset("InterleaveDataset",
         ["input_dataset: variant", "other_arguments: Targuments", "cycle_length: int64",
          "block_length: int64"],
         [*_FN, _META],
         "Elements of `cycle_length` of the datasets `f` makes, `block_length` at a time.")
_dataset("BatchDatasetV2", ["input_dataset: variant", "batch_size: int64", "drop_remainder: bool"],
         ["parallel_copy: bool = false", *_OUT, _META],
         "Consecutive elements stacked along a new first dimension.")
_dataset("PaddedBatchDatasetV2",
         ["input_dataset: variant", "batch_size: int64", "padded_shapes: N * int64",
          "padding_values: Toutput_types", "drop_remainder: bool"],
         ["parallel_copy: bool = false", "Toutput_types: list(type) >= 1",
          "output_shapes: list(shape) >= 1", "N: int >= 1", _META],
         "Consecutive elements padded to a common shape, then stacked.")
_dataset("UnbatchDataset", ["input_dataset: variant"], [*_OUT, _META],
         "The slices of each element along its first dimension.")
_dataset("ShuffleDataset", ["input_dataset: variant", "buffer_size: int64", "seed: int64",
                            "seed2: int64"],
         ["reshuffle_each_iteration: bool = true", *_OUT, _META],
         "Elements drawn at random from a buffer of buffer_size (TensorFlow's order).")
_dataset("RepeatDataset", ["input_dataset: variant", "count: int64"], [*_OUT, _META],
         "The input, count times (-1: forever).")
_dataset("PrefetchDataset", ["input_dataset: variant", "buffer_size: int64"],
         [*_OUT, "slack_period: int = 0", "legacy_autotune: bool = true",
          "buffer_size_min: int = 0", _META],
         "The input, produced ahead by a background thread into a buffer.")
_dataset("TakeDataset", ["input_dataset: variant", "count: int64"], [*_OUT, _META],
         "The first count elements (-1: all).")
_dataset("SkipDataset", ["input_dataset: variant", "count: int64"], [*_OUT, _META],
         "All but the first count elements (-1: none).")
_dataset("CacheDataset", ["input_dataset: variant", "filename: string"], [*_OUT, _META],
         "The input, kept in memory by the first pass and replayed after.")

# --- iterators --------------------------------------------------------------------
op_def("IteratorV2", outputs=["handle: resource"],
       attrs=["shared_name: string", "container: string", *_OUT], shape_fn=_scalar, stateful=True,
       doc="An iterator over datasets of the given structure; initialized by MakeIterator.")
op_def("OneShotIterator", inputs=["dataset: variant"], outputs=["handle: resource"],
       attrs=[*_OUT, "container: string = ''", "shared_name: string = ''"], shape_fn=_scalar,
       stateful=True, doc="An iterator that starts over its input dataset the first time it runs.")
op_def("MakeIterator", inputs=["dataset: variant", "iterator: resource"], stateful=True,
       doc="Start the iterator over the dataset, from its first element.")
op_def("IteratorGetNext", inputs=["iterator: resource"], outputs=["components: output_types"],
       attrs=_OUT, shape_fn=_components, stateful=True,
       doc="The iterator's next element; OutOfRangeError after the last.")
op_def("IteratorToStringHandle", inputs=["resource_handle: resource"],
       outputs=["string_handle: string"], shape_fn=_scalar, stateful=True,
       doc="A string naming the iterator.")
op_def("IteratorFromStringHandleV2", inputs=["string_handle: string"],
       outputs=["resource_handle: resource"],
       attrs=["output_types: list(type) >= 0 = []", "output_shapes: list(shape) >= 0 = []"],
       shape_fn=_scalar, stateful=True,
       doc="The iterator a string handle names (a feedable iterator).")
for _t in ("IteratorV2", "OneShotIterator", "MakeIterator", "IteratorGetNext",
           "IteratorToStringHandle", "IteratorFromStringHandleV2"):
    not_differentiable(_t)
