"""What a step leaves in `RunMetadata`, and the per-device GraphDefs of a step.

TensorFlow's DirectSession rewrites the caller's `RunMetadata` after every step it
was passed to (the Python client parses the step's metadata into it, so earlier
contents go): `step_stats` hold the trace when `RunOptions.trace_level` asks for one
(else they are empty), and `partition_graphs` hold one GraphDef per device the step
ran on whenever `RunOptions(output_partition_graphs=True)` -- traced or not, and for
a step on one device too.  `fill_run_metadata` does the same after a flowlab step;
an untraced step collects no statistics for it (the GraphDefs come from the cached
plan, so a step that does not ask pays nothing).

`step_partitions(plan)` is what `Session.partitions(fetches, feed_dict)` returns:
device name -> GraphDef (`flowlab.graph.graph_def_proto.GraphDef`: the JSON dict of
`flowlab.graph.graph_def`, readable as TensorFlow's proto, `pg.node[i].op`), the
Send/Recv pairs and the placement.  A step on one device is one GraphDef with no
pairs, written from the optimized view of the step (converted ops as `NoOp`, folded
ops as `Const`), as the partitions of a step across devices are.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph.graph_def import node_to_dict
from flowlab.graph.graph_def_proto import GraphDef, as_graph_def
from flowlab.runtime.config import RunMetadata, RunOptions, StepStats
from flowlab.runtime.master.partition_client import plan_client_view
from flowlab.runtime.master.partition_view import Partitions
from flowlab.runtime.task.partitioned_plan import PartitionedPlan
from flowlab.runtime.task.plan import Plan

__all__ = ["fill_run_metadata", "step_partitions", "traced"]


def traced(options: RunOptions | None, run_metadata: RunMetadata | None) -> bool:
    """Whether a step collects step stats: a trace level asked for, and somewhere to put them."""
    return options is not None and run_metadata is not None and options.trace_level >= RunOptions.SOFTWARE_TRACE


def fill_run_metadata(
    run_metadata: RunMetadata, options: RunOptions | None, plan: Plan | PartitionedPlan, was_traced: bool,
    devices: list[Any] | None = None,
) -> None:
    """After a step that was given `run_metadata`: what TensorFlow leaves there.
    `was_traced`: the step's collector already set `step_stats`."""
    if not was_traced:
        run_metadata.step_stats = StepStats()
    if options is not None and options.output_partition_graphs:
        run_metadata.partition_graphs = list(step_partitions(plan, devices).values())
    else:
        run_metadata.partition_graphs = []


def step_partitions(plan: Plan | PartitionedPlan, devices: list[Any] | None = None) -> Partitions:
    """The per-device GraphDefs and Send/Recv pairs of a compiled step (see the module
    docstring); `devices`: the session's, for the feeds and fetches through the client
    device (partition_client)."""
    if isinstance(plan, PartitionedPlan):
        pg = plan.master_partitions  # the master's partitions, which the task was sent
        view = Partitions(pg.client.graph_defs({p.device.name: p.graph_def() for p in pg.partitions}),
                          pg.pairs, plan.placement, pg.client.pairs)
        return Partitions(
            {d: as_graph_def(g) for d, g in view.items()}, view.pairs, view.placement, view.client_pairs
        )
    device_of = plan.placement.device_of
    opt = plan.optimization
    in_plan = {n.op.name for n in plan.nodes}
    if opt is not None:
        nodes = opt.graph_def()["node"]
    else:
        nodes = [node_to_dict(n.op) for n in plan.nodes]
    by_device: dict[str, list[Any]] = {}
    for node in nodes:
        # A folded op with several outputs writes `name/folded_i` for outputs i > 0.
        name = node["name"] if node["name"] in in_plan else node["name"].rsplit("/folded_", 1)[0]
        if name not in in_plan:
            continue
        dev = device_of[name]
        node["device"] = dev.name
        by_device.setdefault(dev.name, []).append(node)
    client = plan_client_view(plan, devices)
    plain = {d: {"format": "flowlab.GraphDef", "version": 1, "node": ns, "library": {}} for d, ns in by_device.items()}
    defs: dict[str, dict[str, Any]] = {d: GraphDef(g) for d, g in client.graph_defs(plain).items()}
    return Partitions(defs, [], plan.placement, client.pairs)
