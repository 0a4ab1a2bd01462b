"""Unicode ops on dense tensors: `tf.strings.unicode_transcode` and
`tf.strings.unicode_encode`.

`UnicodeTranscode` re-encodes each string (any input encoding Python's codecs know,
output UTF-8, UTF-16-BE or UTF-32-BE); `UnicodeEncode` turns rows of int32 code
points into strings.  TensorFlow's `UnicodeEncode` takes a ragged tensor's values
and row splits; a dense [..., n] input is its rows of n code points, so the builder
passes the flattened values and splits 0, n, 2n, ... and reshapes the strings back
to the leading shape (a vector gives a scalar), as TensorFlow's builder does.  Bad
input follows `errors`: "replace" (with `replacement_char`), "ignore", or "strict"
(an InvalidArgumentError).  The decoding ops (`unicode_decode`, `unicode_split`)
return RaggedTensors, which flowlab does not have.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.tensor import Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops import array_ops, math_ops
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def

__all__ = ["unicode_transcode", "unicode_encode"]

_OUTPUT_ENCODINGS = ("UTF-8", "UTF-16-BE", "UTF-32-BE")
_ERRORS = ("strict", "replace", "ignore")

op_def("UnicodeTranscode", inputs=["input: string"], outputs=["output: string"],
       attrs=["input_encoding: string", "output_encoding: string", "errors: string = 'replace'",
              "replacement_char: int = 65533", "replace_control_characters: bool = false"],
       shape_fn=lambda op: [op.inputs[0].shape], doc="Each string decoded and encoded again.")
op_def("UnicodeEncode", inputs=["input_values: int32", "input_splits: Tsplits"], outputs=["output: string"],
       attrs=["errors: string = 'replace'", "output_encoding: string", "replacement_char: int = 65533",
              "Tsplits: {int32, int64} = int64"],
       shape_fn=lambda op: [TensorShape([None if op.inputs[1].shape.ndims is None or
                                          op.inputs[1].shape.as_list()[0] is None
                                          else op.inputs[1].shape.as_list()[0] - 1])],
       doc="The code points of each row (values[splits[i]:splits[i+1]]) as a string.")
not_differentiable("UnicodeTranscode")
not_differentiable("UnicodeEncode")


def _check_choice(op: str, attr: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        listed = ", ".join(f'"{a}"' for a in allowed)
        raise ValueError(f"Attr '{attr}' of '{op}' Op passed string '{value}' not in: {listed}.")


def unicode_transcode(input: Any, input_encoding: str, output_encoding: str, errors: str = "replace",  # noqa: A002
                      replacement_char: int = 65533, replace_control_characters: bool = False,
                      name: str | None = None) -> Tensor:
    """Each string decoded from `input_encoding` and encoded in `output_encoding`;
    `replace_control_characters` replaces C0 controls too."""
    _check_choice("UnicodeTranscode", "output_encoding", output_encoding, _OUTPUT_ENCODINGS)
    _check_choice("UnicodeTranscode", "errors", errors, _ERRORS)
    return apply_op("UnicodeTranscode", input=input, input_encoding=input_encoding,
                    output_encoding=output_encoding, errors=errors, replacement_char=replacement_char,
                    replace_control_characters=replace_control_characters, name=name or "UnicodeTranscode")


def unicode_encode(input: Any, output_encoding: str, errors: str = "replace", replacement_char: int = 65533,  # noqa: A002
                   name: str | None = None) -> Tensor:
    """Strings from int32 code points along the last axis ([..., n] -> [...])."""
    _check_choice("UnicodeEncode", "output_encoding", output_encoding, _OUTPUT_ENCODINGS)
    _check_choice("UnicodeEncode", "errors", errors, _ERRORS)
    from flowlab.graph.graph import get_default_graph

    with get_default_graph().name_scope(name or "UnicodeEncode"):
        x = convert_to_tensor(input)
        rank = x.shape.ndims
        if rank == 0:
            raise ValueError("input_tensor's rank must be at least 1.")
        if rank is None:
            raise ValueError("unicode_encode needs the input's rank (flowlab has no RaggedTensor).")
        if x.dtype.base_dtype is not dtypes.int32:
            raise TypeError(f"Input 'input_values' of 'UnicodeEncode' Op has type {x.dtype.base_dtype.name} "
                            "that does not match expected type of int32.")
        shape = array_ops.shape(x, out_type=dtypes.int64)
        width = shape[-1]
        rows = math_ops.reduce_prod(shape[:-1]) if rank > 1 else np.int64(1)
        splits = math_ops.range(rows + 1, dtype=dtypes.int64) * width if rank > 1 else \
            math_ops.range(np.int64(2), dtype=dtypes.int64) * width
        out = apply_op("UnicodeEncode", input_values=array_ops.reshape(x, [-1]), input_splits=splits,
                       errors=errors, output_encoding=output_encoding, replacement_char=replacement_char,
                       name="UnicodeEncode")
        if rank == 2:
            return out
        if rank == 1:
            return array_ops.reshape(out, [])
        lead = x.shape[:-1]
        result = array_ops.reshape(out, shape[:-1] if not lead.is_fully_defined() else lead.as_list())
        result.set_shape(lead)
        return result
