"""Colour spaces: RGBToHSV and HSVToRGB, AdjustHue and AdjustSaturation, and their
`tf.image` builders (rgb_to_hsv, hsv_to_rgb, adjust_hue, random_hue,
adjust_saturation, random_saturation); YIQ and YUV as TensorFlow's 3x3 tensordots.

All values are floats in [0, 1]; the last dimension holds the three channels.  As in
TensorFlow, adjust_hue and adjust_saturation convert other dtypes to float32 and
back (not saturating).  RGBToHSV's gradient is TensorFlow's closed form (image_grad's
_RGBToHSVGrad), built op for op; HSVToRGB, AdjustHue and AdjustSaturation have none
in TensorFlow, which flowlab declares.  Kernels: flowlab.kernels.image_color_kernels.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.ops import array_ops, math_ops, random_ops
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.gradient_registry import gradient, not_differentiable
from flowlab.ops.image_adjust import convert_image_dtype
from flowlab.ops.nn_ops import _name_scope
from flowlab.ops.op_def import op_def
from flowlab.ops.special_math_ops import div_no_nan

__all__ = ["rgb_to_hsv", "hsv_to_rgb", "adjust_hue", "random_hue", "adjust_saturation", "random_saturation",
           "rgb_to_yiq", "yiq_to_rgb", "rgb_to_yuv", "yuv_to_rgb"]


def _three_channels(op: Operation) -> list[Any]:
    s = op.inputs[0].shape
    if s.ndims == 0:
        raise ValueError("Shape must be at least rank 1 but is rank 0")
    if s.ndims is not None and s.as_list()[-1] not in (None, 3):
        raise ValueError(f"Dimension must be 3 but is {s.as_list()[-1]}")
    return [s]


for _name, _doc in (("RGBToHSV", "RGB to HSV, per pixel of the last dimension."),
                    ("HSVToRGB", "HSV to RGB, per pixel of the last dimension.")):
    op_def(_name, inputs=["images: T"], outputs=["output: T"], attrs=["T: {float16, float32, float64} = float32"],
           shape_fn=_three_channels, doc=_doc)
op_def("AdjustHue", inputs=["images: T", "delta: float32"], outputs=["output: T"],
       attrs=["T: {float16, float32} = float32"], shape_fn=_three_channels,
       doc="Rotate the hue of RGB images by delta (a fraction of the colour wheel).")
op_def("AdjustSaturation", inputs=["images: T", "scale: float32"], outputs=["output: T"],
       attrs=["T: {float16, float32} = float32"], shape_fn=_three_channels,
       doc="Multiply the saturation of RGB images by scale (clipped to [0, 1]).")
for _name in ("HSVToRGB", "AdjustHue", "AdjustSaturation"):
    not_differentiable(_name)


def _reciprocal(x: Tensor) -> Tensor:
    return div_no_nan(math_ops.cast(1.0, x.dtype), x)


@gradient("RGBToHSV")
def _rgb_to_hsv_grad(op: Operation, grad: Tensor) -> Tensor:
    x, y = op.inputs[0], op.outputs[0]
    reds, greens, blues = x[..., 0], x[..., 1], x[..., 2]
    saturation, value = y[..., 1], y[..., 2]
    dt = x.dtype

    def f(t: Tensor) -> Tensor:
        return math_ops.cast(t, dt)

    red_biggest = f((reds >= blues) & (reds >= greens))
    green_biggest = f((greens > reds) & (greens >= blues))
    blue_biggest = f((blues > reds) & (blues > greens))
    red_smallest = f((reds < blues) & (reds < greens))
    green_smallest = f((greens <= reds) & (greens < blues))
    blue_smallest = f((blues <= reds) & (blues <= greens))
    dv_dr, dv_dg, dv_db = red_biggest, green_biggest, blue_biggest
    sq = math_ops.square
    ds_dr = f(reds > 0) * math_ops.add(
        red_biggest * math_ops.add(green_smallest * greens, blue_smallest * blues) * _reciprocal(sq(reds)),
        red_smallest * -1 * _reciprocal(green_biggest * greens + blue_biggest * blues))
    ds_dg = f(greens > 0) * math_ops.add(
        green_biggest * math_ops.add(red_smallest * reds, blue_smallest * blues) * _reciprocal(sq(greens)),
        green_smallest * -1 * _reciprocal(red_biggest * reds + blue_biggest * blues))
    ds_db = f(blues > 0) * math_ops.add(
        blue_biggest * math_ops.add(green_smallest * greens, red_smallest * reds) * _reciprocal(sq(blues)),
        blue_smallest * -1 * _reciprocal(green_biggest * greens + red_biggest * reds))

    def hue_part(big: Tensor, pos: Tensor, diff: Tensor) -> Tensor:
        return 60 * (f(pos > 0) * big * -1 * diff * _reciprocal(sq(saturation)) * _reciprocal(sq(value)))

    dh_dr = (hue_part(red_biggest, reds, greens - blues)
             + 60 * (f(greens > 0) * green_biggest * red_smallest * (blues - greens) * _reciprocal(sq(reds - greens)))
             + 60 * (f(greens > 0) * green_biggest * blue_smallest * -1 * _reciprocal(greens - blues))
             + 60 * (f(blues > 0) * blue_biggest * red_smallest * (blues - greens) * _reciprocal(sq(blues - reds)))
             + 60 * (f(blues > 0) * blue_biggest * green_smallest * _reciprocal(blues - greens))) / 360
    dh_dg = (hue_part(green_biggest, greens, blues - reds)
             + 60 * (f(reds > 0) * red_biggest * green_smallest * (reds - blues) * _reciprocal(sq(reds - greens)))
             + 60 * (f(reds > 0) * red_biggest * blue_smallest * _reciprocal(reds - blues))
             + 60 * (f(blues > 0) * blue_biggest * green_smallest * (reds - blues) * _reciprocal(sq(blues - greens)))
             + 60 * (f(blues > 0) * blue_biggest * red_smallest * -1 * _reciprocal(blues - reds))) / 360
    dh_db = (hue_part(blue_biggest, blues, reds - greens)
             + 60 * (f(reds > 0) * red_biggest * blue_smallest * (greens - reds) * _reciprocal(sq(reds - blues)))
             + 60 * (f(reds > 0) * red_biggest * green_smallest * -1 * _reciprocal(reds - greens))
             + 60 * (f(greens > 0) * green_biggest * blue_smallest * (greens - reds) * _reciprocal(sq(greens - blues)))
             + 60 * (f(greens > 0) * green_biggest * red_smallest * _reciprocal(greens - reds))) / 360
    dv = array_ops.stack([grad[..., 2] * dv_dr, grad[..., 2] * dv_dg, grad[..., 2] * dv_db], axis=-1)
    ds = array_ops.stack([grad[..., 1] * ds_dr, grad[..., 1] * ds_dg, grad[..., 1] * ds_db], axis=-1)
    dh = array_ops.stack([grad[..., 0] * dh_dr, grad[..., 0] * dh_dg, grad[..., 0] * dh_db], axis=-1)
    return math_ops.add(math_ops.add(dv, ds), dh)


def rgb_to_hsv(images: Any, name: str | None = None) -> Tensor:
    """RGB images (floats in [0, 1]) to HSV: hue, saturation, value in [0, 1]."""
    return apply_op("RGBToHSV", images=images, name=name or "RGBToHSV")


def hsv_to_rgb(images: Any, name: str | None = None) -> Tensor:
    """HSV images (floats in [0, 1]) to RGB."""
    return apply_op("HSVToRGB", images=images, name=name or "HSVToRGB")


def _as_float(image: Tensor) -> Tensor:
    return image if image.dtype in (dtypes.float16, dtypes.float32) else convert_image_dtype(image, dtypes.float32)


def adjust_hue(image: Any, delta: Any, name: str | None = None) -> Tensor:
    """Rotate the hue by `delta` (in [-1, 1], a fraction of the colour wheel)."""
    with _name_scope(name, "adjust_hue", [image]):
        image = convert_to_tensor(image, name="image")
        altered = apply_op("AdjustHue", images=_as_float(image), delta=delta, name="AdjustHue")
        return convert_image_dtype(altered, image.dtype)


def random_hue(image: Any, max_delta: float, seed: int | None = None) -> Tensor:
    """adjust_hue by a delta drawn uniformly from [-max_delta, max_delta)."""
    if max_delta > 0.5:
        raise ValueError("max_delta must be <= 0.5.")
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    delta = random_ops.random_uniform([], -max_delta, max_delta, seed=seed)
    return adjust_hue(image, delta)


def adjust_saturation(image: Any, saturation_factor: Any, name: str | None = None) -> Tensor:
    """Multiply the saturation by `saturation_factor` (the result clipped to [0, 1])."""
    with _name_scope(name, "adjust_saturation", [image]):
        image = convert_to_tensor(image, name="image")
        adjusted = apply_op("AdjustSaturation", images=_as_float(image), scale=saturation_factor,
                            name="AdjustSaturation")
        return convert_image_dtype(adjusted, image.dtype)


def random_saturation(image: Any, lower: float, upper: float, seed: int | None = None) -> Tensor:
    """adjust_saturation by a factor drawn uniformly from [lower, upper)."""
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    factor = random_ops.random_uniform([], lower, upper, seed=seed)
    return adjust_saturation(image, factor)


_RGB_TO_YIQ = [[0.299, 0.59590059, 0.2115], [0.587, -0.27455667, -0.52273617], [0.114, -0.32134392, 0.31119955]]
_YIQ_TO_RGB = [[1, 1, 1], [0.95598634, -0.27201283, -1.10674021], [0.6208248, -0.64720424, 1.70423049]]
_RGB_TO_YUV = [[0.299, -0.14714119, 0.61497538], [0.587, -0.28886916, -0.51496512],
               [0.114, 0.43601035, -0.10001026]]
_YUV_TO_RGB = [[1, 1, 1], [0, -0.394642334, 2.03206185], [1.13988303, -0.58062185, 0]]


def _linear_colour(images: Any, matrix: list[list[float]]) -> Tensor:
    from flowlab.ops.tensordot_ops import tensordot

    images = convert_to_tensor(images, name="images")
    kernel = convert_to_tensor(matrix, dtype=images.dtype, name="kernel")
    ndims = images.shape.ndims
    return tensordot(images, kernel, axes=[[ndims - 1], [0]])


def rgb_to_yiq(images: Any) -> Tensor:
    """RGB to YIQ (float images), a 3x3 matrix on the last dimension."""
    return _linear_colour(images, _RGB_TO_YIQ)


def yiq_to_rgb(images: Any) -> Tensor:
    """YIQ to RGB (float images)."""
    return _linear_colour(images, _YIQ_TO_RGB)


def rgb_to_yuv(images: Any) -> Tensor:
    """RGB to YUV (float images), a 3x3 matrix on the last dimension."""
    return _linear_colour(images, _RGB_TO_YUV)


def yuv_to_rgb(images: Any) -> Tensor:
    """YUV to RGB (float images)."""
    return _linear_colour(images, _YUV_TO_RGB)
