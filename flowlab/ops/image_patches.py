"""`tf.extract_image_patches` / `tf.image.extract_image_patches` /
`tf.image.extract_patches`: every ksize window of an NHWC image (strided, dilated by
`rates`, "VALID" or zero-padded "SAME") flattened into the depth dimension, as
TensorFlow's ExtractImagePatches op: output [batch, out_rows, out_cols,
ksize_rows * ksize_cols * depth], the window's (row, col, channel) in row-major order.

The gradient is built as TensorFlow's: patches of an image of pixel numbers say which
input pixel each output element came from (0 for padding), and the output gradient is
summed back into those pixels (UnsortedSegmentSum; static spatial sizes needed).
Kernel: flowlab.kernels.image_patch_kernels.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops import array_ops, math_ops
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.gradient_registry import gradient
from flowlab.ops.op_def import op_def

__all__ = ["extract_image_patches", "extract_patches"]


def out_size(size: int, k: int, stride: int, rate: int, padding: str) -> int:
    eff = k + (k - 1) * (rate - 1)
    return (size - eff + stride) // stride if padding == "VALID" else -(-size // stride)


def _shape(op: Operation) -> list[Any]:
    s = op.inputs[0].shape
    if s.ndims is not None and s.ndims != 4:
        raise ValueError(f"Shape must be rank 4 but is rank {s.ndims}")
    d = s.as_list() if s.ndims is not None else [None] * 4
    k, st, r = op.get_attr("ksizes"), op.get_attr("strides"), op.get_attr("rates")
    pad = op.get_attr("padding")
    rows = None if d[1] is None else out_size(d[1], k[1], st[1], r[1], pad)
    cols = None if d[2] is None else out_size(d[2], k[2], st[2], r[2], pad)
    depth = None if d[3] is None else d[3] * k[1] * k[2]
    return [TensorShape([d[0], rows, cols, depth])]


op_def("ExtractImagePatches", inputs=["images: T"], outputs=["patches: T"],
       attrs=["ksizes: list(int) >= 4", "strides: list(int) >= 4", "rates: list(int) >= 4",
              "T: {float32, float64, int32, uint8, int16, int8, int64, uint16, float16, uint32, "
              "uint64, complex64, complex128, bool}",
              "padding: string"], shape_fn=_shape)


def _check4(v: Any, what: str) -> list[int]:
    v = [int(x) for x in v]
    if len(v) != 4 or v[0] != 1 or v[3] != 1:
        raise ValueError(f"{what} must be a list of 4 ints [1, r, c, 1], got {v}")
    return v


def extract_image_patches(images: Any, ksizes: Any = None, strides: Any = None, rates: Any = None,
                          padding: Any = None, name: str | None = None, sizes: Any = None) -> Tensor:
    """Patches of `images` [batch, rows, cols, depth] (ksizes/strides/rates: [1, r, c, 1]).

    >>> tf.extract_image_patches(x, [1, 3, 3, 1], [1, 1, 1, 1], [1, 1, 1, 1], "SAME")
    """
    ksizes = ksizes if ksizes is not None else sizes
    return apply_op("ExtractImagePatches", images=convert_to_tensor(images, name="images"),
                    ksizes=_check4(ksizes, "ksizes"), strides=_check4(strides, "strides"),
                    rates=_check4(rates, "rates"), padding=str(padding).upper(),
                    name=name or "ExtractImagePatches")


def extract_patches(images: Any, sizes: Any, strides: Any, rates: Any, padding: Any,
                    name: str | None = None) -> Tensor:
    """TensorFlow 2's name and argument order for extract_image_patches."""
    return extract_image_patches(images, sizes, strides, rates, padding, name=name)


@gradient("ExtractImagePatches")
def _extract_image_patches_grad(op: Operation, grad: Tensor) -> Any:
    from flowlab.ops.segment_ops import unsorted_segment_sum

    x = op.inputs[0]
    b, rows, cols, ch = x.shape.as_list()
    if rows is None or cols is None:
        raise ValueError("The gradient of ExtractImagePatches needs the image's spatial sizes statically")
    ksizes, strides, rates = op.get_attr("ksizes"), op.get_attr("strides"), op.get_attr("rates")
    n = rows * cols
    idx = array_ops.reshape(math_ops.range(1, n + 1, dtype=dtypes.int64), [1, rows, cols, 1])
    idx_patches = extract_image_patches(idx, ksizes, strides, rates, op.get_attr("padding"))
    flat_idx = array_ops.reshape(idx_patches, [-1])  # one pixel number per (position, window cell)
    batch = array_ops.shape(x)[0]
    g = array_ops.reshape(grad, array_ops.stack([batch, -1, ch]))   # [b, positions * window, ch]
    g = array_ops.transpose(g, [1, 0, 2])
    summed = unsorted_segment_sum(g, flat_idx, n + 1)[1:]            # drop the padding's 0
    out = array_ops.transpose(array_ops.reshape(summed, array_ops.stack([rows, cols, batch, ch])), [2, 0, 1, 3])
    return [out]
