"""`tf.layers`: TensorFlow 1.x's layer classes (Dense, Conv2D, MaxPooling2D, ...,
built on flowlab.layers.base.Layer) and their functional forms (dense, conv2d, ...)."""

from flowlab.layers import base, convolutional, core, normalization, pooling
from flowlab.layers.base import InputSpec, Layer
from flowlab.layers.convolutional import *  # noqa: F401,F403
from flowlab.layers.core import *  # noqa: F401,F403
from flowlab.layers.normalization import *  # noqa: F401,F403
from flowlab.layers.pooling import *  # noqa: F401,F403

__all__ = ["InputSpec", "Layer", *convolutional.__all__, *core.__all__, *normalization.__all__,
           *pooling.__all__]
