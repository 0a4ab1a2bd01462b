"""Graph optimization: the pass between prune and place (paper section 3.2; the white
paper's section 5.1, "Common Subexpression Elimination", and constant folding).

`optimize(ops, feeds, fetches, targets, options)` takes the pruned ops of one step
signature and returns an `Optimization`: a rewritten *view* of the step.  The user's
Graph is never touched (no op, name, input or version changes); the session compiles
the plan from the view.  Four rewrites: three in one walk in topological order,
then a walk back for the fourth:

* constant folding: an op whose data inputs are all constants (a `Const` without
  control inputs, or an op folded before it) and that is stateless, deterministic,
  not control flow, not a placeholder, not I/O, without control inputs, references
  or fed outputs, is run once now with its CPU kernel (the same code a step would
  run, so values and dtypes are those of the unoptimized step).  `Shape`, `Size`,
  `Rank` and `ShapeN` of fully defined static shapes fold through the builders'
  evaluators (flowlab.ops.const_fold).  The op stays in the step under its own name
  but produces the stored values; the ops feeding only it disappear.  A result
  larger than `max_folded_constant_in_bytes` (10 MiB by default) is not folded, and
  a kernel that fails is left to fail at run time with the usual error.  Kernels
  registered as `expensive` (MatMul, Conv2D, ...) are not run at plan time, so that
  compiling a plan stays cheap (TensorFlow would fold them; values are the same).
  Shapes of variables are not folded: reading an uninitialized one must fail.
* common subexpression elimination: ops with the same type, the same (rewritten)
  inputs, equal attrs, the same device request, colocation and control inputs, that
  are stateless and not control flow, are merged into the first one.
* identity removal: an `Identity` with no control inputs, no control consumers, not
  fetched, not fed, with the same device request as its input's producer, not
  reading a variable (a read of a `Ref` under control dependencies sees the value as
  of when its consumer runs, see flowlab.runtime.task.plan) and not next to control-flow
  ops, is bypassed: its consumers read its input.  After the NoOp conversion (below)
  so is one whose control inputs order nothing its input does not: the `tuple` of a
  GATE_OP gradient whose other gradient became a NoOp (Grappler gets there through
  its NoOp bypass and transitive reduction; flowlab.runtime.master.noop_dependencies).

* conversion to NoOp (Grappler's dependency optimizer): a stateless op whose outputs
  nobody in the step reads -- it is only a control input of other ops, like the input
  gradient of a first layer that `minimize()`'s GATE_OP groups with the weight
  gradient -- does not run its kernel: it becomes a NoOp whose former data inputs
  act as control inputs (they still run first, so every ordering the graph asked for
  holds).  Then ops read only by such NoOps convert too.  Never converted, as in
  TensorFlow: fetched, fed and target ops, stateful ops, ops taking references,
  placeholders, queue, Send and control-flow ops, Assert and CheckNumerics, an
  Identity of a variable, and (flowlab being cautious) ops with an input from a
  control-flow op and kernels that take the step.  The converted op's run-time
  errors are the one thing a step no longer shows (as in TensorFlow).  In the plan
  the op keeps its data inputs (the dependencies) but runs `noop_kernel`, which
  reads nothing.  A data input whose producer already reaches another of the NoOp's
  dependencies is dropped from them (Grappler's transitive reduction; across devices
  it would be a control Send/Recv pair TensorFlow does not have; see
  flowlab.runtime.master.noop_dependencies).  Partitions hold the op as a `NoOp` node.

Fetched and fed tensors, targets and stateful ops always survive; ops whose last
consumer went away are dropped.  Results never change.

What a picture can show (`Optimization`, also `plan.optimization` of a cached plan,
and `optimization(session, fetches, feed_dict)`):
    `ops`                 the ops the step runs, inputs first
    `folded`              names of ops now producing stored constants
    `merged`              {removed op: the op it was merged into} (CSE)
    `removed_identities`  names of bypassed Identity ops
    `noops`               names of ops converted to NoOp (their outputs are unused)
    `dropped`             names of ops no longer needed (folded inputs and the above)
    `graph_def()`         the rewritten step as a GraphDef dict (flowlab.graph.graph_def
                          schema); folded ops become `Const` nodes (an op with several
                          outputs becomes one `Const` per output, `name/folded_i`);
                          converted ops become `NoOp` nodes with control inputs

Steps of fewer than `rewrite_options.min_graph_nodes` ops (0: 4, as Grappler) are
left alone.  Switches (`ConfigProto.graph_options`, TensorFlow's names): `optimizer_options.
opt_level=L0` turns all four off; with L0, `do_constant_folding` and
`do_common_subexpression_elimination` turn one back on; `rewrite_options.
constant_folding / common_subgraph_elimination / dependency_optimization = OFF` or
`disable_meta_optimizer=True` turn parts off as well (dependency_optimization covers
identity removal and the NoOp conversion, as in Grappler).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from flowlab.graph import graph_def as gd
from flowlab.graph.device_spec import DeviceSpec
from flowlab.graph.tensor import Operation, Tensor
from flowlab.kernels.build_time_folding import CONTROL_FLOW_OPS
from flowlab.kernels.build_time_folding import NEVER_FOLD as _NEVER_FOLD
from flowlab.kernels.registry import KernelDef, find_kernel
from flowlab.ops.const_fold import constant_value
from flowlab.runtime.master.noop_dependencies import controls_implied, reduced_noop_inputs
from flowlab.runtime.task.device import Device

DEFAULT_MAX_FOLDED_BYTES = 10 * 1024 * 1024
# Grappler skips graphs smaller than this (RewriterConfig.min_graph_nodes = 0 picks it).
DEFAULT_MIN_GRAPH_NODES = 4

# Control-flow op types, and the types never folded (shared with the task's shape
# memos, which must skip the same ops): flowlab.kernels.build_time_folding.
_NEVER_MERGE = frozenset({"Placeholder", "PlaceholderWithDefault", "NoOp", "ReadFile", "MatchingFiles"}) | CONTROL_FLOW_OPS
_SHAPE_OPS = frozenset({"Shape", "Size", "Rank", "ShapeN"})
# Grappler's do_not_rewrite_ops and IsFreeOfSideEffect exceptions, plus ops that are
# values of nothing (converting them gains nothing).
_NEVER_NOOP = frozenset({
    "Assert", "CheckNumerics", "Const", "NoOp", "Placeholder", "PlaceholderWithDefault",
    "_Send", "_HostSend", "_Recv", "_HostRecv",
}) | CONTROL_FLOW_OPS

_FOLD_DEVICE: Device | None = None


def _fold_device() -> Device:
    global _FOLD_DEVICE
    if _FOLD_DEVICE is None:
        _FOLD_DEVICE = Device(DeviceSpec(job="localhost", replica=0, task=0, device_type="CPU", device_index=0))
    return _FOLD_DEVICE


@dataclass(frozen=True)
class OptimizerSwitches:
    """Which rewrites run, and the folding size cap (bytes per folded output)."""

    constant_folding: bool = True
    cse: bool = True
    remove_identities: bool = True
    max_folded_bytes: int = DEFAULT_MAX_FOLDED_BYTES
    min_graph_nodes: int = DEFAULT_MIN_GRAPH_NODES
    convert_to_noops: bool = True

    @property
    def any(self) -> bool:
        return self.constant_folding or self.cse or self.remove_identities or self.convert_to_noops

    @classmethod
    def from_graph_options(cls, graph_options: Any) -> OptimizerSwitches:
        """TensorFlow's semantics: L1 (the default) turns everything on, L0 off; the
        do_* fields turn a part on under L0; rewrite_options can turn a part off."""
        if graph_options is None:
            return cls()
        oo = graph_options.optimizer_options
        l1 = oo.opt_level >= 0
        fold = l1 or bool(oo.do_constant_folding)
        cse = l1 or bool(oo.do_common_subexpression_elimination)
        ident = l1
        ro = getattr(graph_options, "rewrite_options", None)
        if ro is not None:
            off = 2  # RewriterConfig.OFF
            if ro.disable_meta_optimizer:
                fold = cse = ident = False
            fold = fold and ro.constant_folding != off
            cse = cse and ro.common_subgraph_elimination != off
            ident = ident and ro.dependency_optimization != off
        cap = int(oo.max_folded_constant_in_bytes) or DEFAULT_MAX_FOLDED_BYTES
        min_nodes = DEFAULT_MIN_GRAPH_NODES
        if ro is not None and ro.min_graph_nodes:
            min_nodes = max(0, int(ro.min_graph_nodes))
        return cls(fold, cse, ident, cap, min_nodes, ident)


Key = tuple[int, int]


def _key(t: Tensor) -> Key:
    return (id(t.op), t.value_index)


@dataclass
class Optimization:
    """The rewritten view of one step (see the module docstring)."""

    ops: list[Operation]
    forward: dict[Key, Tensor] = field(default_factory=dict)
    constants: dict[str, list[Any]] = field(default_factory=dict)
    folded: list[str] = field(default_factory=list)
    merged: dict[str, str] = field(default_factory=dict)
    removed_identities: list[str] = field(default_factory=list)
    noops: list[str] = field(default_factory=list)
    # Converted op -> the data inputs it still depends on (flowlab.runtime.master.noop_dependencies).
    noop_inputs: dict[str, list[Tensor]] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)
    switches: OptimizerSwitches = field(default_factory=OptimizerSwitches)

    def canonical(self, t: Tensor) -> Tensor:
        """The tensor the step computes in place of `t`."""
        return self.forward.get(_key(t), t)

    def inputs_of(self, op: Operation) -> list[Tensor]:
        """`op`'s data inputs as the step runs it (none for a folded op)."""
        if op.name in self.constants:
            return []
        if self.noop_inputs and op.name in self.noop_inputs:
            return list(self.noop_inputs[op.name])
        if not self.forward:
            return list(op._inputs)
        fwd = self.forward
        return [fwd.get((id(t.op), t.value_index), t) for t in op._inputs]

    def graph_def(self) -> dict[str, Any]:
        """The optimized step as a GraphDef dict (JSON values)."""
        out_name: dict[Key, str] = {}
        nodes: list[dict[str, Any]] = []
        for op in self.ops:
            values = self.constants.get(op.name)
            if op.name in self.noops:
                deps: list[str] = []
                for src in [out_name.get(_key(t), gd._input_name(t)).split(":")[0] for t in self.inputs_of(op)
                            ] + [c.name for c in op._control_inputs]:
                    if "^" + src not in deps:
                        deps.append("^" + src)
                nodes.append({"name": op.name, "op": "NoOp", "input": deps, "device": op.device, "attr": {}})
                continue
            if values is None:
                node = gd.node_to_dict(op)
                node["input"] = [out_name.get(_key(t), gd._input_name(t)) for t in self.inputs_of(op)] + [
                    "^" + c.name for c in op._control_inputs
                ]
                nodes.append(node)
                continue
            for i, (t, v) in enumerate(zip(op._outputs, values)):
                name = op.name if i == 0 else f"{op.name}/folded_{i}"
                out_name[_key(t)] = name
                nodes.append({
                    "name": name, "op": "Const", "input": [], "device": op.device,
                    "attr": {
                        "dtype": gd.attr_to_json(t.dtype.base_dtype, "type"),
                        "value": gd.attr_to_json(np.asarray(v), "tensor"),
                    },
                })
        return {"format": gd.FORMAT, "version": gd.VERSION, "node": nodes, "library": {}}

    @property
    def rewrote(self) -> bool:
        """Whether the step differs from the pruned graph at all."""
        return bool(self.forward or self.constants or self.dropped or self.noops)

    def summary(self) -> str:
        return (
            f"{len(self.ops)} ops run; folded {len(self.folded)}, merged {len(self.merged)}, "
            f"removed {len(self.removed_identities)} identities, converted {len(self.noops)} to NoOp, "
            f"dropped {len(self.dropped)}"
        )

    def noop_kernel(self, op: Operation, device_type: str) -> KernelDef:
        """The kernel the plan runs for an op of `noops` (see `noop_kernel`)."""
        return noop_kernel(op, device_type)


def noop_kernel(op: Operation, device_type: str) -> KernelDef:
    """The kernel a plan runs for an op in `Optimization.noops`: it takes the op's
    inputs (their producers stay its dependencies) and computes nothing; nobody reads
    its outputs."""
    od = op.op_def
    n = len(op._outputs)
    if od is not None and len(od.outputs) == 1 and not od.outputs[0].is_list:
        def fn(ctx: Any, *inputs: Any) -> Any:
            return None
    else:
        nothing = [None] * n

        def fn(ctx: Any, *inputs: Any) -> Any:
            return nothing

    return KernelDef(op.type, device_type, fn, defined_at="converted to NoOp (dependency optimization)")


def optimize(
    ops: list[Operation],
    feeds: Iterable[Tensor] = (),
    fetches: Iterable[Tensor] = (),
    targets: Iterable[Operation] = (),
    switches: OptimizerSwitches | None = None,
) -> Optimization:
    """Rewrite the pruned `ops` of one step (see the module docstring).

    Args:
      ops: the pruned ops, inputs first (`flowlab.runtime.master.prune.prune`).
      feeds, fetches, targets: the step's signature.
      switches: which rewrites run (default: all, as TensorFlow's L1).

    Returns:
      An `Optimization`; `ops` and every Operation are left as they were.
    """
    sw = switches or OptimizerSwitches()
    if not sw.any or len(ops) < max(1, sw.min_graph_nodes):
        return Optimization(list(ops), switches=sw)
    return _Pass(ops, list(feeds), list(fetches), list(targets), sw).run()


def optimization(session: Any, fetches: Any, feed_dict: Any = None) -> Optimization:
    """What the pass did to the step that runs `fetches` with `feed_dict`'s keys fed
    (values are not needed): the `Optimization` of the session's cached plan."""
    return session._plan_of(fetches, feed_dict).optimization


class _Pass:
    def __init__(
        self, ops: list[Operation], feeds: list[Tensor], fetches: list[Tensor],
        targets: list[Operation], sw: OptimizerSwitches,
    ) -> None:
        self.ops = ops
        self.sw = sw
        self.fed = {_key(t) for t in feeds}
        self.fetched = {_key(t) for t in fetches}
        self.fetches = fetches
        self.targets = targets
        members = {id(op) for op in ops}
        self.control_consumed = {id(c) for op in ops for c in op._control_inputs if id(c) in members}
        self.target_ids = {id(op) for op in targets}
        self.has_control_flow = any(_is_control_flow(op) for op in ops)
        self.result = Optimization([], switches=sw)

    # --- facts -----------------------------------------------------------------
    def protected(self, op: Operation) -> bool:
        """Fetched, fed, a target or a control input of another op: never removed."""
        return (
            id(op) in self.target_ids or id(op) in self.control_consumed
            or any((id(op), i) in self.fetched or (id(op), i) in self.fed for i in range(len(op._outputs)))
        )

    def is_constant(self, t: Tensor) -> bool:
        if _key(t) in self.fed:
            return False
        op = t.op
        if op.name in self.result.constants:
            return True
        return op.type == "Const" and not op._control_inputs

    def value_of(self, t: Tensor) -> Any:
        vals = self.result.constants.get(t.op.name)
        if vals is not None:
            return vals[t.value_index]
        v = t.op.get_attr("value")
        return v[()] if type(v) is np.ndarray and v.ndim == 0 else v

    # --- the walk ----------------------------------------------------------------
    def run(self) -> Optimization:
        res = self.result
        cse_table: dict[Any, Operation] = {}
        for op in self.ops:
            inputs = res.inputs_of(op)
            if self.sw.constant_folding and self.try_fold(op, inputs):
                continue
            if self.sw.remove_identities and self.removable_identity(op, inputs):
                res.forward[(id(op), 0)] = inputs[0]
                res.removed_identities.append(op.name)
                continue
            if self.sw.cse and self.mergeable(op):
                key = self.cse_key(op, inputs)
                if key is not None:
                    rep = cse_table.get(key)
                    if rep is None:
                        cse_table[key] = op
                    elif not self.protected(op):
                        for t, r in zip(op._outputs, rep._outputs):
                            res.forward[_key(t)] = r
                        res.merged[op.name] = rep.name
        self.drop_dead()
        if self.sw.convert_to_noops:
            self.convert_to_noops()
            if self.sw.remove_identities and self.bypass_gated_identities():
                res.noops, res.noop_inputs = [], {}
                self.drop_dead()  # the group and the NoOps it waited for may go too
                self.convert_to_noops()
        return res

    def try_fold(self, op: Operation, inputs: list[Tensor]) -> bool:
        od = op.op_def
        if (
            od is None or od.is_stateful or od.is_control_flow or op.type in _NEVER_FOLD
            or op._control_inputs or not op._outputs
            or any((id(op), i) in self.fed for i in range(len(op._outputs)))
            or any(t.dtype.is_ref_dtype or t.dtype.base_dtype.name in ("resource", "variant") for t in op._outputs)
        ):
            return False
        values: list[Any] | None = None
        if op.type in _SHAPE_OPS:
            values = self.static_shape_values(op)
        if values is None:
            if not all(self.is_constant(t) for t in inputs):
                return False
            values = self.evaluate(op, [self.value_of(t) for t in inputs])
        if values is None:
            return False
        self.result.constants[op.name] = values
        self.result.folded.append(op.name)
        return True

    def static_shape_values(self, op: Operation) -> list[Any] | None:
        # Not of a variable: reading it is what fails when it is uninitialized
        # (tf.assert_variables_initialized is built on that).
        for t in op._inputs:
            if _reads_variable(t) or (t.op.op_def is not None and t.op.op_def.is_stateful):
                return None
        values = []
        for t in op._outputs:
            v = constant_value(t)
            if v is None:
                return None
            v = np.asarray(v)
            if v.dtype != np.dtype(t.dtype.base_dtype.as_numpy_dtype):
                return None
            values.append(_frozen(v[()] if v.ndim == 0 else v))
        return values

    def evaluate(self, op: Operation, args: list[Any]) -> list[Any] | None:
        from flowlab.runtime.task.plan import NodeContext  # plan imports this module

        kdef = find_kernel(op.type, "CPU")
        if kdef is None or kdef.needs_step or kdef.asynchronous or kdef.expensive:
            return None
        ctx = NodeContext(op, _fold_device(), 0)
        try:
            with np.errstate(all="ignore"):
                out = kdef.fn(ctx, *args)
        except Exception:  # noqa: BLE001 - it fails at run time, with the step's error
            return None
        od = op.op_def
        single = len(od.outputs) == 1 and not od.outputs[0].is_list
        values = [out] if single else list(out)
        if len(values) != len(op._outputs):
            return None
        for v in values:
            if _nbytes(v) > self.sw.max_folded_bytes:
                return None
        return [_frozen(v) for v in values]

    def removable_identity(self, op: Operation, inputs: list[Tensor]) -> bool:
        if op.type != "Identity" or op._control_inputs or op._colocation or self.protected(op):
            return False
        return self.passes_value_on(op, inputs[0])

    def passes_value_on(self, op: Operation, src: Tensor) -> bool:
        """What every Identity bypass asks of the Identity `op` of `src`: not a read of a
        variable, the same device request, and no control flow on either side."""
        if _reads_variable(src) or src.op.device != op.device:
            return False
        return not (self.has_control_flow and (_is_control_flow(src.op) or self.feeds_control_flow(op)))

    def bypass_gated_identities(self) -> bool:
        """After the NoOp conversion: bypass each Identity whose control inputs order
        nothing its input does not (flowlab.runtime.master.noop_dependencies'
        `controls_implied`: a GATE_OP gradient's `tuple` whose other gradient became a
        NoOp), under `passes_value_on` as every bypass; a colocation with
        its input's op is allowed (`tuple` makes one).  Whether any was."""
        res = self.result
        position = {id(op): i for i, op in enumerate(res.ops)}
        noops = set(res.noops)
        bypassed = False
        for op in res.ops:
            if op.type != "Identity" or not op._control_inputs or op.name in noops or self.protected(op):
                continue
            src = res.inputs_of(op)[0]
            if id(src.op) not in position or not self.passes_value_on(op, src):
                continue
            if op._colocation and set(op._colocation) != set(src.op._colocation or (src.op.name,)):
                continue
            if not controls_implied(op, src.op, position, noops, res.inputs_of, self.fed, _is_control_flow):
                continue
            out = (id(op), 0)
            for k, v in list(res.forward.items()):  # CSE may have merged others into it
                if _key(v) == out:
                    res.forward[k] = src
            res.forward[out] = src
            res.removed_identities.append(op.name)
            bypassed = True
        return bypassed

    def feeds_control_flow(self, op: Operation) -> bool:
        return any(_is_control_flow(c) for t in op._outputs for c in t.consumers())

    def mergeable(self, op: Operation) -> bool:
        od = op.op_def
        kdef = find_kernel(op.type, "CPU")
        if kdef is not None and (kdef.needs_step or kdef.asynchronous):
            return False  # it touches the step (waits, state): each op runs
        return not (
            od is None or od.is_stateful or od.is_control_flow or op.type in _NEVER_MERGE
            or any((id(op), i) in self.fed for i in range(len(op._outputs)))
            or any(t.dtype.is_ref_dtype for t in op._inputs)
            or any(t.dtype.is_ref_dtype or t.dtype.base_dtype.name == "resource" for t in op._outputs)
        )

    def cse_key(self, op: Operation, inputs: list[Tensor]) -> Any:
        try:
            attrs = tuple(sorted((k, _attr_key(v, self.sw.max_folded_bytes)) for k, v in op._attrs.items()))
        except _TooBig:
            return None
        return (
            op.type,
            tuple(_key(t) for t in inputs),
            attrs,
            op.device,
            tuple(op._colocation),
            tuple(sorted(id(c) for c in op._control_inputs)),
        )

    def convert_to_noops(self) -> None:
        """Grappler's SafeToConvertToNoOp over the live ops, consumers first, so that an
        op read only by converted ops converts too."""
        res = self.result
        fetched = {_key(res.canonical(t)) for t in self.fetches}
        readers: dict[int, int] = {}  # id(op) -> how many live non-converted ops read it
        for op in res.ops:
            for t in res.inputs_of(op):
                readers[id(t.op)] = readers.get(id(t.op), 0) + 1
        converted: list[str] = []
        for op in reversed(res.ops):
            if readers.get(id(op)) or not self.convertible(op, fetched):
                continue
            converted.append(op.name)
            for t in res.inputs_of(op):  # its data inputs now act as control inputs
                readers[id(t.op)] -= 1
        converted.reverse()
        res.noops = converted
        res.noop_inputs = reduced_noop_inputs(res.ops, converted, res.inputs_of, self.fed, _is_control_flow)

    def convertible(self, op: Operation, fetched: set[Key]) -> bool:
        od = op.op_def
        if (
            od is None or not op._outputs or od.is_stateful or od.is_control_flow
            or op.type in _NEVER_NOOP or "Queue" in op.type or op.name in self.result.constants
            or id(op) in self.target_ids
            or any(arg.is_ref for arg in od.inputs)
            or any((id(op), i) in fetched or (id(op), i) in self.fed for i in range(len(op._outputs)))
        ):
            return False
        kdef = find_kernel(op.type, "CPU")
        if kdef is not None and (kdef.needs_step or kdef.asynchronous):
            return False
        inputs = self.result.inputs_of(op)
        if op.type in ("Identity", "IdentityN") and any(_reads_variable(t) for t in inputs):
            return False  # Grappler's SafeToRemoveIdentity: the read of a variable stays
        return not any(_is_control_flow(t.op) for t in inputs)

    def drop_dead(self) -> None:
        """Keep what the fetches, targets and stateful ops need, through the rewritten
        inputs; everything else of the pruned list is dropped."""
        res = self.result
        live: set[int] = set()
        stack: list[Operation] = [res.canonical(t).op for t in self.fetches if _key(t) not in self.fed]
        stack += self.targets
        stack += [op for op in self.ops if op.op_def is not None and op.op_def.is_stateful]
        members = {id(op) for op in self.ops}
        while stack:
            op = stack.pop()
            if id(op) in live or id(op) not in members:
                continue
            live.add(id(op))
            for t in res.inputs_of(op):
                if _key(t) not in self.fed:
                    stack.append(t.op)
            stack.extend(op._control_inputs)
        res.ops = [op for op in self.ops if id(op) in live]
        res.dropped = [op.name for op in self.ops if id(op) not in live]
        # Report only folds that matter: a folded op that is itself dropped (folded
        # into a later constant) is just dropped.
        res.folded = [n for n in res.folded if n not in set(res.dropped)]
        for n in res.dropped:
            res.constants.pop(n, None)


class _TooBig(Exception):
    pass


def _attr_key(v: Any, cap: int) -> Any:
    """A hashable stand-in for an attr value; equal keys mean equal values (NaN and
    -0.0 included)."""
    if isinstance(v, (np.ndarray, np.generic)):
        a = np.asarray(v)
        if a.dtype == object:
            return ("a", a.shape, tuple(a.ravel().tolist()))
        if a.nbytes > cap:
            raise _TooBig
        return ("a", a.dtype.str, a.shape, a.tobytes())
    if isinstance(v, float):
        return ("f", repr(v))
    if isinstance(v, (list, tuple)):
        return ("l", tuple(_attr_key(x, cap) for x in v))
    if isinstance(v, dict):
        return ("d", tuple(sorted((k, _attr_key(x, cap)) for k, x in v.items())))
    try:
        hash(v)
    except TypeError:
        return ("r", type(v).__name__, repr(v))
    return (type(v).__name__, v)


def _nbytes(v: Any) -> int:
    a = np.asarray(v)
    return a.size * 8 if a.dtype == object else a.nbytes


def _frozen(v: Any) -> Any:
    """A folded value as a step sees a constant: read-only arrays (a fetch copies
    them), 0-d values as NumPy scalars."""
    if type(v) is np.ndarray:
        if v.ndim == 0:
            return v[()]
        if v.flags.writeable:
            v = v.view()
            v.flags.writeable = False
    return v


def _is_control_flow(op: Operation) -> bool:
    return op.type in CONTROL_FLOW_OPS or (op.op_def is not None and op.op_def.is_control_flow)


def _reads_variable(t: Tensor) -> bool:
    """A reference, or an Identity chain over one (the plan aliases those to the
    variable so that each consumer sees the value as of when it runs)."""
    while True:
        if t.dtype.is_ref_dtype or t.dtype.base_dtype.name == "resource":
            return True
        if t.op.type != "Identity" or not t.op._inputs:
            return False
        t = t.op._inputs[0]
