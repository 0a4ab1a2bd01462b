"""Colocation groups and what each may use (white paper section 3.2.1, TensorFlow's
`ColocationGraph`): the first half of placement, shared by both strategies.

* `colocation_groups`: union-find over explicit `colocate_with` and reference or
  resource inputs (every op using a variable or queue handle joins its owner).
* `merge_requests`: a group's partial device requests merged in TensorFlow's order
  and with its errors: devices kept from an earlier run first (they never yield),
  then the ops' own requests, then those of reference users (which yield to the
  variable); `allow_soft_placement` merges conflicting types or indices as
  TensorFlow's soft merge does (dropping them), never a job, replica or task.
* `feasible_devices`: the session's devices that match the merged request and have a
  kernel for every op of the group, or TensorFlow's error when none does.

Nothing here chooses among candidates: `placement_strategies` does.
"""

from __future__ import annotations

from flowlab import errors
from flowlab.graph.device_spec import DeviceSpec
from flowlab.graph.tensor import Operation
from flowlab.kernels.registry import find_kernel
from flowlab.runtime.task.device import Device


def _find(parent: dict[str, str], x: str) -> str:
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def colocation_groups(ops: list[Operation]) -> tuple[dict[str, list[Operation]], set[str]]:
    """Union-find groups (root -> members in op order) and the names of ops that
    joined through a reference or resource input (their requests yield)."""
    parent = {op.name: op.name for op in ops}
    lenient: set[str] = set()

    def union(a: str, b: str) -> None:
        ra, rb = _find(parent, a), _find(parent, b)
        if ra != rb:
            parent[rb] = ra

    for op in ops:
        for loc in op._colocation:
            if loc in parent:
                union(loc, op.name)
        od = op.op_def
        if od is None:
            continue
        i = 0
        for arg in od.inputs:
            n = _arg_len(arg, op)
            if arg.is_ref or (arg.fixed_type is not None and arg.fixed_type.name == "resource"):
                for t in op._inputs[i : i + n]:
                    if t.op.name in parent:
                        union(t.op.name, op.name)
                        lenient.add(op.name)
            i += n
    groups: dict[str, list[Operation]] = {}
    for op in ops:
        groups.setdefault(_find(parent, op.name), []).append(op)
    return groups, lenient


def merge_requests(
    members: list[Operation], lenient: set[str], soft: bool, notes: dict[str, str],
    kept: dict[str, str] | None = None,
) -> tuple[DeviceSpec, Operation | None]:
    """The merged request of a group and the op whose request came first.  Ops that
    joined through a reference edge are merged last and yield on conflict.  `kept`
    (op name -> device) are the devices an earlier placement gave stateful ops: they
    merge first and never yield, as TensorFlow restores its stateful placements as
    assigned devices (the state lives there): a new explicit request that disagrees
    is TensorFlow's colocation error, or is ignored under soft placement."""
    spec = DeviceSpec()
    owner: Operation | None = None
    kept = kept or {}
    entries = [(op, kept[op.name], True) for op in members if op.name in kept]
    entries += [(op, op.device, False) for op in members if op.name not in lenient]
    entries += [(op, op.device, False) for op in members if op.name in lenient]
    pinned = bool(entries) and entries[0][2]
    for op, device, is_kept in entries:
        if not device:
            continue
        try:
            req = DeviceSpec.from_string(device)
        except ValueError as e:
            # TensorFlow accepts any string at build time and its placer rejects it.
            raise errors.InvalidArgumentError(
                None, op, f"Malformed device specification '{device}' in node '{op.name}' ({op.type}): {e}",
            ) from None
        if not spec.is_compatible_with(req):
            assert owner is not None
            if is_kept:  # two stateful ops of one group kept apart: the first one's wins
                notes[op.name] = f"moved from {req}: '{owner.name}' lives on {spec}"
                continue
            if pinned and op.name not in lenient:
                if soft:
                    notes[op.name] = f"soft placement ignored its request {req}: '{owner.name}' lives on {spec}"
                    continue
                raise errors.InvalidArgumentError(
                    None, op,
                    f"Cannot colocate nodes '{op.name}' and '{owner.name}': {_merge_conflict(spec, req)}. "
                    f"'{owner.name}' holds state placed on {spec} by an earlier run and '{op.name}', added "
                    f"since, requests {req}; drop the request or use allow_soft_placement=True.",
                )
            if op.name in lenient:
                notes[op.name] = (
                    f"ignoring its request {req}: a reference input ties it to '{owner.name}', "
                    f"which requests {spec}"
                )
                continue
            relaxed = _soft_merge(spec, req) if soft else None
            if relaxed is not None:
                notes[op.name] = f"soft placement: its request {req} and {spec} merge to {relaxed or 'any device'}"
                spec = relaxed
                continue
            raise errors.InvalidArgumentError(
                None, op,
                f"Cannot colocate nodes '{op.name}' and '{owner.name}': {_merge_conflict(req, spec)}. "
                f"'{op.name}' requests {req} and '{owner.name}' requests {spec}; make the "
                "requests agree or use allow_soft_placement=True.",
            )
        spec = spec.make_merged_spec(req)
        owner = owner or op
    return spec, owner


def _soft_merge(spec: DeviceSpec, req: DeviceSpec) -> DeviceSpec | None:
    """TensorFlow's merge of two requests under soft placement: differing device
    types drop the type and index, differing indices drop the index; a differing
    job, replica or task cannot merge (None)."""
    for f in ("job", "replica", "task"):
        a, b = getattr(spec, f), getattr(req, f)
        if a is not None and b is not None and a != b:
            return None
    merged = spec.make_merged_spec(req)
    if spec.device_type is not None and req.device_type is not None and spec.device_type != req.device_type:
        return merged.replace(device_type=None, device_index=None)
    if spec.device_index is not None and req.device_index is not None and spec.device_index != req.device_index:
        return merged.replace(device_index=None)
    return merged


def _merge_conflict(a: DeviceSpec, b: DeviceSpec) -> str:
    for field_name, what in (("job", "jobs"), ("replica", "replicas"), ("task", "tasks"),
                             ("device_type", "types"), ("device_index", "ids")):
        x, y = getattr(a, field_name), getattr(b, field_name)
        if x is not None and y is not None and x != y:
            return f"Cannot merge devices with incompatible {what}: '{a}' and '{b}'"
    return f"Cannot merge devices '{a}' and '{b}'"


def feasible_devices(
    members: list[Operation],
    spec: DeviceSpec,
    owner: Operation | None,
    devices: list[Device],
    soft: bool,
) -> tuple[list[Device], str]:
    feasible = [d for d in devices if all(find_kernel(op.type, d.device_type) for op in members)]
    if not feasible:
        op = next((o for o in members if not any(find_kernel(o.type, d.device_type) for d in devices)), members[0])
        raise errors.InvalidArgumentError(
            None, op,
            f"No kernel registered for op '{op.name}' (type {op.type}) on any device of "
            f"this session ({', '.join(d.device_type for d in devices)}).",
        )
    matching = [d for d in feasible if spec.is_compatible_with(d.spec)]
    if matching:
        if owner is not None:
            return matching, f"requested {spec}"
        if len(matching) == 1:
            return matching, "only feasible device"
        return matching, "default: first feasible device"
    # Soft placement relaxes the device type and index only (TensorFlow's soft device
    # name): a job, replica or task no device has still fails.
    relaxed = [d for d in feasible if spec.replace(device_type=None, device_index=None).is_compatible_with(d.spec)]
    if soft and relaxed:
        named = [d for d in devices if spec.is_compatible_with(d.spec)]
        if named:
            lacking = next(o for o in members if not find_kernel(o.type, named[0].device_type))
            return relaxed, f"soft placement: {spec} has no kernel for {lacking.type}"
        return relaxed, f"soft placement: no device matches {spec}"
    op = owner or members[0]
    named = [d for d in devices if spec.is_compatible_with(d.spec)]
    if named:
        lacking = next(o for o in members if not find_kernel(o.type, named[0].device_type))
        raise errors.InvalidArgumentError(
            None, op,
            f"Cannot assign a device for operation '{op.name}': Could not satisfy explicit "
            f"device specification '{op.device}' because no supported kernel for "
            f"{named[0].device_type} devices is available (op '{lacking.name}' of type "
            f"{lacking.type}). Use allow_soft_placement=True to relax it.",
        )
    # TensorFlow's words (its placer's error for a device that does not exist).
    avail = ", ".join(d.name for d in devices)
    # TensorFlow built without CUDA adds this; flowlab without CuPy is that build.
    gpu = "" if spec.device_type != "GPU" or any(d.device_type == "GPU" for d in devices) else (
        " The requested device appears to be a GPU, but CUDA is not enabled.")
    raise errors.InvalidArgumentError(
        None, op,
        f"Cannot assign a device for operation {op.name}: {{{{node {op.name}}}}} was explicitly "
        f"assigned to {op.device} but available devices are [ {avail} ]. Make sure the device "
        f"specification refers to a valid device.{gpu}" + _where(op) + _missing_device_advice(spec, devices),
    )


def _where(op: Operation) -> str:
    where = op.defined_at()
    return f" (defined at {where})" if where else ""


def _missing_device_advice(spec: DeviceSpec, devices: list[Device]) -> str:
    """What a learner does about a device spec that names nothing there: a task the
    cluster lacks needs starting (soft placement never moves an op to another task);
    a device index or type the task lacks can be relaxed."""
    tasks = sorted({(d.spec.job, d.spec.task) for d in devices}, key=str)
    if (spec.job is not None and spec.job not in {j for j, _ in tasks}) or (
        spec.task is not None and not any(
            t == spec.task and (spec.job is None or j == spec.job) for j, t in tasks)):
        names = ", ".join(f"{j}/{t}" for j, t in tasks)
        want = f"{spec.job or 'worker'}/{spec.task if spec.task is not None else 0}"
        return (f" No task {want} is in this session's cluster (its tasks: {names}): start it "
                f"(`dask worker SCHEDULER --name {want}`, or a LocalCluster with enough tasks) or "
                "change the tf.device(...) around the op.")
    return (" Change the tf.device(...) around the op to one of the available devices, or let "
            "the session pick one: tf.Session(config=tf.ConfigProto(allow_soft_placement=True)).")


def _arg_len(arg: object, op: Operation) -> int:
    number_attr = getattr(arg, "number_attr", None)
    type_list_attr = getattr(arg, "type_list_attr", None)
    if number_attr is not None:
        return int(op._attrs[number_attr])
    if type_list_attr is not None:
        return len(op._attrs[type_list_attr])
    return 1
