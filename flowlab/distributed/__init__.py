"""flowlab on Dask: tasks are Dask workers.

A `Cluster` maps TensorFlow job/task names (`ps/0`, `worker/1`) to Dask workers by
their names; `LocalCluster` starts a loopback Dask cluster whose workers carry those
names.  On each worker a task server (a WorkerPlugin) implements the runtime's task
interface over Dask comm handlers; the master runs in the client process.  Dask is
imported when a cluster is first used, not with flowlab.
"""

from __future__ import annotations

from typing import Any

from flowlab.distributed.cluster_spec import ClusterSpec
from flowlab.runtime.session import register_target_resolver as _register

__all__ = ["Cluster", "ClusterSpec", "LocalCluster"]


def __getattr__(name: str) -> Any:
    if name in ("Cluster", "LocalCluster"):
        from flowlab.distributed import cluster

        return getattr(cluster, name)
    raise AttributeError(f"module 'flowlab.distributed' has no attribute {name!r}")


def _resolve(target: Any) -> Any:
    if not (isinstance(target, str) and "://" in target) and not hasattr(target, "session_tasks"):
        return None
    from flowlab.distributed.cluster import cluster_for_target

    return cluster_for_target(target)


_register(_resolve)
