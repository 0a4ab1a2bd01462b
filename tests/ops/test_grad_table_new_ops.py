"""Finite-difference gradient TABLE entries (tests/ops/gradient_check.py) for ops whose
gradients were added with the coverage work: complex parts and FFTs, special functions,
depth/space and patch rearrangements, morphology, segment products, tensor scatters and
the tridiagonal solvers.  One case per op; test_gradients.py runs them.

The checker feeds float64 placeholders and differentiates a real loss, so the complex
ops are reached through a real round trip: a complex tensor built by `tf.complex` from
two real inputs, and a real result (its real and imaginary parts, or its angle) out.
Inputs are chosen where each function is smooth: no ties for the max/min ops, no zero
factors in SegmentProd, Erfinv and Ndtri inside their domains, Angle away from its
branch cut, the tridiagonal systems diagonally dominant.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tests.ops.gradient_check import TABLE, grad_case

RS = np.random.RandomState(11)


def _c(tf: Any, re: Any, im: Any) -> Any:
    return tf.complex(re, im)


def _parts(tf: Any, z: Any) -> Any:
    """A complex tensor's real and imaginary parts, stacked on a new last axis."""
    return tf.stack([tf.real(z), tf.imag(z)], axis=-1)


# --- complex parts ----------------------------------------------------------------------
@grad_case("Complex", RS.randn(2, 3), RS.randn(2, 3))
def _(tf: Any, re: Any, im: Any) -> Any:
    z = _c(tf, re, im)
    return _parts(tf, z * z)


@grad_case("Real", RS.randn(2, 3), RS.randn(2, 3))
def _(tf: Any, re: Any, im: Any) -> Any:
    z = _c(tf, re, im)
    return tf.real(z * z)


@grad_case("Imag", RS.randn(2, 3), RS.randn(2, 3))
def _(tf: Any, re: Any, im: Any) -> Any:
    z = _c(tf, re, im)
    return tf.imag(z * z)


@grad_case("Angle", RS.uniform(0.5, 2.0, (2, 3)), RS.randn(2, 3))
def _(tf: Any, re: Any, im: Any) -> Any:  # re > 0: away from the branch cut on the negative real axis
    return tf.angle(_c(tf, re, im))


# --- FFTs -------------------------------------------------------------------------------
@grad_case("FFT", RS.randn(2, 4), RS.randn(2, 4))
def _(tf: Any, re: Any, im: Any) -> Any:
    return _parts(tf, tf.fft(_c(tf, re, im)))


@grad_case("IFFT", RS.randn(2, 4), RS.randn(2, 4))
def _(tf: Any, re: Any, im: Any) -> Any:
    return _parts(tf, tf.ifft(_c(tf, re, im)))


@grad_case("FFT2D", RS.randn(2, 3, 2), RS.randn(2, 3, 2))
def _(tf: Any, re: Any, im: Any) -> Any:
    return _parts(tf, tf.fft2d(_c(tf, re, im)))


@grad_case("IFFT2D", RS.randn(2, 3, 2), RS.randn(2, 3, 2))
def _(tf: Any, re: Any, im: Any) -> Any:
    return _parts(tf, tf.ifft2d(_c(tf, re, im)))


@grad_case("FFT3D", RS.randn(2, 2, 3), RS.randn(2, 2, 3))
def _(tf: Any, re: Any, im: Any) -> Any:
    return _parts(tf, tf.fft3d(_c(tf, re, im)))


@grad_case("IFFT3D", RS.randn(2, 2, 3), RS.randn(2, 2, 3))
def _(tf: Any, re: Any, im: Any) -> Any:
    return _parts(tf, tf.ifft3d(_c(tf, re, im)))


# --- special functions ------------------------------------------------------------------
@grad_case("BesselI0", RS.uniform(-2.0, 2.0, (2, 3)))
def _(tf: Any, x: Any) -> Any:
    return tf.math.bessel_i0(x)


@grad_case("BesselI1", RS.uniform(-2.0, 2.0, (2, 3)))
def _(tf: Any, x: Any) -> Any:
    return tf.math.bessel_i1(x)


@grad_case("Erfinv", RS.uniform(-0.9, 0.9, (2, 3)), rtol=1e-4)
def _(tf: Any, x: Any) -> Any:
    return tf.math.erfinv(x)


@grad_case("Ndtri", RS.uniform(0.1, 0.9, (2, 3)), rtol=1e-4)
def _(tf: Any, x: Any) -> Any:
    return tf.math.ndtri(x)


# --- rearrangements ---------------------------------------------------------------------
@grad_case("EnsureShape", RS.randn(2, 3))
def _(tf: Any, x: Any) -> Any:
    return tf.ensure_shape(x, [2, 3])


@grad_case("DepthToSpace", RS.randn(1, 2, 3, 8))
def _(tf: Any, x: Any) -> Any:
    return tf.depth_to_space(x, 2)


@grad_case("SpaceToDepth", RS.randn(1, 4, 2, 3))
def _(tf: Any, x: Any) -> Any:
    return tf.space_to_depth(x, 2)


@grad_case("ExtractImagePatches", RS.randn(1, 4, 5, 2))
def _(tf: Any, x: Any) -> Any:
    return tf.image.extract_patches(x, sizes=[1, 2, 3, 1], strides=[1, 1, 2, 1], rates=[1, 2, 1, 1],
                                    padding="SAME")


# --- morphology (continuous random inputs: no ties within a window) ---------------------
@grad_case("Dilation2D", RS.randn(1, 4, 5, 2), RS.randn(2, 2, 2))
def _(tf: Any, x: Any, f: Any) -> Any:
    return tf.nn.dilation2d(x, f, strides=[1, 1, 2, 1], rates=[1, 1, 1, 1], padding="SAME")


# --- segment product (no zero factors) --------------------------------------------------
@grad_case("SegmentProd", RS.choice([-1.0, 1.0], (5, 2)) * RS.uniform(0.5, 1.5, (5, 2)))
def _(tf: Any, x: Any) -> Any:
    return tf.math.segment_prod(x, [0, 0, 1, 1, 1])


# --- tensor scatters --------------------------------------------------------------------
_IDX = [[2], [0]]


@grad_case("TensorScatterUpdate", RS.randn(4, 2), RS.randn(2, 2))
def _(tf: Any, t: Any, u: Any) -> Any:
    return tf.tensor_scatter_nd_update(t, _IDX, u)


@grad_case("TensorScatterAdd", RS.randn(4, 2), RS.randn(2, 2))
def _(tf: Any, t: Any, u: Any) -> Any:
    return tf.tensor_scatter_nd_add(t, _IDX, u)


@grad_case("TensorScatterSub", RS.randn(4, 2), RS.randn(2, 2))
def _(tf: Any, t: Any, u: Any) -> Any:
    return tf.tensor_scatter_nd_sub(t, _IDX, u)


# The updates win in one column and lose in the other, by at least 0.5: no ties.
_T = np.array([[1.0, -2.0], [0.5, 3.0], [-1.0, 2.5], [2.0, -0.5]])
_U = np.array([[0.0, 3.5], [1.5, 1.0]])


@grad_case("TensorScatterMax", _T, _U)
def _(tf: Any, t: Any, u: Any) -> Any:
    return tf.tensor_scatter_nd_max(t, _IDX, u)


@grad_case("TensorScatterMin", _T, _U)
def _(tf: Any, t: Any, u: Any) -> Any:
    return tf.tensor_scatter_nd_min(t, _IDX, u)


# --- tridiagonal ------------------------------------------------------------------------
@grad_case("TridiagonalMatMul", RS.randn(2, 4), RS.randn(2, 4), RS.randn(2, 4), RS.randn(2, 4, 3))
def _(tf: Any, sup: Any, main: Any, sub: Any, rhs: Any) -> Any:
    return tf.linalg.tridiagonal_matmul((sup, main, sub), rhs, diagonals_format="sequence")


@grad_case("TridiagonalSolve",
           np.stack([RS.uniform(-1, 1, (2, 4)), RS.uniform(3, 4, (2, 4)), RS.uniform(-1, 1, (2, 4))], axis=1),
           RS.randn(2, 4, 3), rtol=1e-4)
def _(tf: Any, diags: Any, rhs: Any) -> Any:  # diagonally dominant: well conditioned
    return tf.linalg.tridiagonal_solve(diags, rhs)


_OPS = ("Angle", "BesselI0", "BesselI1", "Complex", "DepthToSpace", "Dilation2D", "EnsureShape", "Erfinv",
        "ExtractImagePatches", "FFT", "FFT2D", "FFT3D", "IFFT", "IFFT2D", "IFFT3D", "Imag", "Ndtri", "Real",
        "SegmentProd", "SpaceToDepth", "TensorScatterAdd", "TensorScatterMax", "TensorScatterMin",
        "TensorScatterSub", "TensorScatterUpdate", "TridiagonalMatMul", "TridiagonalSolve")


def test_one_case_per_op() -> None:
    """This module's entries (the cases themselves run in test_gradients.py)."""
    mine = {op for op, cases in TABLE.items() for c in cases if c.where.startswith(f"{__name__.rsplit('.', 1)[-1]}:")}
    assert mine == set(_OPS)
