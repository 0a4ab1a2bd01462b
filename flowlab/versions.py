"""The version constants of `tf.*` (TensorFlow 1.x's `tf.VERSION`, `tf.GRAPH_DEF_VERSION`,
...): those of TensorFlow 2.21, the release whose tf.compat.v1 flowlab reproduces and
whose GraphDef versions flowlab writes (flowlab.graph.graph_def_pb.PRODUCER)."""

from flowlab.graph.graph_def_pb import PRODUCER

__all__ = ["VERSION", "GRAPH_DEF_VERSION", "GRAPH_DEF_VERSION_MIN_CONSUMER", "GRAPH_DEF_VERSION_MIN_PRODUCER"]

VERSION = "2.21.0"
GRAPH_DEF_VERSION = PRODUCER
# TensorFlow's TF_GRAPH_DEF_VERSION_MIN_CONSUMER / _MIN_PRODUCER as its Python module
# exports them (the GraphDef's `versions.min_consumer` is a separate, newer bound).
GRAPH_DEF_VERSION_MIN_CONSUMER = 0
GRAPH_DEF_VERSION_MIN_PRODUCER = 0
