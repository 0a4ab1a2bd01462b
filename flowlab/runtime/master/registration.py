"""What the master sends a task: its partitions of one step as GraphDef JSON.

`registration_messages` turns the master's `PartitionedGraph` into one
`register_partitions` message per task (fields in flowlab.runtime.interface).
Each partition becomes a unit:

* its nodes, written by `node_to_dict` with their static output shapes
  (`_output_shapes`, so the task's graph has the shapes the client's has) and their
  assigned device;
* a fed tensor becomes a `Placeholder` node of its own (named as the fed op when
  that keeps the tensor's name, else `<op>/_arg<i>`) that the unit's consumers read (TensorFlow's partitions read feeds from `_Arg` nodes the
  same way), so a unit never names a node it does not hold;
* where each node was defined (`debug_info`), for the task's error messages;
* what a node's declaration says beyond its registered op's (`declarations`): the
  partitioner's Send/Recv with or without dead values, and the references it passes
  between CPUs of one process -- facts a NodeDef does not carry;
* which attrs name a traced function the task must call (`functions`: a `func` attr
  that is only a name in the client's graph, as after importing a GraphDef without
  bodies, stays a name there too).

The message is plain data: JSON values and nothing else (tensor attrs are base64,
as in every GraphDef), so it can cross a process boundary as it is.

Invariant: a unit's inputs name only nodes of the same unit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flowlab.graph import graph_def as gd
from flowlab.graph.tensor import Operation, Tensor
from flowlab.ops.op_def import get_op_def
from flowlab.runtime.master.partition import DevicePartition, PartitionedGraph

__all__ = ["registration_messages", "unit_message"]


def registration_messages(
    handle: str, graph_version: int, pg: PartitionedGraph, num_feeds: int, task_of_device: dict[str, Any],
    node_device: dict[str, str] | None = None, own_task: Any = None,
) -> list[tuple[Any, dict[str, Any]]]:
    """(task, message) per task holding a partition of `pg`.  `node_device`: op name
    -> device for a unit whose nodes keep different devices (one unpartitioned unit).
    `own_task`: the session's own task; a variable fetched from any other task of a
    step over several tasks is read when its op runs, not when the step ends -- what
    TensorFlow's servers send (see `unit_message`)."""
    by_task: dict[int, tuple[Any, list[DevicePartition]]] = {}
    for part in pg.partitions:
        task = task_of_device[part.device.name]
        by_task.setdefault(id(task), (task, []))[1].append(part)
    # A pair between tasks: the receiver pulls the key from the sender (recv_tensor),
    # and the sender keeps the value until it has been pulled.
    remote_recvs: dict[int, list[dict[str, Any]]] = {}
    remote_sends: dict[int, list[str]] = {}
    for pr in pg.pairs:
        src, dst = task_of_device[pr.src_device], task_of_device[pr.dst_device]
        if src is not dst:
            remote_recvs.setdefault(id(dst), []).append(
                {"key": pr.key, "task": src.name, "incarnation": src.incarnation,
                 # where a task on another machine answers (None in one process)
                 "address": getattr(src, "address", None)})
            remote_sends.setdefault(id(src), []).append(pr.key)
    out = []
    for task, parts in by_task.values():
        names = {op.name for p in parts for op in p.ops}
        debug: dict[str, Any] = {}
        snapshot = own_task is not None and len(by_task) > 1 and task is not own_task
        units = [unit_message(p, debug, node_device, snapshot_refs=snapshot) for p in parts]
        pairs = [{"send_op": pr.send_op, "recv_op": pr.recv_op, "key": pr.key}
                 for pr in pg.pairs if pr.send_op in names and pr.recv_op in names]
        sequence = [op.name for op in pg.sequence if op.name in names] if len(parts) > 1 else None
        out.append((task, {
            "handle": handle, "graph_version": graph_version, "units": units, "pairs": pairs,
            "sequence": sequence, "num_feeds": num_feeds, "num_fetches": pg.num_fetches, "debug_info": debug,
            "remote_recvs": remote_recvs.get(id(task), []), "remote_sends": remote_sends.get(id(task), []),
            # With several tasks a task keeps its step's undo log until the master
            # commits the step (commit_step) or aborts it (abort_step rolls back).
            "two_phase": len(by_task) > 1,
        }))
    return out


def unit_message(part: DevicePartition, debug: dict[str, Any], node_device: dict[str, str] | None = None,
                 snapshot_refs: bool = False) -> dict[str, Any]:
    """One partition as a unit (see the module docstring); adds to `debug`.

    `snapshot_refs`: a fetched variable (a `Ref(T)` tensor) is read by a node of its
    own when its op runs (TensorFlow's servers send a fetched variable from another
    task as soon as its op ran, before the step's updates), instead of at the end of
    the step (what a fetch from the session's own task, and every fetch in one
    process, returns)."""
    taken = {op.name for op in part.ops}
    arg_of: dict[tuple[int, int], str] = {}
    nodes: list[dict[str, Any]] = []
    device = part.device.name
    for t in part.feeds:
        # Named as the fed op where that keeps the tensor's name (`x:0`), so events and
        # step stats name the client's tensor; else `<op>/_arg<i>`.
        base = t.op.name if t.value_index == 0 and t.op.name not in taken else f"{t.op.name}/_arg{t.value_index}"
        name = _fresh(base, taken)
        arg_of[(id(t.op), t.value_index)] = name
        nodes.append(_placeholder(name, t, device))
    device_of: Callable[[Operation], str] = (
        (lambda op: device) if node_device is None else (lambda op: node_device.get(op.name, device)))
    declarations: dict[str, Any] = {}
    functions: dict[str, list[str]] = {}
    for op in part.ops:
        called = [k for k, v in op._attrs.items() if hasattr(v, "name") and hasattr(v, "graph") and not isinstance(v, str)]
        if called:
            functions[op.name] = called
        declared = _declaration(op)
        if declared is not None:
            declarations[op.name] = declared
        node = gd.node_to_dict(op, add_shapes=True)
        node["input"] = [arg_of.get((id(t.op), t.value_index)) or gd._input_name(t) for t in op._inputs] + [
            "^" + c.name for c in op._control_inputs]
        node["device"] = device_of(op)
        # Placement is done: colocation may name nodes of other partitions.
        node["attr"].pop("_class", None)
        nodes.append(node)
        if op._traceback:
            debug[op.name] = [[f.filename, f.lineno, f.name] for f in op._traceback]
    fetches = [t.name for t in part.fetches]
    if snapshot_refs:
        for i, t in enumerate(part.fetches):
            if t.dtype.is_ref_dtype and (id(t.op), t.value_index) not in arg_of:
                name = _fresh(f"{t.op.name}/_fetch_read{t.value_index}", taken)
                nodes.append({"name": name, "op": "StopGradient", "input": [gd._input_name(t)],
                              "device": device_of(t.op),
                              "attr": {"T": gd.attr_to_json(t.dtype.base_dtype, "type")}})
                fetches[i] = name + ":0"
    return {
        "graph_def": {"format": gd.FORMAT, "version": gd.VERSION, "node": nodes, "library": {}},
        "feeds": [arg_of[(id(t.op), t.value_index)] + ":0" for t in part.feeds],
        "feed_index": list(part.feed_index),
        "fetches": fetches,
        "fetch_index": list(part.fetch_index),
        "declarations": declarations,
        "functions": functions,
    }


def _declaration(op: Operation) -> dict[str, Any] | None:
    """What `op`'s declaration says beyond its registered one (None: nothing): the
    partitioner's Send/Recv without or with dead values, and references it passes
    between CPUs (flowlab.runtime.master.partition_refs)."""
    od = op._op_def
    if od is None:
        return None
    base = get_op_def(op.type)
    if od is base:
        return None
    ref_in = [i for i, a in enumerate(od.inputs) if a.is_ref]
    ref_out = [i for i, a in enumerate(od.outputs) if a.is_ref]
    if (od.is_control_flow == base.is_control_flow and ref_in == [i for i, a in enumerate(base.inputs) if a.is_ref]
            and ref_out == [i for i, a in enumerate(base.outputs) if a.is_ref]):
        return None
    return {"control_flow": od.is_control_flow, "ref_inputs": ref_in, "ref_outputs": ref_out}


def _placeholder(name: str, t: Tensor, device: str) -> dict[str, Any]:
    return {
        "name": name, "op": "Placeholder", "input": [], "device": device,
        "attr": {"dtype": gd.attr_to_json(t.dtype.base_dtype, "type"),
                 "shape": gd.attr_to_json(t.shape, "shape")},
    }


def _fresh(base: str, taken: set[str]) -> str:
    name, i = base, 1
    while name in taken:
        name = f"{base}_{i}"
        i += 1
    taken.add(name)
    return name
