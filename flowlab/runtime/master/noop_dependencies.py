"""The dependencies a converted NoOp keeps: its inputs less the ones implied by the others;
and whether an Identity's control inputs are implied by its input.

The dependency optimization (flowlab.runtime.master.optimize) turns an op whose outputs
nobody reads into a NoOp whose former data inputs act as control inputs.  Grappler's
DependencyOptimizer then bypasses or deletes such NoOps and, in its transitive
reduction, drops a control edge `a -> n` when `a` also reaches `n` through a longer
path: the edge orders nothing that the longer path does not.  The observable
difference is in a step across devices: the input gradient of a first layer
(`grad . W^T`) converts to a NoOp on the gradient's device, and its edge from the
weight's read on another device becomes a control Send/Recv pair -- which
TensorFlow does not have, since the read already reaches the gradient through the
forward pass.

`reduced_noop_inputs` keeps, of each converted op's data inputs, those whose
producer is not an ancestor (in the step, through data and control edges) of
another of its dependencies -- another input's producer or one of its control
inputs.  Reachability is what orders a step, so every ordering the NoOp gave still
holds and values do not change.  The walk does not go through control-flow ops
(a Merge fires on one input; Enter/Exit/NextIteration change frames), as Grappler's
transitive reduction ignores edges out of them: an ancestor only reached that way
is kept.  Fed tensors cut their edges (the producer does not run for them).

`controls_implied` is the same reachability for an Identity with control inputs: the
`tuple` of a GATE_OP gradient, `control_dependency_1 = Identity(dW)` after
`^group_deps`, where the group waits for the op's other gradient (`dX`).  When `dX`
converts to a NoOp (nobody reads it), what the group waits for is, through NoOps, dX's
own inputs -- the incoming gradient and the weight's read -- and both already reach
dW.  Then the control inputs order nothing, and the Identity can be bypassed as one
without them: Grappler's dependency optimizer gets there by bypassing the NoOps and
reducing the edges, and sends dW across devices, not the Identity.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from flowlab.graph.tensor import Operation, Tensor

__all__ = ["controls_implied", "reduced_noop_inputs"]


def reduced_noop_inputs(
    ops: list[Operation],
    noops: Iterable[str],
    inputs_of: Callable[[Operation], list[Tensor]],
    fed: set[tuple[int, int]],
    is_control_flow: Callable[[Operation], bool],
) -> dict[str, list[Tensor]]:
    """Converted op name -> the data inputs it keeps as dependencies, for each
    converted op that can drop some (see the module docstring).

    Args:
      ops: the step's live ops.
      noops: names of the ops converted to NoOp.
      inputs_of: an op's data inputs as the step runs it.
      fed: (id(op), output index) of the fed tensors.
      is_control_flow: whether the walk must stop at an op.
    """
    by_name = {op.name: op for op in ops}
    members = {id(op) for op in ops}
    out: dict[str, list[Tensor]] = {}
    for name in noops:
        op = by_name.get(name)
        if op is None:
            continue
        inputs = inputs_of(op)
        deps = {id(t.op): t.op for t in inputs if (id(t.op), t.value_index) not in fed}
        controls = [c for c in op._control_inputs if id(c) in members]
        if len(deps) + len(controls) < 2:
            continue
        implied = _strict_ancestors(list(deps.values()) + controls, members, inputs_of, fed, is_control_flow)
        if not any(i in implied for i in deps):
            continue
        out[name] = [t for t in inputs if id(t.op) not in implied or (id(t.op), t.value_index) in fed]
    return out


def _strict_ancestors(
    starts: list[Operation], members: set[int], inputs_of: Callable[[Operation], list[Tensor]],
    fed: set[tuple[int, int]], is_control_flow: Callable[[Operation], bool],
) -> set[int]:
    """ids of the ops of the step that reach one of `starts` by a path of one edge
    or more (not walking back through control-flow ops)."""
    seen: set[int] = set()
    stack = list(starts)
    while stack:
        op = stack.pop()
        if is_control_flow(op):
            continue
        preds = [t.op for t in inputs_of(op) if (id(t.op), t.value_index) not in fed] + op._control_inputs
        for p in preds:
            if id(p) in members and id(p) not in seen:
                seen.add(id(p))
                stack.append(p)
    return seen


def controls_implied(
    op: Operation, src: Operation, position: dict[int, int], noops: set[str],
    inputs_of: Callable[[Operation], list[Tensor]], fed: set[tuple[int, int]],
    is_control_flow: Callable[[Operation], bool],
) -> bool:
    """Whether every control input of `op`, seen through NoOps (converted ones by
    their dependencies), is `src` or an ancestor of `src` in the step (see the module
    docstring).

    Args:
      op: the op whose control inputs are checked.
      src: the producer of the value `op` passes on.
      position: id(op) -> index in the step's live ops, in topological order.
      noops: names of the ops converted to NoOp.
      inputs_of, fed, is_control_flow: as for `reduced_noop_inputs`.
    """
    needed: dict[int, Operation] = {}
    stack = list(op._control_inputs)
    seen: set[int] = set()
    while stack:
        c = stack.pop()
        if id(c) in seen:
            continue
        seen.add(id(c))
        if id(c) not in position or is_control_flow(c):
            return False
        if c.type == "NoOp" or c.name in noops:
            stack.extend(t.op for t in inputs_of(c) if (id(t.op), t.value_index) not in fed)
            stack.extend(c._control_inputs)
        elif c is not src:
            needed[id(c)] = c
    if not needed:
        return True
    if max(position[i] for i in needed) > position[id(src)]:
        return False  # an ancestor comes before `src` in topological order
    lowest = min(position[i] for i in needed)
    walk, visited = [src], {id(src)}
    while walk and needed:
        cur = walk.pop()
        if is_control_flow(cur):
            continue
        for p in [t.op for t in inputs_of(cur) if (id(t.op), t.value_index) not in fed] + cur._control_inputs:
            if id(p) in visited or position.get(id(p), -1) < lowest:
                continue  # not in the step, or before every op still looked for
            visited.add(id(p))
            needed.pop(id(p), None)
            walk.append(p)
    return not needed
