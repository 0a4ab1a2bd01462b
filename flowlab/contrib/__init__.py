"""`tf.contrib`: the parts of TensorFlow 1.15's contrib that TF1 programs reach for and
that map onto flowlab's own ops -- `tf.contrib.rnn` (cells, static and stacked
bidirectional RNNs) and `tf.contrib.layers` (xavier/variance-scaling initializers,
regularizers, fully_connected, flatten).  Anything else of contrib is absent."""

from flowlab.contrib import layers, rnn

__all__ = ["layers", "rnn"]
