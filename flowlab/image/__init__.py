"""`tf.image`: image ops as TF1 programs use them.

    img = tf.image.decode_png(tf.read_file(path), channels=3)
    img = tf.image.convert_image_dtype(img, tf.float32)
    img = tf.image.resize_images(img, [224, 224])
    img = tf.image.random_flip_left_right(img, seed=1)

Geometry in flowlab.ops.image_ops, pixel values in flowlab.ops.image_adjust, resizing
in flowlab.ops.image_resize, colour spaces in flowlab.ops.image_color, PNG/JPEG in
flowlab.ops.image_codecs, total_variation/psnr/ssim/gradients in flowlab.ops.image_measures,
draw_bounding_boxes in flowlab.ops.image_boxes.
"""

from flowlab.ops.image_adjust import *  # noqa: F401,F403
from flowlab.ops.image_adjust import __all__ as _adjust_all
from flowlab.ops.image_boxes import *  # noqa: F401,F403
from flowlab.ops.image_boxes import __all__ as _boxes_all
from flowlab.ops.image_codecs import *  # noqa: F401,F403
from flowlab.ops.image_codecs import __all__ as _codecs_all
from flowlab.ops.image_color import *  # noqa: F401,F403
from flowlab.ops.image_color import __all__ as _color_all
from flowlab.ops.image_jpeg_quality import adjust_jpeg_quality, random_jpeg_quality  # noqa: F401
from flowlab.ops.image_measures import *  # noqa: F401,F403
from flowlab.ops.image_measures import __all__ as _measures_all
from flowlab.ops.image_nms import (  # noqa: F401
    combined_non_max_suppression,
    non_max_suppression_overlaps,
    non_max_suppression_with_scores,
)
from flowlab.ops.image_ops import *  # noqa: F401,F403
from flowlab.ops.image_ops import __all__ as _ops_all
from flowlab.ops.image_patches import extract_image_patches, extract_patches  # noqa: F401
from flowlab.ops.image_resize import *  # noqa: F401,F403
from flowlab.ops.image_resize import __all__ as _resize_all
from flowlab.ops.jpeg_shape_ops import extract_jpeg_shape  # noqa: F401

__all__ = [*_ops_all, *_adjust_all, *_resize_all, *_color_all, *_codecs_all, *_measures_all, *_boxes_all,
           "extract_image_patches", "extract_patches", "non_max_suppression_overlaps",
           "non_max_suppression_with_scores", "combined_non_max_suppression", "extract_jpeg_shape",
           "adjust_jpeg_quality", "random_jpeg_quality"]
