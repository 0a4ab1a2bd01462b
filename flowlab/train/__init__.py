"""`tf.train`: optimizers, savers, input pipelines (filled by later work)."""

from flowlab.graph.graph_def import write_graph

__all__ = ["write_graph"]

# Queues and input pipelines (issue 6).  Importing the kernels registers them.
from flowlab.kernels import io_kernels as _io_kernels  # noqa: E402,F401
from flowlab.kernels import queue_kernels as _queue_kernels  # noqa: E402,F401
from flowlab.train.coordinator import Coordinator, LooperThread  # noqa: E402
from flowlab.train.input import (  # noqa: E402
    batch,
    batch_join,
    input_producer,
    limit_epochs,
    range_input_producer,
    shuffle_batch,
    shuffle_batch_join,
    slice_input_producer,
    string_input_producer,
)
from flowlab.train.queue_runner import QueueRunner, add_queue_runner, start_queue_runners  # noqa: E402

__all__ += [
    "Coordinator", "LooperThread", "QueueRunner", "add_queue_runner", "start_queue_runners",
    "batch", "batch_join", "input_producer", "limit_epochs", "range_input_producer",
    "shuffle_batch", "shuffle_batch_join", "slice_input_producer", "string_input_producer",
]
from flowlab.train.saver import *  # noqa: E402,F401,F403
from flowlab.train.saver import __all__ as _saver_all  # noqa: E402

__all__ += _saver_all
