"""Placement: a device for every op, decided for the whole graph once (white paper
section 3.2.1; TensorFlow's `place_pruned_graph=False`).

A session keeps one `GraphPlacement` per graph version: it places every op of
`graph.get_operations()`, and each step's `place(ops, ..., whole=...)` reads its ops'
devices from it.  So a stateful op and its colocation group sit on the same device
in every step whatever the step fetches (a variable with no request whose users pin
it elsewhere goes where they ask, in its initializer's step too), and the greedy
strategy never moves state between steps.  When the graph grows, the new version is
placed again, but ops holding state (`is_stateful`) keep the device an earlier
version gave them, as TensorFlow's `GraphExecutionState` restores its stateful
placements: that device is merged into their group first, so an op added later that
asks for another device in the group is TensorFlow's colocation error (ignored under
`allow_soft_placement`), never a move of the state.  A group no device can take
fails every step of a session that places the whole graph, as in TensorFlow (a
step running one of its ops names it first).  `optimize_and_place` is the
session's stage that optimizes a pruned step (`flowlab.runtime.master.optimize`) and places
what remains.

The steps of placing a list of ops, in order (1-3 are `placement_groups.py`, the
strategies of 4 `placement_strategies.py`):

1. Colocation groups by union-find: explicit `colocate_with`, and every op that takes
   a reference (`Ref(T)`) or resource input joins the group of the op producing it.
2. Within a group the users' partial device requests are merged.  Two requests that
   cannot merge are an error naming both ops and both requests, in TensorFlow's words
   ("Cannot colocate nodes 'b' and 'a': Cannot merge devices with incompatible ids:
   '/device:CPU:1' and '/device:CPU:0'"), except across a reference edge: as in
   TensorFlow, a consumer's request that disagrees with its variable's is ignored
   (the variable wins), and `allow_soft_placement` drops any later conflicting request.
3. The candidates are the devices that match the merged request and have a kernel for
   every op of the group (`allow_soft_placement` falls back to every device with the
   kernels when none matches).
4. A group with one candidate goes there.  Otherwise the session's strategy chooses:
   * "first" (the default, TensorFlow's behaviour): the first candidate in the
     session's device order, so an unpinned program on several CPUs runs on /cpu:0
     and `log_device_placement` prints what TensorFlow prints; with TensorFlow's two
     placer heuristics for ops free to move: a generator (no inputs, one output)
     goes with its consumers (in the whole graph) when they share a device, and a
     Shape/Size/Rank goes with its input;
   * "greedy" (opt-in, `ConfigProto(placement_strategy="greedy")`): the white paper's
     simulation.  Ops are visited in topological order; each device has a busy-until
     time; an op's start on a candidate is when its inputs have arrived there (their
     producers' estimated finish plus a transfer estimate when they sit elsewhere) and
     the device is free; it goes where it would finish soonest (ties: device order),
     and its whole group follows.  Ops with no inputs (constants, placeholders,
     variables' initial values) are placed with their first consumer, as TensorFlow's
     placer does for generator nodes, so that a chain is not split by where its
     constants happened to fall.  Estimates come from `flowlab.runtime.master.cost_model`.
     The whole graph is simulated once per version and fixes the groups holding
     state; every step then simulates its own ops for the stateless groups.

The result records why each op went where it did (`Placement.reasons`: "requested
/device:CPU:1", "colocated with v; requested ...", "only feasible device", "fastest:
est. 1.20 ms vs 3.40 ms on /cpu:0", "soft placement: no device matches ...") and,
under the greedy strategy, each candidate's estimated finish time
(`Placement.estimates`).  Operations are never modified.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flowlab import errors
from flowlab.graph.device_spec import DeviceSpec
from flowlab.graph.graph import Graph
from flowlab.graph.tensor import Operation, Tensor
from flowlab.runtime.master.cost_model import CostModel
from flowlab.runtime.master.optimize import Optimization, OptimizerSwitches, optimize
from flowlab.runtime.master.placement_groups import (
    colocation_groups,
    feasible_devices,
    merge_requests,
)
from flowlab.runtime.master.placement_strategies import first_choice, greedy_choice
from flowlab.runtime.master.placement_strategies import short_name as short_name  # re-exported
from flowlab.runtime.task.device import Device
from flowlab.runtime.task.plan import own_inputs

STRATEGIES = ("first", "greedy")
_ANYWHERE = DeviceSpec()


@dataclass
class Placement:
    """op name -> device, with the reason for each choice.

    `estimates[op][device name]` is the estimated finish time (seconds from the step's
    start) of an op on each candidate the greedy strategy weighed; `predicted_step_time`
    is the simulated step time of the greedy placement (None under "first")."""

    device_of: dict[str, Device]
    reasons: dict[str, str]
    estimates: dict[str, dict[str, float]] = field(default_factory=dict)
    strategy: str = "first"
    predicted_step_time: float | None = None
    # The graph whose ops these are (pictures draw them from it); None when the ops
    # placed came from nowhere a picture can reach.
    graph: Graph | None = None

    # Notebook display: its picture (drawn by flowlab.viz, see graph/display.py).
    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
        from flowlab.graph.display import mimebundle

        return mimebundle(self, include, exclude)


def _holds_state(op: Operation) -> bool:
    od = op.op_def
    return od is not None and od.is_stateful


class GraphPlacement:
    """The placement of every op of a list (a whole graph, for a session) on one
    session's devices: colocation groups, merged requests, candidates, and a device
    and reason per op.  `update(graph)` re-places a graph whose version changed,
    keeping the devices of stateful groups (see the module docstring).

    `group_of[op name]` is its group's root; `groups[root]` its members in op order;
    `candidates[root]` the devices it may use; `failed[root]` the error of a group no
    device can take (raised by `check` when a step runs one of its ops)."""

    def __init__(
        self, devices: list[Device], allow_soft_placement: bool = False, strategy: str = "first",
        cost_model: CostModel | None = None,
    ) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"placement_strategy must be one of {STRATEGIES}, got {strategy!r}")
        self.devices = list(devices)
        self.soft = allow_soft_placement
        self.strategy = strategy
        self.cost_model = cost_model
        self.graph: Graph | None = None
        self.version: int | None = None
        self.builds = 0  # how many times ops were placed (tests count re-placements)
        self.group_of: dict[str, str] = {}
        self.groups: dict[str, list[Operation]] = {}
        self.candidates: dict[str, list[Device]] = {}
        self.failed: dict[str, errors.OpError] = {}
        self.stateful: set[str] = set()
        self.device_of: dict[str, Device] = {}
        self.reasons: dict[str, str] = {}
        self.predicted_step_time: float | None = None
        self.estimates: dict[str, dict[str, float]] = {}

    def update(self, graph: Graph) -> GraphPlacement:
        """Place `graph` as it is now, unless this version is placed already."""
        if self.graph is graph and self.version == graph.version:
            return self
        version = graph.version
        previous = (self.device_of, self.reasons) if self.graph is graph else None
        self.build(graph.get_operations(), strict=False, previous=previous)
        self.graph, self.version = graph, version
        return self

    def build(
        self, ops: list[Operation], inputs_of: Callable[[Operation], list[Tensor]] = own_inputs,
        strict: bool = True, previous: tuple[dict[str, Device], dict[str, str]] | None = None,
    ) -> GraphPlacement:
        """Place `ops` (topologically ordered).  `strict`: raise a group's error at
        once instead of recording it; `previous`: devices and reasons of an earlier
        placement whose stateful groups keep their device."""
        self.builds += 1
        groups, lenient = colocation_groups(ops)
        group_of = {op.name: root for root, members in groups.items() for op in members}
        candidates: dict[str, list[Device]] = {}
        base_reason: dict[str, str] = {}
        anchor: dict[str, str] = {}
        notes: dict[str, str] = {}
        failed: dict[str, errors.OpError] = {}
        old_dev, old_why = previous if previous is not None else ({}, {})
        kept = {op.name: old_dev[op.name].name for op in ops if op.name in old_dev and _holds_state(op)}
        # Most groups are one op with no request: their candidates depend only on the
        # op types and the merged request, so they are computed once per such key.
        memo: dict[tuple[object, ...], tuple[list[Device], str]] = {}
        for root, members in groups.items():
            try:
                if len(members) == 1 and not members[0].device and members[0].name not in kept:
                    spec, owner = _ANYWHERE, None
                else:
                    spec, owner = merge_requests(members, lenient, self.soft, notes, kept)
                key = (spec, owner is not None, tuple(sorted({op.type for op in members})))
                hit = memo.get(key)
                if hit is None:
                    hit = memo[key] = feasible_devices(members, spec, owner, self.devices, self.soft)
                cands, why = hit
            except errors.OpError as e:
                if strict:
                    raise
                failed[root] = e
                continue
            candidates[root] = cands
            base_reason[root] = why
            anchor[root] = (owner or members[0]).name
        stateful = {root for root, members in groups.items() if any(_holds_state(op) for op in members)}

        chosen: dict[str, Device] = {}
        chosen_by: dict[str, str] = {}

        def assign(root: str, dev: Device, why: str, by: str) -> None:
            chosen[root] = dev
            base_reason[root] = why
            chosen_by[root] = by

        for root in stateful & candidates.keys():
            first_kept = next((op.name for op in groups[root] if op.name in kept), None)
            if first_kept is not None and old_dev[first_kept] in candidates[root]:
                assign(root, old_dev[first_kept], old_why.get(first_kept, base_reason[root]), first_kept)
        live = {root: members for root, members in groups.items() if root not in failed}
        self.predicted_step_time, self.estimates = None, {}
        if self.strategy == "first":
            first_choice(live, group_of, candidates, base_reason, anchor, assign, chosen, inputs_of)
        else:
            placed = [op for op in ops if group_of[op.name] not in failed]
            self.predicted_step_time, self.estimates = greedy_choice(
                placed, live, group_of, candidates, base_reason, anchor, assign, chosen,
                self.cost_model or CostModel(), inputs_of,
            )
        device_of: dict[str, Device] = {}
        reasons: dict[str, str] = {}
        for root, members in live.items():
            dev, why, by = chosen[root], base_reason[root], chosen_by[root]
            for op in members:
                device_of[op.name] = dev
                r = why if (op.name == by or len(members) == 1 or why.startswith("colocated with ")) \
                    else f"colocated with {by}; {why}"
                if op.name in notes and notes[op.name] not in r:
                    r = f"{r} ({notes[op.name]})"
                reasons[op.name] = r
        self.group_of, self.groups, self.candidates = group_of, groups, candidates
        self.failed, self.stateful = failed, stateful
        self.device_of, self.reasons = device_of, reasons
        return self

    def covers(self, ops: list[Operation]) -> bool:
        """Whether every op of `ops` was placed (or failed) here."""
        return all(op.name in self.group_of and self.groups[self.group_of[op.name]][0].graph is op.graph
                   for op in ops)

    def check(self, op: Operation) -> None:
        """Raise the placement error of `op`'s group, if it has one."""
        err = self.failed.get(self.group_of.get(op.name, ""))
        if err is not None:
            raise err


def place(
    ops: list[Operation],
    devices: list[Device],
    allow_soft_placement: bool = False,
    strategy: str = "first",
    cost_model: CostModel | None = None,
    inputs_of: Callable[[Operation], list[Tensor]] = own_inputs,
    whole: GraphPlacement | None = None,
) -> Placement:
    """Place `ops` (topologically ordered) on `devices`.

    Args:
      ops: the pruned (and optimized) ops of one step, inputs first.
      devices: the session's devices, in order ("first" picks the earliest).
      allow_soft_placement: relax requests no device can satisfy instead of failing.
      strategy: "first" or "greedy" (see the module docstring).
      cost_model: the estimates for "greedy" (default `CostModel()`).
      inputs_of: an op's data inputs as the step will run them (after optimization).
      whole: the placement of the whole graph these ops come from (a session's, per
        graph version); without one, or if it does not cover `ops`, the ops are
        placed on their own.

    Returns:
      A `Placement`.

    Raises:
      InvalidArgumentError: conflicting requests within a colocation group, a request
        no device satisfies, or an op with no kernel on any device.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"placement_strategy must be one of {STRATEGIES}, got {strategy!r}")
    if whole is not None and not whole.covers(ops):
        whole = None
    if whole is None:
        whole = GraphPlacement(devices, allow_soft_placement).build(ops, inputs_of)
    # The first failing op, generators (no inputs: constants) last, as TensorFlow's
    # placer reaches them last.
    for op in sorted(ops, key=lambda o: not o._inputs):
        whole.check(op)
    if whole.failed and whole.graph is not None:
        # TensorFlow places the whole graph for every step: a group no device can
        # take fails the steps that do not run it too.
        for op in sorted(whole.graph.get_operations(), key=lambda o: not o._inputs):
            whole.check(op)
    graph = ops[0].graph if ops else None
    if strategy == "first":
        return Placement(
            {op.name: whole.device_of[op.name] for op in ops},
            {op.name: whole.reasons[op.name] for op in ops}, {}, "first", None, graph,
        )
    # Greedy: the step's own simulation for stateless groups; groups holding state
    # keep the whole graph's device (the same in every step).
    groups: dict[str, list[Operation]] = {}
    for op in ops:
        groups.setdefault(whole.group_of[op.name], []).append(op)
    group_of = {op.name: whole.group_of[op.name] for op in ops}
    candidates = {root: whole.candidates[root] for root in groups}
    base_reason: dict[str, str] = {}
    anchor = {root: members[0].name for root, members in groups.items()}
    chosen: dict[str, Device] = {}
    chosen_by: dict[str, str] = {}

    def assign(root: str, dev: Device, why: str, by: str) -> None:
        chosen[root] = dev
        base_reason[root] = why
        chosen_by[root] = by

    for root in groups:
        if root in whole.stateful or len(candidates[root]) == 1:
            first = groups[root][0].name
            assign(root, whole.device_of[first], whole.reasons[first], first)
        else:
            base_reason[root] = "default: first feasible device"
    predicted, estimates = greedy_choice(
        ops, groups, group_of, candidates, base_reason, anchor, assign, chosen,
        cost_model or CostModel(), inputs_of,
    )
    device_of: dict[str, Device] = {}
    reasons: dict[str, str] = {}
    for root, members in groups.items():
        dev, why, by = chosen[root], base_reason[root], chosen_by[root]
        fixed = root in whole.stateful or len(candidates[root]) == 1
        for op in members:
            device_of[op.name] = dev
            if fixed:
                reasons[op.name] = whole.reasons[op.name]
            else:
                reasons[op.name] = why if (op.name == by or len(members) == 1) else f"colocated with {by}; {why}"
    return Placement(device_of, reasons, estimates, "greedy", predicted, graph)


# --- a session's stages 2 and 3: optimize, then place what runs ---------------------
def optimize_and_place(
    ops: list[Operation],
    feeds: list[Tensor],
    fetches: list[Tensor],
    targets: list[Operation],
    devices: list[Device],
    config: Any,
    whole: GraphPlacement | None = None,
) -> tuple[Optimization, Placement]:
    """A session's stages 2 and 3 for the pruned `ops`, under `config` (a ConfigProto:
    graph_options, allow_soft_placement, placement_strategy, cost_model), placed from
    `whole`, the session's placement of the whole graph."""
    sw = OptimizerSwitches.from_graph_options(config.graph_options)
    opt = optimize(ops, feeds, fetches, targets, sw)
    placement = place(
        opt.ops, devices, config.allow_soft_placement, config.placement_strategy,
        config.cost_model, opt.inputs_of, whole,
    )
    if opt.dropped:
        _place_dropped(opt, ops, placement)
    return opt, placement


def _place_dropped(opt: Optimization, ops: list[Operation], placement: Placement) -> None:
    """Give the ops the step no longer runs a device too (that of the op they were
    merged into, or of a consumer), so that the unoptimized op list can still be
    compiled on the same placement (the Stepper steps through every op)."""
    device_of, reasons = placement.device_of, placement.reasons
    if not device_of:
        return
    live_consumer: dict[str, str] = {}
    for op in reversed(ops):
        if op.name in device_of:
            for t in op._inputs:
                live_consumer.setdefault(t.op.name, op.name)
    dropped = set(opt.dropped)
    for op in reversed(ops):  # consumers first
        if op.name not in dropped:
            continue
        peer = opt.merged.get(op.name) or live_consumer.get(op.name)
        if peer is None:
            peer = next((c.name for t in op._outputs for c in t.consumers() if c.name in device_of), None)
        first = next(iter(device_of.values()))
        device_of[op.name] = device_of.get(peer, first) if peer else first
        how = "merged into " + opt.merged[op.name] if op.name in opt.merged else "dropped"
        reasons[op.name] = f"not run ({how} by the optimization pass)"
