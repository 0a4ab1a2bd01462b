"""`tf.image` pixel values: dtype conversion, brightness, contrast, standardization,
grayscale; and `tf.saturate_cast` with its ClipByValue op.

convert_image_dtype follows TensorFlow's rules exactly: floats are in [0, 1), integers
span [0, MAX]; int -> int shifts by a power of two (FloorDiv, or Mul after the Cast),
int -> float multiplies by 1 / MAX, float -> int multiplies by MAX + 0.5 and Casts
(truncating), clamping first through saturate_cast when `saturate=True`; float ->
float is a Cast.  The adjust_* functions convert non-float images to float32, adjust,
and convert back saturating, as TensorFlow does.  AdjustContrastv2 (per channel:
(x - mean) * factor + mean, the mean over height and width) is an op with a kernel
in flowlab.kernels.image_adjust_kernels.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.ops import array_ops, check_ops, math_ops, random_ops
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.core_ops import identity, with_dependencies
from flowlab.ops.gradient_registry import gradient, not_differentiable
from flowlab.ops.image_ops import assert_at_least_3d_image
from flowlab.ops.math_defs import REAL
from flowlab.ops.math_grad import unbroadcast
from flowlab.ops.nn_ops import _name_scope
from flowlab.ops.op_def import op_def
from flowlab.ops.special_math_ops import reduce_std
from flowlab.ops.tensordot_ops import tensordot

__all__ = [
    "convert_image_dtype", "adjust_brightness", "random_brightness", "adjust_contrast", "random_contrast",
    "adjust_gamma", "per_image_standardization", "rgb_to_grayscale", "grayscale_to_rgb", "saturate_cast",
]


def _image_shape(op: Operation) -> list[Any]:
    s = op.inputs[0].shape
    if s.ndims is not None and s.ndims < 3:
        raise ValueError(f"Shape must be at least rank 3 but is rank {s.ndims}")
    return [s]


op_def("AdjustContrastv2", inputs=["images: T", "contrast_factor: float32"], outputs=["output: T"],
       attrs=["T: {float16, float32} = float32"], shape_fn=_image_shape,
       doc="Per channel (x - mean) * contrast_factor + mean, the mean over height and width.")
# TensorFlow registers no gradient for AdjustContrastv2; flowlab says so explicitly.
not_differentiable("AdjustContrastv2")

op_def("ClipByValue", inputs=["t: T", "clip_value_min: T", "clip_value_max: T"], outputs=["output: T"],
       attrs=[f"T: {REAL}"], shape_fn=lambda op: [op.inputs[0].shape],
       doc="min(max(t, clip_value_min), clip_value_max), the bounds broadcast to t.")


@gradient("ClipByValue")
def _clip_by_value_grad(op: Operation, grad: Tensor) -> list[Any]:
    x, lo, hi = op.inputs
    below = math_ops.less(x, lo)
    above = math_ops.greater(x, hi)
    zeros = array_ops.zeros_like(grad)
    gx = array_ops.where(math_ops.logical_or(below, above), zeros, grad)
    glo = array_ops.where(below, grad, zeros)
    ghi = array_ops.where(above, grad, zeros)
    # x has the output's shape; the bounds may be broadcast scalars.
    _, glo = unbroadcast(_Pair(x, lo), None, glo)
    _, ghi = unbroadcast(_Pair(x, hi), None, ghi)
    return [gx, glo, ghi]


class _Pair:
    """The two inputs `unbroadcast` reads from an op: (x, bound)."""

    def __init__(self, x: Tensor, y: Tensor) -> None:
        self.inputs = [x, y]


def _clip_by_value(t: Any, lo: Any, hi: Any, name: str = "ClipByValue") -> Tensor:
    """The ClipByValue op (TensorFlow's gen_math_ops._clip_by_value)."""
    return apply_op("ClipByValue", t=t, clip_value_min=lo, clip_value_max=hi, name=name)


def saturate_cast(value: Any, dtype: Any, name: str | None = None) -> Tensor:
    """Cast, clamping first to the range of `dtype` (`tf.saturate_cast`).

        tf.saturate_cast([-1.0, 300.0], tf.uint8)  # [0, 255]
    """
    with _name_scope(name, "saturate_cast", [value]) as scope:
        value = convert_to_tensor(value, name="value")
        dtype = dtypes.as_dtype(dtype).base_dtype
        in_dtype = value.dtype.base_dtype
        if in_dtype.is_complex or dtype.is_complex:
            raise NotImplementedError("flowlab's saturate_cast takes real dtypes only")
        np_in = in_dtype.as_numpy_dtype
        try:
            promoted: Any = np.promote_types(np_in, dtype.as_numpy_dtype)
        except TypeError:
            promoted = float
        lo = np_in(np.maximum(in_dtype.min, dtype.min))
        if np.array([lo, dtype.min], dtype=promoted)[0] < np.array([lo, dtype.min], dtype=promoted)[1]:
            lo = np.nextafter(lo, np_in(0), dtype=np_in)
        hi = np_in(np.minimum(float(in_dtype.max), float(dtype.max)))
        if np.array([hi, dtype.max], dtype=promoted)[0] > np.array([hi, dtype.max], dtype=promoted)[1]:
            hi = np.nextafter(hi, np_in(0), dtype=np_in)
        value = _clip_by_value(value, convert_to_tensor(lo, dtype=in_dtype), convert_to_tensor(hi, dtype=in_dtype),
                               name="clamp")
        return math_ops.cast(value, dtype, name=scope)


def convert_image_dtype(image: Any, dtype: Any, saturate: bool = False, name: str | None = None) -> Tensor:
    """Convert pixel values between dtypes, rescaling: float images are in [0, 1),
    integer images in [0, dtype.max].

        tf.image.convert_image_dtype(tf.constant([255], tf.uint8), tf.float32)  # [1.0]
    """
    image = convert_to_tensor(image, name="image")
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating and not dtype.is_integer:
        raise AttributeError("dtype must be either floating point or integer")
    if not image.dtype.is_floating and not image.dtype.is_integer:
        raise AttributeError("image dtype must be either floating point or integer")
    if dtype == image.dtype:
        return identity(image, name=name)
    with _name_scope(name, "convert_image", [image]) as scope:
        src = image.dtype
        if src.is_integer and dtype.is_integer:
            scale_in, scale_out = src.max, dtype.max
            if scale_in > scale_out:
                scaled = math_ops.floordiv(image, (scale_in + 1) // (scale_out + 1))
                return (saturate_cast(scaled, dtype, name=scope) if saturate
                        else math_ops.cast(scaled, dtype, name=scope))
            cast = saturate_cast(image, dtype) if saturate else math_ops.cast(image, dtype)
            return math_ops.multiply(cast, (scale_out + 1) // (scale_in + 1), name=scope)
        if src.is_floating and dtype.is_floating:
            return math_ops.cast(image, dtype, name=scope)
        if src.is_integer:
            return math_ops.multiply(math_ops.cast(image, dtype), 1.0 / src.max, name=scope)
        scaled = math_ops.multiply(image, dtype.max + 0.5)
        return saturate_cast(scaled, dtype, name=scope) if saturate else math_ops.cast(scaled, dtype, name=scope)


def _as_float(image: Tensor) -> Tensor:
    return image if image.dtype in (dtypes.float16, dtypes.float32) else convert_image_dtype(image, dtypes.float32)


def adjust_brightness(image: Any, delta: Any) -> Tensor:
    """Add `delta` to every pixel (in [0, 1) units for integer images, saturating)."""
    with _name_scope(None, "adjust_brightness", [image, delta]) as scope:
        image = convert_to_tensor(image, name="image")
        flt = _as_float(image)
        adjusted = math_ops.add(flt, math_ops.cast(delta, flt.dtype), name=scope)
        return convert_image_dtype(adjusted, image.dtype, saturate=True)


def random_brightness(image: Any, max_delta: float, seed: int | None = None) -> Tensor:
    """adjust_brightness by a delta drawn uniformly from [-max_delta, max_delta)."""
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    delta = random_ops.random_uniform([], -max_delta, max_delta, seed=seed)
    return adjust_brightness(image, delta)


def adjust_contrast(images: Any, contrast_factor: Any) -> Tensor:
    """(x - mean) * contrast_factor + mean per channel of each image (AdjustContrastv2)."""
    with _name_scope(None, "adjust_contrast", [images, contrast_factor]) as scope:
        images = convert_to_tensor(images, name="images")
        flt = _as_float(images)
        adjusted = apply_op("AdjustContrastv2", images=flt, contrast_factor=contrast_factor, name=scope)
        return convert_image_dtype(adjusted, images.dtype, saturate=True)


def random_contrast(image: Any, lower: float, upper: float, seed: int | None = None) -> Tensor:
    """adjust_contrast by a factor drawn uniformly from [lower, upper)."""
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    factor = random_ops.random_uniform([], lower, upper, seed=seed)
    return adjust_contrast(image, factor)


def adjust_gamma(image: Any, gamma: Any = 1, gain: Any = 1) -> Tensor:
    """gain * image ** gamma (in float, converted back saturating)."""
    with _name_scope(None, "adjust_gamma", [image, gamma, gain]):
        image = convert_to_tensor(image, name="image")
        flt = _as_float(image)
        if isinstance(gamma, Tensor):
            from flowlab.ops.image_ops import _assert
            gamma = with_dependencies(_assert(gamma >= 0, ValueError,
                                              "Gamma should be a non-negative real number."), gamma)
        elif gamma < 0:
            raise ValueError("Gamma should be a non-negative real number.")
        adjusted = gain * flt ** gamma
        return convert_image_dtype(adjusted, image.dtype, saturate=True)


def per_image_standardization(image: Any) -> Tensor:
    """(x - mean) / max(stddev, 1 / sqrt(pixels)) over each image, as float32."""
    with _name_scope(None, "per_image_standardization", [image]) as scope:
        image = assert_at_least_3d_image(convert_to_tensor(image, name="image"))
        image = math_ops.cast(image, dtype=dtypes.float32)
        num_pixels = math_ops.reduce_prod(array_ops.shape(image)[-3:])
        image_mean = math_ops.reduce_mean(image, axis=[-1, -2, -3], keepdims=True)
        stddev = reduce_std(image, axis=[-1, -2, -3], keepdims=True)
        min_stddev = math_ops.rsqrt(math_ops.cast(num_pixels, dtypes.float32))
        adjusted_stddev = math_ops.maximum(stddev, min_stddev)
        image -= image_mean
        return math_ops.divide(image, adjusted_stddev, name=scope)


def rgb_to_grayscale(images: Any, name: str | None = None) -> Tensor:
    """0.2989 R + 0.587 G + 0.114 B, keeping a last dimension of 1 and the dtype."""
    with _name_scope(name, "rgb_to_grayscale", [images]) as scope:
        images = convert_to_tensor(images, name="images")
        flt = convert_image_dtype(images, dtypes.float32)
        gray = tensordot(flt, [0.2989, 0.587, 0.114], [-1, -1])
        gray = array_ops.expand_dims(gray, -1)
        if images.shape.ndims is not None:  # TensorFlow's tensordot keeps the static dimensions
            gray.set_shape(images.shape[:-1].concatenate([1]))
        return convert_image_dtype(gray, images.dtype, name=scope)


def grayscale_to_rgb(images: Any, name: str | None = None) -> Tensor:
    """Repeat the single channel three times."""
    with _name_scope(name, "grayscale_to_rgb", [images]) as scope:
        images = convert_to_tensor(images, name="images")
        s = images.shape
        if s.ndims is not None and s.ndims < 2:
            raise ValueError(f"A grayscale image (shape {s}) must be at least two-dimensional.")
        checks: list[Any] = []
        if s.is_fully_defined():
            if s.as_list()[-1] != 1:
                raise ValueError("Last dimension of a grayscale image should be size 1.")
        else:
            checks = [check_ops.assert_equal(array_ops.shape(images)[-1], 1,
                                             message="Last dimension of a grayscale image should be size 1."),
                      check_ops.assert_greater_equal(array_ops.rank(images), 3,
                                                     message="A grayscale image must be at least two-dimensional.")]
        images = with_dependencies(checks, images)
        rank_1 = array_ops.expand_dims(array_ops.rank(images) - 1, 0)
        multiples = array_ops.concat([array_ops.ones(rank_1, dtype=dtypes.int32), array_ops.expand_dims(3, 0)], 0)
        rgb = array_ops.tile(images, multiples, name=scope)
        if s.ndims is not None:
            rgb.set_shape(s[:-1].concatenate([3]))
        return rgb
