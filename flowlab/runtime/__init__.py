"""The runtime, split where TensorFlow splits it (paper section 3.3).

* `master/` -- in the client: prune, optimize, place, partition, and the plan cache
  per step signature (`Master`); it sends each task its partitions as GraphDef JSON.
* `task/` -- owns devices and their state: imports and compiles the partitions it
  is sent, runs steps (straight-line functions, the dataflow executor, frames),
  serves rendezvous keys, rolls back a failed step (`LocalTask`).
* `interface.py` -- the six calls between them; every message is plain data.
* `client/` -- what the Session does around a step: feeds, fetch structures,
  RunMetadata and step statistics.
* `session.py` -- the local Session: a master plus an in-process task.
"""

from flowlab.runtime.config import (
    ConfigProto,
    GPUOptions,
    GraphOptions,
    OptimizerOptions,
    RunMetadata,
    RunOptions,
)
from flowlab.runtime.session import InteractiveSession, Session, get_default_session

__all__ = [
    "ConfigProto", "GPUOptions", "GraphOptions", "OptimizerOptions", "RunMetadata", "RunOptions",
    "InteractiveSession", "Session", "get_default_session",
]
