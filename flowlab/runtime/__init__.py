"""Devices, prune, placement, plans, the executor and the local Session."""

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
