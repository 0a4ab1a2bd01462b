"""Image resizing: the ResizeBilinear / ResizeNearestNeighbor / ResizeBicubic /
ResizeArea ops, their gradient ops, and `tf.image.resize_images` (TF1's `tf.image.resize`).

Each resize op takes [batch, height, width, channels] images and a 1-D int32 `size`
(new_height, new_width), with TensorFlow's attrs `align_corners` and
`half_pixel_centers` (both false by default: TF1's legacy sampling).  Bilinear and
bicubic give float32 whatever the input dtype; nearest neighbour keeps it.  Their
gradients are TensorFlow's: ResizeBilinearGrad(grad, image) and
ResizeBicubicGrad(grad, image) in the image's dtype (bicubic's only for float32 and
float64 images), ResizeNearestNeighborGrad(grad, image size); the gradient ops
themselves have none, nor has ResizeArea (which has no half_pixel_centers attr).
Kernels: flowlab.kernels.image_resize_kernels.

CropAndResize samples boxes of a batch of images onto a fixed grid (bilinear or
nearest), with TensorFlow's gradients to the image (CropAndResizeGradImage, float
images only) and to the boxes (CropAndResizeGradBoxes).

resize_images converts `size`, adds the batch dimension for a single image and
removes it again, and with preserve_aspect_ratio scales both sides by the smaller
ratio, as TensorFlow does.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops import array_ops, math_ops
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.const_fold import constant_value
from flowlab.ops.core_ops import with_dependencies
from flowlab.ops.gradient_registry import gradient, not_differentiable
from flowlab.ops.image_ops import (
    _as_batch,
    _assert,
    _image_dimensions,
    _is_tensor,
    check_at_least_3d_image,
    pad_to_bounding_box,
)
from flowlab.ops.nn_ops import _name_scope
from flowlab.ops.op_def import op_def

__all__ = ["ResizeMethod", "resize_images", "resize", "resize_bilinear", "resize_nearest_neighbor",
           "resize_bicubic", "resize_area", "resize_image_with_pad", "crop_and_resize"]

_IMAGE_TYPES = "{int8, uint8, int16, uint16, int32, int64, float16, float32, float64}"
_RESIZE_ATTRS = ["align_corners: bool = false", "half_pixel_centers: bool = false"]


def _resize_shape(op: Operation) -> list[Any]:
    images, size = op.inputs
    s = images.shape.with_rank(4) if images.shape.ndims is not None else TensorShape([None] * 4)
    size.shape.with_rank(1)
    if size.shape.as_list()[0] not in (None, 2):
        raise ValueError(f"Dimension must be 2 but is {size.shape.as_list()[0]}")
    v = constant_value(size)
    h, w = (int(v[0]), int(v[1])) if v is not None else (None, None)
    dims = s.as_list()
    return [TensorShape([dims[0], h, w, dims[3]])]


def _like_second(op: Operation) -> list[Any]:
    return [op.inputs[1].shape]


def _nn_grad_shape(op: Operation) -> list[Any]:
    grads, size = op.inputs
    dims = grads.shape.with_rank(4).as_list() if grads.shape.ndims is not None else [None] * 4
    v = constant_value(size)
    h, w = (int(v[0]), int(v[1])) if v is not None else (None, None)
    return [TensorShape([dims[0], h, w, dims[3]])]


op_def("ResizeBilinear", inputs=["images: T", "size: int32"], outputs=["resized_images: float32"],
       attrs=[f"T: {_IMAGE_TYPES}", *_RESIZE_ATTRS], shape_fn=_resize_shape,
       doc="Resize images to `size` by bilinear interpolation (float32 result).")
op_def("ResizeNearestNeighbor", inputs=["images: T", "size: int32"], outputs=["resized_images: T"],
       attrs=[f"T: {_IMAGE_TYPES}", *_RESIZE_ATTRS], shape_fn=_resize_shape,
       doc="Resize images to `size` by nearest-neighbour sampling.")
op_def("ResizeBicubic", inputs=["images: T", "size: int32"], outputs=["resized_images: float32"],
       attrs=[f"T: {_IMAGE_TYPES}", *_RESIZE_ATTRS], shape_fn=_resize_shape,
       doc="Resize images to `size` by bicubic interpolation (float32 result).")
op_def("ResizeArea", inputs=["images: T", "size: int32"], outputs=["resized_images: float32"],
       attrs=[f"T: {_IMAGE_TYPES}", "align_corners: bool = false"], shape_fn=_resize_shape,
       doc="Resize images to `size` by area averaging (float32 result).")
# TensorFlow registers no gradient for ResizeArea; flowlab says so explicitly.
not_differentiable("ResizeArea")
op_def("ResizeBilinearGrad", inputs=["grads: float32", "original_image: T"], outputs=["output: T"],
       attrs=["T: {float16, float32, float64}", *_RESIZE_ATTRS], shape_fn=_like_second,
       doc="Gradient of ResizeBilinear with respect to its images.")
op_def("ResizeBicubicGrad", inputs=["grads: float32", "original_image: T"], outputs=["output: T"],
       attrs=["T: {float32, float64}", *_RESIZE_ATTRS], shape_fn=_like_second,
       doc="Gradient of ResizeBicubic with respect to its images.")
op_def("ResizeNearestNeighborGrad", inputs=["grads: T", "size: int32"], outputs=["output: T"],
       attrs=["T: {uint8, int8, int32, float16, float32, float64}", *_RESIZE_ATTRS], shape_fn=_nn_grad_shape,
       doc="Gradient of ResizeNearestNeighbor: sums grads into an image of `size`.")
for _op in ("ResizeBilinearGrad", "ResizeBicubicGrad", "ResizeNearestNeighborGrad"):
    not_differentiable(_op)


def _attrs(op: Operation) -> dict[str, Any]:
    return {"align_corners": op.get_attr("align_corners"), "half_pixel_centers": op.get_attr("half_pixel_centers")}


@gradient("ResizeNearestNeighbor")
def _resize_nearest_neighbor_grad(op: Operation, grad: Tensor) -> list[Any]:
    image = op.inputs[0]
    hw = image.shape[1:3] if image.shape.ndims is not None else TensorShape(None)
    image_shape: Any = hw if hw.is_fully_defined() else array_ops.shape(image)[1:3]
    if isinstance(image_shape, TensorShape):
        image_shape = image_shape.as_list()
    return [apply_op("ResizeNearestNeighborGrad", grads=grad, size=image_shape, name="ResizeNearestNeighborGrad",
                     **_attrs(op)), None]


@gradient("ResizeBilinear")
def _resize_bilinear_grad(op: Operation, grad: Tensor) -> list[Any]:
    return [apply_op("ResizeBilinearGrad", grads=grad, original_image=op.inputs[0], name="ResizeBilinearGrad",
                     **_attrs(op)), None]


@gradient("ResizeBicubic")
def _resize_bicubic_grad(op: Operation, grad: Tensor) -> list[Any]:
    if op.inputs[0].dtype not in (dtypes.float32, dtypes.float64):
        return [None, None]
    return [apply_op("ResizeBicubicGrad", grads=grad, original_image=op.inputs[0], name="ResizeBicubicGrad",
                     **_attrs(op)), None]


def resize_bilinear(images: Any, size: Any, align_corners: bool = False, name: str | None = None,
                    half_pixel_centers: bool = False) -> Tensor:
    """`tf.image.resize_bilinear`: the ResizeBilinear op (float32 result)."""
    return apply_op("ResizeBilinear", images=images, size=size, align_corners=align_corners,
                    half_pixel_centers=half_pixel_centers, name=name or "ResizeBilinear")


def resize_nearest_neighbor(images: Any, size: Any, align_corners: bool = False, name: str | None = None,
                            half_pixel_centers: bool = False) -> Tensor:
    """`tf.image.resize_nearest_neighbor`: the ResizeNearestNeighbor op."""
    return apply_op("ResizeNearestNeighbor", images=images, size=size, align_corners=align_corners,
                    half_pixel_centers=half_pixel_centers, name=name or "ResizeNearestNeighbor")


def resize_bicubic(images: Any, size: Any, align_corners: bool = False, name: str | None = None,
                   half_pixel_centers: bool = False) -> Tensor:
    """`tf.image.resize_bicubic`: the ResizeBicubic op (float32 result)."""
    return apply_op("ResizeBicubic", images=images, size=size, align_corners=align_corners,
                    half_pixel_centers=half_pixel_centers, name=name or "ResizeBicubic")


def resize_area(images: Any, size: Any, align_corners: bool = False, name: str | None = None) -> Tensor:
    """`tf.image.resize_area`: the ResizeArea op (float32 result)."""
    return apply_op("ResizeArea", images=images, size=size, align_corners=align_corners, name=name or "ResizeArea")


class ResizeMethod:
    """TF1's `tf.image.ResizeMethod` (resize_images also takes TF2's strings)."""

    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3


_BY_METHOD = {ResizeMethod.BILINEAR: "ResizeBilinear", "bilinear": "ResizeBilinear",
              ResizeMethod.NEAREST_NEIGHBOR: "ResizeNearestNeighbor", "nearest": "ResizeNearestNeighbor",
              ResizeMethod.BICUBIC: "ResizeBicubic", "bicubic": "ResizeBicubic",
              ResizeMethod.AREA: "ResizeArea", "area": "ResizeArea"}


def resize_images(images: Any, size: Any, method: Any = ResizeMethod.BILINEAR, align_corners: bool = False,
                  preserve_aspect_ratio: bool = False, name: str | None = None) -> Tensor:
    """Resize an image [h, w, c] or a batch [b, h, w, c] to `size` = (new_h, new_w).

        tf.image.resize_images(img, [64, 64])                      # bilinear, float32
        tf.image.resize_images(img, [64, 64], tf.image.ResizeMethod.NEAREST_NEIGHBOR)
    """
    with _name_scope(name, "resize", [images, size]):
        images = convert_to_tensor(images, name="images")
        if images.shape.ndims is None:
            raise ValueError("'images' contains no shape.")
        is_batch = images.shape.ndims != 3
        if not is_batch:
            images = array_ops.expand_dims(images, 0)
        elif images.shape.ndims != 4:
            raise ValueError("'images' must have either 3 or 4 dimensions.")
        _, height, width, _ = images.shape.as_list()
        try:
            size = convert_to_tensor(size, dtypes.int32, name="size")
        except (TypeError, ValueError):
            raise ValueError("'size' must be a 1-D int32 Tensor") from None
        if not size.shape.is_compatible_with([2]):
            raise ValueError("'size' must be a 1-D Tensor of 2 elements: new_height, new_width")
        if preserve_aspect_ratio:
            _, cur_h, cur_w, _ = _image_dimensions(images, rank=4)
            fh = math_ops.cast(size[0], dtypes.float32) / math_ops.cast(cur_h, dtypes.float32)
            fw = math_ops.cast(size[1], dtypes.float32) / math_ops.cast(cur_w, dtypes.float32)
            factor = math_ops.minimum(fh, fw)
            new_h = math_ops.cast(math_ops.round(factor * math_ops.cast(cur_h, dtypes.float32)), dtypes.int32)
            new_w = math_ops.cast(math_ops.round(factor * math_ops.cast(cur_w, dtypes.float32)), dtypes.int32)
            size = convert_to_tensor([new_h, new_w], dtypes.int32, name="size")
        v = constant_value(size)
        new_h_c, new_w_c = (int(v[0]), int(v[1])) if v is not None else (None, None)
        if None not in (new_h_c, new_w_c, height, width) and (width, height) == (new_w_c, new_h_c):
            return images if is_batch else array_ops.squeeze(images, axis=[0])
        op_type = _BY_METHOD.get(method)
        if op_type is None:
            raise ValueError(f"Resize method is not implemented: {method}")
        images = apply_op(op_type, images=images, size=size, align_corners=align_corners, name=op_type)
        images.set_shape([None, new_h_c, new_w_c, None])
        return images if is_batch else array_ops.squeeze(images, axis=[0])


resize = resize_images


def resize_image_with_pad(image: Any, target_height: Any, target_width: Any, method: Any = ResizeMethod.BILINEAR,
                          align_corners: bool = False) -> Tensor:
    """Resize keeping the aspect ratio, then zero-pad to [target_height, target_width]."""
    with _name_scope(None, "resize_image_with_pad", [image]):
        image, is_batch = _as_batch(convert_to_tensor(image, name="image"))
        checks = check_at_least_3d_image(image, require_static=False)
        checks += _assert(target_width > 0, ValueError, "target_width must be > 0.")
        checks += _assert(target_height > 0, ValueError, "target_height must be > 0.")
        image = with_dependencies(checks, image)

        def max_(x: Any, y: Any) -> Any:
            return math_ops.maximum(x, y) if _is_tensor(x) or _is_tensor(y) else max(x, y)

        _, height, width, _ = _image_dimensions(image, rank=4)
        f_height = math_ops.cast(height, dtype=dtypes.float32)
        f_width = math_ops.cast(width, dtype=dtypes.float32)
        f_target_height = math_ops.cast(target_height, dtype=dtypes.float32)
        f_target_width = math_ops.cast(target_width, dtype=dtypes.float32)
        ratio = max_(f_width / f_target_width, f_height / f_target_height)
        resized_height_float = f_height / ratio
        resized_width_float = f_width / ratio
        resized_height = math_ops.cast(math_ops.floor(resized_height_float), dtype=dtypes.int32)
        resized_width = math_ops.cast(math_ops.floor(resized_width_float), dtype=dtypes.int32)
        padding_height = (f_target_height - resized_height_float) / 2
        padding_width = (f_target_width - resized_width_float) / 2
        p_height = max_(0, math_ops.cast(math_ops.floor(padding_height), dtype=dtypes.int32))
        p_width = max_(0, math_ops.cast(math_ops.floor(padding_width), dtype=dtypes.int32))
        resized = resize_images(image, [resized_height, resized_width], method, align_corners=align_corners)
        padded = pad_to_bounding_box(resized, p_height, p_width, target_height, target_width)
        if padded.shape.ndims is None:
            raise ValueError("padded contains no shape.")
        _image_dimensions(padded, rank=4)
        return padded if is_batch else array_ops.squeeze(padded, axis=[0])


def _crop_shape(op: Operation) -> list[Any]:
    image, boxes, _, crop_size = op.inputs
    depth = image.shape.with_rank(4).as_list()[3] if image.shape.ndims is not None else None
    n = boxes.shape.with_rank(2).as_list()[0] if boxes.shape.ndims is not None else None
    v = constant_value(crop_size)
    h, w = (int(v[0]), int(v[1])) if v is not None else (None, None)
    return [TensorShape([n, h, w, depth])]


def _grad_image_shape(op: Operation) -> list[Any]:
    v = constant_value(op.inputs[3])
    return [TensorShape([int(d) for d in v]) if v is not None else TensorShape([None] * 4)]


op_def("CropAndResize", inputs=["image: T", "boxes: float32", "box_ind: int32", "crop_size: int32"],
       outputs=["crops: float32"],
       attrs=[f"T: {_IMAGE_TYPES}", "method: string = 'bilinear'", "extrapolation_value: float = 0.0"],
       shape_fn=_crop_shape, doc="Crops of boxes of a batch of images, resized to crop_size (float32).")
op_def("CropAndResizeGradImage", inputs=["grads: float32", "boxes: float32", "box_ind: int32", "image_size: int32"],
       outputs=["output: T"], attrs=["T: {float16, float32, float64}", "method: string = 'bilinear'"],
       shape_fn=_grad_image_shape, doc="Gradient of CropAndResize with respect to the image.")
op_def("CropAndResizeGradBoxes", inputs=["grads: float32", "image: T", "boxes: float32", "box_ind: int32"],
       outputs=["output: float32"], attrs=[f"T: {_IMAGE_TYPES}", "method: string = 'bilinear'"],
       shape_fn=lambda op: [op.inputs[2].shape], doc="Gradient of CropAndResize with respect to the boxes.")
not_differentiable("CropAndResizeGradImage")
not_differentiable("CropAndResizeGradBoxes")


@gradient("CropAndResize")
def _crop_and_resize_grad(op: Operation, grad: Tensor) -> list[Any]:
    image = op.inputs[0]
    image_shape: Any = image.shape.as_list() if image.shape.is_fully_defined() else array_ops.shape(image)
    grad0 = None
    if image.dtype in (dtypes.float16, dtypes.float32, dtypes.float64):
        grad0 = apply_op("CropAndResizeGradImage", grads=grad, boxes=op.inputs[1], box_ind=op.inputs[2],
                         image_size=image_shape, T=op.get_attr("T"), method=op.get_attr("method"),
                         name="CropAndResizeGradImage")
    grad1 = apply_op("CropAndResizeGradBoxes", grads=grad, image=op.inputs[0], boxes=op.inputs[1],
                     box_ind=op.inputs[2], name="CropAndResizeGradBoxes")
    return [grad0, grad1, None, None]


def crop_and_resize(image: Any, boxes: Any, box_ind: Any = None, crop_size: Any = None, method: str = "bilinear",
                    extrapolation_value: float = 0, name: str | None = None, box_indices: Any = None) -> Tensor:
    """[num_boxes, crop_height, crop_width, depth] float32 crops of `boxes` ((y1, x1, y2, x2)
    in [0, 1], of images `box_ind`), resized to `crop_size`."""
    if box_ind is None:
        box_ind = box_indices
    return apply_op("CropAndResize", image=image, boxes=boxes, box_ind=box_ind, crop_size=crop_size, method=method,
                    extrapolation_value=extrapolation_value, name=name or "CropAndResize")
