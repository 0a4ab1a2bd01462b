"""`tf.train.replica_device_setter`: variables to parameter-server tasks, everything
else to the worker -- the device function TensorFlow 1.x programs place a model with
(paper section 4.2's parameter servers as placed subgraphs).

The returned function is used as `with tf.device(replica_device_setter(...))`: an op
whose type holds state (`ps_ops`, by default Variable/VariableV2/VarHandleOp and the
mutable hash tables) goes to `ps_device` with the task `ps_strategy(op)` chooses
(round robin by default), any other op to `worker_device`; a device an inner scope
already set wins field by field (`merge_devices`), as in TensorFlow.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flowlab.distributed.cluster_spec import ClusterSpec
from flowlab.graph.device_spec import DeviceSpec

__all__ = ["replica_device_setter"]

STANDARD_PS_OPS = (
    "Variable", "VariableV2", "AutoReloadVariable", "MutableHashTable", "MutableHashTableV2",
    "MutableHashTableOfTensors", "MutableHashTableOfTensorsV2", "MutableDenseHashTable",
    "MutableDenseHashTableV2", "VarHandleOp",
)


class _RoundRobinStrategy:
    """The ps task of each new stateful op in turn: 0, 1, ..., n-1, 0, ..."""

    def __init__(self, num_tasks: int) -> None:
        self._num_tasks = num_tasks
        self._next_task = 0

    def __call__(self, unused_op: Any) -> int:
        task = self._next_task
        self._next_task = (self._next_task + 1) % self._num_tasks
        return task


def replica_device_setter(ps_tasks: int = 0, ps_device: str = "/job:ps", worker_device: str = "/job:worker",
                          merge_devices: bool = True, cluster: Any = None, ps_ops: list[str] | None = None,
                          ps_strategy: Callable[[Any], int] | None = None) -> Callable[[Any], str] | None:
    """A device function for `tf.device` (see the module docstring); None when there
    is no ps task (`ps_tasks=0` and no `ps` job in `cluster`)."""
    if cluster is not None:
        spec = (cluster if isinstance(cluster, ClusterSpec) else ClusterSpec(cluster)).as_dict()
        ps_job = DeviceSpec.from_string(ps_device).job or "ps"
        if ps_job not in spec or spec[ps_job] is None:
            return None
        ps_tasks = len(spec[ps_job])
    if ps_tasks == 0:
        return None
    if ps_ops is None:
        ps_ops = list(STANDARD_PS_OPS)
    if not merge_devices:
        raise ValueError("DEPRECATION: It is no longer possible to disable merging of device specifications "
                         "(merge_devices=False).")
    strategy = ps_strategy if ps_strategy is not None else _RoundRobinStrategy(ps_tasks)
    if not callable(strategy):
        raise TypeError("ps_strategy must be callable")
    ps_types = set(ps_ops)

    def device_function(op: Any) -> str:
        current = DeviceSpec.from_string(op.device or "")
        if ps_device and op.type in ps_types:
            ps = DeviceSpec.from_string(ps_device)
            if ps.job and (not current.job or current.job == ps.job):
                ps = ps.replace(task=strategy(op))
            return ps.make_merged_spec(current).to_string()
        worker = DeviceSpec.from_string(worker_device or "")
        return worker.make_merged_spec(current).to_string()

    return device_function
