"""Diagonals and bands of batches of matrices: MatrixBandPart, the V3 diagonal ops
(MatrixDiagV3, MatrixDiagPartV3, MatrixSetDiagV3) that TensorFlow 2.21's v1 API
builds, and the older full-tensor Diag / DiagPart (`tf.diag`, `tf.diag_part`).

A diagonal band `k = (k_lo, k_hi)` of an `[..., M, N]` matrix is stored as
`[..., k_hi - k_lo + 1, max_len]` (the leading num-diagonals dimension dropped when
k_lo == k_hi), diagonal d at row `k_hi - d`; a diagonal shorter than max_len is
padded on the left or right as `align` says ("RIGHT_LEFT": superdiagonals right-
aligned, subdiagonals left-aligned).  `flowlab.kernels.linalg_kernels.diag_index`
turns (k, align, M, N) into the index arrays all three kernels share.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.builder import apply_op, convert_to_tensor, graph_of
from flowlab.ops.const_fold import constant_value
from flowlab.ops.op_def import op_def

# TensorFlow 1.x's top-level names (tf.diag is Diag; tf.linalg.diag is matrix_diag).
__all__ = ["matrix_band_part", "matrix_diag", "matrix_diag_part", "matrix_set_diag", "diag", "diag_part"]

_ALIGN = "align: string"
_ALIGNS = ("LEFT_RIGHT", "RIGHT_LEFT", "LEFT_LEFT", "RIGHT_RIGHT")


def _check_align(align: str) -> str:
    if align not in _ALIGNS:
        raise ValueError(f"Value for attr 'align' of \"{align}\" is not in the list of allowed values: "
                         + ", ".join(f'"{a}"' for a in _ALIGNS))
    return align


def _k_range(op: Operation, i: int) -> tuple[int, int] | None:
    k = constant_value(op.inputs[i])
    if k is None:
        return None
    k = np.asarray(k).reshape(-1).tolist()
    if not 1 <= len(k) <= 2:
        raise ValueError(f"diag_index must be a scalar or vector of length 1 or 2, got {len(k)} elements")
    lo, hi = int(k[0]), int(k[-1])
    if lo > hi:
        raise ValueError(f"lower_diag_index must not be greater than upper_diag_index, received lower_diag_index: "
                         f"{lo} > upper_diag_index: {hi}")
    return lo, hi


def diag_length(rows: int, cols: int, d: int) -> int:
    """The length of diagonal `d` of a rows x cols matrix (<= 0: no such diagonal)."""
    return min(rows + min(0, d), cols - max(0, d))


def diag_matrix_dims(max_len: int, lo: int, hi: int, rows: int, cols: int) -> tuple[int, int, int, int]:
    """MatrixDiagV3's (rows, cols, min_rows, min_cols): a negative rows/cols is
    derived from the packed diagonals' length `max_len` and the k range, as TF does."""
    min_rows, min_cols = max_len - min(hi, 0), max_len + max(lo, 0)
    if rows < 0 and cols < 0:
        rows = cols = max(min_rows, min_cols)
    elif rows < 0:
        rows = min_rows
    elif cols < 0:
        cols = min_cols
    return rows, cols, min_rows, min_cols


def _band_part(op: Operation) -> list[Any]:
    s = op.inputs[0].shape
    if s.ndims is not None and s.ndims < 2:
        raise ValueError(f"Shape must be at least rank 2 but is rank {s.ndims}")
    return [s]


def _diag_v3(op: Operation) -> list[Any]:
    s = op.inputs[0].shape.as_tuple()
    k = _k_range(op, 1)
    rows, cols = (constant_value(op.inputs[i]) for i in (2, 3))
    if s is None or k is None or rows is None or cols is None:
        return [TensorShape(None)]
    lo, hi = k
    batch = s[:-1] if lo == hi else s[:-2]
    if lo != hi and len(s) < 2:
        raise ValueError(f"Shape must be at least rank 2 but is rank {len(s)}")
    if lo != hi and s[-2] is not None and s[-2] != hi - lo + 1:
        raise ValueError("The number of rows of `diagonal` doesn't match the number of diagonals implied from "
                         f"`d_lower` and `d_upper`.\nnum_diags = {hi - lo + 1}, d_lower = {lo}, d_upper = {hi} "
                         f"{s[-2]} {s[-1]}")
    max_len = s[-1]
    rows, cols = int(rows), int(cols)
    if max_len is None:
        return [TensorShape(batch + (None if rows < 0 else rows, None if cols < 0 else cols))]
    rows, cols, _, _ = diag_matrix_dims(max_len, lo, hi, rows, cols)
    return [TensorShape(batch + (rows, cols))]


def _diag_part_v3(op: Operation) -> list[Any]:
    s = op.inputs[0].shape.as_tuple()
    k = _k_range(op, 1)
    if s is not None and len(s) < 2:
        raise ValueError(f"Shape must be at least rank 2 but is rank {len(s)}")
    if s is None or k is None:
        return [TensorShape(None)]
    lo, hi = k
    rows, cols = s[-2], s[-1]
    if rows is None or cols is None:
        max_len = None
    else:
        max_len = min(rows + min(0, hi), cols - max(0, lo))
    return [TensorShape(s[:-2] + ((max_len,) if lo == hi else (hi - lo + 1, max_len)))]


def _set_diag_v3(op: Operation) -> list[Any]:
    s = op.inputs[0].shape
    if s.ndims is not None and s.ndims < 2:
        raise ValueError(f"Shape must be at least rank 2 but is rank {s.ndims}")
    return [s]


def _diag(op: Operation) -> list[Any]:
    s = op.inputs[0].shape.as_tuple()
    if s is None:
        return [TensorShape(None)]
    if not s:
        raise ValueError("Shape must be at least rank 1 but is rank 0")
    return [TensorShape(s + s)]


def _diag_part(op: Operation) -> list[Any]:
    s = op.inputs[0].shape.as_tuple()
    if s is None:
        return [TensorShape(None)]
    if len(s) % 2 or not s:
        raise ValueError(f"Input must have even and non-zero rank, input rank is {len(s)}")
    half = len(s) // 2
    out = []
    for a, b in zip(s[:half], s[half:]):
        if a is not None and b is not None and a != b:
            raise ValueError(f"Dimensions must be equal, but are {a} and {b}")
        out.append(a if a is not None else b)
    return [TensorShape(out)]


op_def("MatrixBandPart", inputs=["input: T", "num_lower: Tindex", "num_upper: Tindex"], outputs=["band: T"],
       attrs=["T: all", "Tindex: {int32, int64} = int64"], shape_fn=_band_part)
op_def("MatrixDiagV3", inputs=["diagonal: T", "k: int32", "num_rows: int32", "num_cols: int32",
                               "padding_value: T"], outputs=["output: T"],
       attrs=["T: all", _ALIGN + " = 'RIGHT_LEFT'"], shape_fn=_diag_v3)
op_def("MatrixDiagPartV3", inputs=["input: T", "k: int32", "padding_value: T"], outputs=["diagonal: T"],
       attrs=["T: all", _ALIGN + " = 'RIGHT_LEFT'"], shape_fn=_diag_part_v3)
op_def("MatrixSetDiagV3", inputs=["input: T", "diagonal: T", "k: int32"], outputs=["output: T"],
       attrs=["T: all", _ALIGN + " = 'RIGHT_LEFT'"], shape_fn=_set_diag_v3)
op_def("Diag", inputs=["diagonal: T"], outputs=["output: T"],
       attrs=["T: {float16, float32, float64, int32, int64, complex64, complex128}"], shape_fn=_diag)
op_def("DiagPart", inputs=["input: T"], outputs=["diagonal: T"],
       attrs=["T: {float16, float32, float64, int32, int64, complex64, complex128}"], shape_fn=_diag_part)


def matrix_band_part(input: Any, num_lower: Any, num_upper: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """Keep the num_lower subdiagonals and num_upper superdiagonals (-1: all) of each
    matrix, zeros elsewhere: `tf.matrix_band_part(a, -1, 0)` is the lower triangle."""
    return apply_op("MatrixBandPart", input=input, num_lower=num_lower, num_upper=num_upper,
                    name=name or "MatrixBandPart")


band_part = matrix_band_part


def matrix_diag(diagonal: Any, name: str = "diag", k: Any = 0, num_rows: Any = -1, num_cols: Any = -1,
                padding_value: Any = 0, align: str = "RIGHT_LEFT") -> Tensor:
    """Batch of matrices with the given diagonal(s) and `padding_value` elsewhere."""
    g = graph_of([diagonal])
    with g.as_default():
        diagonal = convert_to_tensor(diagonal, name="diagonal")
        pad = convert_to_tensor(padding_value, dtype=diagonal.dtype.base_dtype, name="padding_value")
        return apply_op("MatrixDiagV3", diagonal=diagonal, k=_int32(k, "k"), num_rows=_int32(num_rows, "num_rows"),
                        num_cols=_int32(num_cols, "num_cols"), padding_value=pad, align=_check_align(align), name=name or "diag")


def matrix_diag_part(input: Any, name: str = "diag_part", k: Any = 0, padding_value: Any = 0,  # noqa: A002
                     align: str = "RIGHT_LEFT") -> Tensor:
    """The diagonal(s) k of each matrix (padded with `padding_value`)."""
    g = graph_of([input])
    with g.as_default():
        input = convert_to_tensor(input, name="input")  # noqa: A001
        pad = convert_to_tensor(padding_value, dtype=input.dtype.base_dtype, name="padding_value")
        return apply_op("MatrixDiagPartV3", input=input, k=_int32(k, "k"), padding_value=pad, align=_check_align(align),
                        name=name or "diag_part")


def matrix_set_diag(input: Any, diagonal: Any, name: str = "set_diag", k: Any = 0,  # noqa: A002
                    align: str = "RIGHT_LEFT") -> Tensor:
    """Each matrix with its diagonal(s) k replaced by `diagonal`."""
    return apply_op("MatrixSetDiagV3", input=input, diagonal=diagonal, k=_int32(k, "k"), align=_check_align(align),
                    name=name or "set_diag")


set_diag = matrix_set_diag


def _int32(v: Any, name: str) -> Any:
    return v if isinstance(v, Tensor) else convert_to_tensor(v, dtype=dtypes.int32, name=name)


def diag(diagonal: Any, name: str | None = None) -> Tensor:
    """Tensor of rank 2r with `diagonal` (rank r) on its diagonal (`Diag`)."""
    return apply_op("Diag", diagonal=diagonal, name=name or "Diag")


def diag_part(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The diagonal of a rank-2r tensor (`DiagPart`)."""
    return apply_op("DiagPart", input=input, name=name or "DiagPart")


tensor_diag, tensor_diag_part = diag, diag_part
