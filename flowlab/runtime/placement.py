"""Placement: a device for every op of a pruned graph (white paper section 3.2.1).

In order: (1) colocation groups by union-find: explicit `colocate_with`, and every
op that takes a reference (`Ref(T)` input) from a stateful op joins that op's group;
(2) the users' partial device requests within a group are merged, and a conflict is an
error naming both ops and both requests; (3) the candidates are the devices that match
the merged request and have a kernel for every op of the group; (4) the first
candidate in the session's device order is chosen (the greedy cost-model choice
belongs to the multi-device placement work).  `allow_soft_placement` drops a request
that no device satisfies instead of failing.

The result records why each op went where it did, for the viewer.  Operations are
never modified.
"""

from __future__ import annotations

from dataclasses import dataclass

from flowlab import errors
from flowlab.graph.device_spec import DeviceSpec
from flowlab.graph.tensor import Operation
from flowlab.kernels.registry import find_kernel
from flowlab.runtime.device import Device


@dataclass
class Placement:
    """op name -> device, with the reason for each choice."""

    device_of: dict[str, Device]
    reason: dict[str, str]


def _find(parent: dict[str, str], x: str) -> str:
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def place(ops: list[Operation], devices: list[Device], allow_soft_placement: bool = False) -> Placement:
    by_name = {op.name: op for op in ops}
    parent = {op.name: op.name for op in ops}

    def union(a: str, b: str) -> None:
        ra, rb = _find(parent, a), _find(parent, b)
        if ra != rb:
            parent[rb] = ra

    for op in ops:
        for loc in op._colocation:
            if loc in parent:
                union(loc, op.name)
        od = op.op_def
        if od is not None:
            i = 0
            for arg in od.inputs:
                n = _arg_len(arg, op)
                if arg.is_ref or (arg.fixed_type is not None and arg.fixed_type.name == "resource"):
                    for t in op._inputs[i : i + n]:
                        if t.op.name in parent:
                            union(t.op.name, op.name)
                i += n

    groups: dict[str, list[Operation]] = {}
    for op in ops:
        groups.setdefault(_find(parent, op.name), []).append(op)

    device_of: dict[str, Device] = {}
    reason: dict[str, str] = {}
    for root, members in groups.items():
        spec = DeviceSpec()
        spec_owner: Operation | None = None
        for op in members:
            if not op.device:
                continue
            req = DeviceSpec.from_string(op.device)
            if not spec.is_compatible_with(req):
                if allow_soft_placement:
                    continue
                raise errors.InvalidArgumentError(
                    None, op,
                    f"Cannot colocate nodes '{spec_owner.name}' and '{op.name}': "  # type: ignore[union-attr]
                    f"'{spec_owner.name}' requests {spec} but '{op.name}' requests {req}. "  # type: ignore[union-attr]
                    "Make the device requests agree or use allow_soft_placement=True.",
                )
            spec = spec.make_merged_spec(req)
            spec_owner = spec_owner or op
        feasible = [d for d in devices if all(find_kernel(op.type, d.device_type) for op in members)]
        if not feasible:
            op = next(o for o in members if not any(find_kernel(o.type, d.device_type) for d in devices))
            raise errors.InvalidArgumentError(
                None, op,
                f"No kernel registered for op '{op.name}' (type {op.type}) on any device of "
                f"this session ({', '.join(d.device_type for d in devices)}).",
            )
        matching = [d for d in feasible if spec.is_compatible_with(d.spec)]
        if matching:
            chosen = matching[0]
            why = f"requested {spec}" if spec_owner is not None else "default: first feasible device"
        elif allow_soft_placement:
            chosen = feasible[0]
            why = f"soft placement: no device matches {spec}"
        else:
            op = spec_owner or members[0]
            avail = ", ".join(d.name for d in devices)
            raise errors.InvalidArgumentError(
                None, op,
                f"Cannot assign a device for operation '{op.name}': Could not satisfy explicit "
                f"device specification '{op.device}' because no device of this session matches "
                f"it (available: {avail}). Use allow_soft_placement=True to relax it.",
            )
        for op in members:
            device_of[op.name] = chosen
            if root != op.name and len(members) > 1:
                reason[op.name] = f"colocated with {by_name[root].name}; {why}"
            else:
                reason[op.name] = why
    return Placement(device_of, reason)


def _arg_len(arg: object, op: Operation) -> int:
    number_attr = getattr(arg, "number_attr", None)
    type_list_attr = getattr(arg, "type_list_attr", None)
    if number_attr is not None:
        return int(op._attrs[number_attr])
    if type_list_attr is not None:
        return len(op._attrs[type_list_attr])
    return 1
