"""Discrete Fourier transforms over the innermost 1, 2 or 3 dimensions: `tf.fft`,
`tf.ifft`, `tf.fft2d`, `tf.ifft2d`, `tf.fft3d`, `tf.ifft3d` (TensorFlow 1.x's
top-level names; tf.signal's in TensorFlow 2).

The ops are TensorFlow's FFT/IFFT/FFT2D/IFFT2D/FFT3D/IFFT3D on complex64/complex128,
unnormalized forward and 1/n inverse.  Gradients as TensorFlow's (spectral_grad.py):
the transform's gradient is the inverse transform times n, the inverse's the forward
transform over n, n being the product of the transformed sizes.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph.tensor import Operation, Tensor
from flowlab.ops import array_ops, math_ops
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.gradient_registry import gradient
from flowlab.ops.op_def import op_def

__all__ = ["fft", "ifft", "fft2d", "ifft2d", "fft3d", "ifft3d"]

_RANK = {"FFT": 1, "IFFT": 1, "FFT2D": 2, "IFFT2D": 2, "FFT3D": 3, "IFFT3D": 3}


def _shape_fn(op: Operation) -> list[Any]:
    s = op.inputs[0].shape
    r = _RANK[op.type]
    if s.ndims is not None and s.ndims < r:
        raise ValueError(f"Shape must be at least rank {r} but is rank {s.ndims}")
    return [s]


for _t in _RANK:
    op_def(_t, inputs=["input: Tcomplex"], outputs=["output: Tcomplex"],
           attrs=["Tcomplex: {complex64, complex128} = complex64"], shape_fn=_shape_fn)


def _build(op_type: str, x: Any, name: str | None) -> Tensor:
    t = convert_to_tensor(x, name="input")
    return apply_op(op_type, input=t, name=name or op_type)


def fft(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The 1-D DFT of the innermost dimension of a complex tensor."""
    return _build("FFT", input, name)


def ifft(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The inverse 1-D DFT of the innermost dimension (scaled by 1/n)."""
    return _build("IFFT", input, name)


def fft2d(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The 2-D DFT of the two innermost dimensions."""
    return _build("FFT2D", input, name)


def ifft2d(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The inverse 2-D DFT of the two innermost dimensions."""
    return _build("IFFT2D", input, name)


def fft3d(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The 3-D DFT of the three innermost dimensions."""
    return _build("FFT3D", input, name)


def ifft3d(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The inverse 3-D DFT of the three innermost dimensions."""
    return _build("IFFT3D", input, name)


def _size(grad: Tensor, rank: int) -> Tensor:
    return math_ops.reduce_prod(array_ops.shape(grad)[-rank:])


def _forward_grad(inverse: Any, rank: int) -> Any:
    def grad_fn(op: Operation, grad: Tensor) -> Any:
        size = math_ops.cast(_size(grad, rank), grad.dtype)
        return [inverse(grad) * size]
    return grad_fn


def _inverse_grad(forward: Any, rank: int) -> Any:
    def grad_fn(op: Operation, grad: Tensor) -> Any:
        real = grad.dtype.base_dtype.real_dtype
        rsize = math_ops.cast(1.0 / math_ops.cast(_size(grad, rank), real), grad.dtype)
        return [forward(grad) * rsize]
    return grad_fn


for _f, _i, _r in ((("FFT", fft), ("IFFT", ifft), 1), (("FFT2D", fft2d), ("IFFT2D", ifft2d), 2),
                   (("FFT3D", fft3d), ("IFFT3D", ifft3d), 3)):
    gradient(_f[0])(_forward_grad(_i[1], _r))
    gradient(_i[0])(_inverse_grad(_f[1], _r))
