"""Feeds and fetches through the client device, as TensorFlow's call frame shows them.

TensorFlow 2.21's DirectSession feeds a step through `_Arg` nodes and fetches through
`_Retval` nodes placed on the client device (/job:localhost/replica:0/task:0/device:CPU:0):
a fed tensor read on another device crosses in a `_Send`/`_Recv` pair from CPU:0, and a
fetched tensor made on another device crosses in a pair to CPU:0.  flowlab's runtime
writes a fed value straight into the partitions that read it and reads a fetch from the
partition that makes it (one process: no copy is needed, and a step costs nothing more);
`client_view` only adds what TensorFlow's partition GraphDefs show -- the `_Arg`s and
`_Retval`s (named `_arg_<op>_<output>_<index>` / `_retval_<op>_<output>_<index>`, the
index in the sorted order of the tensor names, as TensorFlow's), their pairs (TensorFlow's
node names, `tensor_name`, `send_device`, `recv_device`, `client_terminated=False`,
`_src`, `_dst`), and the consumers' inputs renamed to them.  The pairs are listed apart
(`ClientView.pairs`, `Partitions.client_pairs`): nothing runs them.  A fetched tensor
that is also fed is answered by the session from the feed and gets no `_Retval`, as in
TensorFlow.  See docs/notes/partitioning.md, "Feeds and fetches through the client device".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flowlab.graph.graph_def import FORMAT, VERSION, attr_to_json
from flowlab.graph.tensor import Tensor
from flowlab.kernels import sendrecv_kernels
from flowlab.runtime.task.device import Device
from flowlab.runtime.task.memory_types import declared_host_memory

if TYPE_CHECKING:
    from flowlab.runtime.master.partition import DevicePartition, SendRecvPair

__all__ = ["ClientView", "client_view", "plan_client_view", "client_device"]

_CLIENT_SUFFIX = "/device:CPU:0"


@dataclass
class ClientNodes:
    """What one device's partition GraphDef shows around its ops."""

    before: list[dict[str, Any]] = field(default_factory=list)  # _Arg, its Sends / the Recvs of feeds
    after: list[dict[str, Any]] = field(default_factory=list)  # Sends of fetches / their Recvs, _Retval
    aliases: dict[str, str] = field(default_factory=dict)  # input name -> the node now giving it


@dataclass
class ClientView:
    """Per device name, the client nodes; and the pairs they add (shown, never run)."""

    nodes: dict[str, ClientNodes] = field(default_factory=dict)
    pairs: list[SendRecvPair] = field(default_factory=list)
    order: list[str] = field(default_factory=list)  # the session's device names, in order

    def graph_defs(self, defs: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """The partitions' GraphDefs (device -> GraphDef dict) with the client nodes,
        and one for the client device when only they are there."""
        if not self.nodes:
            return defs
        out = dict(defs)
        for device in self.nodes:
            g = out.get(device)
            if g is None:
                g = out[device] = {"format": FORMAT, "version": VERSION, "node": [], "library": {}}
            out[device] = {**g, "node": self.graph_def_nodes(device, g["node"])}
        rank = {d: i for i, d in enumerate(self.order)}
        return dict(sorted(out.items(), key=lambda kv: rank.get(kv[0], len(rank))))

    def graph_def_nodes(self, device: str, ops_nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """`ops_nodes` (a partition's own nodes) with the client nodes around them."""
        c = self.nodes.get(device)
        if c is None:
            return ops_nodes
        if c.aliases:
            for n in ops_nodes:
                n["input"] = [c.aliases.get(i, i) for i in n["input"]]
        return c.before + ops_nodes + c.after


def client_device(devices: list[Device] | None) -> Device | None:
    """The session's CPU:0, where TensorFlow's call frame feeds and fetches."""
    for d in devices or []:
        if d.name.endswith(_CLIENT_SUFFIX):
            return d
    return None


def _name(t: Tensor) -> str:
    return t.op.name if t.value_index == 0 else f"{t.op.name}:{t.value_index}"


def _attrs(**kw: Any) -> dict[str, Any]:
    kinds = {bool: "bool", int: "int", str: "string"}
    return {k: attr_to_json(v, kinds.get(type(v), "type")) for k, v in sorted(kw.items())}


def _node(name: str, op: str, inputs: list[str], device: str, **attrs: Any) -> dict[str, Any]:
    return {"name": name, "op": op, "input": inputs, "device": device, "attr": _attrs(**attrs)}


def client_view(
    p: Any, parts: list[DevicePartition], feeds: list[Tensor], fetched: list[tuple[Tensor, Tensor]],
    client: Device | None, order: list[str],
) -> ClientView:
    """The client nodes of a partitioned step.  `p`: the `_Partitioner` (its names and
    counter, so the new names are the step's own); `fetched`: (user tensor, partition
    tensor) of each fetch the partitions answer."""
    readers: dict[int, list[tuple[Device, str, bool]]] = {}
    for part in parts:
        for j in part.feed_index:
            t = feeds[j]
            found = next(((op, k) for op in part.ops for k, i in enumerate(op._inputs) if i is t), None)
            consumer, host = "", False
            if found is not None:
                consumer, host = found[0].name, declared_host_memory(found[0], part.device, found[1], output=False)
            readers.setdefault(j, []).append((part.device, consumer, host))
    on = {part.device.name: part.device for part in parts}
    return _build(
        [(feeds[j], r) for j, r in readers.items()],
        [(u, m, on[m.op.device], declared_host_memory(m.op, on[m.op.device], m.value_index, output=True))
         for u, m in fetched],
        client, order, p.fresh_names,
    )


def plan_client_view(plan: Any, devices: list[Device] | None) -> ClientView:
    """The client nodes of a step compiled as one `Plan` (not partitioned)."""
    from flowlab.runtime.task.plan import own_inputs

    client = client_device(devices)
    order = [d.name for d in devices or []]
    if client is None:
        return ClientView(order=order)
    opt = plan.optimization
    inputs_of = opt.inputs_of if opt is not None else own_inputs
    feed_slots = set(plan.feed_slots)
    readers: dict[str, tuple[Tensor, list[tuple[Device, str, bool]]]] = {}
    made: dict[str, tuple[Tensor, Device]] = {}
    for node in plan.nodes:
        dev = node.ctx.device
        if node.constants is None and any(slot in feed_slots for slot, _ in node.inputs):
            for k, ((slot, _), t) in enumerate(zip(node.inputs, inputs_of(node.op))):
                if slot in feed_slots:
                    entry = readers.setdefault(t.name, (t, []))
                    if all(d is not dev for d, _, _ in entry[1]):
                        own = k < len(node.op._inputs) and node.op._inputs[k] is t
                        host = own and declared_host_memory(node.op, dev, k, output=False)
                        entry[1].append((dev, node.op.name, host))
        for t in node.op._outputs:
            made[t.name] = (t, dev)
    fetched = []
    for name, slot in zip(plan.fetch_names, plan.fetch_slots):
        if slot not in feed_slots and name in made:
            t, dev = made[name]
            fetched.append((t, t, dev, declared_host_memory(t.op, dev, t.value_index, output=True)))
    taken = {n.op.name for n in plan.nodes}
    counter = [0]

    def fresh(base: str) -> tuple[int, str, str]:
        while True:
            n = counter[0]
            counter[0] += 2
            send, recv = f"{base}/_{n}", f"{base}/_{n + 1}"
            if send not in taken and recv not in taken:
                taken.update((send, recv))
                return n, send, recv

    return _build(list(readers.values()), fetched, client, order, fresh)


def _build(
    feeds_read: list[tuple[Tensor, list[tuple[Device, str, bool]]]],
    fetched: list[tuple[Tensor, Tensor, Device, bool]],
    client: Device | None, order: list[str], fresh: Callable[[str], tuple[int, str, str]],
) -> ClientView:
    """`feeds_read`: each fed tensor read in the step, with (device, first consumer there,
    whether it reads it in host memory); `fetched`: (user tensor, tensor that answers it,
    its device, whether that output is host memory) of each fetch not fed.  Host memory
    makes the device's side a `_HostRecv`/`_HostSend`, as `partition.transfer` does."""
    from flowlab.runtime.master.partition import SendRecvPair

    view = ClientView(order=order)
    if client is None:
        return view

    def nodes(device: str) -> ClientNodes:
        return view.nodes.setdefault(device, ClientNodes())

    def pair(
        base: str, src: Device, dst: Device, dtype: Any, inp: str, dst_name: str, t: Tensor,
        host_send: bool = False, host_recv: bool = False,
    ) -> str:
        n, send, recv = fresh(base)
        tensor_name = f"edge_{n}_{base}"
        address = dict(
            tensor_name=tensor_name, send_device=src.name, send_device_incarnation=src.incarnation,
            recv_device=dst.name, client_terminated=False, _src=base, _dst=dst_name,
        )
        s = _node(send, "_HostSend" if host_send else "_Send", [inp], src.name, T=dtype, **address)
        r = _node(recv, "_HostRecv" if host_recv else "_Recv", [], dst.name, tensor_type=dtype, **address)
        (nodes(src.name).before if src is client else nodes(src.name).after).append(s)
        (nodes(dst.name).before if dst is not client else nodes(dst.name).after).append(r)
        shape = t.shape.as_tuple() if t.shape.ndims is not None else None
        view.pairs.append(SendRecvPair(
            sendrecv_kernels.make_key(src.name, src.incarnation, dst.name, tensor_name), tensor_name,
            send, recv, t.name, src.name, dst.name, dtype.name, shape,
        ))
        return recv

    # Feeds: one _Arg each (sorted by tensor name), one pair per other device reading it.
    for index, (t, readers) in enumerate(sorted(feeds_read, key=lambda e: e[0].name)):
        dtype = t.dtype.base_dtype
        arg = f"_arg_{t.op.name}_{t.value_index}_{index}"
        nodes(client.name).before.append(_node(arg, "_Arg", [], client.name, T=dtype, index=index))
        for dev, consumer, host in readers:
            if dev is client:
                nodes(client.name).aliases[_name(t)] = arg
            else:
                nodes(dev.name).aliases[_name(t)] = pair(arg, client, dev, dtype, arg, consumer, t, host_recv=host)
    # Fetches: one _Retval per distinct tensor (sorted by name), a pair from other devices.
    distinct = sorted({e[0].name: e for e in fetched}.items())
    for index, (_, (user, m, src, host)) in enumerate(distinct):
        dtype = user.dtype.base_dtype
        retval = f"_retval_{user.op.name}_{user.value_index}_{index}"
        inp = _name(m)
        if src is not client:
            inp = pair(m.op.name, src, client, dtype, inp, retval, m, host_send=host)
        nodes(client.name).after.append(_node(retval, "_Retval", [inp], client.name, T=dtype, index=index))
    return view
