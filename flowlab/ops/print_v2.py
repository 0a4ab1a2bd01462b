"""`tf.print`: TensorFlow 2's printing op, in TF1 graphs an op to run (or depend on).

The inputs are joined into one StringFormat template as TensorFlow does it: Python
values are written with pprint, each tensor becomes a placeholder ("{}", made
unique with seeded digits if the text contains it) and is formatted like
`Tensor::SummarizeValue` with `summarize` entries per dimension end; a lone scalar
string tensor is printed as it is.  The PrintV2 op writes the string and `end` to
`output_stream` (sys.stderr / sys.stdout, "stderr", "stdout", "log(info)",
"log(warning)", "log(error)" or "file://<path>", appended) when it runs.
Kernel: flowlab.kernels.print_v2_kernels.
"""

from __future__ import annotations

import pprint
import random
import sys
from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.ops.builder import apply_op
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def

__all__ = ["print_v2"]

op_def("PrintV2", inputs=["input: string"], attrs=["output_stream: string = 'stderr'", "end: string = '\\n'"],
       shape_fn=lambda op: [], stateful=True)
not_differentiable("PrintV2")

_STREAMS = {"stderr", "stdout", "log(info)", "log(warning)", "log(error)"}


def _placeholder(text: str, default: str = "{}") -> str:
    placeholder = default
    rng = random.Random(5)
    while placeholder in text:
        placeholder = placeholder + str(rng.randint(0, 9))
    return placeholder


def _stream_name(output_stream: Any) -> str:
    if output_stream is sys.stderr:
        return "stderr"
    if output_stream is sys.stdout:
        return "stdout"
    # tf.logging.info / warning / error, recognized without importing the platform layer.
    if getattr(output_stream, "__module__", "") == "flowlab.platform.tf_logging" and \
            getattr(output_stream, "__name__", "") in ("info", "warning", "error"):
        return f"log({output_stream.__name__})"
    if isinstance(output_stream, str) and (output_stream in _STREAMS or output_stream.startswith("file://")):
        return output_stream
    raise ValueError(f"Unsupported output stream, logging level, or file.{output_stream}. Supported streams are "
                     "sys.stdout, sys.stderr, tf.logging.info, tf.logging.warning, tf.logging.error. File needs "
                     "to be in the form of 'file://<filepath>'.")


def print_v2(*inputs: Any, **kwargs: Any) -> Operation:
    """An op that prints `inputs` (tensors and Python values) separated by `sep`.

    >>> tf.print("loss:", loss, output_stream=sys.stdout)
    """
    from flowlab.ops.string_ops import string_format

    output_stream = kwargs.pop("output_stream", sys.stderr)
    name = kwargs.pop("name", None)
    summarize = kwargs.pop("summarize", 3)
    sep = kwargs.pop("sep", " ")
    end = kwargs.pop("end", "\n")
    if kwargs:
        raise ValueError(f"Unrecognized keyword arguments for tf.print: {kwargs}")
    stream = _stream_name(output_stream)
    if len(inputs) == 1 and isinstance(inputs[0], Tensor) and inputs[0].shape.ndims == 0 \
            and inputs[0].dtype.base_dtype == dtypes.string:
        formatted = inputs[0]
    else:
        free = " ".join(pprint.pformat("" if isinstance(x, Tensor) else x) for x in inputs)
        placeholder = _placeholder(free)
        templates, tensors = [], []
        for item in inputs:
            if isinstance(item, Tensor):
                tensors.append(item)
                templates.append(placeholder)
            elif isinstance(item, str):
                templates.append(item)
            elif isinstance(item, (list, tuple, dict)):
                templates.append(pprint.pformat(_placeholders(item, placeholder, tensors)))
            else:
                templates.append(pprint.pformat(item))
        template = sep.join(templates).replace("'" + placeholder + "'", placeholder)
        formatted = string_format(template, tensors, placeholder=placeholder, summarize=summarize)
    return apply_op("PrintV2", input=formatted, output_stream=stream, end=end, name=name or "PrintV2")


def _placeholders(item: Any, placeholder: str, tensors: list[Tensor]) -> Any:
    """`item` with every tensor (collected into `tensors`, in nest order) replaced by the placeholder."""
    if isinstance(item, Tensor):
        tensors.append(item)
        return placeholder
    if isinstance(item, dict):
        return {k: _placeholders(item[k], placeholder, tensors) for k in sorted(item)}
    if isinstance(item, (list, tuple)):
        out = [_placeholders(x, placeholder, tensors) for x in item]
        return type(item)(out) if isinstance(item, tuple) and not hasattr(item, "_fields") else out
    return item
