"""The master: from a step signature to registered partitions, once (paper section 3.3).

A `Master` runs in the client.  For each step signature -- (graph version, fed
tensors, fetched tensors, targets) -- it prunes the client's graph to what the step
needs (`prune`), rewrites it (`optimize`), places it over the devices of all its tasks
(`placement`), cuts it into one partition per device joined by Send/Recv pairs
(`partition`), and registers each task's partitions with that task through the task
interface (flowlab.runtime.interface) as GraphDef JSON (`registration_messages`).
The result, a `StepPlan`, is cached (256 signatures, least recently used first out);
a step is then one `run_step` per task with the handle, a step id and the feeds.

What the master keeps per signature (`StepPlan`): the handle, the tasks involved,
which fetches are answered by feeds, the placement and the optimization (for
pictures and `Session.placement`), and the master's partitions (for
`Session.partitions` and RunMetadata).  It keeps no kernel, no value and no state:
those live on the tasks.

Invariants: the client's Graph is never modified; everything sent to a task is plain
data; a handle is registered on every task of its step before the first step runs.
"""

from __future__ import annotations

import collections
import itertools
import secrets
import threading
from dataclasses import dataclass, field
from typing import Any

from flowlab.graph.graph import Graph
from flowlab.graph.tensor import Operation, Tensor
from flowlab.runtime.master.optimize import Optimization
from flowlab.runtime.master.partition import PartitionedGraph, needs_unpartitioned, partition
from flowlab.runtime.master.partition_control_flow import analyze_frames
from flowlab.runtime.master.placement import GraphPlacement, Placement, optimize_and_place
from flowlab.runtime.master.prune import check_outside_loops, prune
from flowlab.runtime.master.registration import registration_messages

__all__ = ["Master", "StepPlan"]

_MAX_CACHED_PLANS = 256
_masters = itertools.count(1)


# The receiving ends of transfers (a task pulls their keys from the sending task).
_RECV_OPS = frozenset({"_Recv", "_HostRecv"})


def _inputs(op: Operation) -> list[Tensor]:
    return list(op._inputs)


@dataclass
class StepPlan:
    """What the master keeps for one step signature (see the module docstring)."""

    handle: str
    graph_version: int
    tasks: list[Any]  # the tasks that registered the handle (none: every fetch is fed)
    num_feeds: int
    num_fetches: int
    fed_fetches: list[tuple[int, int]]  # (fetch position, feed position)
    placement: Placement
    optimization: Optimization | None
    ops: list[Operation]  # the step as placed, before partitioning
    partitioned: PartitionedGraph
    multi_device: bool  # Send/Recv pairs join partitions
    feeds: list[Tensor] = field(default_factory=list)  # the client's fed and fetched tensors
    fetches: list[Tensor] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)  # sent, for inspection
    fetch_owner: list[int] = field(default_factory=list)  # per fetch: index in `tasks` (-1: a feed)
    view: Any = None  # the step compiled in the client for pictures (made when asked)
    # An in-process task's one-call runner of the unwatched step (None: none; False:
    # not asked yet), bound by the Session on first use.
    runner: Any = False


class Master:
    """Plans steps of one client graph over the devices of `tasks`."""

    # Between CPUs of one task a transfer may carry the variable itself (partition_refs);
    # False sends values everywhere, as between tasks.
    share_references = True

    def __init__(self, graph: Graph, config: Any, tasks: list[Any]) -> None:
        self.graph = graph
        self.config = config
        self.tasks = list(tasks)
        self.devices = [d for t in self.tasks for d in t.devices]
        self._task_of_device = {d.name: t for t in self.tasks for d in t.devices}
        self.plans: collections.OrderedDict[Any, StepPlan] = collections.OrderedDict()
        self._lock = threading.Lock()
        # Handles name (session, signature) on tasks that other clients share (a
        # cluster's): a random part keeps two processes' masters apart.
        self._id = f"{next(_masters)}.{secrets.token_hex(4)}"
        self._handles = itertools.count(1)
        # The placement of the whole graph (per graph version) that every step's
        # placement reads; made on the first step, only with several devices.
        self.whole: GraphPlacement | None = None

    def plan_for(self, feeds: list[Tensor], fetches: list[Tensor], targets: list[Operation]) -> StepPlan:
        """The cached StepPlan of this signature, made (and registered) on first use."""
        g = self.graph
        key = (g.version, tuple(t.name for t in feeds), tuple(t.name for t in fetches),
               tuple(op.name for op in targets))
        sp = self.plans.get(key)
        if sp is not None:
            return sp
        with self._lock:
            sp = self.plans.get(key)
            if sp is not None:
                return sp
            for t in list(feeds) + list(fetches):
                if t.graph is not g:
                    raise ValueError(f"Tensor {t.name} is not an element of this session's graph.")
            check_outside_loops(feeds, fetches, targets)
            ops = prune(fetches, targets, feeds)
            opt, placement = optimize_and_place(
                ops, feeds, fetches, targets, self.devices, self.config, self._graph_placement()
            )
            sp = self._register(opt.ops, placement, feeds, fetches, g.version, opt)
            self.plans[key] = sp
            while len(self.plans) > _MAX_CACHED_PLANS:
                _, old = self.plans.popitem(last=False)
                for t in old.tasks:
                    t.deregister_partitions({"handle": old.handle})
            return sp

    def _register(self, ops: list[Operation], placement: Placement, feeds: list[Tensor], fetches: list[Tensor],
                  version: int, opt: Optimization | None) -> StepPlan:
        """Partition the placed step and register each task's partitions.  A step on
        one device is one partition; a hand-built loop without a LoopCond spanning
        devices is one unit whose nodes keep their devices (see
        `partition.needs_unpartitioned`)."""
        device_of = placement.device_of
        used = {id(d) for d in device_of.values()}
        multi = len(used) > 1 and not needs_unpartitioned(ops, device_of, opt)
        if multi:
            # A variable read is shared between CPUs of one task; between tasks its value moves.
            pg = partition(ops, device_of, feeds, fetches, self.devices, optimization=opt,
                           share_references=self.share_references and len(self.tasks) == 1)
            node_device = None
        else:
            one = next(iter(device_of.values()), self.devices[0]) if ops else self.devices[0]
            pg = partition(ops, {op.name: one for op in ops}, feeds, fetches, self.devices, optimization=opt)
            node_device = {op.name: d.name for op, d in ((op, device_of[op.name]) for op in ops)}
        handle = f"m{self._id}/{next(self._handles)}"
        messages = registration_messages(handle, version, pg, len(feeds), self._task_of_device, node_device,
                                         own_task=self.tasks[0])
        if multi and len(messages) > 1:
            self._mark_loop_pulls(pg, messages)
        tasks = []
        for task, message in messages:
            task.register_partitions(message)
            tasks.append(task)
        owner = [-1] * len(fetches)
        for i, (_, message) in enumerate(messages):
            for unit in message["units"]:
                for pos in unit["fetch_index"]:
                    owner[pos] = i
        return StepPlan(handle, version, tasks, len(feeds), len(fetches), list(pg.fed_fetches), placement, opt,
                        ops, pg, multi, list(feeds), list(fetches), [m for _, m in messages], fetch_owner=owner)

    @staticmethod
    def _mark_loop_pulls(pg: PartitionedGraph, messages: list[tuple[Any, dict[str, Any]]]) -> None:
        """Mark each transfer between tasks whose Recv runs inside a loop frame
        (`in_loop`): it has one key per frame instance and iteration, which the
        receiving task pulls when that Recv runs, not at step start (TensorFlow's
        workers pull every key on demand; a root-frame key's pull overlaps compute)."""
        pulls = [p for _, m in messages for p in m["remote_recvs"]]
        if not pulls:
            return
        in_loop: set[str] = set()
        for part in pg.partitions:
            fr = analyze_frames(part.ops, _inputs)
            if fr is not None:
                in_loop.update(op.name for op in part.ops
                               if op.type in _RECV_OPS and fr.op_frame.get(id(op), ""))
        if not in_loop:
            return
        recv_of = {pr.key: pr.recv_op for pr in pg.pairs}
        for p in pulls:
            if recv_of.get(p["key"]) in in_loop:
                p["in_loop"] = True

    def _graph_placement(self) -> GraphPlacement | None:
        """The placement of the whole graph as it is now (None with one device: every
        op goes there, step by step -- unless `log_device_placement` asks to see it).
        With `log_device_placement`, each new placement of the graph is printed as
        TensorFlow prints it: every op, generators (constants, placeholders) last."""
        cfg = self.config
        if len(self.devices) <= 1 and not cfg.log_device_placement:
            return None
        if self.whole is None:
            self.whole = GraphPlacement(self.devices, cfg.allow_soft_placement, cfg.placement_strategy, cfg.cost_model)
        builds = self.whole.builds
        whole = self.whole.update(self.graph)
        if cfg.log_device_placement and whole.builds != builds:
            ops = [op for op in self.graph.get_operations() if op.name in whole.device_of]
            generator = [not op._inputs and len(op._outputs) == 1 and not op._outputs[0].dtype.is_ref_dtype
                         for op in ops]
            for op in [o for o, gen in zip(ops, generator) if not gen] + [o for o, gen in zip(ops, generator) if gen]:
                print(f"{op.name}: ({op.type}): {whole.device_of[op.name].name}")
        return whole
