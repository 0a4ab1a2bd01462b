"""Kernels of the image codecs: DecodePng/Jpeg/Gif/Bmp/Image and EncodePng/Jpeg.

State: none; every kernel is a function of its bytes.  Decoding goes through Pillow
(imported on first use), then the channel conversions are TensorFlow's (libpng's and
libjpeg's, which TensorFlow uses):

- RGB -> gray from a PNG is libpng's rgb_to_gray with TensorFlow's coefficients
  0.299 / 0.587 (integer weights 9797, 19234, 3737 over 2**15, truncated for 8-bit
  samples, rounded for 16-bit); gray -> RGB repeats; a missing alpha is opaque.
- JPEG -> gray asks libjpeg for its luminance, as TensorFlow.
- 8-bit samples widen to 16 bits by * 257; float32 output is the 16-bit value times
  float32(1 / 65535); 16 -> 8 bits keeps the high byte.

Like TensorFlow's unified decoder, every Decode* op reads any of PNG, JPEG, GIF and
BMP; DecodeGif (and DecodeImage with expand_animations) gives [frames, h, w, 3].

JPEGs decode with TensorFlow's libjpeg settings (fast IDCT and fancy upsampling by
default) as flowlab.kernels.jpeg_decode rebuilds them from Pillow's decodes.

16-bit colour PNGs, of which Pillow keeps 8 bits, are read by flowlab.kernels.png_decoder.

Limit: DecodeJpeg with fancy_upscaling=False and dct_method='INTEGER_ACCURATE'
together, which Pillow cannot configure (its fancy-upsampled decode is used).

EncodePng writes TensorFlow's bytes (libpng's filter choice and zlib settings, from
flowlab.kernels.png_encoder) at every compression level and for 16-bit images;
EncodeJpeg writes libjpeg's baseline stream through Pillow with TensorFlow's
defaults (quality 95, 4:2:0 for colour, 300 dpi JFIF), the same bytes as TensorFlow's.
"""

from __future__ import annotations

import io
import struct
import zlib
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels import jpeg_decode, png_decoder, png_encoder
from flowlab.kernels.registry import CPU, kernel

_UNKNOWN = "Unknown image file format. One of JPEG, PNG, GIF, BMP required."


def _pil() -> Any:
    try:
        from PIL import Image
    except ImportError as e:  # pragma: no cover - Pillow is a dependency of the image codecs
        raise errors.UnimplementedError(None, None, "image decoding needs Pillow (pip install pillow)") from e
    return Image


def _format(data: bytes) -> str | None:
    if data[:3] == b"\xff\xd8\xff":
        return "jpeg"
    if data[:4] == b"\x89PNG":
        return "png"
    if data[:3] == b"GIF":
        return "gif"
    if data[:2] == b"BM":
        return "bmp"
    return None


def _open(data: bytes) -> Any:
    try:
        im = _pil().open(io.BytesIO(data))
        im.load()
        return im
    except Exception as e:  # noqa: BLE001 - any Pillow failure is corrupt input to TensorFlow
        raise errors.InvalidArgumentError(None, None, f"Invalid image data: {e}") from None


def _rgb_to_gray(rgb: np.ndarray, sixteen: bool) -> np.ndarray:
    r, g, b = (rgb[..., i].astype(np.int64) for i in range(3))
    v = 9797 * r + 19234 * g + 3737 * b
    gray = (v + 16384) >> 15 if sixteen else v >> 15
    same = (r == g) & (g == b)
    return np.where(same, r, gray)[..., None]


def _channels(arr: np.ndarray, has_alpha: bool, channels: int, sixteen: bool) -> np.ndarray:
    """[h, w, c] samples (c = 1, 2, 3 or 4) to the requested channel count."""
    if channels == 0:
        return arr
    c = arr.shape[-1]
    colour = arr[..., :3] if c >= 3 else arr[..., :1]
    alpha = arr[..., -1:] if has_alpha else None
    if channels in (1, 2):
        gray = colour if colour.shape[-1] == 1 else _rgb_to_gray(colour, sixteen)
        if channels == 1:
            return gray
        return np.concatenate([gray, alpha if alpha is not None else np.full_like(gray, 65535 if sixteen else 255)], -1)
    rgb = colour if colour.shape[-1] == 3 else np.repeat(colour, 3, axis=-1)
    if channels == 3:
        return rgb
    a = alpha if alpha is not None else np.full_like(rgb[..., :1], 65535 if sixteen else 255)
    return np.concatenate([rgb, a], -1)


def _decode_png(data: bytes, channels: int) -> tuple[np.ndarray, bool]:
    _, _, depth, ctype, _ = png_decoder.header(data)
    if depth == 16 and ctype in (2, 4, 6):  # Pillow keeps 8 bits of these
        arr = png_decoder.read_16bit(data)
        return _channels(arr, ctype in (4, 6), channels, True), True
    im = _open(data)
    mode = im.mode
    if mode in ("I;16", "I;16B", "I;16L", "I"):
        return _channels(np.asarray(im, dtype=np.uint16)[..., None], False, channels, True), True
    if im.info.get("transparency") is not None or mode in ("P", "PA"):
        im = im.convert("RGBA" if (im.info.get("transparency") is not None or mode == "PA") else "RGB")
    elif mode == "1":
        im = im.convert("L")
    arr = np.asarray(im)
    if arr.ndim == 2:
        arr = arr[..., None]
    return _channels(arr, im.mode in ("LA", "RGBA"), channels, False), False


def _decode_jpeg(data: bytes, channels: int, ctx: Any) -> np.ndarray:
    ratio = ctx.attrs.get("ratio", 1)
    if ratio != 1:
        raise errors.UnimplementedError(None, None, f"DecodeJpeg ratio={ratio} is not supported by flowlab")
    if channels == 4:
        raise errors.InvalidArgumentError(None, None, "channels attribute 4 is not supported for JPEG images")
    fast = ctx.attrs.get("dct_method", "") in ("", "INTEGER_FAST")
    try:
        arr = jpeg_decode.decode(data, channels == 1, ctx.attrs.get("fancy_upscaling", True), fast)
    except Exception as e:  # noqa: BLE001 - any libjpeg failure is corrupt input to TensorFlow
        raise errors.InvalidArgumentError(None, None, f"Invalid JPEG data or crop window, data size {len(data)}: {e}") from None
    if channels == 3 and arr.shape[-1] == 1:
        arr = np.repeat(arr, 3, axis=-1)
    return arr


def _decode_frames(data: bytes) -> np.ndarray:
    im = _open(data)
    frames = []
    for i in range(getattr(im, "n_frames", 1)):
        im.seek(i)
        frames.append(np.asarray(im.convert("RGB")))
    return np.stack(frames)


def _decode_bmp(data: bytes, channels: int) -> np.ndarray:
    im = _open(data)
    arr = np.asarray(im.convert("RGBA" if im.mode == "RGBA" else "RGB"))
    return _channels(arr, arr.shape[-1] == 4, channels, False)


def _to_dtype(arr: np.ndarray, sixteen: bool, dtype: Any) -> np.ndarray:
    if dtype == np.uint8:  # libpng's png_set_strip_16: the high byte
        return (arr >> 8).astype(np.uint8) if sixteen else arr.astype(np.uint8)
    if dtype == np.uint16:
        return arr.astype(np.uint16) if sixteen else arr.astype(np.uint16) * np.uint16(257)
    # TensorFlow widens to 16 bits first, then multiplies by float32(1 / 65535).
    wide = arr.astype(np.float32) if sixteen else arr.astype(np.float32) * np.float32(257)
    return (wide * np.float32(1.0 / 65535)).astype(dtype)


def _decode_any(ctx: Any, contents: Any, op: str) -> Any:
    if isinstance(contents, np.ndarray):
        if contents.ndim != 0:
            raise errors.InvalidArgumentError(None, None, f"contents must be scalar, got shape {list(contents.shape)}")
        contents = contents.item()
    data = bytes(contents)
    channels = ctx.attrs.get("channels", 0)
    if channels not in (0, 1, 2, 3, 4):
        raise errors.InvalidArgumentError(None, None, f"channels must be 0, 1, 3 or 4, got {channels}")
    dtype = ctx.attrs.get("dtype", np.uint8)
    dtype = getattr(dtype, "as_numpy_dtype", dtype)
    kind = _format(data)
    if kind is None:
        raise errors.InvalidArgumentError(None, None, _UNKNOWN)
    sixteen = False
    if kind == "png":
        arr, sixteen = _decode_png(data, channels)
    elif kind == "jpeg":
        arr = _decode_jpeg(data, channels, ctx)
    elif kind == "bmp":
        arr = _decode_bmp(data, channels)
    else:
        frames = _decode_frames(data)
        if op == "DecodeGif" or ctx.attrs.get("expand_animations", True):
            return _to_dtype(frames, False, dtype)
        arr = frames[0]
        if channels == 1:
            arr = _rgb_to_gray(arr, False)
    if op == "DecodeGif":
        arr = arr[None]
    return _to_dtype(arr, sixteen, dtype)


for _op in ("DecodePng", "DecodeJpeg", "DecodeGif", "DecodeBmp", "DecodeImage"):
    def _make(op: str) -> Any:
        def decode(ctx: Any, contents: Any) -> Any:
            return _decode_any(ctx, contents, op)
        decode.__name__ = op
        return decode
    kernel(_op, devices=CPU)(_make(_op))


# --- encoders --------------------------------------------------------------------------
def encode_png_bytes(image: np.ndarray, compression: int = -1) -> bytes:
    """PNG bytes as TensorFlow's EncodePng: 8- or 16-bit samples, 1-4 channels."""
    if compression == -1 and image.dtype == np.uint8:
        return png_encoder.encode_png(image)
    h, w, depth = image.shape
    bits = 16 if image.dtype == np.uint16 else 8
    samples = image.astype(">u2").view(np.uint8) if bits == 16 else np.ascontiguousarray(image, np.uint8)
    rows = samples.reshape(h, w * depth * bits // 8)
    bpp = depth * bits // 8
    raw = png_encoder._filter_rows(rows, bpp) if h and w else b""
    data_size = (w * bpp + 1) * h
    level = zlib.Z_DEFAULT_COMPRESSION if compression < 0 else compression
    z = zlib.compressobj(level, zlib.DEFLATED, png_encoder._window_bits(data_size), 9, zlib.Z_FILTERED)
    stream = bytearray(z.compress(raw) + z.flush())
    png_encoder._optimize_cmf(stream, data_size)
    ihdr = struct.pack(">IIBBBBB", w, h, bits, png_encoder._COLOR_TYPE[depth], 0, 0, 0)
    size = png_encoder._IDAT_SIZE
    idats = b"".join(png_encoder._chunk(b"IDAT", bytes(stream[i:i + size])) for i in range(0, len(stream), size))
    return png_encoder._SIGNATURE + png_encoder._chunk(b"IHDR", ihdr) + idats + png_encoder._chunk(b"IEND", b"")


@kernel("EncodePng", devices=CPU)
def encode_png(ctx: Any, image: Any) -> Any:
    if image.ndim != 3:
        raise errors.InvalidArgumentError(None, None, f"image must be 3-dimensional{list(image.shape)}")
    if image.shape[2] not in (1, 2, 3, 4):
        raise errors.InvalidArgumentError(None, None, f"image must have 1, 2, 3, or 4 channels, got {image.shape[2]}")
    compression = ctx.attrs.get("compression", -1)
    if not -1 <= compression <= 9:
        raise errors.InvalidArgumentError(None, None, f"compression should be in [-1,9], got {compression}")
    return encode_png_bytes(np.asarray(image), compression)


@kernel("EncodeJpeg", devices=CPU)
def encode_jpeg(ctx: Any, image: Any) -> Any:
    return encode_jpeg_bytes(image, ctx.attrs)


@kernel("EncodeJpegVariableQuality", devices=CPU)
def encode_jpeg_variable_quality(ctx: Any, images: Any, quality: Any) -> Any:
    q = int(np.asarray(quality))
    if not 0 <= q <= 100:
        raise errors.InvalidArgumentError(None, None, f"quality must be in [0,100], got {q}")
    return encode_jpeg_bytes(images, {"quality": q})


def encode_jpeg_bytes(image: Any, a: Any) -> bytes:
    """The JPEG of `image` under EncodeJpeg's attrs `a` (absent ones: TensorFlow's defaults)."""
    if image.ndim != 3:
        raise errors.InvalidArgumentError(None, None, f"image must be 3-dimensional{list(image.shape)}")
    channels = image.shape[2]
    fmt = a.get("format", "") or {1: "grayscale", 3: "rgb"}.get(channels, "")
    if (fmt, channels) not in (("grayscale", 1), ("rgb", 3)):
        raise errors.InvalidArgumentError(
            None, None, f"image must have 1 or 3 channels, got {list(image.shape)}" if not a.get("format")
            else f"format {fmt} does not match {channels} channels")
    for attr in ("progressive", "optimize_size"):
        if a.get(attr):
            raise errors.UnimplementedError(None, None, f"EncodeJpeg {attr}=True is not supported by flowlab")
    arr = np.asarray(image, dtype=np.uint8)
    pil = _pil().fromarray(arr[..., 0] if channels == 1 else arr)
    unit = a.get("density_unit", "in")
    dpi = (a.get("x_density", 300), a.get("y_density", 300))
    if unit != "in":
        raise errors.UnimplementedError(None, None, f"EncodeJpeg density_unit={unit!r} is not supported by flowlab")
    buf = io.BytesIO()
    pil.save(buf, format="JPEG", quality=a.get("quality", 95), subsampling=2 if a.get("chroma_downsampling", True) and channels == 3 else 0,
             dpi=dpi)
    return buf.getvalue()
