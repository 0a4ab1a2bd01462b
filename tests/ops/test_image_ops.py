"""tf.image against TensorFlow 2.21: graphs op for op, values bit for bit, bytes, errors.

Each case is built under TensorFlow's tf.compat.v1 and under flowlab in a fresh graph
with graph seed 42; the two graphs must have the same ops (name, type, inputs,
control inputs) unless the case says otherwise, and the fetched values the same
dtypes, shapes and values (exactly, unless the case gives a tolerance).  Encoded
images must be the same bytes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import flowlab as fl
from tests.ops.gradient_check import grad_case

RS = np.random.RandomState(0)
IMG = RS.uniform(0, 1, (5, 6, 3)).astype(np.float32)
BATCH = RS.uniform(0, 1, (4, 5, 6, 3)).astype(np.float32)
U8 = RS.randint(0, 256, (5, 7, 3)).astype(np.uint8)
U8_BATCH = RS.randint(0, 256, (1, 5, 7, 2)).astype(np.uint8)
F64 = RS.randn(1, 4, 3, 1)
U16 = RS.randint(0, 65536, (4, 3, 1)).astype(np.uint16)
GRAY_ALPHA = RS.randint(0, 256, (5, 4, 2)).astype(np.uint8)
RGBA = RS.randint(0, 256, (5, 4, 4)).astype(np.uint8)
BIG = RS.randint(0, 256, (40, 50, 3)).astype(np.uint8)
HSV_WEIGHTS = RS.randn(*BATCH.shape).astype(np.float32)
WIDE = RS.uniform(0, 1, (2, 17, 9, 4)).astype(np.float32)
U16_RGB = RS.randint(0, 65536, (9, 8, 3)).astype(np.uint16)
U16_GRAY_ALPHA = RS.randint(0, 65536, (5, 6, 2)).astype(np.uint16)
U16_RGBA = (np.add.outer(np.arange(7), np.arange(4))[..., None] * [900, 1300, 2000, 3000]).astype(np.uint16)

CASES: dict[str, tuple[Any, dict[str, Any]]] = {}


def case(name: str, graph: bool = True, rtol: float = 0.0, atol: float = 0.0) -> Any:
    def register(fn: Any) -> Any:
        CASES[name] = (fn, dict(graph=graph, rtol=rtol, atol=atol))
        return fn
    return register


# --- geometry -----------------------------------------------------------------------------
case("flips")(lambda tf: [tf.image.flip_left_right(IMG), tf.image.flip_up_down(BATCH),
                          tf.image.flip_left_right(BATCH)])
case("random_flips")(lambda tf: [tf.image.random_flip_left_right(IMG, seed=3),
                                 tf.image.random_flip_up_down(BATCH, seed=5),
                                 tf.image.random_flip_left_right(BATCH)])
case("rot90_transpose")(lambda tf: [tf.image.rot90(IMG, 1), tf.image.rot90(BATCH, 3), tf.image.rot90(IMG, 2),
                                    tf.image.rot90(IMG, 0), tf.image.transpose_image(IMG),
                                    tf.image.transpose_image(BATCH)])
case("crop_and_pad")(lambda tf: [tf.image.crop_to_bounding_box(IMG, 1, 2, 3, 3),
                                 tf.image.pad_to_bounding_box(BATCH, 1, 2, 8, 9),
                                 tf.image.crop_to_bounding_box(BATCH, 0, 0, 5, 6)])
case("central_crop")(lambda tf: [tf.image.central_crop(IMG, 0.5), tf.image.central_crop(BATCH, 0.33),
                                 tf.image.central_crop(IMG, 1.0)])
case("resize_with_crop_or_pad")(lambda tf: [tf.image.resize_image_with_crop_or_pad(IMG, 3, 9),
                                            tf.image.resize_image_with_crop_or_pad(BATCH, 7, 2),
                                            tf.image.resize_with_crop_or_pad(IMG, 5, 6)])


@case("dynamic_shapes")
def _(tf):
    x = tf.placeholder(tf.float32, [None, None, 3])
    feed = {x: IMG}
    return [tf.image.flip_left_right(x), tf.image.crop_to_bounding_box(x, 1, 1, 2, 3),
            tf.image.pad_to_bounding_box(x, 1, 1, 8, 8), tf.image.resize_image_with_crop_or_pad(x, 4, 8),
            tf.image.per_image_standardization(x)], feed


@case("unknown_rank")
def _(tf):
    x = tf.placeholder(tf.float32)
    return [tf.image.flip_left_right(x), tf.image.flip_up_down(x), tf.image.random_flip_left_right(x, seed=1),
            tf.image.random_flip_up_down(tf.expand_dims(x, 0), seed=2)], {x: IMG}


case("random_crop")(lambda tf: [tf.image.random_crop(BATCH, [2, 3, 4, 3], seed=4), tf.random_crop(IMG, [2, 2, 3])])

# --- pixel values ----------------------------------------------------------------------
case("convert_image_dtype")(lambda tf: [
    tf.image.convert_image_dtype(U8, tf.float32), tf.image.convert_image_dtype(IMG, tf.uint8),
    tf.image.convert_image_dtype(IMG * 2 - 0.5, tf.uint8, saturate=True),
    tf.image.convert_image_dtype(U8, tf.int32), tf.image.convert_image_dtype(U8, tf.uint8),
    tf.image.convert_image_dtype(tf.constant([70000, -5, 2**31 - 1], tf.int32), tf.uint8, saturate=True),
    tf.image.convert_image_dtype(tf.constant([70000, 255, 2**31 - 1], tf.int32), tf.uint16),
    tf.image.convert_image_dtype(IMG, tf.float64), tf.image.convert_image_dtype(IMG, tf.int16),
    tf.image.convert_image_dtype(tf.constant([-1.5, 0.5, 2.0], tf.float64), tf.int8, saturate=True),
    tf.image.convert_image_dtype(tf.constant([1, 2**15 - 1], tf.int16), tf.float16)])
case("saturate_cast")(lambda tf: [tf.saturate_cast(tf.constant([-3.0, 300.5, 7.0]), tf.uint8),
                                  tf.saturate_cast(tf.constant([-3, 70000], tf.int32), tf.int16),
                                  tf.saturate_cast(tf.constant([1e10, -1e10], tf.float32), tf.int32)])
# TensorFlow's grappler rewrites image + (uniform * range + min): with its arithmetic optimizer,
# constant folding and remapper off, TensorFlow gives flowlab's bits.
case("brightness", atol=3e-8)(lambda tf: [tf.image.adjust_brightness(U8, 0.2), tf.image.adjust_brightness(IMG, -0.3),
                                          tf.image.random_brightness(IMG, 0.3, seed=1)])
case("contrast")(lambda tf: [tf.image.adjust_contrast(IMG, 1.7), tf.image.adjust_contrast(U8, 0.4),
                             tf.image.random_contrast(BATCH, 0.2, 1.8, seed=2),
                             tf.image.adjust_contrast(WIDE, 2.2)])
# TensorFlow's Mean/Std reduce in Eigen's tree order; flowlab's sums round differently.
case("standardization", rtol=1e-6, atol=1e-6)(lambda tf: [tf.image.per_image_standardization(IMG),
                                                          tf.image.per_image_standardization(U8),
                                                          tf.image.per_image_standardization(BATCH)])
case("grayscale", rtol=1e-6)(lambda tf: [tf.image.rgb_to_grayscale(IMG), tf.image.rgb_to_grayscale(U8),
                                         tf.image.grayscale_to_rgb(tf.image.rgb_to_grayscale(BATCH))])
# Pow: NumPy's powf and Eigen's differ in the last bit on some inputs.
case("gamma", rtol=2.5e-7)(lambda tf: [tf.image.adjust_gamma(U8, 0.5, 1.2), tf.image.adjust_gamma(IMG, 2.0)])


# --- resizing ----------------------------------------------------------------------------
def _all_resizes(tf: Any, x: Any, sizes: Any = ((7, 9), (3, 4), (5, 12), (1, 1), (10, 3))) -> list[Any]:
    out = []
    for s in sizes:
        for ac, hp in ((False, False), (True, False), (False, True)):
            for f in (tf.image.resize_bilinear, tf.image.resize_nearest_neighbor, tf.image.resize_bicubic):
                out.append(f(x, s, align_corners=ac, half_pixel_centers=hp))
    return out


case("resize_float32")(lambda tf: _all_resizes(tf, BATCH[:2]))
case("resize_area")(lambda tf: [tf.image.resize_area(x, s, align_corners=ac)
                                for x in (BATCH[:2], U8_BATCH, F64, WIDE)
                                for s in ((7, 9), (3, 4), (2, 5), (1, 1), (10, 3), (17, 2))
                                for ac in (False, True)]
                               + [tf.image.resize_images(BATCH, [3, 2], method=tf.image.ResizeMethod.AREA)])
case("resize_uint8")(lambda tf: _all_resizes(tf, U8_BATCH))
case("resize_float64")(lambda tf: _all_resizes(tf, F64))
case("resize_images")(lambda tf: [
    tf.image.resize_images(IMG, [8, 3]), tf.image.resize_images(U8_BATCH, [8, 3], method=1),
    tf.image.resize_images(BATCH, [9, 9], method=tf.image.ResizeMethod.BICUBIC, align_corners=True),
    tf.image.resize_images(BATCH, [10, 20], preserve_aspect_ratio=True), tf.image.resize_images(BATCH, [5, 6]),
    tf.image.resize_images(IMG, tf.constant([4, 4]), method=tf.image.ResizeMethod.NEAREST_NEIGHBOR)])


def _resize_grads(tf: Any, x: np.ndarray, sizes: Any = ((7, 9), (3, 4), (2, 2))) -> list[Any]:
    out = []
    xt = tf.constant(x)
    for s in sizes:
        for ac, hp in ((False, False), (True, False), (False, True)):
            for f in (tf.image.resize_bilinear, tf.image.resize_nearest_neighbor, tf.image.resize_bicubic):
                y = f(xt, s, align_corners=ac, half_pixel_centers=hp)
                w = np.random.RandomState(1).randn(*y.shape.as_list()).astype(y.dtype.as_numpy_dtype)
                out.append(tf.gradients(tf.reduce_sum(y * w), xt)[0])
    return out


case("resize_gradients_float32")(lambda tf: _resize_grads(tf, BATCH[:2]))
case("resize_gradients_float64")(lambda tf: _resize_grads(tf, F64))

# TensorFlow's C++ shape inference evaluates the computed size, so its resized image has a
# static shape and pad_to_bounding_box needs no Shape/unstack; flowlab's shape function
# folds only constants.  The values are TensorFlow's.
case("resize_image_with_pad", graph=False)(lambda tf: [tf.image.resize_image_with_pad(IMG, 8, 4),
                                          tf.image.resize_image_with_pad(BATCH, 3, 9, method=1),
                                          tf.image.resize_image_with_pad(U8, 10, 10)])

# --- measures -----------------------------------------------------------------------------
# Sums and means round in TensorFlow's Eigen order; flowlab's differ in the last bits.
case("measures", rtol=2e-6, atol=1e-6)(lambda tf: [
    tf.image.total_variation(tf.constant(IMG)), tf.image.total_variation(tf.constant(BATCH)),
    tf.image.psnr(tf.constant(BATCH), BATCH[::-1], 1.0), tf.image.psnr(tf.constant(U8), U8[::-1], 255),
    *tf.image.image_gradients(tf.constant(BATCH)), tf.image.sobel_edges(tf.constant(BATCH))])
case("ssim", rtol=2e-5, atol=2e-6)(lambda tf: [
    tf.image.ssim(WIDE[:1, :, :, :3].repeat(2, 1), WIDE[1:, :, :, :3].repeat(2, 1), 1.0, filter_size=5),
    tf.image.ssim(BIG, BIG[::-1], 255)])

CROP_BOXES = np.array([[0.1, 0.2, 0.8, 0.9], [-0.2, 0.3, 0.5, 1.3], [0.5, 0.5, 0.5, 0.5], [0.9, 0.8, 0.1, 0.2],
                       [0.0, 0.0, 1.0, 1.0]], np.float32)
CROP_IND = np.array([0, 1, 1, 0, 1], np.int32)
CROP_W = RS.randn(5, 4, 6, 3).astype(np.float32)
CROP_W1 = RS.randn(5, 1, 6, 3).astype(np.float32)


@case("crop_and_resize")
def _(tf):
    x, bx = tf.constant(BATCH[:2]), tf.constant(CROP_BOXES)
    out = []
    for method in ("bilinear", "nearest"):
        for size, w in (((4, 6), CROP_W), ((1, 6), CROP_W1)):
            y = tf.image.crop_and_resize(x, bx, CROP_IND, size, method=method, extrapolation_value=0.5)
            out += [y, *tf.gradients(tf.reduce_sum(y * w), [x, bx])]
    out.append(tf.image.crop_and_resize(U8_BATCH.repeat(2, 0), CROP_BOXES, CROP_IND, [3, 3]))
    return out


# --- colour ------------------------------------------------------------------------------


@case("hsv")
def _(tf):
    hsv = tf.image.rgb_to_hsv(tf.constant(BATCH))
    edge = tf.constant([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [0.5, 0.5, 0.2], [0.2, 0.9, 0.9], [0.3, 0.3, 0.9]])
    x = tf.constant(BATCH)
    grad = tf.gradients(tf.reduce_sum(tf.image.rgb_to_hsv(x) * HSV_WEIGHTS), x)[0]
    return [hsv, tf.image.hsv_to_rgb(hsv), tf.image.rgb_to_hsv(tf.constant(F64.repeat(3, -1) % 1.0)),
            tf.image.rgb_to_hsv(edge), tf.image.hsv_to_rgb(tf.image.rgb_to_hsv(edge)), grad]


# tensordot's MatMul: NumPy's float32 sums and Eigen's round differently in the last bit.
case("yiq_yuv", rtol=1e-6, atol=1e-7)(lambda tf: [
    tf.image.rgb_to_yiq(BATCH), tf.image.yiq_to_rgb(tf.image.rgb_to_yiq(BATCH)), tf.image.rgb_to_yuv(IMG),
    tf.image.yuv_to_rgb(tf.image.rgb_to_yuv(F64.repeat(3, -1)))])
case("is_jpeg")(lambda tf: [tf.image.is_jpeg(tf.image.encode_jpeg(U8)), tf.image.is_jpeg(tf.image.encode_png(U8)),
                            tf.image.is_jpeg(tf.constant(b"\xff\xd8"))])

case("hue_saturation")(lambda tf: [
    tf.image.adjust_hue(BATCH, 0.3), tf.image.adjust_hue(IMG, -0.7), tf.image.adjust_hue(U8, 0.1),
    tf.image.adjust_saturation(BATCH, 0.4), tf.image.adjust_saturation(IMG, 2.5),
    tf.image.adjust_saturation(U8, 1.3), tf.image.random_hue(IMG, 0.2, seed=3),
    tf.image.random_saturation(IMG, 0.5, 1.5, seed=4)])

BOXES = np.array([[[0.1, 0.2, 0.8, 0.9], [0.0, 0.0, 1.0, 1.0], [-0.3, 0.5, 0.4, 1.7], [0.9, 0.9, 0.2, 0.3]],
                  [[0.5, 0.5, 0.5, 0.5], [0.2, -1.0, 0.6, -0.1], [0.33, 0.1, 0.66, 0.7], [0.05, 0.05, 0.95, 0.5]]],
                 np.float32)
BOXES_11 = RS.uniform(0, 1, (4, 11, 4)).astype(np.float32)
case("draw_bounding_boxes")(lambda tf: [
    tf.image.draw_bounding_boxes(BATCH[:2], BOXES), tf.image.draw_bounding_boxes(BATCH[:2, ..., :1], BOXES),
    tf.image.draw_bounding_boxes(np.concatenate([BATCH[:2], BATCH[:2, ..., :1]], -1), BOXES),
    tf.image.draw_bounding_boxes(BATCH, BOXES_11),
    tf.image.draw_bounding_boxes(BATCH[:2], BOXES, colors=[[0.2, 0.4, 0.6, 1.0], [0.9, 0.1, 0.0, 0.5]])])

NMS_BOXES = np.concatenate([RS.uniform(0, 0.6, (40, 2)), RS.uniform(0.3, 1.0, (40, 2))], 1)[:, [0, 1, 2, 3]]
NMS_BOXES = NMS_BOXES.astype(np.float32)
NMS_SCORES = np.round(RS.uniform(0, 1, 40), 1).astype(np.float32)  # ties on purpose
case("non_max_suppression")(lambda tf: [
    tf.image.non_max_suppression(NMS_BOXES, NMS_SCORES, 10),
    tf.image.non_max_suppression(NMS_BOXES, NMS_SCORES, 40, iou_threshold=0.2),
    tf.image.non_max_suppression(NMS_BOXES[:, [2, 3, 0, 1]], NMS_SCORES, 5, iou_threshold=0.7, score_threshold=0.35),
    tf.image.non_max_suppression(NMS_BOXES, NMS_SCORES, 0)])

# --- codecs ------------------------------------------------------------------------------
case("encode_png")(lambda tf: [
    tf.image.encode_png(U8), tf.image.encode_png(U16), tf.image.encode_png(GRAY_ALPHA, compression=9),
    tf.image.encode_png(RGBA, compression=0), tf.image.encode_png(BIG), tf.image.encode_png(BIG, compression=3),
    tf.image.encode_png(U16_RGB)])
case("encode_jpeg")(lambda tf: [tf.image.encode_jpeg(U8), tf.image.encode_jpeg(BIG, quality=50),
                                tf.image.encode_jpeg(BIG, chroma_downsampling=False),
                                tf.image.encode_jpeg(BIG, x_density=72, y_density=96),
                                tf.image.encode_jpeg(BIG[..., :1]), tf.image.encode_jpeg(BIG[..., 2:], quality=80)])


@case("decode_png")
def _(tf):
    out = []
    for x in (U8, GRAY_ALPHA, RGBA, BIG[..., :1]):
        p = tf.image.encode_png(x)
        for c in (0, 1, 3, 4):
            out += [tf.image.decode_png(p, channels=c), tf.image.decode_png(p, channels=c, dtype=tf.uint16)]
        out += [tf.image.decode_image(p, dtype=tf.float32), tf.image.decode_image(p, channels=3, dtype=tf.float64)]
    for x in (U16, U16_RGB, U16_GRAY_ALPHA, U16_RGBA):
        p16 = tf.image.encode_png(x)
        out += [tf.image.decode_png(p16, dtype=tf.uint16), tf.image.decode_png(p16),
                tf.image.decode_png(p16, channels=3, dtype=tf.uint16), tf.image.decode_image(p16, dtype=tf.float32),
                tf.image.decode_png(p16, channels=1, dtype=tf.uint16), tf.image.decode_png(p16, channels=4)]
    out.append(tf.image.decode_png(tf.image.encode_png(U16_RGB, compression=1), dtype=tf.uint16))
    return out


def _jpeg_4_2_2() -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(BIG).save(buf, format="JPEG", subsampling=1, quality=90)
    return buf.getvalue()


ODD = RS.randint(0, 256, (17, 23, 3)).astype(np.uint8)
NARROW = RS.randint(0, 256, (9, 3, 3)).astype(np.uint8)
JPEG_4_2_2 = _jpeg_4_2_2()


@case("decode_jpeg")
def _(tf):
    out = []
    blobs = [tf.image.encode_jpeg(x) for x in (BIG, ODD, NARROW, BIG[..., 1:2])]
    blobs += [tf.image.encode_jpeg(BIG, chroma_downsampling=False), tf.constant(JPEG_4_2_2)]
    for j in blobs:
        for fancy, dct in ((True, ""), (True, "INTEGER_FAST"), (True, "INTEGER_ACCURATE"), (False, ""),
                           (False, "INTEGER_FAST")):
            for c in (0, 1, 3):
                out.append(tf.image.decode_jpeg(j, channels=c, fancy_upscaling=fancy, dct_method=dct))
        out.append(tf.image.decode_image(j))
    out.append(tf.image.decode_png(tf.image.encode_png(U8)) - tf.image.decode_jpeg(tf.image.encode_png(U8)))
    return out


def _run(tf: Any, fn: Any) -> tuple[Any, dict[str, Any]]:
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(42)
        out = fn(tf)
        fetches, feed = out if isinstance(out, tuple) else (out, None)
        # Control inputs as a set: TensorFlow's order for several of them is not creation order.
        rows = {op.name: (op.type, tuple(t.name for t in op.inputs), frozenset(c.name for c in op.control_inputs))
                for op in g.get_operations()}
        with tf.Session(graph=g) as sess:
            return sess.run(fetches, feed), rows


@pytest.mark.tf
@pytest.mark.parametrize("name", sorted(CASES))
def test_image_matches_tensorflow(tf1: Any, name: str) -> None:
    fn, opts = CASES[name]
    want, want_rows = _run(tf1, fn)
    got, got_rows = _run(fl, fn)
    if opts["graph"]:
        diff = [n for n in set(want_rows) | set(got_rows) if want_rows.get(n) != got_rows.get(n)]
        assert not diff, [(n, want_rows.get(n), got_rows.get(n)) for n in sorted(diff)[:6]]
    assert len(got) == len(want)
    for i, (w, a) in enumerate(zip(want, got)):
        if isinstance(w, bytes):
            assert a == w, f"output {i}: {len(a)} bytes, TensorFlow's {len(w)}"
            continue
        w, a = np.asarray(w), np.asarray(a)
        assert (a.dtype, a.shape) == (w.dtype, w.shape), (i, a.dtype, w.dtype, a.shape, w.shape)
        if opts["rtol"] or opts["atol"]:
            np.testing.assert_allclose(a, w, rtol=opts["rtol"], atol=opts["atol"], err_msg=f"output {i}")
        else:
            np.testing.assert_array_equal(a, w, err_msg=f"output {i}")


@pytest.mark.tf
def test_static_shapes_match_tensorflow(tf1: Any) -> None:
    def shapes(tf: Any) -> list[Any]:
        x = tf.placeholder(tf.float32, [None, None, 3])
        b = tf.placeholder(tf.uint8, [2, None, 7, 3])
        outs = [tf.image.flip_left_right(x), tf.image.random_flip_up_down(b), tf.image.rot90(x),
                tf.image.central_crop(b, 0.5), tf.image.crop_to_bounding_box(b, 1, 1, 2, 3),
                tf.image.resize_images(x, [4, 5]), tf.image.resize_bilinear(b, [3, 3]),
                tf.image.resize_nearest_neighbor(b, tf.placeholder(tf.int32, [2])),
                tf.image.decode_png(tf.constant(b"")), tf.image.decode_jpeg(tf.constant(b""), channels=3),
                tf.image.decode_image(tf.constant(b"")), tf.image.rgb_to_grayscale(b),
                tf.image.grayscale_to_rgb(tf.placeholder(tf.float32, [None, 4, 1])),
                tf.image.per_image_standardization(b), tf.image.encode_png(tf.placeholder(tf.uint8, [2, 2, 3]))]
        return [(o.shape.as_list() if o.shape.ndims is not None else None, o.dtype.name) for o in outs]

    got = shapes(fl)
    with tf1.Graph().as_default():
        want = shapes(tf1)
    assert got == want


def _error(tf: Any, fn: Any) -> BaseException:
    g = tf.Graph()
    with g.as_default():
        try:
            out = fn(tf)
            with tf.Session(graph=g) as sess:
                sess.run(out)
        except Exception as e:  # noqa: BLE001 - compared below
            return e
    raise AssertionError(f"{tf.__name__} did not raise")


ERRORS = [
    (lambda tf: tf.image.crop_to_bounding_box(IMG, 3, 0, 3, 3), "height must be >= target + offset."),
    (lambda tf: tf.image.pad_to_bounding_box(IMG, 0, 2, 8, 7), "width must be <= target - offset"),
    (lambda tf: tf.image.central_crop(IMG, 1.5), "central_fraction must be within (0, 1]"),
    (lambda tf: tf.image.flip_left_right(IMG[0]), "must be at least three-dimensional"),
    (lambda tf: tf.image.random_brightness(IMG, -1.0), "max_delta must be non-negative."),
    (lambda tf: tf.image.random_contrast(IMG, 0.5, 0.2), "upper must be > lower."),
    (lambda tf: tf.image.random_hue(IMG, 0.7), "max_delta must be <= 0.5."),
    (lambda tf: tf.image.convert_image_dtype(IMG, tf.string), "dtype must be either floating point or integer"),
    (lambda tf: tf.image.resize_images(IMG, [2, 2], method=7), "Resize method is not implemented"),
    (lambda tf: tf.image.resize_images(IMG, [2, 2, 2]), "'size' must be a 1-D Tensor of 2 elements"),
    (lambda tf: tf.image.resize_bilinear(BATCH, [2, 2], align_corners=True, half_pixel_centers=True),
     "If half_pixel_centers is True, align_corners must be False."),
    (lambda tf: tf.image.resize_bilinear(BATCH, tf.placeholder_with_default([0, 2], [2])),
     "output dimensions must be positive"),
    (lambda tf: tf.image.decode_png(b"garbage"), "Unknown image file format"),
    (lambda tf: tf.image.decode_image(b"\x89PNG garbage"), ""),
    (lambda tf: tf.image.random_crop(IMG, [9, 2, 3]), "Need value.shape >= size"),
    (lambda tf: tf.image.encode_png(tf.zeros([2, 2, 5], tf.uint8)), "channels"),
    (lambda tf: tf.image.non_max_suppression(NMS_BOXES, NMS_SCORES, 3, iou_threshold=1.5),
     "iou_threshold must be in [0, 1]"),
    (lambda tf: tf.image.draw_bounding_boxes(tf.zeros([1, 4, 4, 2]), [[[0.0, 0.0, 1.0, 1.0]]]),
     "Channel depth should be either 1 (GRY), 3 (RGB), or 4 (RGBA)"),
]


@pytest.mark.tf
@pytest.mark.parametrize("fn,fragment", ERRORS)
def test_errors_match_tensorflow(tf1: Any, fn: Any, fragment: str) -> None:
    want = _error(tf1, fn)
    got = _error(fl, fn)
    assert type(got).__name__ == type(want).__name__, (want, got)
    assert fragment in str(want) and fragment in str(got), (str(want)[:400], str(got)[:400])


def test_codec_round_trips() -> None:
    """PNG round trips are lossless; a smooth image survives JPEG within a few levels."""
    for x in (U8, GRAY_ALPHA, RGBA, U16):
        with fl.Session() as sess:
            back = sess.run(fl.image.decode_png(fl.image.encode_png(x), dtype=fl.as_dtype(x.dtype)))
        np.testing.assert_array_equal(back, x)
    smooth = np.clip(np.add.outer(np.arange(40), np.arange(50))[..., None] * 2 + [0, 30, 60], 0, 255).astype(np.uint8)
    with fl.Session() as sess:
        back = sess.run(fl.image.decode_jpeg(fl.image.encode_jpeg(smooth)))
    assert np.abs(back.astype(int) - smooth).max() <= 8


# --- gradient check entries (tests/ops/gradient_check.py walks them) ----------------------------
_IMG_IN = RS.uniform(0.1, 0.9, (1, 3, 4, 2))


def _f32_grad_case(op_type: str, build: Any) -> Any:
    # The resize ops compute in float32: central differences over a larger step on these
    # linear maps, compared with float32 tolerances.
    return grad_case(op_type, _IMG_IN, eps=1e-2, rtol=2e-3, atol=2e-3)(build)


_f32_grad_case("ResizeBilinear", lambda tf, x: tf.image.resize_bilinear(x, [5, 3]))
_f32_grad_case("ResizeNearestNeighbor", lambda tf, x: tf.image.resize_nearest_neighbor(x, [5, 7]))
_f32_grad_case("ResizeBicubic", lambda tf, x: tf.image.resize_bicubic(x, [4, 6], half_pixel_centers=True))


@grad_case("RGBToHSV", np.array([[0.2, 0.5, 0.9], [0.8, 0.3, 0.1], [0.4, 0.7, 0.3], [0.6, 0.2, 0.75]]),
           rtol=1e-4, atol=1e-5)
def _(tf, x):
    return tf.image.rgb_to_hsv(x)


@grad_case("ClipByValue", np.array([-2.0, -0.5, 0.3, 0.9, 1.7]), np.array(-1.0), np.array(1.0))
def _(tf, x, lo, hi):
    from flowlab.ops.image_adjust import _clip_by_value
    return _clip_by_value(x, lo, hi)


@pytest.mark.tf
def test_tf1_image_pipeline_program(tf1: Any, tmp_path: Any) -> None:
    """A TF1 input pipeline as tutorials write it: read a JPEG file, decode, convert,
    crop, flip, distort, standardize, resize; then stream accuracy over it."""
    path = tmp_path / "img.jpg"
    with tf1.Graph().as_default(), tf1.Session() as sess:
        path.write_bytes(sess.run(tf1.image.encode_jpeg(BIG)))

    def program(tf: Any) -> Any:
        g = tf.Graph()
        with g.as_default():
            tf.set_random_seed(7)
            image = tf.image.decode_jpeg(tf.read_file(str(path)), channels=3)
            image = tf.image.convert_image_dtype(image, tf.float32)
            image = tf.random_crop(image, [32, 32, 3], seed=1)
            image = tf.image.random_flip_left_right(image, seed=2)
            image = tf.image.random_brightness(image, max_delta=32.0 / 255.0, seed=3)
            image = tf.image.random_contrast(image, lower=0.5, upper=1.5, seed=4)
            image = tf.image.per_image_standardization(image)
            image = tf.image.resize_images(image, [24, 24])
            logits = tf.reduce_mean(image, axis=[0, 1])
            acc, update = tf.metrics.accuracy(labels=[1], predictions=[tf.argmax(logits, output_type=tf.int32)])
            with tf.Session(graph=g) as sess:
                sess.run(tf.local_variables_initializer())
                outs = [sess.run([image, update]) for _ in range(3)]
                return outs, sess.run(acc)

    want, got = program(tf1), program(fl)
    for (wi, wu), (gi, gu) in zip(want[0], got[0]):
        assert gi.dtype == wi.dtype and gi.shape == wi.shape
        np.testing.assert_allclose(gi, wi, rtol=1e-5, atol=1e-5)
        assert gu == wu
    assert got[1] == want[1]


@pytest.mark.tf
def test_sample_distorted_bounding_box_matches_tensorflow(tf1: Any) -> None:
    """The same crops as TensorFlow for the same seeds, run after run (its Philox stream),
    and Inception's use of them: slice, then draw the box."""
    configs = [dict(), dict(min_object_covered=0.5), dict(area_range=[0.5, 1.0], aspect_ratio_range=[0.3, 3.0]),
               dict(max_attempts=3, min_object_covered=0.9), dict(seed2=7)]

    def runs(tf: Any, seed: int, cfg: dict[str, Any]) -> list[Any]:
        g = tf.Graph()
        with g.as_default():
            boxes = tf.constant([[[0.1, 0.2, 0.5, 0.6], [0.3, 0.3, 0.9, 0.95]]])
            begin, size, box = tf.image.sample_distorted_bounding_box([240, 320, 3], boxes, seed=seed, **cfg)
            empty = tf.image.sample_distorted_bounding_box(
                tf.constant([60, 40, 1], tf.int64), tf.zeros([1, 0, 4]), seed=seed, seed2=2,
                use_image_if_no_bounding_boxes=True)
            image = tf.constant(BIG)
            crop = tf.slice(image, *tf.image.sample_distorted_bounding_box(tf.shape(image), boxes, seed=seed)[:2])
            drawn = tf.image.draw_bounding_boxes(tf.expand_dims(tf.image.convert_image_dtype(image, tf.float32), 0),
                                                 box)
            with tf.Session(graph=g) as sess:
                return [sess.run([begin, size, box, *empty, crop, drawn]) for _ in range(3)]

    for seed in (1, 17, 123):
        for cfg in configs:
            for w_run, g_run in zip(runs(tf1, seed, cfg), runs(fl, seed, cfg)):
                for w, a in zip(w_run, g_run):
                    assert a.dtype == w.dtype, (seed, cfg)
                    np.testing.assert_array_equal(a, w, err_msg=f"seed {seed} {cfg}")


@pytest.mark.tf
def test_sample_distorted_bounding_box_errors(tf1: Any) -> None:
    def no_boxes(tf: Any) -> Any:
        return tf.image.sample_distorted_bounding_box([6, 4, 1], tf.zeros([1, 0, 4]), seed=1)

    def outside(tf: Any) -> Any:
        return tf.image.sample_distorted_bounding_box([6, 4, 1], [[[0.1, 0.1, 1.5, 0.2]]], seed=1)

    for fn, fragment in ((no_boxes, "No bounding boxes provided as input"),
                         (outside, "All bounding box coordinates must be in [0.0, 1.0]")):
        want, got = _error(tf1, fn), _error(fl, fn)
        assert type(got).__name__ == type(want).__name__ == "InvalidArgumentError"
        assert fragment in str(want) and fragment in str(got)


@grad_case("CropAndResize", RS.uniform(0, 1, (1, 4, 5, 1)), np.array([[0.13, 0.21, 0.77, 0.86]]),
           eps=1e-3, rtol=1e-2, atol=1e-3)
def _(tf, image, boxes):
    # Sampling points stay clear of pixel boundaries within +-eps (the op is piecewise smooth).
    return tf.image.crop_and_resize(image, tf.cast(boxes, tf.float32), [0], [3, 4])
