"""`tf.data`: input pipelines as dataflow ops (TensorFlow 1.x graph mode).

`Dataset` builds dataset ops (flowlab.data.dataset), iterators pull their elements
(flowlab.data.iterator), dataset functions are traced graphs
(flowlab.data.function).  Importing this package registers the dataset kernels.
"""

from __future__ import annotations

import types as _types

from flowlab.data.dataset import (
    AUTOTUNE,
    Dataset,
    FixedLengthRecordDataset,
    TextLineDataset,
    TFRecordDataset,
)
from flowlab.data.iterator import (
    Iterator,
    get_output_classes,
    get_output_shapes,
    get_output_types,
    make_initializable_iterator,
    make_one_shot_iterator,
)
from flowlab.data.structure import TensorSpec

experimental = _types.SimpleNamespace(AUTOTUNE=AUTOTUNE)
# The values `Dataset.cardinality()` reports for an endless and an unknown dataset.
INFINITE_CARDINALITY = -1
UNKNOWN_CARDINALITY = -2

__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "Dataset", "Iterator",
           "FixedLengthRecordDataset", "TFRecordDataset", "TensorSpec", "TextLineDataset",
           "experimental", "get_output_classes", "get_output_shapes", "get_output_types",
           "make_initializable_iterator", "make_one_shot_iterator"]
