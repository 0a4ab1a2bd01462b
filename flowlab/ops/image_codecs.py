"""Image codecs as ops: DecodePng, DecodeJpeg, DecodeGif, DecodeBmp, DecodeImage,
EncodePng, EncodeJpeg, and their `tf.image` / `tf.io` builders.

Decoders take a scalar string and give [height, width, channels] (DecodeGif:
[frames, height, width, 3]); channels = 0 keeps the file's.  decode_image
dispatches on the bytes inside the op, as TensorFlow's DecodeImage, and converts to
dtypes other than uint8 / uint16 / float32 with convert_image_dtype.  None of these
ops has a gradient (TensorFlow registers none either).  Kernels, and what they match
of TensorFlow's bytes and values: flowlab.kernels.image_codec_kernels.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.builder import apply_op, convert_to_tensor
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.image_adjust import convert_image_dtype
from flowlab.ops.nn_ops import _name_scope
from flowlab.ops.op_def import op_def

__all__ = ["decode_png", "decode_jpeg", "decode_gif", "decode_bmp", "decode_image", "encode_png", "encode_jpeg",
           "is_jpeg"]


def _scalar_input(op: Operation) -> None:
    r = op.inputs[0].shape.ndims
    if r is not None and r != 0:
        raise ValueError(f"Shape must be rank 0 but is rank {r}")


def _image_shape(op: Operation) -> list[Any]:
    _scalar_input(op)
    channels = op.get_attr("channels")
    return [TensorShape([None, None, channels or None])]


def _unknown_shape(op: Operation) -> list[Any]:
    _scalar_input(op)
    return [TensorShape(None)]


def _gif_shape(op: Operation) -> list[Any]:
    _scalar_input(op)
    return [TensorShape([None, None, None, 3])]


def _bytes_shape(op: Operation) -> list[Any]:
    r = op.inputs[0].shape.ndims
    if r is not None and r != 3:
        raise ValueError(f"Shape must be rank 3 but is rank {r}")
    return [TensorShape([])]


op_def("DecodePng", inputs=["contents: string"], outputs=["image: dtype"],
       attrs=["channels: int = 0", "dtype: {uint8, uint16} = uint8"], shape_fn=_image_shape,
       doc="Decode a PNG (or any supported image) to uint8 or uint16.")
op_def("DecodeJpeg", inputs=["contents: string"], outputs=["image: uint8"],
       attrs=["channels: int = 0", "ratio: int = 1", "fancy_upscaling: bool = true",
              "try_recover_truncated: bool = false", "acceptable_fraction: float = 1.0", "dct_method: string = ''"],
       shape_fn=_image_shape, doc="Decode a JPEG (or any supported image) to uint8.")
op_def("DecodeBmp", inputs=["contents: string"], outputs=["image: uint8"], attrs=["channels: int = 0"],
       shape_fn=_image_shape, doc="Decode a BMP (or any supported image) to uint8.")
op_def("DecodeGif", inputs=["contents: string"], outputs=["image: uint8"], shape_fn=_gif_shape,
       doc="Decode the frames of a GIF to [frames, height, width, 3] uint8.")
op_def("DecodeImage", inputs=["contents: string"], outputs=["image: dtype"],
       attrs=["channels: int = 0", "dtype: {uint8, uint16, float32} = uint8", "expand_animations: bool = true"],
       shape_fn=_unknown_shape, doc="Decode a PNG, JPEG, GIF or BMP, detected from its bytes.")
op_def("EncodePng", inputs=["image: T"], outputs=["contents: string"],
       attrs=["compression: int = -1", "T: {uint8, uint16} = uint8"], shape_fn=_bytes_shape,
       doc="PNG-encode a [height, width, channels] image.")
op_def("EncodeJpeg", inputs=["image: uint8"], outputs=["contents: string"],
       attrs=["format: string = ''", "quality: int = 95", "progressive: bool = false", "optimize_size: bool = false",
              "chroma_downsampling: bool = true", "density_unit: string = 'in'", "x_density: int = 300",
              "y_density: int = 300", "xmp_metadata: string = ''"],
       shape_fn=_bytes_shape, doc="JPEG-encode a [height, width, 1 or 3] uint8 image.")
op_def("EncodeJpegVariableQuality", inputs=["images: uint8", "quality: int32"], outputs=["contents: string"],
       shape_fn=_bytes_shape, doc="JPEG-encode an image at a quality given as a tensor.")
for _op in ("DecodePng", "DecodeJpeg", "DecodeBmp", "DecodeGif", "DecodeImage", "EncodePng", "EncodeJpeg",
            "EncodeJpegVariableQuality"):
    not_differentiable(_op)


def decode_png(contents: Any, channels: int = 0, dtype: Any = dtypes.uint8, name: str | None = None) -> Tensor:
    """Decode PNG bytes to a [height, width, channels] uint8 or uint16 tensor."""
    return apply_op("DecodePng", contents=contents, channels=channels, dtype=dtype, name=name or "DecodePng")


def decode_jpeg(contents: Any, channels: int = 0, ratio: int = 1, fancy_upscaling: bool = True,
                try_recover_truncated: bool = False, acceptable_fraction: float = 1, dct_method: str = "",
                name: str | None = None) -> Tensor:
    """Decode JPEG bytes to a [height, width, channels] uint8 tensor."""
    return apply_op("DecodeJpeg", contents=contents, channels=channels, ratio=ratio,
                    fancy_upscaling=fancy_upscaling, try_recover_truncated=try_recover_truncated,
                    acceptable_fraction=acceptable_fraction, dct_method=dct_method, name=name or "DecodeJpeg")


def decode_gif(contents: Any, name: str | None = None) -> Tensor:
    """Decode a GIF's frames to [frames, height, width, 3] uint8."""
    return apply_op("DecodeGif", contents=contents, name=name or "DecodeGif")


def decode_bmp(contents: Any, channels: int = 0, name: str | None = None) -> Tensor:
    """Decode BMP bytes to [height, width, channels] uint8."""
    return apply_op("DecodeBmp", contents=contents, channels=channels, name=name or "DecodeBmp")


def decode_image(contents: Any, channels: int | None = None, dtype: Any = dtypes.uint8, name: str | None = None,
                 expand_animations: bool = True) -> Tensor:
    """Decode a PNG, JPEG, GIF or BMP (detected from the bytes when the step runs)."""
    with _name_scope(name, "decode_image", [contents]):
        channels = 0 if channels is None else channels
        dtype = dtypes.as_dtype(dtype)
        decode_dtype = dtype if dtype in (dtypes.float32, dtypes.uint8, dtypes.uint16) else dtypes.uint16
        image = apply_op("DecodeImage", contents=contents, channels=channels, expand_animations=expand_animations,
                         dtype=decode_dtype, name="DecodeImage")
        if decode_dtype != dtype:
            image = convert_image_dtype(image, dtype)
        if not expand_animations:
            image.set_shape([None, None, channels or None])
        return image


def encode_png(image: Any, compression: int = -1, name: str | None = None) -> Tensor:
    """PNG-encode a [height, width, 1-4] uint8 or uint16 image (TensorFlow's bytes)."""
    return apply_op("EncodePng", image=convert_to_tensor(image), compression=compression, name=name or "EncodePng")


def encode_jpeg(image: Any, format: str = "", quality: int = 95, progressive: bool = False,  # noqa: A002
                optimize_size: bool = False, chroma_downsampling: bool = True, density_unit: str = "in",
                x_density: int = 300, y_density: int = 300, xmp_metadata: str = "",
                name: str | None = None) -> Tensor:
    """JPEG-encode a [height, width, 1 or 3] uint8 image."""
    return apply_op("EncodeJpeg", image=image, format=format, quality=quality, progressive=progressive,
                    optimize_size=optimize_size, chroma_downsampling=chroma_downsampling,
                    density_unit=density_unit, x_density=x_density, y_density=y_density,
                    xmp_metadata=xmp_metadata, name=name or "EncodeJpeg")



def is_jpeg(contents: Any, name: str | None = None) -> Tensor:
    """Whether the bytes start with JPEG's marker (FF D8 FF), as a bool tensor."""
    from flowlab.ops import math_ops
    from flowlab.ops.string_ops import substr

    with _name_scope(name, "is_jpeg", [contents]):
        return math_ops.equal(substr(contents, 0, 3), b"\xff\xd8\xff", name=name)
