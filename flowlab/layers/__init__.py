"""`tf.layers`: TensorFlow 1.x functional layers (dense, conv2d, pooling, flatten, dropout)."""

from flowlab.layers.core import *  # noqa: F401,F403
from flowlab.layers.core import __all__  # noqa: F401
