"""`tf.nn`: activations, losses and layers built from ops."""

from flowlab.ops.nn_ops import *  # noqa: F401,F403
