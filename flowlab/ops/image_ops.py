"""`tf.image` geometry: flips, rotations, transposes, crops and pads, built from array ops.

Images are [height, width, channels] or batches [batch, height, width, channels].
Each function builds TensorFlow's graph for it (image_ops_impl): the same ops, the
same build-time ValueErrors for bad static shapes, and run-time Asserts where the
shapes are only known when the step runs.  The random ones draw from RandomUniform
as TensorFlow does, so a graph seed gives TensorFlow's flips and crops:
`random_flip_left_right` flips a single image when uniform() < 0.5 and a batch
image by image where round(uniform()) is 1; `random_crop` takes
`uniform(int32 max) % (shape - size + 1)` as its offset.

Resizing is in flowlab.ops.image_resize, pixel values (dtype conversion, brightness,
contrast, grayscale, standardization) in flowlab.ops.image_adjust, colour spaces in
flowlab.ops.image_color and the PNG/JPEG codecs in flowlab.ops.image_codecs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Tensor
from flowlab.ops import array_ops, check_ops, math_ops, random_ops
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.cond import case, cond
from flowlab.ops.const_fold import constant_value
from flowlab.ops.core_ops import with_dependencies
from flowlab.ops.nn_ops import _name_scope

__all__ = [
    "flip_left_right", "flip_up_down", "random_flip_left_right", "random_flip_up_down", "rot90",
    "transpose", "transpose_image", "central_crop", "crop_to_bounding_box", "pad_to_bounding_box",
    "resize_image_with_crop_or_pad", "resize_with_crop_or_pad", "random_crop",
]


# --- shape checks (TensorFlow's _CheckAtLeast3DImage and friends) ----------------------
def _is_tensor(x: Any) -> bool:
    return isinstance(x, Tensor) or (hasattr(x, "_as_graph_element") and hasattr(x, "value"))


def _assert(condition: Any, ex_type: type, msg: str) -> list[Any]:
    """An Assert when `condition` is a tensor; else raise now if it is false."""
    if _is_tensor(condition):
        return [check_ops.Assert(condition, [msg])]
    if not condition:
        raise ex_type(msg)
    return []


def _image_dimensions(image: Tensor, rank: int) -> list[Any]:
    """The static dimensions where known, else scalar tensors from Shape."""
    if image.shape.is_fully_defined():
        return image.shape.as_list()
    static = image.shape.with_rank(rank).as_list()
    dynamic = array_ops.unstack(array_ops.shape(image), rank)
    return [s if s is not None else d for s, d in zip(static, dynamic)]


def check_at_least_3d_image(image: Tensor, require_static: bool = True) -> list[Any]:
    try:
        if image.shape.ndims is None:
            image_shape = image.shape.with_rank(3)
        else:
            image_shape = image.shape.with_rank_at_least(3)
    except ValueError:
        raise ValueError(f"'image' (shape {image.shape}) must be at least three-dimensional.") from None
    if require_static and not image_shape.is_fully_defined():
        raise ValueError("'image' must be fully defined.")
    inner = image_shape[-3:]
    if any(d == 0 for d in inner.as_list()):
        raise ValueError(f"inner 3 dims of 'image.shape' must be > 0: {image_shape}")
    if not inner.is_fully_defined():
        return [check_ops.assert_positive(array_ops.shape(image)[-3:],
                                          ["inner 3 dims of 'image.shape' must be > 0."]),
                check_ops.assert_greater_equal(array_ops.rank(image), 3,
                                               message="'image' must be at least three-dimensional.")]
    return []


def assert_at_least_3d_image(image: Tensor) -> Tensor:
    # TensorFlow's with_dependencies adds its Identity even when there is nothing to wait for.
    return with_dependencies(check_at_least_3d_image(image, require_static=False), image)


def _fix_flip_shape(image: Tensor, result: Tensor) -> Tensor:
    if image.shape.ndims is None:
        result.set_shape([None, None, None])
    else:
        result.set_shape(image.shape)
    return result


def _by_rank(image: Tensor, f_rank3: Callable[[], Tensor], f_rank4: Callable[[], Tensor],
             message: str) -> Tensor:
    ndims = image.shape.ndims
    if ndims is None:
        return cond(math_ops.equal(array_ops.rank(image), 3), f_rank3, f_rank4)
    if ndims == 3:
        return f_rank3()
    if ndims == 4:
        return f_rank4()
    raise ValueError(message % image.shape)


# --- flips, rotations, transposes ---------------------------------------------------------
def _flip(image: Any, flip_index: int, scope_name: str) -> Tensor:
    with _name_scope(None, scope_name, [image]):
        image = assert_at_least_3d_image(convert_to_tensor(image, name="image"))
        return _by_rank(image,
                        lambda: _fix_flip_shape(image, array_ops.reverse(image, [flip_index])),
                        lambda: array_ops.reverse(image, [flip_index + 1]),
                        "'image' (shape %s)must have either 3 or 4 dimensions.")


def flip_left_right(image: Any) -> Tensor:
    """Reverse the width dimension: `image[..., ::-1, :]` of an image or a batch."""
    return _flip(image, 1, "flip_left_right")


def flip_up_down(image: Any) -> Tensor:
    """Reverse the height dimension of an image or a batch."""
    return _flip(image, 0, "flip_up_down")


def _random_flip(image: Any, flip_index: int, seed: int | None, scope_name: str) -> Tensor:
    with _name_scope(None, scope_name, [image]) as scope:
        image = assert_at_least_3d_image(convert_to_tensor(image, name="image"))

        def f_rank3() -> Tensor:
            uniform = random_ops.random_uniform(shape=[], minval=0, maxval=1.0, seed=seed)
            mirror = math_ops.less(uniform, 0.5)
            result = cond(mirror, lambda: array_ops.reverse(image, [flip_index]), lambda: image, name=scope)
            return _fix_flip_shape(image, result)

        def f_rank4() -> Tensor:
            batch_size = array_ops.shape(image)[0]
            uniform = random_ops.random_uniform(shape=[batch_size], minval=0, maxval=1.0, seed=seed)
            flips = math_ops.round(array_ops.reshape(uniform, [batch_size, 1, 1, 1]))
            flips = math_ops.cast(flips, image.dtype)
            flipped = array_ops.reverse(image, [flip_index + 1])
            return flips * flipped + (1 - flips) * image

        return _by_rank(image, f_rank3, f_rank4, "'image' (shape %s) must have either 3 or 4 dimensions.")


def random_flip_left_right(image: Any, seed: int | None = None) -> Tensor:
    """Flip left-right with probability 1/2 (each image of a batch on its own)."""
    return _random_flip(image, 1, seed, "random_flip_left_right")


def random_flip_up_down(image: Any, seed: int | None = None) -> Tensor:
    """Flip upside down with probability 1/2 (each image of a batch on its own)."""
    return _random_flip(image, 0, seed, "random_flip_up_down")


def rot90(image: Any, k: Any = 1, name: str | None = None) -> Tensor:
    """Rotate counter-clockwise by k * 90 degrees (a `case` on k mod 4)."""
    with _name_scope(name, "rot90", [image, k]) as scope:
        image = assert_at_least_3d_image(convert_to_tensor(image, name="image"))
        k = convert_to_tensor(k, dtype=dtypes.int32, name="k")
        k.shape.assert_has_rank(0)
        k = math_ops.mod(k, 4, name="mod")
        return _by_rank(image, lambda: _rot90(image, k, scope, 0), lambda: _rot90(image, k, scope, 1),
                        "'image' (shape %s) must have either 3 or 4 dimensions.")


def _rot90(image: Tensor, k: Tensor, scope: str, b: int) -> Tensor:
    h, w = b, b + 1
    perm = list(range(b)) + [w, h, w + 1]
    cases = [
        (math_ops.equal(k, 1), lambda: array_ops.transpose(array_ops.reverse(image, [w]), perm)),
        (math_ops.equal(k, 2), lambda: array_ops.reverse(image, [h, w])),
        (math_ops.equal(k, 3), lambda: array_ops.reverse(array_ops.transpose(image, perm), [w])),
    ]
    result = case(cases, default=lambda: image, exclusive=True, name=scope)
    if b == 0:
        result.set_shape([None, None, image.shape[2]])
    else:
        s = result.shape
        result.set_shape([s[0], None, None, s[3]])
    return result


def transpose(image: Any, name: str | None = None) -> Tensor:
    """Swap height and width of an image or a batch (`tf.image.transpose_image`)."""
    with _name_scope(name, "transpose", [image]):
        image = assert_at_least_3d_image(convert_to_tensor(image, name="image"))
        return _by_rank(image, lambda: array_ops.transpose(image, [1, 0, 2], name=name),
                        lambda: array_ops.transpose(image, [0, 2, 1, 3], name=name),
                        "'image' (shape %s) must have either 3 or 4 dimensions.")


transpose_image = transpose


# --- crops and pads -------------------------------------------------------------------------
def central_crop(image: Any, central_fraction: Any) -> Tensor:
    """The central `central_fraction` of height and width (offsets rounded down)."""
    with _name_scope(None, "central_crop", [image]):
        image = convert_to_tensor(image, name="image")
        static = constant_value(central_fraction) if _is_tensor(central_fraction) else central_fraction
        if static is not None:
            if static <= 0.0 or static > 1.0:
                raise ValueError("central_fraction must be within (0, 1]")
            if static == 1.0:
                return image
        else:
            checks = _assert(math_ops.logical_or(central_fraction > 0.0, central_fraction <= 1.0), ValueError,
                             "central_fraction must be within (0, 1]")
            image = with_dependencies(checks, image)
        assert_at_least_3d_image(image)
        rank = image.shape.ndims
        if rank not in (3, 4):
            raise ValueError(f"`image` should either be a Tensor with rank = 3 or rank = 4. Had rank = {rank}.")

        def get_dim(idx: int) -> tuple[Any, bool]:
            d = image.shape.as_list()[idx]
            return (d, False) if d is not None else (array_ops.shape(image)[idx], True)

        off = rank - 3
        img_h, dynamic_h = get_dim(off)
        img_w, dynamic_w = get_dim(off + 1)
        img_d = image.shape[off + 2]
        dynamic_h = dynamic_h or static is None
        dynamic_w = dynamic_w or static is None

        def start(size: Any, dynamic: bool) -> Any:
            if dynamic:
                sd = math_ops.cast(size, dtypes.float64)
                return math_ops.cast((sd - sd * math_ops.cast(central_fraction, dtypes.float64)) / 2, dtypes.int32)
            sf = float(size)
            return int((sf - sf * static) / 2)

        h_start, w_start = start(img_h, dynamic_h), start(img_w, dynamic_w)
        h_size, w_size = img_h - h_start * 2, img_w - w_start * 2
        if rank == 3:
            begin = array_ops.stack([h_start, w_start, 0])
            size = array_ops.stack([h_size, w_size, -1])
        else:
            begin = array_ops.stack([0, h_start, w_start, 0])
            size = array_ops.stack([-1, h_size, w_size, -1])
        image = array_ops.slice(image, begin, size)
        hw = [None if dynamic_h else h_size, None if dynamic_w else w_size, img_d]
        image.set_shape(hw if rank == 3 else [image.shape[0], *hw])
        return image


def _as_batch(image: Tensor) -> tuple[Tensor, bool]:
    ndims = image.shape.ndims
    if ndims == 3:
        return array_ops.expand_dims(image, 0), False
    if ndims is None:
        image = array_ops.expand_dims(image, 0)
        image.set_shape([None] * 4)
        return image, False
    if ndims != 4:
        raise ValueError(f"'image' (shape {image.shape}) must have either 3 or 4 dimensions.")
    return image, True


def _static_or_none(values: list[Any]) -> list[Any]:
    return [None if _is_tensor(v) else v for v in values]


def pad_to_bounding_box(image: Any, offset_height: Any, offset_width: Any, target_height: Any,
                        target_width: Any) -> Tensor:
    """Zero-pad to [target_height, target_width], the image at (offset_height, offset_width)."""
    with _name_scope(None, "pad_to_bounding_box", [image]):
        image, is_batch = _as_batch(convert_to_tensor(image, name="image"))
        batch, height, width, depth = _image_dimensions(image, rank=4)
        after_width = target_width - offset_width - width
        after_height = target_height - offset_height - height
        checks = check_at_least_3d_image(image, require_static=False)
        checks += _assert(offset_height >= 0, ValueError, "offset_height must be >= 0")
        checks += _assert(offset_width >= 0, ValueError, "offset_width must be >= 0")
        checks += _assert(after_width >= 0, ValueError, "width must be <= target - offset")
        checks += _assert(after_height >= 0, ValueError, "height must be <= target - offset")
        image = with_dependencies(checks, image)
        paddings = array_ops.reshape(
            array_ops.stack([0, 0, offset_height, after_height, offset_width, after_width, 0, 0]), [4, 2])
        padded = array_ops.pad(image, paddings)
        padded.set_shape(_static_or_none([batch, target_height, target_width, depth]))
        return padded if is_batch else array_ops.squeeze(padded, axis=[0])


def crop_to_bounding_box(image: Any, offset_height: Any, offset_width: Any, target_height: Any,
                         target_width: Any) -> Tensor:
    """The [target_height, target_width] window whose top-left corner is at the offsets."""
    with _name_scope(None, "crop_to_bounding_box", [image]):
        image, is_batch = _as_batch(convert_to_tensor(image, name="image"))
        checks = check_at_least_3d_image(image, require_static=False)
        batch, height, width, depth = _image_dimensions(image, rank=4)
        checks += _assert(offset_width >= 0, ValueError, "offset_width must be >= 0.")
        checks += _assert(offset_height >= 0, ValueError, "offset_height must be >= 0.")
        checks += _assert(target_width > 0, ValueError, "target_width must be > 0.")
        checks += _assert(target_height > 0, ValueError, "target_height must be > 0.")
        checks += _assert(width >= target_width + offset_width, ValueError, "width must be >= target + offset.")
        checks += _assert(height >= target_height + offset_height, ValueError,
                          "height must be >= target + offset.")
        image = with_dependencies(checks, image)
        cropped = array_ops.slice(
            image, array_ops.stack([0, offset_height, offset_width, 0]),
            array_ops.stack([array_ops.shape(image)[0], target_height, target_width, array_ops.shape(image)[3]]))
        cropped.set_shape(_static_or_none([batch, target_height, target_width, depth]))
        return cropped if is_batch else array_ops.squeeze(cropped, axis=[0])


def resize_image_with_crop_or_pad(image: Any, target_height: Any, target_width: Any) -> Tensor:
    """Centrally crop or zero-pad to [target_height, target_width]."""
    with _name_scope(None, "resize_image_with_crop_or_pad", [image]):
        image, is_batch = _as_batch(convert_to_tensor(image, name="image"))
        checks = check_at_least_3d_image(image, require_static=False)
        checks += _assert(target_width > 0, ValueError, "target_width must be > 0.")
        checks += _assert(target_height > 0, ValueError, "target_height must be > 0.")
        image = with_dependencies(checks, image)
        if _is_tensor(target_height):
            target_height = with_dependencies(checks, target_height)
        if _is_tensor(target_width):
            target_width = with_dependencies(checks, target_width)

        def pick(tensor_fn: Callable[[Any, Any], Any], py_fn: Callable[[Any, Any], Any]) -> Any:
            def f(x: Any, y: Any) -> Any:
                return tensor_fn(x, y) if _is_tensor(x) or _is_tensor(y) else py_fn(x, y)
            return f

        max_, min_ = pick(math_ops.maximum, max), pick(math_ops.minimum, min)
        equal_ = pick(math_ops.equal, lambda x, y: x == y)
        _, height, width, _ = _image_dimensions(image, rank=4)
        width_diff = target_width - width
        offset_crop_width = max_(-width_diff // 2, 0)
        offset_pad_width = max_(width_diff // 2, 0)
        height_diff = target_height - height
        offset_crop_height = max_(-height_diff // 2, 0)
        offset_pad_height = max_(height_diff // 2, 0)
        cropped = crop_to_bounding_box(image, offset_crop_height, offset_crop_width,
                                       min_(target_height, height), min_(target_width, width))
        resized = pad_to_bounding_box(cropped, offset_pad_height, offset_pad_width, target_height, target_width)
        _, resized_height, resized_width, _ = _image_dimensions(resized, rank=4)
        checks = _assert(equal_(resized_height, target_height), ValueError, "resized height is not correct.")
        checks += _assert(equal_(resized_width, target_width), ValueError, "resized width is not correct.")
        resized = with_dependencies(checks, resized)
        return resized if is_batch else array_ops.squeeze(resized, axis=[0])


resize_with_crop_or_pad = resize_image_with_crop_or_pad


def random_crop(value: Any, size: Any, seed: int | None = None, name: str | None = None) -> Tensor:
    """A random `size` window of `value` (every dimension), TensorFlow's offsets for a seed."""
    with _name_scope(name, "random_crop", [value, size]) as scope:
        value = convert_to_tensor(value, name="value")
        size = convert_to_tensor(size, dtype=dtypes.int32, name="size")
        shape = array_ops.shape(value)
        check = check_ops.Assert(math_ops.reduce_all(shape >= size),
                                 ["Need value.shape >= size, got ", shape, size], summarize=1000)
        shape = with_dependencies([check], shape)
        limit = shape - size + 1
        offset = random_ops.random_uniform(array_ops.shape(shape), dtype=size.dtype, maxval=size.dtype.max,
                                           seed=seed) % limit
        return array_ops.slice(value, offset, size, name=scope)
