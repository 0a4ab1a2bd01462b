"""Fetches a task only passes on go to the client straight from the task that made them.

`sess.run(tf.identity(v))` with the Identity on a worker and `v` on a ps moves `v`
twice on TensorFlow's servers: ps -> worker (RecvTensor) -> client (the worker's
RunGraph reply).  The worker only passes the tensor on.  When a fetched tensor of a
task is a `_Recv` from another task followed by nothing but Identity or
StopGradient nodes, and nothing else on the task reads any of them, the task need not
hold the value at all.  An unwatched step then does not pull that key.  The `_Recv`
yields a `Forwarded` marker instead, the marker flows through the Identity nodes to
the fetch, and the run_step reply carries `{"forwarded": pull}` at its position.  The
client pulls the key from the producing task itself (`recv_tensor`, as the worker
would have), so the bytes cross the network once.  The producer keeps the value
until it has been pulled, as for any pull.

A task whose whole part of a step is such chains (the null step's worker: a Recv of the
ps's variable and the fetched Identity) has nothing to do in an unwatched step: its
registration reply carries the values such a step would return (`passive_values`), and
the client does not call it at all.  The step is then one round trip, the producer's
run_step, whose reply delivers the fetch.

A watched or traced step pulls as before: its events show the transfer to the worker
and the Identity's real output.
"""

from __future__ import annotations

from typing import Any

from flowlab.kernels.sendrecv_kernels import parse_key

__all__ = ["Forwarded", "forwardable_keys", "passive_values", "to_wire_values"]

PASS_THROUGH = ("Identity", "StopGradient")
RECVS = ("_Recv",)


class Forwarded:
    """What a forwarded `_Recv` yields on the task: the pull the client makes instead."""

    __slots__ = ("pull",)

    def __init__(self, pull: dict[str, Any]) -> None:
        self.pull = pull

    def __repr__(self) -> str:
        return f"<Forwarded {self.pull['key']!r} from {self.pull['task']}>"


def _tensor(ref: str) -> tuple[str, int]:
    name, _, index = ref.partition(":")
    return name, int(index or 0)


def forwardable_keys(units: list[dict[str, Any]], remote_recvs: list[dict[str, Any]]) -> dict[str, str]:
    """The keys of `remote_recvs` that only reach a fetch through pass-through nodes
    (see the module docstring), each with the fetched tensor's name, read from the
    units' GraphDefs."""
    nodes: dict[str, dict[str, Any]] = {}
    reads: dict[tuple[str, int], int] = {}  # data edges into each tensor's consumers
    controlled: set[str] = set()  # nodes some other node waits on
    fetched: dict[tuple[str, int], int] = {}
    for unit in units:
        for node in unit["graph_def"].get("node", []):
            nodes[node["name"]] = node
            for ref in node.get("input", []):
                if ref.startswith("^"):
                    controlled.add(ref[1:])
                else:
                    t = _tensor(ref)
                    reads[t] = reads.get(t, 0) + 1
        for ref in unit.get("fetches", []):
            t = _tensor(ref)
            fetched[t] = fetched.get(t, 0) + 1
    keys = {_key_parts(p["key"]): p["key"] for p in remote_recvs}
    out: dict[str, str] = {}
    for (name, index), times in fetched.items():
        if times != 1 or reads.get((name, index)) or index != 0:
            continue
        node = nodes.get(name)
        while node is not None and node["op"] in PASS_THROUGH:
            inputs = node.get("input", [])
            if len(inputs) != 1 or inputs[0].startswith("^") or node["name"] in controlled:
                node = None
                break
            src = _tensor(inputs[0])
            if src[1] != 0 or reads.get(src) != 1:
                node = None
                break
            node = nodes.get(src[0])
        if node is None or node["op"] not in RECVS or node["name"] in controlled or node.get("input"):
            continue
        attr = node.get("attr", {})
        parts = (attr.get("send_device", {}).get("s"), attr.get("recv_device", {}).get("s"),
                 attr.get("tensor_name", {}).get("s"))
        key = keys.get(parts)
        if key is not None:
            out[key] = f"{name}:{index}"
    return out


def _key_parts(key: str) -> tuple[str | None, ...]:
    """(send device, recv device, tensor name) of a rendezvous key of the step's root
    frame; a key inside a loop (another frame or iteration) never matches."""
    try:
        k = parse_key(key)
    except ValueError:
        return (None, None, None)
    if (k.frame_id, k.iter_id) != (0, 0):
        return (None, None, None)
    return (k.src_device, k.dst_device, k.tensor_name)


def to_wire_values(values: list[Any]) -> list[Any]:
    """A step's values for its reply, each `Forwarded` as `{"forwarded": pull}`."""
    return [{"forwarded": v.pull} if type(v) is Forwarded else v for v in values]


def passive_values(units: list[dict[str, Any]], forwarded: dict[str, str], pulls: dict[str, dict[str, Any]],
                   num_fetches: int) -> list[Any] | None:
    """The reply values of every unwatched step of a task that does nothing but pass
    forwarded fetches on (its one unit: Recvs from other tasks, each followed only by
    Identity or StopGradient nodes up to a fetch), or None when it does anything else.
    The client then need not call the task at all: the producers deliver the values
    (`deliver`) and these `{"forwarded": pull}` entries say where each one goes."""
    if len(units) != 1 or units[0].get("feeds"):
        return None
    unit = units[0]
    nodes = {n["name"]: n for n in unit["graph_def"].get("node", [])}
    key_of = {fetch: key for key, fetch in forwarded.items()}
    fetch_index = unit.get("fetch_index")
    values: list[Any] = [None] * num_fetches
    covered: set[str] = set()
    for i, ref in enumerate(unit.get("fetches", [])):
        key = key_of.get(ref)
        if key is None:
            return None
        name = _tensor(ref)[0]
        while nodes[name]["op"] in PASS_THROUGH:  # forwardable_keys walked this very chain
            covered.add(name)
            name = _tensor(nodes[name]["input"][0])[0]
        covered.add(name)
        values[fetch_index[i] if fetch_index is not None else i] = {"forwarded": pulls[key]}
    return values if covered == set(nodes) else None
