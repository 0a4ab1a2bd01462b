"""String ops: `tf.strings` and TensorFlow 1.x's top-level string builders.

Strings are `bytes` (a string tensor's value is a NumPy object array of `bytes`).
Each op is declared once below with TensorFlow's name, attrs and shape function;
the kernels are in flowlab.kernels.string_kernels.  Regular expressions follow RE2's
syntax as far as Python's `re` shares it (character classes, groups, repetition,
anchors; rewrites with `\\0`-`\\9`); a pattern given as a Python string builds the
`Static*` variant, as TensorFlow's builders do.  `string_split` and
`tf.strings.split` return a `SparseTensor` (rank 2: row, position in row).

    words = tf.string_split(["a b", "c"])           # SparseTensor of b"a", b"b", b"c"
    tf.strings.regex_replace(lines, r"\\d+", "#")
    tf.reduce_join([["a", "b"], ["c", "d"]], axis=1, separator=" ")   # [b"a b", b"c d"]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.const_fold import constant_value
from flowlab.ops.constant_op import constant
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.io_checkpoint_ops import string_join  # StringJoin: declared for Saver
from flowlab.ops.math_defs import broadcast_dims
from flowlab.ops.op_def import op_def
from flowlab.ops.sparse_tensor import SparseTensor

__all__ = [
    "as_string", "reduce_join", "regex_full_match", "regex_replace", "string_join", "string_length",
    "string_split", "string_split_v2", "string_strip", "string_to_number", "substr", "strings_split",
    "string_lower", "string_upper", "string_format", "string_to_hash_bucket_fast",
]


def _same(op: Any) -> list[Any]:
    return [op.inputs[0].shape]


def _scalar_arg(op: Any, i: int, what: str) -> None:
    s = op.inputs[i].shape
    if s.ndims is not None and s.ndims != 0:
        raise ValueError(f"Shape must be rank 0 but is rank {s.ndims}")


def _same_checking_scalars(*scalar_inputs: int) -> Any:
    def fn(op: Any) -> list[Any]:
        for i in scalar_inputs:
            _scalar_arg(op, i, "")
        return [op.inputs[0].shape]

    return fn


def _substr_shape(op: Any) -> list[Any]:
    inp, pos, length = (t.shape for t in op.inputs)
    # As TensorFlow's: pos has len's rank, then the same dims; the output broadcasts.
    if pos.ndims is not None and length.ndims is not None:
        if pos.ndims != length.ndims:
            raise ValueError(f"Shape must be rank {length.ndims} but is rank {pos.ndims}")
        if not pos.is_compatible_with(length):
            raise ValueError(f"pos and len shapes must match: {_dims(pos)} vs. {_dims(length)}")
    a, b = inp.as_tuple(), pos.as_tuple()
    if a is None or b is None:
        return [TensorShape(None)]
    return [TensorShape(broadcast_dims(a, b, True))]


def _dims(s: TensorShape) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in s.as_list()) + "]"


def _reduce_join_shape(op: Any) -> list[Any]:
    s = op.inputs[0].shape
    axes = constant_value(op.inputs[1])
    if s.ndims is None or axes is None:
        return [TensorShape(None)]
    rank = s.ndims
    reduced = set()
    for a in np.asarray(axes).reshape(-1).tolist():
        if not -rank <= a < rank:
            raise ValueError(f"Invalid reduction dimension {a} for input with {rank} dimensions.")
        reduced.add(a % rank)
    dims = s.as_list()
    if op.get_attr("keep_dims"):
        return [TensorShape([1 if i in reduced else d for i, d in enumerate(dims)])]
    return [TensorShape([d for i, d in enumerate(dims) if i not in reduced])]


def _split_shape(op: Any) -> list[Any]:
    s = op.inputs[0].shape
    if s.ndims is not None and s.ndims != 1:
        raise ValueError(f"Shape must be rank 1 but is rank {s.ndims}")
    _scalar_arg(op, 1, "")
    return [TensorShape([None, 2]), TensorShape([None]), TensorShape([2])]


op_def("StringLength", inputs=["input: string"], outputs=["output: int32"], attrs=["unit: string = 'BYTE'"],
       shape_fn=_same, doc="The length of each string, in bytes or UTF-8 characters.")
op_def("Substr", inputs=["input: string", "pos: T", "len: T"], outputs=["output: string"],
       attrs=["T: {int32, int64}", "unit: string = 'BYTE'"], shape_fn=_substr_shape,
       doc="`len` bytes (or characters) of each string from `pos` (negative: from the end).")
op_def("ReduceJoin", inputs=["inputs: string", "reduction_indices: int32"], outputs=["output: string"],
       attrs=["keep_dims: bool = false", "separator: string = ''"], shape_fn=_reduce_join_shape,
       doc="Join the strings along the given axes (in row-major order).")
op_def("RegexReplace", inputs=["input: string", "pattern: string", "rewrite: string"],
       outputs=["output: string"], attrs=["replace_global: bool = true"],
       shape_fn=_same_checking_scalars(1, 2), doc="Replace the matches of a regular expression.")
op_def("StaticRegexReplace", inputs=["input: string"], outputs=["output: string"],
       attrs=["pattern: string", "rewrite: string", "replace_global: bool = true"], shape_fn=_same,
       doc="RegexReplace with the pattern and rewrite as attrs.")
op_def("RegexFullMatch", inputs=["input: string", "pattern: string"], outputs=["output: bool"],
       shape_fn=_same_checking_scalars(1), doc="Whether each whole string matches the pattern.")
op_def("StaticRegexFullMatch", inputs=["input: string"], outputs=["output: bool"],
       attrs=["pattern: string"], shape_fn=_same, doc="RegexFullMatch with the pattern as an attr.")
op_def("StringStrip", inputs=["input: string"], outputs=["output: string"], shape_fn=_same,
       doc="Remove leading and trailing ASCII whitespace.")
op_def("StringLower", inputs=["input: string"], outputs=["output: string"],
       attrs=["encoding: string = ''"], shape_fn=_same, doc="Lower case (ASCII, or Unicode with 'utf-8').")
op_def("StringUpper", inputs=["input: string"], outputs=["output: string"],
       attrs=["encoding: string = ''"], shape_fn=_same, doc="Upper case (ASCII, or Unicode with 'utf-8').")
op_def("StringToNumber", inputs=["string_tensor: string"], outputs=["output: out_type"],
       attrs=["out_type: {float32, float64, int32, int64, uint32, uint64} = float32"], shape_fn=_same,
       doc="Parse each string as a number.")
op_def("AsString", inputs=["input: T"], outputs=["output: string"],
       attrs=["T: {float32, float64, float16, int8, int16, int32, int64, uint8, uint16, uint32, uint64, "
              "complex64, complex128, bool, string}",
              "precision: int = -1", "scientific: bool = false", "shortest: bool = false",
              "width: int = -1", "fill: string = ''"],
       shape_fn=_same, doc="Format each number as a string.")
op_def("StringToHashBucketFast", inputs=["input: string"], outputs=["output: int64"],
       attrs=["num_buckets: int >= 1"], shape_fn=_same,
       doc="FarmHash Fingerprint64 of each string modulo num_buckets.")
op_def("StringFormat", inputs=["inputs: T"], outputs=["output: string"],
       attrs=["T: list(type) >= 0", "template: string = '%s'", "placeholder: string = '%s'",
              "summarize: int = 3"], shape_fn=lambda op: [TensorShape([])],
       doc="The template with each placeholder replaced by a tensor's summary.")
op_def("StringSplit", inputs=["input: string", "delimiter: string"],
       outputs=["indices: int64", "values: string", "shape: int64"], attrs=["skip_empty: bool = true"],
       shape_fn=_split_shape, doc="Split on any of the delimiter's bytes (into bytes when empty).")
op_def("StringSplitV2", inputs=["input: string", "sep: string"],
       outputs=["indices: int64", "values: string", "shape: int64"], attrs=["maxsplit: int = -1"],
       shape_fn=_split_shape, doc="Split on `sep` (on runs of whitespace when empty).")

for _t in ("StringLength", "Substr", "ReduceJoin", "RegexReplace", "StaticRegexReplace",
           "RegexFullMatch", "StaticRegexFullMatch", "StringStrip", "StringLower", "StringUpper",
           "StringToNumber", "AsString", "StringFormat", "StringToHashBucketFast", "StringSplit", "StringSplitV2"):
    not_differentiable(_t)


def string_length(input: Any, name: str | None = None, unit: str = "BYTE") -> Tensor:  # noqa: A002
    """The length of each string in bytes (`unit="UTF8_CHAR"`: in characters), int32."""
    return apply_op("StringLength", input=input, unit=unit, name=name or "StringLength")


def substr(input: Any, pos: Any, len: Any, name: str | None = None, unit: str = "BYTE") -> Tensor:  # noqa: A002
    """`len` bytes (or UTF-8 characters) of each string, from `pos`.  A negative `pos`
    counts from the end; a `pos` past the end is an InvalidArgumentError."""
    return apply_op("Substr", input=input, pos=pos, len=len, unit=unit, name=name or "Substr")


def reduce_join(inputs: Any, axis: Any = None, keep_dims: Any = None, separator: str = "",
                name: str | None = None, reduction_indices: Any = None, keepdims: Any = None) -> Tensor:
    """Join strings along `axis` (default: all axes, giving a scalar)."""
    if keepdims is not None and keep_dims is not None:
        raise ValueError("Cannot specify both 'keepdims' and 'keep_dims'.")
    if axis is not None and reduction_indices is not None:
        raise ValueError("Cannot specify both 'axis' and 'reduction_indices'.")
    keep = keepdims if keepdims is not None else keep_dims
    axis = axis if axis is not None else reduction_indices
    # TensorFlow builds it in a "ReduceJoin" scope: "ReduceJoin/ReduceJoin".
    with get_default_graph().name_scope("ReduceJoin"):
        x = convert_to_tensor(inputs)
        if axis is None:
            if x.shape.ndims is not None:  # a Const of its own, "ReduceJoin/Const", as TensorFlow's
                axis = constant(np.arange(x.shape.ndims - 1, -1, -1, dtype=np.int32))
            else:
                from flowlab.ops import array_ops, math_ops

                axis = math_ops.range(array_ops.rank(x) - 1, -1, -1)
        return apply_op("ReduceJoin", inputs=x, reduction_indices=axis, keep_dims=bool(keep),
                        separator=separator, name=name or "ReduceJoin")


def _static(v: Any) -> bool:
    return isinstance(v, (str, bytes))


def regex_replace(input: Any, pattern: Any, rewrite: Any, replace_global: bool = True,  # noqa: A002
                  name: str | None = None) -> Tensor:
    """Replace the first (or every, `replace_global`) match of `pattern` with
    `rewrite` (`\\1`..`\\9` insert groups, `\\0` the whole match)."""
    if _static(pattern) and _static(rewrite):
        return apply_op("StaticRegexReplace", input=input, pattern=_text(pattern), rewrite=_text(rewrite),
                        replace_global=replace_global, name=name or "StaticRegexReplace")
    return apply_op("RegexReplace", input=input, pattern=pattern, rewrite=rewrite,
                    replace_global=replace_global, name=name or "RegexReplace")


def regex_full_match(input: Any, pattern: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """Whether each whole string matches `pattern` (bool)."""
    if _static(pattern):
        return apply_op("StaticRegexFullMatch", input=input, pattern=_text(pattern),
                        name=name or "StaticRegexFullMatch")
    return apply_op("RegexFullMatch", input=input, pattern=pattern, name=name or "RegexFullMatch")


def _text(v: Any) -> str:
    return v.decode("utf-8") if isinstance(v, bytes) else v


def string_strip(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """Each string without leading and trailing ASCII whitespace."""
    return apply_op("StringStrip", input=input, name=name or "StringStrip")


def string_lower(input: Any, encoding: str = "", name: str | None = None) -> Tensor:  # noqa: A002
    """Lower case: ASCII letters only, or Unicode with `encoding="utf-8"`."""
    return apply_op("StringLower", input=input, encoding=encoding, name=name or "StringLower")


def string_upper(input: Any, encoding: str = "", name: str | None = None) -> Tensor:  # noqa: A002
    """Upper case: ASCII letters only, or Unicode with `encoding="utf-8"`."""
    return apply_op("StringUpper", input=input, encoding=encoding, name=name or "StringUpper")


def string_to_number(string_tensor: Any = None, out_type: Any = dtypes.float32, name: str | None = None,
                     input: Any = None) -> Tensor:  # noqa: A002
    """Parse each string as `out_type` (float32 by default)."""
    if string_tensor is None:
        string_tensor = input
    elif input is not None:
        raise ValueError("Cannot specify both 'string_tensor' and 'input'.")
    return apply_op("StringToNumber", string_tensor=string_tensor, out_type=dtypes.as_dtype(out_type),
                    name=name or "StringToNumber")


def as_string(input: Any, precision: int = -1, scientific: bool = False, shortest: bool = False,  # noqa: A002
              width: int = -1, fill: str = "", name: str | None = None) -> Tensor:
    """Each value formatted as a string, printf-style (`%f` for floats by default)."""
    return apply_op("AsString", input=input, precision=precision, scientific=scientific, shortest=shortest,
                    width=width, fill=fill, name=name or "AsString")


def string_to_hash_bucket_fast(input: Any, num_buckets: int, name: str | None = None) -> Tensor:  # noqa: A002
    """Each string's bucket in [0, num_buckets): its FarmHash Fingerprint64 modulo
    `num_buckets` (stable across processes and machines, as TensorFlow's)."""
    return apply_op("StringToHashBucketFast", input=input, num_buckets=num_buckets,
                    name=name or "StringToHashBucketFast")


def string_format(template: str, inputs: Any, placeholder: str = "{}", summarize: int = 3,
                  name: str | None = None) -> Tensor:
    """`template` with each `placeholder` replaced by a tensor of `inputs` (one tensor
    or a list), printed as TensorFlow prints tensors: nested brackets, `summarize`
    values at each end of every dimension (-1: all).

        tf.strings.format("loss: {}", loss)
    """
    if isinstance(inputs, Tensor) or hasattr(inputs, "_as_graph_element"):
        inputs = [inputs]
    inputs = [convert_to_tensor(x) for x in inputs]
    expected = len(template.split(placeholder)) - 1
    if len(inputs) != expected:
        raise ValueError(f"The template expects {expected} tensors, but the inputs only has {len(inputs)}. "
                         "Please ensure the number of placeholders in template matches inputs length.")
    return apply_op("StringFormat", inputs=inputs, T=[t.dtype.base_dtype for t in inputs], template=template,
                    placeholder=placeholder, summarize=summarize, name=name or "StringFormat")


def string_split(source: Any, sep: Any = None, skip_empty: bool = True, delimiter: Any = None,
                 result_type: str = "SparseTensor", name: str | None = None) -> SparseTensor:
    """TensorFlow 1.x's `tf.string_split`: split each string of the vector `source`
    on any byte of `sep` (default " "; into single bytes when empty), dropping empty
    pieces unless `skip_empty=False`; a SparseTensor."""
    if sep is not None and delimiter is not None:
        raise ValueError("Cannot specify both 'sep' and 'delimiter'.")
    sep = delimiter if sep is None else sep
    if sep is None:
        sep = " "
    _check_result_type(result_type)
    with get_default_graph().name_scope(name or "StringSplit"):
        source = convert_to_tensor(source, dtypes.string)
        indices, values, shape = apply_op("StringSplit", input=source, delimiter=sep,
                                          skip_empty=skip_empty, name="StringSplit")
    return SparseTensor(indices, values, shape)


def strings_split(input: Any = None, sep: Any = None, maxsplit: int = -1,  # noqa: A002
                  result_type: str = "SparseTensor", source: Any = None, name: str | None = None) -> SparseTensor:
    """`tf.strings.split` (TensorFlow 1.x's): split on the string `sep` (on runs of
    whitespace when it is None), at most `maxsplit` times; a scalar is one row."""
    if input is not None and source is not None:
        raise ValueError("Cannot specify both 'input' and 'source'.")
    x = source if input is None else input
    _check_result_type(result_type)
    with get_default_graph().name_scope(name or "StringSplit"):
        x = convert_to_tensor(x, dtypes.string)
        if x.shape.ndims == 0:
            from flowlab.ops import array_ops

            x = array_ops.reshape(x, [1])
        return string_split_v2(x, sep, maxsplit)


def string_split_v2(source: Any, sep: Any = None, maxsplit: int = -1, name: str | None = None) -> SparseTensor:
    """Split the vector `source` on `sep` ("" or None: runs of whitespace)."""
    indices, values, shape = apply_op("StringSplitV2", input=source, sep="" if sep is None else sep,
                                      maxsplit=maxsplit, name=name or "StringSplitV2")
    return SparseTensor(indices, values, shape)


def _check_result_type(result_type: str) -> None:
    if result_type == "RaggedTensor":
        raise NotImplementedError("result_type='RaggedTensor': flowlab has no RaggedTensor; "
                                  "use the default result_type='SparseTensor'.")
    if result_type != "SparseTensor":
        raise ValueError(f"result_type must be 'RaggedTensor' or 'SparseTensor'. Got {result_type!r}")
