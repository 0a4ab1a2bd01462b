"""flowlab: TensorFlow 1.x graph mode, rebuilt in Python for notebooks.

`import flowlab as tf` runs covered TensorFlow 1.x programs with the same numbers.
The public API is the explicit re-export list below; flowlab's own additions live in
`flowlab.viz`, `flowlab.debug`, `flowlab.profiler` and `flowlab.distributed`.
"""

from __future__ import annotations

import sys as _sys
import types as _types

# `tf.compat`: as_bytes/as_str/as_text/as_str_any, ...; `tf.compat.v1.X` is `tf.X` here.
from flowlab import (
    compat,
    debug,
    debugging,
    errors,
    image,
    kernels,
    layers,
    linalg,
    metrics,
    nn,
    summary,
    train,
    viz,
)
from flowlab.data.structure import TensorSpec  # tf.TensorSpec
from flowlab.graph.device_spec import DeviceSpec
from flowlab.graph.dtypes import (  # noqa: F401
    DType,
    as_dtype,
    bool,
    complex64,
    complex128,
    double,
    float16,
    float32,
    float64,
    half,
    int8,
    int16,
    int32,
    int64,
    resource,
    string,
    uint8,
    uint16,
    uint32,
    uint64,
    variant,
)
from flowlab.graph.graph import (
    Graph,
    GraphKeys,
    get_default_graph,
    get_name_scope,
    reset_default_graph,
)
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import Dimension, TensorShape, dimension_value
from flowlab.ops import losses  # kernels: importing registers every kernel
from flowlab.ops.array_ops import *  # noqa: F401,F403
from flowlab.ops.assertions import *  # noqa: F401,F403 - assert_integer, assert_near, is_non_decreasing, ...
from flowlab.ops.broadcast_shapes import *  # noqa: F401,F403 - broadcast_dynamic_shape, broadcast_static_shape
from flowlab.ops.builder import convert_to_tensor, register_tensor_conversion_function
from flowlab.ops.check_ops import *  # noqa: F401,F403 - Assert, Print, check_numerics, assert_*
from flowlab.ops.clip_ops import *  # noqa: F401,F403 - norm, clip_by_norm, clip_by_global_norm, ...
from flowlab.ops.complex_ops import *  # noqa: F401,F403 - complex, real, imag, angle, to_complex64/128
from flowlab.ops.cond import *  # noqa: F401,F403
from flowlab.ops.confusion_matrix import confusion_matrix
from flowlab.ops.constant_op import constant
from flowlab.ops.core_ops import *  # noqa: F401,F403
from flowlab.ops.custom_gradient import *
from flowlab.ops.custom_gradient import NotDifferentiable as NoGradient  # TensorFlow's older name
from flowlab.ops.data_flow_ops import *
from flowlab.ops.depth_space_ops import *  # noqa: F401,F403 - space_to_depth, depth_to_space, space_to_batch, ...
from flowlab.ops.edit_distance_ops import edit_distance, fingerprint
from flowlab.ops.einsum_ops import *  # noqa: F401,F403 - einsum
from flowlab.ops.fft_ops import *  # noqa: F401,F403 - fft, ifft, fft2d, ...
from flowlab.ops.functional_ops import *  # map_fn, foldl, foldr, scan, TensorArray
from flowlab.ops.gradients_impl import *
from flowlab.ops.graph_mode_api import *  # noqa: F401,F403 - control_flow_v2_enabled, init_scope, op_scope, ...
from flowlab.ops.image_adjust import saturate_cast
from flowlab.ops.image_ops import random_crop
from flowlab.ops.image_patches import extract_image_patches
from flowlab.ops.importer import *
from flowlab.ops.index_ops import *  # noqa: F401,F403 - unravel_index, batch_gather, repeat
from flowlab.ops.indexed_slices import *
from flowlab.ops.init_matrix_ops import orthogonal_initializer
from flowlab.ops.init_ops import *  # noqa: F401,F403
from flowlab.ops.io_ops import *
from flowlab.ops.linalg_ops import *  # noqa: F401,F403 - matrix_inverse, cholesky, svd, qr, matrix_diag, ...
from flowlab.ops.math_composites import accumulate_n, lbeta
from flowlab.ops.math_ops import *  # noqa: F401,F403
from flowlab.ops.misc_array_ops import *  # noqa: F401,F403 - guarantee_const, parallel_stack, grad_pass_through, ...
from flowlab.ops.partitioned_scope import create_partitioned_variables
from flowlab.ops.partitioned_variables import *  # noqa: F401,F403 - PartitionedVariable, *_partitioner
from flowlab.ops.print_v2 import print_v2 as print  # noqa: A001 - tf.print
from flowlab.ops.random_ops import *  # noqa: F401,F403
from flowlab.ops.script_ops import numpy_function, py_func
from flowlab.ops.segment_ops import *  # noqa: F401,F403 - segment_sum, unsorted_segment_sum, ...
from flowlab.ops.sequence_ops import *  # noqa: F401,F403 - reverse_sequence
from flowlab.ops.sort_ops import *  # noqa: F401,F403 - sort, argsort, roll, bincount, searchsorted, ...
from flowlab.ops.space_to_batch_ops import (
    batch_to_space_nd,
    required_space_to_batch_paddings,
    space_to_batch_nd,
)
from flowlab.ops.sparse_mask_ops import sparse_mask
from flowlab.ops.sparse_math_ops import *  # noqa: F401,F403 - sparse_tensor_dense_matmul, sparse_add, ...
from flowlab.ops.sparse_ops import *  # noqa: F401,F403 - sparse_to_dense, sparse_tensor_to_dense, ...
from flowlab.ops.sparse_segment_ops import *  # noqa: F401,F403 - sparse_segment_sum, ...
from flowlab.ops.sparse_serialize_ops import *  # noqa: F401,F403 - serialize_sparse, ...
from flowlab.ops.sparse_structure_ops import *  # noqa: F401,F403 - sparse_reorder, sparse_concat, ...
from flowlab.ops.sparse_tensor import sparse_placeholder
from flowlab.ops.special_math_ops import *  # noqa: F401,F403 - asinh, xlogy, divide_no_nan, reduce_std, ...
from flowlab.ops.state_ops import *  # noqa: F401,F403
from flowlab.ops.string_codec_ops import *  # noqa: F401,F403 - encode_base64, string_to_hash_bucket, ...
from flowlab.ops.switch_case import switch_case
from flowlab.ops.template import make_template
from flowlab.ops.tensor_bytes_ops import *  # noqa: F401,F403 - serialize_tensor, parse_tensor, write_file, ...
from flowlab.ops.tensor_scatter_ops import *  # noqa: F401,F403 - tensor_scatter_nd_update, ...
from flowlab.ops.tensor_util import *  # noqa: F401,F403 - is_tensor, get_static_value, make_tensor_proto, ...
from flowlab.ops.tensor_views import *  # noqa: F401,F403 - ensure_shape, bitcast, identity_n
from flowlab.ops.tensordot_ops import *  # noqa: F401,F403 - tensordot, eye, meshgrid
from flowlab.ops.unique_ops import *  # noqa: F401,F403 - unique_with_counts, setdiff1d
from flowlab.ops.variable_scope import *  # noqa: F401,F403
from flowlab.ops.variables import *  # noqa: F401,F403
from flowlab.ops.while_loop import *  # noqa: F401,F403
from flowlab.platform.tf_logging import get_logger
from flowlab.profiler import profile  # also binds the flowlab.profiler module
from flowlab.runtime.config import (
    ConfigProto,
    GPUOptions,
    GraphOptions,
    OptimizerOptions,
    RunMetadata,
    RunOptions,
)
from flowlab.runtime.session import InteractiveSession, Session, get_default_session
from flowlab.summary import Event, SessionLog, Summary
from flowlab.versions import *  # noqa: F401,F403 - VERSION, GRAPH_DEF_VERSION, ...
from flowlab.viz.show import show

__version__ = "0.1.0"


def name_scope(name: str | None, default_name: str | None = None, values: object = None):  # type: ignore[no-untyped-def]
    """Open a name scope in the default graph (`tf.name_scope`)."""
    return get_default_graph().name_scope(name if name is not None else default_name)


def device(device_name_or_function: object):  # type: ignore[no-untyped-def]
    """Request a device for ops created in the block (`tf.device`)."""
    return get_default_graph().device(device_name_or_function)


def control_dependencies(control_inputs: object):  # type: ignore[no-untyped-def]
    return get_default_graph().control_dependencies(control_inputs)


def colocate_with(op: object, ignore_existing: bool = False):  # type: ignore[no-untyped-def]
    return get_default_graph().colocate_with(op, ignore_existing)


def add_to_collection(name: str, value: object) -> None:
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names: object, value: object) -> None:
    get_default_graph().add_to_collections(names, value)


def get_collection(key: str, scope: str | None = None) -> list:  # type: ignore[type-arg]
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key: str) -> list:  # type: ignore[type-arg]
    return get_default_graph().get_collection_ref(key)


def set_random_seed(seed: int | None) -> None:
    """Set the graph-level random seed of the default graph."""
    get_default_graph().seed = seed


def disable_v2_behavior() -> None:
    """Nothing to do: flowlab is TensorFlow 1.x graph mode."""


def disable_eager_execution() -> None:
    """Nothing to do: flowlab is always in graph mode."""


def executing_eagerly() -> bool:
    return False


def _namespace(name: str, *modules: _types.ModuleType, extra: dict | None = None) -> _types.SimpleNamespace:  # type: ignore[type-arg]
    members = {n: getattr(m, n) for m in modules for n in getattr(m, "__all__", [])}
    members.update(extra or {})
    ns = _types.SimpleNamespace(**members)
    ns.__name__ = f"flowlab.{name}"  # type: ignore[attr-defined]
    return ns


# `tf.math.log`, `tf.math.equal`, ...: the math builders under TensorFlow's namespace.
from flowlab.ops import assertions as _assertions  # noqa: E402
from flowlab.ops import complex_ops as _complex_ops  # noqa: E402
from flowlab.ops import math_composites as _math_composites  # noqa: E402
from flowlab.ops import math_ops as _math_ops  # noqa: E402
from flowlab.ops import segment_ops as _segment_ops  # noqa: E402
from flowlab.ops import special_math_ops as _special_math_ops  # noqa: E402
from flowlab.ops import special_more_ops as _special_more_ops  # noqa: E402

_NN_IN_MATH = ("softmax", "log_softmax", "softplus", "softsign", "l2_normalize", "in_top_k", "top_k")
math = _namespace("math", _math_ops, _segment_ops, _special_math_ops,
                  extra={**{n: getattr(nn, n) for n in _NN_IN_MATH}, "invert_permutation": invert_permutation,  # noqa: F405
                         "confusion_matrix": confusion_matrix,
                         **{n: getattr(_complex_ops, n) for n in ("real", "imag", "angle")},
                         **{n: getattr(_math_composites, n) for n in _math_composites.__all__},
                         **{n: getattr(_special_more_ops, n) for n in _special_more_ops.__all__},
                         **{n: getattr(_assertions, n) for n in ("is_non_decreasing", "is_strictly_increasing")}})

from flowlab.ops import data_flow_ops as _data_flow_ops  # noqa: E402
from flowlab.ops import image_codecs as _image_codecs  # noqa: E402
from flowlab.ops import io_ops as _io_ops  # noqa: E402
from flowlab.ops import string_join_ops as _string_join_ops  # noqa: E402

queue = _namespace("queue", _data_flow_ops)
# `tf.sets` (dense operands), under TF1's names and TF2's short ones.
from flowlab.ops import set_ops as _set_ops  # noqa: E402

sets = _namespace("sets", _set_ops, extra={"intersection": _set_ops.set_intersection,
                                            "difference": _set_ops.set_difference,
                                            "union": _set_ops.set_union, "size": _set_ops.set_size})
from flowlab import platform as _platform  # noqa: E402

io = _namespace("io", _io_ops, extra={"write_graph": train.write_graph, "gfile": _platform.gfile,
                                       # the same queue classes and input helper as tf.* / tf.train.*
                                       "PaddingFIFOQueue": PaddingFIFOQueue, "PriorityQueue": PriorityQueue,  # noqa: F405
                                       "QueueBase": QueueBase, "RandomShuffleQueue": RandomShuffleQueue,  # noqa: F405
                                       "match_filenames_once": train.match_filenames_once,
                                       "encode_base64": encode_base64, "decode_base64": decode_base64,  # noqa: F405
                                       "decode_json_example": _string_join_ops.decode_json_example,
                                       "extract_jpeg_shape": image.extract_jpeg_shape,
                                       **{n: globals()[n] for n in ("serialize_tensor", "parse_tensor",
                                                                    "decode_compressed", "write_file")},
                                       **{n: getattr(image, n) for n in _image_codecs.__all__}})

# `tf.strings` and TensorFlow 1.x's top-level string builders.
from flowlab.ops import string_ops as _string_ops  # noqa: E402
from flowlab.ops import unicode_ops as _unicode_ops  # noqa: E402
from flowlab.ops.string_ops import (  # noqa: E402
    as_string,
    reduce_join,
    regex_replace,
    string_join,
    string_split,
    string_strip,
    string_to_hash_bucket_fast,
    string_to_number,
    substr,
)

strings = _types.SimpleNamespace(
    as_string=as_string, format=_string_ops.string_format, join=string_join, length=_string_ops.string_length,
    unicode_encode=_unicode_ops.unicode_encode, unicode_transcode=_unicode_ops.unicode_transcode,
    to_hash_bucket_fast=string_to_hash_bucket_fast, to_hash_bucket=string_to_hash_bucket,  # noqa: F405
    to_hash_bucket_strong=string_to_hash_bucket_strong,  # noqa: F405
    unsorted_segment_join=_string_join_ops.unsorted_segment_join,
    lower=_string_ops.string_lower, upper=_string_ops.string_upper, reduce_join=reduce_join,
    regex_full_match=_string_ops.regex_full_match, regex_replace=regex_replace,
    split=_string_ops.strings_split, strip=string_strip, substr=substr, to_number=string_to_number,
)
strings.__name__ = "flowlab.strings"  # type: ignore[attr-defined]

# `tf.dtypes` (`tf.compat.v1.dtypes.as_dtype("float32")`): the dtype objects and the casts.
from flowlab.graph import dtypes as _dtypes  # noqa: E402

dtypes = _namespace("dtypes", _dtypes, extra={n: globals()[n] for n in (
    "as_string", "cast", "complex", "saturate_cast")})

from flowlab import contrib, test  # noqa: E402 - tf.contrib.rnn/layers; tf.test.TestCase, tf.test.main

# `tf.app`, `tf.flags` / `tf.app.flags` (absl-py's), `tf.logging`, `tf.gfile`.
app = _platform.app
flags = _platform.flags
logging = _platform.tf_logging
gfile = _platform.gfile_v1

# `tf.graph_util` (GraphDef passes) and `tf.GraphDef`, TensorFlow's proto class that
# programs parse .pb files into before `tf.import_graph_def`; and the messages TF1
# programs build or parse by hand (a tf.HistogramProto for Summary.Value(histo=...), a
# .meta file read into a tf.MetaGraphDef): the tensorboard package's copies of
# TensorFlow's protos, as tf.Summary is.
from tensorboard.compat.proto.attr_value_pb2 import AttrValue, NameAttrList  # noqa: E402
from tensorboard.compat.proto.event_pb2 import LogMessage  # noqa: E402
from tensorboard.compat.proto.meta_graph_pb2 import MetaGraphDef, TensorInfo  # noqa: E402
from tensorboard.compat.proto.node_def_pb2 import NodeDef  # noqa: E402 - TensorFlow's message, as GraphDef
from tensorboard.compat.proto.summary_pb2 import HistogramProto, SummaryMetadata  # noqa: E402

from flowlab.graph import graph_util as _graph_util  # noqa: E402
from flowlab.graph.graph_def_pb import GraphDef  # noqa: E402

graph_util = _namespace("graph_util", _graph_util, extra={"import_graph_def": import_graph_def})  # noqa: F405

# `tf.data`, `tf.SparseTensor`, TFRecord files and Example parsing (`tf.io`,
# `tf.python_io`, and TensorFlow 1.x's top-level `tf.parse_example`, `tf.FixedLenFeature`).
from flowlab import (
    data,  # noqa: E402
    sparse,  # noqa: E402 - `tf.sparse`
)
from flowlab.data import tf_record as _tf_record  # noqa: E402
from flowlab.errors import OpError  # noqa: E402 - tf.OpError is tf.errors.OpError
from flowlab.ops import parsing_ops as _parsing_ops  # noqa: E402
from flowlab.ops import sequence_parsing_ops as _sequence_parsing_ops  # noqa: E402
from flowlab.ops import sparse_serialize_ops as _sparse_serialize_ops  # noqa: E402

# Synchronous replication's accumulators (`tf.ConditionalAccumulator`, paper 4.4).
from flowlab.ops.accumulator_ops import (  # noqa: E402
    ConditionalAccumulator,
    ConditionalAccumulatorBase,
    SparseConditionalAccumulator,
)
from flowlab.ops.parsing_ops import (  # noqa: E402
    FixedLenFeature,
    VarLenFeature,
    parse_example,
    parse_single_example,
)
from flowlab.ops.sequence_parsing_ops import (  # noqa: E402
    FixedLenSequenceFeature,
    parse_single_sequence_example,
)
from flowlab.ops.sparse_tensor import (  # noqa: E402
    SparseTensor,
    SparseTensorValue,
    convert_to_tensor_or_sparse_tensor,
)

sparse.SparseConditionalAccumulator = SparseConditionalAccumulator

for _m in (_tf_record, _parsing_ops, _sequence_parsing_ops, _sparse_serialize_ops):
    for _n in _m.__all__:
        setattr(io, _n, getattr(_m, _n))
python_io = _namespace("python_io", _tf_record)


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """The JupyterLab extension built into this package (`jupyter labextension
    develop`, and Jupyter's discovery of an installed flowlab)."""
    from flowlab.viz.widgets import _jupyter_labextension_paths as paths

    return paths()
