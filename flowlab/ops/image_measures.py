"""Measures on images: total_variation, psnr, ssim, image_gradients, sobel_edges.

All are compositions of existing ops built as TensorFlow's image_ops_impl builds them
(ssim's Gaussian window through softmax, its local means through depthwise_conv2d;
Sobel through a REFLECT pad and depthwise_conv2d), so they are differentiable where
their ops are.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Tensor
from flowlab.ops import array_ops, check_ops, math_ops
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.constant_op import constant
from flowlab.ops.core_ops import identity
from flowlab.ops.depthwise_conv_ops import depthwise_conv2d
from flowlab.ops.image_adjust import convert_image_dtype
from flowlab.ops.nn_ops import _name_scope, softmax

__all__ = ["total_variation", "psnr", "ssim", "ssim_multiscale", "image_gradients", "sobel_edges"]


def total_variation(images: Any, name: str | None = None) -> Tensor:
    """Sum of absolute differences of neighbouring pixels (per image for a batch)."""
    with _name_scope(name, "total_variation", [images]):
        images = convert_to_tensor(images)
        ndims = images.shape.ndims
        if ndims == 3:
            dif1 = images[1:, :, :] - images[:-1, :, :]
            dif2 = images[:, 1:, :] - images[:, :-1, :]
            axis = None
        elif ndims == 4:
            dif1 = images[:, 1:, :, :] - images[:, :-1, :, :]
            dif2 = images[:, :, 1:, :] - images[:, :, :-1, :]
            axis = [1, 2, 3]
        else:
            raise ValueError("'images' must be either 3 or 4-dimensional.")
        return (math_ops.reduce_sum(math_ops.abs(dif1), axis=axis)
                + math_ops.reduce_sum(math_ops.abs(dif2), axis=axis))


def _verify_compatible_image_shapes(img1: Tensor, img2: Tensor) -> tuple[Tensor, Tensor, list[Any]]:
    s1 = img1.shape.with_rank_at_least(3)
    s2 = img2.shape.with_rank_at_least(3)
    s1[-3:].assert_is_compatible_with(s2[-3:])
    if s1.ndims is not None and s2.ndims is not None:
        for d1, d2 in zip(reversed(s1.as_list()[:-3]), reversed(s2.as_list()[:-3])):
            if not (d1 == 1 or d2 == 1 or d1 is None or d2 is None or d1 == d2):
                raise ValueError(f"Two images are not compatible: {s1} and {s2}")
    shape1, shape2 = array_ops.shape_n([img1, img2])
    checks = [
        check_ops.Assert(math_ops.greater_equal(array_ops.size(shape1), 3), [shape1, shape2], summarize=10),
        check_ops.Assert(math_ops.reduce_all(math_ops.equal(shape1[-3:], shape2[-3:])), [shape1, shape2],
                         summarize=10),
    ]
    return shape1, shape2, checks


def psnr(a: Any, b: Any, max_val: Any, name: str | None = None) -> Tensor:
    """Peak signal-to-noise ratio in dB, per image: 20 log10(max) - 10 log10(mse)."""
    with _name_scope(name, "PSNR", [a, b]):
        a = convert_to_tensor(a)  # TensorFlow reads a.dtype first: `a` must be a tensor there
        max_val = convert_image_dtype(math_ops.cast(max_val, a.dtype), dtypes.float32)
        a = convert_image_dtype(a, dtypes.float32)
        b = convert_image_dtype(b, dtypes.float32)
        mse = math_ops.reduce_mean(math_ops.squared_difference(a, b), [-3, -2, -1])
        value = math_ops.subtract(20 * math_ops.log(max_val) / math_ops.log(10.0),
                                  np.float32(10 / np.log(10)) * math_ops.log(mse), name="psnr")
        _, _, checks = _verify_compatible_image_shapes(a, b)
        with get_default_graph().control_dependencies(checks):
            return identity(value)


def _fspecial_gauss(size: Tensor, sigma: Tensor) -> Tensor:
    coords = math_ops.cast(math_ops.range(size), sigma.dtype)
    coords -= math_ops.cast(size - 1, sigma.dtype) / 2.0
    g = math_ops.square(coords)
    g *= -0.5 / math_ops.square(sigma)
    g = array_ops.reshape(g, shape=[1, -1]) + array_ops.reshape(g, shape=[-1, 1])
    g = array_ops.reshape(g, shape=[1, -1])
    g = softmax(g)
    return array_ops.reshape(g, shape=[size, size, 1, 1])


def _ssim_per_channel(img1: Tensor, img2: Tensor, max_val: Any, filter_size: int, filter_sigma: float,
                      k1: float, k2: float, return_index_map: bool) -> tuple[Tensor, Tensor]:
    size = constant(filter_size, dtype=dtypes.int32)
    sigma = constant(filter_sigma, dtype=img1.dtype)
    shape1, shape2 = array_ops.shape_n([img1, img2])
    checks = [
        check_ops.Assert(math_ops.reduce_all(math_ops.greater_equal(shape1[-3:-1], size)), [shape1, size],
                         summarize=8),
        check_ops.Assert(math_ops.reduce_all(math_ops.greater_equal(shape2[-3:-1], size)), [shape2, size],
                         summarize=8),
    ]
    with get_default_graph().control_dependencies(checks):
        img1 = identity(img1)
    kernel = _fspecial_gauss(size, sigma)
    kernel = array_ops.tile(kernel, multiples=[1, 1, shape1[-1], 1])

    def reducer(x: Tensor) -> Tensor:
        shape = array_ops.shape(x)
        x = array_ops.reshape(x, shape=array_ops.concat([[-1], shape[-3:]], 0))
        y = depthwise_conv2d(x, kernel, strides=[1, 1, 1, 1], padding="VALID")
        return array_ops.reshape(y, array_ops.concat([shape[:-3], array_ops.shape(y)[1:]], 0))

    c1 = (k1 * max_val) ** 2
    c2 = (k2 * max_val) ** 2
    mean0, mean1 = reducer(img1), reducer(img2)
    num0 = mean0 * mean1 * 2.0
    den0 = math_ops.square(mean0) + math_ops.square(mean1)
    luminance = (num0 + c1) / (den0 + c1)
    num1 = reducer(img1 * img2) * 2.0
    den1 = reducer(math_ops.square(img1) + math_ops.square(img2))
    c2 *= 1.0
    cs = (num1 - num0 + c2) / (den1 - den0 + c2)
    if return_index_map:
        return luminance * cs, cs
    axes = constant([-3, -2], dtype=dtypes.int32)
    return math_ops.reduce_mean(luminance * cs, axes), math_ops.reduce_mean(cs, axes)


def ssim(img1: Any, img2: Any, max_val: Any, filter_size: int = 11, filter_sigma: float = 1.5, k1: float = 0.01,
         k2: float = 0.03, return_index_map: bool = False) -> Tensor:
    """Structural similarity of two images (or batches) over an 11x11 Gaussian window."""
    with _name_scope(None, "SSIM", [img1, img2]):
        img1 = convert_to_tensor(img1, name="img1")
        img2 = convert_to_tensor(img2, name="img2")
        _, _, checks = _verify_compatible_image_shapes(img1, img2)
        with get_default_graph().control_dependencies(checks):
            img1 = identity(img1)
        max_val = convert_image_dtype(math_ops.cast(max_val, img1.dtype), dtypes.float32)
        img1 = convert_image_dtype(img1, dtypes.float32)
        img2 = convert_image_dtype(img2, dtypes.float32)
        per_channel, _ = _ssim_per_channel(img1, img2, max_val, filter_size, filter_sigma, k1, k2,
                                           return_index_map)
        return math_ops.reduce_mean(per_channel, [-1])


_MSSSIM_WEIGHTS = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)


def ssim_multiscale(img1: Any, img2: Any, max_val: Any, power_factors: Any = _MSSSIM_WEIGHTS,
                    filter_size: int = 11, filter_sigma: float = 1.5, k1: float = 0.01, k2: float = 0.03) -> Tensor:
    """MS-SSIM (Wang et al. 2003) as TensorFlow computes it: the contrast-structure terms
    of each scale (2x average-pooled, SYMMETRIC-padded to even sizes) and the SSIM of
    the last, combined by a weighted geometric mean, averaged over channels."""
    from flowlab.ops.cond import cond
    from flowlab.ops.conv_ops import avg_pool
    from flowlab.ops.nn_ops import relu

    with _name_scope(None, "MS-SSIM", [img1, img2]):
        img1 = convert_to_tensor(img1, name="img1")
        img2 = convert_to_tensor(img2, name="img2")
        shape1, shape2, checks = _verify_compatible_image_shapes(img1, img2)
        with get_default_graph().control_dependencies(checks):
            img1 = identity(img1)
        max_val = convert_image_dtype(math_ops.cast(max_val, img1.dtype), dtypes.float32)
        imgs = [convert_image_dtype(img1, dtypes.float32), convert_image_dtype(img2, dtypes.float32)]
        heads = [s[:-3] for s in (shape1, shape2)]
        tails = [s[-3:] for s in (shape1, shape2)]
        divisor = [1, 2, 2, 1]
        divisor_t = constant(divisor[1:], dtype=dtypes.int32)

        def do_pad(images: list[Tensor], remainder: Tensor) -> list[Tensor]:
            padding = array_ops.pad(array_ops.expand_dims(remainder, -1), [[1, 0], [1, 0]])
            return [array_ops.pad(x, padding, mode="SYMMETRIC") for x in images]

        mcs = []
        ssim_per_channel = None
        for k in range(len(power_factors)):
            with _name_scope(None, f"Scale{k}", imgs):
                if k > 0:
                    flat = [array_ops.reshape(x, array_ops.concat([[-1], t], 0)) for x, t in zip(imgs, tails)]
                    remainder = tails[0] % divisor_t
                    need_padding = math_ops.reduce_any(math_ops.not_equal(remainder, 0))
                    padded = cond(need_padding, lambda flat=flat, remainder=remainder: do_pad(flat, remainder),
                                  lambda flat=flat: flat)
                    down = [avg_pool(x, ksize=divisor, strides=divisor, padding="VALID") for x in padded]
                    tails = [x[1:] for x in array_ops.shape_n(down)]
                    imgs = [array_ops.reshape(x, array_ops.concat([h, t], 0)) for x, h, t in zip(down, heads, tails)]
                ssim_per_channel, cs = _ssim_per_channel(imgs[0], imgs[1], max_val, filter_size, filter_sigma, k1, k2,
                                                         False)
                mcs.append(relu(cs))
        mcs.pop()
        stacked = array_ops.stack(mcs + [relu(ssim_per_channel)], axis=-1)
        ms_ssim = math_ops.reduce_prod(math_ops.pow(stacked, power_factors), [-1])
        return math_ops.reduce_mean(ms_ssim, [-1])


def image_gradients(image: Any) -> tuple[Tensor, Tensor]:
    """(dy, dx): forward differences along height and width, zero in the last row/column."""
    image = convert_to_tensor(image)
    if image.shape.ndims != 4:
        raise ValueError(f"image_gradients expects a 4D tensor [batch_size, h, w, d], not {image.shape}.")
    image_shape = array_ops.shape(image)
    batch_size, height, width, depth = array_ops.unstack(image_shape)
    dy = image[:, 1:, :, :] - image[:, :-1, :, :]
    dx = image[:, :, 1:, :] - image[:, :, :-1, :]
    dy = array_ops.concat([dy, array_ops.zeros(array_ops.stack([batch_size, 1, width, depth]), image.dtype)], 1)
    dy = array_ops.reshape(dy, image_shape)
    dx = array_ops.concat([dx, array_ops.zeros(array_ops.stack([batch_size, height, 1, depth]), image.dtype)], 2)
    dx = array_ops.reshape(dx, image_shape)
    return dy, dx


def sobel_edges(image: Any) -> Tensor:
    """Sobel responses [batch, h, w, d, 2] (dy then dx) with REFLECT padding."""
    image = convert_to_tensor(image)
    static_shape = image.shape
    image_shape = array_ops.shape(image)
    kernels = np.expand_dims(np.transpose(np.asarray([[[-1, -2, -1], [0, 0, 0], [1, 2, 1]],
                                                      [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]]]), (1, 2, 0)), -2)
    kernels_t = constant(kernels, dtype=image.dtype)
    kernels_t = array_ops.tile(kernels_t, [1, 1, image_shape[-1], 1], name="sobel_filters")
    padded = array_ops.pad(image, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="REFLECT")
    output = depthwise_conv2d(padded, kernels_t, [1, 1, 1, 1], "VALID")
    output = array_ops.reshape(output, shape=array_ops.concat([image_shape, [2]], 0))
    output.set_shape(static_shape.concatenate([2]))
    return output
