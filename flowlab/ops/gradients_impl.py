"""`gradients(ys, xs)`: reverse-mode differentiation as a graph-to-graph transformation.

The paper's section 4.1: the gradient of `ys` with respect to `xs` is a backward
subgraph added to the same graph, made of ordinary ops; nothing in the runtime knows
about it.  The walk is TensorFlow's:

1. Mark the ops between xs and ys: reachable forward from the xs (along floating
   and complex edges only) and backward from the ys.  For each such op, count how many of its outputs' consumers also lie
   between (its *pending count*).
2. Seed each y with its grad_y (ones of y's shape by default, named
   `gradients/grad_ys_i`) and start from the ys whose count is zero.
3. Pop an op, sum the partial gradients of each of its outputs (AddN, or the
   IndexedSlices concatenation for sparse ones), call its gradient function inside
   the name scope `gradients/<op name>_grad`, and hand each input gradient to the
   producing op; an op whose count reaches zero is ready.
4. Return the summed gradient of each x, None where x is unconnected.

Invariants: the forward graph is never modified; an op's gradient function is called
at most once, after every consumer on a path to a y has contributed; ops that the
user stops (`stop_gradients`) or whose gradient is declared None pass nothing back.
The gradient function of an op is the one registered for its `_gradient_op_type` attr
(`Graph.gradient_override_map`) when it has one, else for its type.
"""

from __future__ import annotations

import collections
import contextlib
import enum
import importlib
import pathlib
from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import Graph
from flowlab.graph.tensor import Operation, Tensor
from flowlab.ops import control_flow_context as cfc
from flowlab.ops import gradient_registry
from flowlab.ops.builder import apply_op, convert_to_tensor, graph_of
from flowlab.ops.constant_op import constant
from flowlab.ops.indexed_slices import IndexedSlices, as_indexed_slices

__all__ = ["gradients", "hessians", "AggregationMethod", "UnconnectedGradients"]

# Modules whose import registers gradient functions: flowlab/ops/*_grad.py (one per op
# family, e.g. math_grad, nn_grad, array_grad, conv_grad) and custom_gradient.
_loaded = False


def _load_gradient_modules() -> None:
    global _loaded
    if _loaded:
        return
    here = pathlib.Path(__file__).parent
    names = sorted(f"flowlab.ops.{p.stem}" for p in here.glob("*_grad.py"))
    for name in [*names, "flowlab.ops.custom_gradient"]:
        importlib.import_module(name)
    _loaded = True


class AggregationMethod:
    """How partial gradients of one tensor are summed (TensorFlow's constants).

    ADD_N (the default) adds them all with one AddN op; EXPERIMENTAL_TREE and
    EXPERIMENTAL_ACCUMULATE_N add them pairwise, which frees each partial sooner."""

    ADD_N = 0
    DEFAULT = ADD_N
    EXPERIMENTAL_TREE = 1
    EXPERIMENTAL_ACCUMULATE_N = 2


class UnconnectedGradients(enum.Enum):
    """What `gradients` returns for an x that no y depends on (TensorFlow's enum:
    `gradients` takes a member or its value, "none" or "zero")."""

    NONE = "none"
    ZERO = "zero"


_TRAINABLE = (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.complex64,
              dtypes.complex128, dtypes.resource, dtypes.variant)


def is_trainable(t: Any) -> bool:
    """Whether gradients flow through values of `t`'s dtype (floating and complex)."""
    return t.dtype.base_dtype in _TRAINABLE


def _as_list(x: Any) -> list[Any]:
    if x is None:
        return []
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x]


def _to_tensor_or_slices(x: Any, name: str, as_ref: bool = False) -> Any:
    if isinstance(x, (Tensor, IndexedSlices)):
        return x
    handle = getattr(x, "_ref", None)
    if as_ref and callable(handle):
        return handle()
    return convert_to_tensor(x, name=name, as_ref=as_ref)


class _LoopNode:
    """A whole while loop seen from the level around it: one node of the walk whose
    inputs are its Enters' inputs and whose outputs are its Exits."""

    __slots__ = ("ctx", "const_enters", "inputs", "outputs", "name")

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        self.const_enters = list(ctx.const_enters)
        self.inputs = [e.op.inputs[0] for e in ctx.enters + self.const_enters]
        self.outputs = list(ctx.exits)
        self.name = ctx.name


class _Level:
    """The nodes of one walk: ops outside every loop (level None), or the ops of one
    loop's body (level = its WhileContext); loops nested directly in the level are
    `_LoopNode`s.  Graphs without loops see only ops."""

    def __init__(self, graph: Graph, level: Any) -> None:
        from flowlab.ops import control_flow_context as cfc

        self.cfc = cfc
        self.level = level
        self.has_loops = bool(cfc.loops_of(graph))
        self.skeleton = level.skeleton_ops() if level is not None else set()
        self._loops: dict[Any, _LoopNode] = {}

    def node(self, op: Operation) -> Any:
        if not self.has_loops:
            return op
        loop = self.cfc.while_context_of_op(op)
        if loop is self.level:
            return None if op in self.skeleton else op
        while loop is not None and loop.outer_loop is not self.level:
            loop = loop.outer_loop
        if loop is None:
            return None
        n = self._loops.get(loop)
        if n is None:
            n = self._loops[loop] = _LoopNode(loop)
        return n

    def producer(self, t: Tensor) -> tuple[Any, int]:
        n = self.node(t.op)
        if isinstance(n, _LoopNode):
            return n, n.outputs.index(t)
        return n, t.value_index

    @staticmethod
    def inputs(n: Any) -> Any:
        return n.inputs

    @staticmethod
    def outputs(n: Any) -> Any:
        return n.outputs

    def consumers(self, t: Tensor) -> list[Any]:
        out = []
        for c in t.consumers():
            n = self.node(c)
            if n is not None:
                out.append(n)
        return out


def _reachable_forward(lv: _Level, xs_nodes: list[Any]) -> set[Any]:
    seen: set[Any] = set()
    queue = collections.deque(xs_nodes)
    while queue:
        n = queue.popleft()
        if n in seen:
            continue
        seen.add(n)
        for out in lv.outputs(n):
            if is_trainable(out):  # no gradient flows along integer or bool edges
                queue.extend(lv.consumers(out))
    return seen


def _pending_counts(lv: _Level, ys_nodes: list[Any], xs_nodes: list[Any]) -> tuple[set[Any], dict[Any, int]]:
    """The nodes between xs and ys, and each one's number of consumer edges between."""
    reached = _reachable_forward(lv, xs_nodes)
    between: set[Any] = set()
    queue = collections.deque(n for n in ys_nodes if n in reached)
    while queue:
        n = queue.popleft()
        if n in between:
            continue
        between.add(n)
        for t in lv.inputs(n):
            p = lv.node(t.op)
            if p in reached:
                queue.append(p)
    pending: dict[Any, int] = collections.defaultdict(int)
    for n in between:
        for t in lv.inputs(n):
            p = lv.node(t.op)
            if p in between:
                pending[p] += 1
    return between, pending


def _stop_ops(lv: _Level, between: set[Any], pending: dict[Any, int],
              stop_gradient_ops: set[Any]) -> set[Any]:
    """Nodes whose gradient need not be computed: no input between xs and ys, or stopped."""
    stop = {n for n in between
            if not any(pending.get(lv.node(t.op), 0) > 0 for t in lv.inputs(n))}
    return stop | stop_gradient_ops


def gradient_function(op: Operation) -> Any:
    """The registered gradient function of `op` (override-map aware); None if declared
    not differentiable; LookupError if there is none."""
    op_type = op._attrs.get("_gradient_op_type", op.type)
    if isinstance(op_type, bytes):
        op_type = op_type.decode()
    return gradient_registry.get_gradient_function(op_type)


def _default_grad_y(y: Tensor, i: int, colocate: bool) -> Tensor:
    from flowlab.ops import array_ops

    if y.dtype.is_complex:
        raise TypeError(f"Gradients of complex tensors ({y}) must set grad_ys (y.dtype = {y.dtype.name})")
    g = y.graph
    ctx = g.colocate_with(y.op, ignore_existing=True) if colocate else contextlib.nullcontext()
    with ctx:
        if y.shape.is_fully_defined():
            shape = _const_shape(y)
        else:
            shape = array_ops.shape(y)
        with g.name_scope(f"grad_ys_{i}") as scope:
            one = constant(y.dtype.base_dtype.as_numpy_dtype(1), dtype=y.dtype.base_dtype, name="Const")
            return apply_op("Fill", dims=shape, value=one, name=scope)


def _const_shape(y: Tensor) -> Tensor:
    return constant(y.shape.as_list(), dtype=dtypes.int32, name="Shape")


def _aggregate(grads: list[Any], method: Any, op: Operation, colocate: bool) -> Any:
    """Sum the partial gradients of one output (None when there are none)."""
    from flowlab.ops import math_ops

    grads = [g for g in grads if g is not None]
    if not grads:
        return None
    if len(grads) == 1:
        return grads[0]
    if method not in (None, AggregationMethod.ADD_N, AggregationMethod.EXPERIMENTAL_TREE,
                      AggregationMethod.EXPERIMENTAL_ACCUMULATE_N):
        raise ValueError(f"Invalid aggregation_method specified {method}.")
    ctx = op.graph.colocate_with(op, ignore_existing=True) if colocate else contextlib.nullcontext()
    with ctx:
        if all(isinstance(g, Tensor) for g in grads):
            if method in (None, AggregationMethod.ADD_N):
                return math_ops.add_n(grads)
            total = grads[0]
            for g in grads[1:]:
                total = math_ops.add_n([total, g])
            return total
        if any(isinstance(g, Tensor) for g in grads):
            # A dense partial makes the sum dense (TensorFlow's AggregateIndexedSlicesGradients).
            return math_ops.add_n([convert_to_tensor(g) for g in grads])
        from flowlab.ops import array_ops

        slices = [as_indexed_slices(g) for g in grads]
        if len({s.indices.dtype for s in slices}) > 1:
            slices = [IndexedSlices(s.values, math_ops.cast(s.indices, dtypes.int64), s.dense_shape)
                      for s in slices]
        values = array_ops.concat([s.values for s in slices], 0)
        indices = array_ops.concat([s.indices for s in slices], 0)
        return IndexedSlices(values, indices, slices[0].dense_shape)


def gradients(
    ys: Any,
    xs: Any,
    grad_ys: Any = None,
    name: str = "gradients",
    colocate_gradients_with_ops: bool = False,
    gate_gradients: bool = False,
    aggregation_method: Any = None,
    stop_gradients: Any = None,
    unconnected_gradients: Any = UnconnectedGradients.NONE,
) -> list[Any]:
    """Symbolic partial derivatives of `sum(ys)` with respect to each of `xs`.

        x = tf.placeholder(tf.float32)
        y = x * x
        dx, = tf.gradients(y, x)          # a Tensor; 2 * x when run

    Returns one entry per x: a Tensor, an IndexedSlices (sparse gradients, as from
    gather), or None when x is not connected to any y (zeros with
    `unconnected_gradients="zero"`).  `grad_ys` weights each y (default: ones);
    `stop_gradients` treats those tensors as constants.
    """
    _load_gradient_modules()
    try:
        unconnected_gradients = UnconnectedGradients(unconnected_gradients)
    except ValueError:
        raise ValueError(
            f"Unknown value for unconnected_gradients: '{unconnected_gradients}'") from None
    ys = [_to_tensor_or_slices(y, "y") for y in _as_list(ys)]
    xs_in = _as_list(xs)
    xs = [_to_tensor_or_slices(x, "x", as_ref=True) for x in xs_in]
    grad_ys_l = _as_list(grad_ys) if grad_ys is not None else [None] * len(ys)
    if len(grad_ys_l) != len(ys):
        raise ValueError(f"Passed {len(grad_ys_l)} grad_ys for {len(ys)} ys")
    stops = [_to_tensor_or_slices(s, "stop") for s in _as_list(stop_gradients)]
    graph = graph_of(ys + xs)
    from flowlab.ops.control_flow_grad import in_gradients_call

    with graph.as_default(), graph.name_scope(name or "gradients") as scope, \
            in_gradients_call(graph, scope):
        return _gradients(graph, ys, xs, grad_ys_l, stops, colocate_gradients_with_ops,
                          gate_gradients, aggregation_method, unconnected_gradients)




def _gradients(graph: Graph, ys: list[Any], xs: list[Any], grad_ys: list[Any], stops: list[Any],
               colocate: bool, gate: Any, method: Any, unconnected: str,
               level: Any = None) -> list[Any]:
    from flowlab.ops import array_ops, core_ops

    for y in ys:
        if isinstance(y, IndexedSlices):
            raise TypeError(f"ys must be Tensors, got IndexedSlices {y!r}")
    for t in ys + xs:
        if t.graph is not graph:
            raise ValueError(f"Tensor {t.name} is not an element of this graph.")
    # Seed gradients.
    seeds: list[Any] = []
    for i, (y, gy) in enumerate(zip(ys, grad_ys)):
        if gy is None:
            seeds.append(_default_grad_y(y, i, colocate))
            continue
        if isinstance(gy, IndexedSlices):
            seeds.append(gy)
            continue
        gy = convert_to_tensor(gy, name=f"grad_y_{i}", dtype_hint=y.dtype)
        if y.dtype.is_floating or y.dtype.is_complex:
            if gy.dtype.base_dtype is not y.dtype.base_dtype:
                raise TypeError(
                    f"Gradient type {gy.dtype.name} generated for real or complex tensor "
                    f"{y.name} with type {y.dtype.name} must be real or complex "
                    f"with type {y.dtype.name}"
                    if gy.dtype.is_floating or gy.dtype.is_complex else
                    f"Gradient type {gy.dtype.name} generated for real or complex tensor "
                    f"{y.name} with type {y.dtype.name} must be real"
                )
        elif y.dtype.is_integer and not gy.dtype.is_integer:
            raise TypeError(
                f"Gradient type {gy.dtype.name} generated for integer tensor {y.name} with "
                f"type {y.dtype.name} must be integer"
            )
        if level is not None:  # a loop body's walk: the seeds are the loop's own
            seeds.append(gy)
            continue
        # TensorFlow names the seed in the gradients scope: an Identity `grad_ys_<i>`.
        ctx = graph.colocate_with(y.op, ignore_existing=True) if colocate else contextlib.nullcontext()
        with ctx:
            seeds.append(core_ops.identity(gy, name=f"grad_ys_{i}"))

    lv = _Level(graph, level)
    ys_nodes = [lv.node(y.op) for y in ys]
    xs_nodes = [lv.node(x.op) for x in xs]
    between, pending = _pending_counts(lv, [n for n in ys_nodes if n is not None],
                                       [n for n in xs_nodes if n is not None])
    stop_ops = _stop_ops(lv, between, pending, {lv.node(s.op) for s in stops})

    # grads[node][i]: partial gradients of the node's i-th output.
    grads: dict[Any, list[list[Any]]] = {}

    def add_grad(t: Tensor, g: Any) -> None:
        n, i = lv.producer(t)
        if n is None:
            return
        slots = grads.setdefault(n, [[] for _ in lv.outputs(n)])
        slots[i].append(g)

    for y, seed in zip(ys, seeds):
        add_grad(y, seed)

    queue: collections.deque[Any] = collections.deque()
    to_do = set()
    for n in ys_nodes:
        if n in between and pending.get(n, 0) == 0 and n not in to_do:
            queue.append(n)
            to_do.add(n)
    done: dict[Any, list[Any]] = {}

    def level_gradients(ys_: list[Tensor], xs_: list[Tensor], gys: list[Any], lvl: Any) -> list[Any]:
        return _gradients(graph, ys_, xs_, gys, [], colocate, gate, method,
                          UnconnectedGradients.NONE, level=lvl)

    while queue:
        node = queue.popleft()
        outs = lv.outputs(node)
        out_grads = [_aggregate(g, method, outs[i].op, colocate)
                     for i, g in enumerate(grads.get(node, [[] for _ in outs]))]
        done[node] = out_grads
        has_out_grads = any(g is not None for g in out_grads)
        n_inputs = len(lv.inputs(node))
        in_grads: list[Any] = [None] * n_inputs
        if isinstance(node, _LoopNode):
            if has_out_grads and node not in stop_ops:
                from flowlab.ops.control_flow_grad import backward_loop

                # Only invariants between xs and ys get an accumulator, as in TensorFlow.
                in_grads = backward_loop(node.ctx, node.const_enters, out_grads, level_gradients,
                                         [lv.node(t.op) in between for t in lv.inputs(node)])
        elif has_out_grads and node not in stop_ops:
            op = node
            try:
                grad_fn = gradient_function(op)
            except LookupError:
                raise LookupError(
                    f"No gradient defined for operation '{op.name}' (op type: {op.type}). "
                    "In general every operation must have an associated `@tf.RegisterGradient` "
                    "for correct autodiff, which this op is lacking. If you want to pretend this "
                    "operation is a constant in your program, you may insert `tf.stop_gradient`."
                ) from None
            if grad_fn is not None:
                # A Switch's zeros must be dead exactly when the output they stand for
                # is: a cond's are made here (outside loops), others by _switch_grad.
                if op.type == "Switch" and level is None and cfc.while_context_of_op(op) is None:
                    from flowlab.ops.control_flow_grad import cond_switch_zeros

                    for i, g in enumerate(out_grads):
                        if g is None and is_trainable(op.outputs[i]):
                            out_grads[i] = cond_switch_zeros(op, i)
                elif level is not None:
                    from flowlab.ops.control_flow_grad import loop_zeros

                    for i, g in enumerate(out_grads):
                        if g is None and is_trainable(op.outputs[i]):
                            out_grads[i] = loop_zeros(op, i)
                elif op.type not in ("Switch", "RefSwitch"):
                    for i, g in enumerate(out_grads):
                        if g is None and is_trainable(op.outputs[i]):
                            out_grads[i] = array_ops.zeros_like(op.outputs[i])
                ctx = graph.colocate_with(op, ignore_existing=True) if colocate else contextlib.nullcontext()
                with ctx, graph.name_scope(op.name + "_grad"):
                    result = grad_fn(op, *out_grads)
                    in_grads = list(result) if isinstance(result, (list, tuple)) else [result]
                    if len(in_grads) != len(op.inputs):
                        raise ValueError(
                            f"Num gradients {len(in_grads)} generated for op {op.node_def} do not "
                            f"match num inputs {len(op.inputs)}"
                        )
                    if gate and sum(1 for g in in_grads if g is not None) > 1:
                        in_grads = _gate(in_grads, core_ops)
        inputs = lv.inputs(node)
        for idx, (t_in, g) in enumerate(zip(inputs, in_grads)):
            if g is None:
                continue
            if isinstance(g, Tensor) and t_in.dtype is not dtypes.resource:
                try:
                    g.set_shape(t_in.shape)
                except ValueError:
                    raise ValueError(
                        f"Incompatible shapes between op input and calculated input gradient. "
                        f"Forward operation: {node.name}. Input index: {idx}. "
                        f"Original input shape: {t_in.shape}. Calculated input gradient shape: {g.shape}"
                    ) from None
            add_grad(t_in, g)
        for t_in in inputs:
            src = lv.node(t_in.op)
            if src not in between:
                continue
            pending[src] -= 1
            if pending[src] == 0 and src not in to_do:
                queue.append(src)
                to_do.add(src)

    result: list[Any] = []
    for x, xn in zip(xs, xs_nodes):
        g = None
        i = lv.producer(x)[1] if xn is not None else 0
        if xn in done:
            g = done[xn][i]
        elif xn in grads:
            g = _aggregate(grads[xn][i], method, x.op, colocate)
        if g is None and unconnected == UnconnectedGradients.ZERO:
            g = array_ops.zeros_like(x)
        result.append(g)
    return result


def _gate(in_grads: list[Any], core_ops: Any) -> list[Any]:
    """Make every input gradient available only once all of them are computed."""
    dense = [g for g in in_grads if isinstance(g, Tensor)]
    gated = iter(core_ops.tuple(dense))
    return [next(gated) if isinstance(g, Tensor) else g for g in in_grads]


def hessians(
    ys: Any,
    xs: Any,
    name: str = "hessians",
    colocate_gradients_with_ops: bool = False,
    gate_gradients: bool = False,
    aggregation_method: Any = None,
) -> list[Tensor]:
    """The Hessian of `sum(ys)` for each of `xs`, shaped x.shape + x.shape: the gradient
    of each element of the first derivative, stacked (like TensorFlow 1.x, `name` opens no
    scope).  TensorFlow computes the rows in a while_loop over a TensorArray, calling
    `gradients` inside the loop body; flowlab's walk cannot start inside a loop body, so
    the rows are unrolled here: same values, more ops, and x's size must be known."""
    from flowlab.ops import array_ops

    del name
    xs = _as_list(xs)
    kwargs = {"colocate_gradients_with_ops": colocate_gradients_with_ops, "gate_gradients": gate_gradients,
              "aggregation_method": aggregation_method}
    out = []
    for gradient, x in zip(gradients(ys, xs, **kwargs), xs):
        size = x.shape.num_elements()
        if size is None:
            raise NotImplementedError(
                f"hessians of {x.name}: its shape {x.shape} is not fully known (flowlab unrolls the "
                "Hessian's rows; TensorFlow's while_loop of gradients is not supported)")
        flat = array_ops.reshape(gradient, [-1])
        rows = [gradients(flat[j], x, **kwargs)[0] for j in range(size)]
        rows = [array_ops.zeros_like(x) if r is None else convert_to_tensor(r) for r in rows]
        shape = array_ops.shape(x)
        stacked = array_ops.stack(rows) if rows else array_ops.zeros([0], dtype=x.dtype)
        out.append(array_ops.reshape(stacked, array_ops.concat((shape, shape), 0)))
    return out
