"""`tf.layers`: TensorFlow 1.x functional layers (dense, conv2d, pooling, flatten, dropout)."""

from flowlab.layers.core import *  # noqa: F401,F403
from flowlab.layers.core import __all__  # noqa: F401
from flowlab.layers.normalization import *  # noqa: F401,F403,E402  (batch_normalization)
from flowlab.layers.normalization import __all__ as _bn_all  # noqa: E402

__all__ = [*__all__, *_bn_all]  # noqa: F405
