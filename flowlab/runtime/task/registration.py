"""A registered partition: the GraphDef JSON a task is sent, imported into a graph of
the task's own.

A task never sees the client's Graph.  Each unit of a `register_partitions`
message (flowlab.runtime.interface) is a GraphDef whose nodes carry their assigned
device; `import_unit` re-creates its ops in a fresh Graph (never a default graph,
and never the client's), gives each op the definition site the message's
`debug_info` records (so errors quote the user's code, as they do for the client's
ops), resolves `func` attrs by name (flowlab.graph.function_registry), and returns
the ops in the message's order with the tensors the step feeds and fetches.

Kernel state is found by name on a device (variables, queues, iterators, random
generators), so ops imported here read and write the same state as the client's
ops of the same names would: a task's devices, not its graphs, hold state.

Invariant: the imported graph holds exactly the message's nodes, under the same
names, in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from flowlab import errors
from flowlab.graph.function_registry import lookup_function
from flowlab.graph.graph import Graph
from flowlab.graph.tensor import Frame, Operation, Tensor
from flowlab.ops.importer import import_graph_def
from flowlab.runtime.task.device import Device


@dataclass
class ImportedUnit:
    """One unit of a registration, as ops of the task's own graph."""

    graph: Graph
    ops: list[Operation]  # the message's node order (topological), without the feeds' nodes
    device_of: dict[str, Device]  # op name -> this task's device
    feeds: list[Tensor] = field(default_factory=list)
    feed_index: list[int] = field(default_factory=list)
    fetches: list[Tensor] = field(default_factory=list)
    fetch_index: list[int] = field(default_factory=list)

    @property
    def device(self) -> Device:
        """The unit's device (the first node's: a partition has one)."""
        return next(iter(self.device_of.values()))


def merged_io(units: list[ImportedUnit], num_fetches: int) -> tuple[dict[str, Any], list[Any], list[int], list[int], list[Any]]:
    """What compiling several units as one plan needs: (device of each op, feeds, their
    index into the step's feeds, the fetch positions this task answers, their tensors)."""
    device_of = {name: dev for u in units for name, dev in u.device_of.items()}
    feeds = [t for u in units for t in u.feeds]
    fetches: list[Any] = [None] * num_fetches
    for u in units:
        for i, t in zip(u.fetch_index, u.fetches):
            fetches[i] = t
    present = [i for i, t in enumerate(fetches) if t is not None]
    return device_of, feeds, [j for u in units for j in u.feed_index], present, [fetches[i] for i in present]


def import_unit(unit: dict[str, Any], devices: dict[str, Device], debug_info: dict[str, Any]) -> ImportedUnit:
    """Import one unit of a `register_partitions` message (see the module docstring).

    Raises:
      InvalidArgumentError: a node names a device this task does not have, or a feed
        or fetch names no tensor of the unit.
    """
    gd = unit["graph_def"]
    g = Graph()
    g._partition_graph = True  # the partitioner's `_cloop...` names; shapes as sent
    with g.as_default():
        import_graph_def(gd, name="")
    ops: list[Operation] = []
    device_of: dict[str, Device] = {}
    # The feeds' Placeholder nodes stand for values the step is given: never run.
    args = {name.rsplit(":", 1)[0] for name in unit.get("feeds", [])}
    for node in gd["node"]:
        if node["name"] in args:
            continue
        op = g.get_operation_by_name(node["name"])
        dev = devices.get(node.get("device") or "")
        if dev is None:
            raise errors.InvalidArgumentError(
                None, None,
                f"Node '{node['name']}' was assigned to device '{node.get('device')}', which this task "
                f"does not have; its devices are {sorted(devices)}.",
            )
        frames = debug_info.get(node["name"])
        if frames:
            op._traceback = tuple(Frame(str(f), int(ln), str(fn)) for f, ln, fn in frames)
        for key in unit.get("functions", {}).get(op.name, ()):
            _resolve_function(op, key)
        declared = unit.get("declarations", {}).get(op.name)
        if declared is not None:
            _declare(op, declared)
        ops.append(op)
        device_of[op.name] = dev
    out = ImportedUnit(g, ops, device_of)
    out.feeds = [_tensor(g, n) for n in unit.get("feeds", [])]
    out.feed_index = [int(i) for i in unit.get("feed_index", [])]
    out.fetches = [_tensor(g, n) for n in unit.get("fetches", [])]
    out.fetch_index = [int(i) for i in unit.get("fetch_index", [])]
    return out


def _declare(op: Operation, d: dict[str, Any]) -> None:
    """Give `op` the declaration the partitioner chose for it, which a NodeDef does not
    carry: whether it is control flow (a Send or Recv where dead values can or cannot
    cross), and which inputs and outputs are references (a transfer that moves a
    variable between CPUs of one process, an Identity forwarding one; see
    flowlab.runtime.master.partition_refs)."""
    od = op._op_def
    ref_in, ref_out = set(d.get("ref_inputs", ())), set(d.get("ref_outputs", ()))
    op._op_def = replace(
        od, is_control_flow=bool(d.get("control_flow", od.is_control_flow)),
        inputs=[replace(a, is_ref=i in ref_in) for i, a in enumerate(od.inputs)],
        outputs=[replace(a, is_ref=i in ref_out) for i, a in enumerate(od.outputs)],
    )
    for i in ref_out:
        t = op._outputs[i]
        if not t._dtype.is_ref_dtype:
            t._dtype = t._dtype._as_ref()


def _tensor(g: Graph, name: str) -> Tensor:
    try:
        return g.get_tensor_by_name(name)
    except (KeyError, ValueError) as e:
        raise errors.InvalidArgumentError(None, None, f"The registered partition has no tensor '{name}': {e}") from None


def _resolve_function(op: Operation, key: str) -> None:
    """A `func` attr imports as its name: put the function object back."""
    name = op._attrs.get(key)
    fn = lookup_function(name) if isinstance(name, str) else None
    if fn is None:
        raise errors.NotFoundError(
            None, None,
            f"Node '{op.name}' ({op.type}) calls function '{name}', which is not defined in this process.",
        )
    op._attrs[key] = fn
