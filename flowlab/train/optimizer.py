"""`tf.train.Optimizer`: the base class of the TF1 optimizers.

`minimize(loss)` is `compute_gradients` (a `tf.gradients` over the trainable
variables, returning (gradient, variable) pairs with None for unconnected ones)
followed by `apply_gradients`, which builds one update op per variable inside the
name scope of the optimizer ("GradientDescent/update_w/ApplyGradientDescent") and
groups them (and an increment of `global_step`) into the train op, as TensorFlow 1.x.

Subclasses implement `_create_slots` (slot variables, created once per variable,
colocated with it and named "<var>/<optimizer name>", "<var>/<name>_1", ...),
`_prepare` (hyper-parameters as tensors), `_apply_dense` (a dense gradient),
`_apply_sparse` (an IndexedSlices gradient with unique indices: only the touched rows
change) and `_finish`.  Sparse gradients are de-duplicated first (unique +
segment sum), as in TensorFlow.  Only reference variables (TF1's `tf.Variable`)
exist in flowlab, so there are no resource-variable paths.
"""

from __future__ import annotations

from collections.abc import MappingView
from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import GraphKeys, get_default_graph
from flowlab.graph.tensor import Operation, Tensor
from flowlab.ops import array_ops, core_ops, init_ops, state_ops
from flowlab.ops import variable_scope as vs
from flowlab.ops.array_grad import _segment_sum
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.gradients_impl import gradients
from flowlab.ops.indexed_slices import IndexedSlices, convert_to_tensor_or_indexed_slices
from flowlab.ops.variables import Variable, trainable_variables
from flowlab.train.slot_creator import get_slot_variable

__all__ = ["Optimizer"]


# The order in which TensorFlow's error message lists the valid dtypes.
_DTYPE_ORDER = [dtypes.float32, dtypes.float64, dtypes.float16]
if getattr(dtypes, "bfloat16", None) is not None:
    _DTYPE_ORDER.append(dtypes.bfloat16)


def _dtype_rank(d: Any) -> int:
    return _DTYPE_ORDER.index(d) if d in _DTYPE_ORDER else len(_DTYPE_ORDER)


def _var_key(var: Any) -> Any:
    return (id(var.graph), var.op.name)


def _flatten(x: Any) -> list[Any]:
    if isinstance(x, (list, tuple)):
        return [y for e in x for y in _flatten(e)]
    if isinstance(x, dict):
        return [y for k in sorted(x) for y in _flatten(x[k])]
    if isinstance(x, (MappingView, range)):  # `var_list=d.values()`: nest flattens views
        return [y for e in x for y in _flatten(e)]
    return [x]


def _create_slot(primary: Variable, initializer: Any, shape: Any, dtype: Any, name: str) -> Variable:
    """A slot variable "<primary>/<name>" (made unique), colocated with `primary`."""
    g = primary.graph
    with g.as_default(), g.control_dependencies(None):
        with vs.variable_scope(None, primary.op.name + "/" + name), g.colocate_with(primary.op):
            if shape is not None and shape.is_fully_defined():
                return get_slot_variable(primary, shape=shape, dtype=dtype, initializer=initializer,
                                         trainable=False)
            return get_slot_variable(primary, dtype=dtype, initializer=initializer(None),
                                     trainable=False, validate_shape=False)


class Optimizer:
    """Base class of optimizers; use a subclass such as GradientDescentOptimizer."""

    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking: bool, name: str) -> None:
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        self._slots: dict[str, dict[Any, Variable]] = {}
        self._non_slot_dict: dict[Any, Variable] = {}

    def get_name(self) -> str:
        return self._name

    # --- the public API ------------------------------------------------------------
    def minimize(self, loss: Any, global_step: Any = None, var_list: Any = None,
                 gate_gradients: int = GATE_OP, aggregation_method: Any = None,
                 colocate_gradients_with_ops: bool = False, name: str | None = None,
                 grad_loss: Any = None) -> Operation:
        """Add ops that update `var_list` (default: trainable variables) to reduce
        `loss`, incrementing `global_step` if given; returns the train op."""
        grads_and_vars = self.compute_gradients(
            loss, var_list=var_list, gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
        vars_with_grad = [v for g, v in grads_and_vars if g is not None]
        if not vars_with_grad:
            raise ValueError(
                "No gradients provided for any variable, check your graph for ops that do not "
                f"support gradients, between variables {[str(v) for _, v in grads_and_vars]} "
                f"and loss {loss}."
            )
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def compute_gradients(self, loss: Any, var_list: Any = None, gate_gradients: int = GATE_OP,
                          aggregation_method: Any = None, colocate_gradients_with_ops: bool = False,
                          grad_loss: Any = None) -> list[tuple[Any, Variable]]:
        """(gradient, variable) pairs of `loss`; the gradient is None where the
        variable does not affect the loss, an IndexedSlices for row lookups."""
        if callable(loss):
            raise NotImplementedError("A callable loss is only supported in eager mode.")
        if gate_gradients not in (Optimizer.GATE_NONE, Optimizer.GATE_OP, Optimizer.GATE_GRAPH):
            raise ValueError(
                "gate_gradients must be one of: Optimizer.GATE_NONE, Optimizer.GATE_OP, "
                f"Optimizer.GATE_GRAPH.  Not {gate_gradients}"
            )
        loss = convert_to_tensor(loss) if not isinstance(loss, Tensor) else loss
        self._assert_valid_dtypes([loss])
        if grad_loss is not None:
            self._assert_valid_dtypes([convert_to_tensor(grad_loss)])
        if var_list is None:
            var_list = trainable_variables()
        else:
            var_list = _flatten(var_list)
        if not var_list:
            raise ValueError("No variables to optimize.")
        for v in var_list:
            if not isinstance(v, Variable):
                raise NotImplementedError(f"Trying to optimize unsupported type {v}")
        var_refs = [v._ref() for v in var_list]
        grads = gradients(
            loss, var_refs, grad_ys=grad_loss, gate_gradients=(gate_gradients == Optimizer.GATE_OP),
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops)
        if gate_gradients == Optimizer.GATE_GRAPH:
            grads = _gate_graph(grads)
        grads_and_vars = list(zip(grads, var_list))
        self._assert_valid_dtypes([v for g, v in grads_and_vars if g is not None])
        return grads_and_vars

    def apply_gradients(self, grads_and_vars: Any, global_step: Any = None,
                        name: str | None = None) -> Operation:
        """Add the update ops of the (gradient, variable) pairs; returns the train op
        (which also increments `global_step` when given)."""
        grads_and_vars = tuple(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("No variables provided.")
        converted = []
        for g, v in grads_and_vars:
            if g is not None:
                try:
                    g = convert_to_tensor_or_indexed_slices(g)
                except TypeError:
                    raise TypeError(
                        f"Gradient must be convertible to a Tensor or IndexedSlices, or None: {g}"
                    ) from None
                if not isinstance(g, (Tensor, IndexedSlices)):
                    raise TypeError(f"Gradient must be a Tensor, IndexedSlices, or None: {g}")
            if not isinstance(v, Variable):
                raise NotImplementedError(f"Trying to optimize unsupported type {v}")
            converted.append((g, v))
        var_list = [v for g, v in converted if g is not None]
        if not var_list:
            raise ValueError(
                f"No gradients provided for any variable: {[str(v) for _, v in converted]}."
            )
        graph = var_list[0].graph
        with graph.as_default():
            with graph.control_dependencies(None):
                self._create_slots(var_list)
            with graph.name_scope(name or self._name) as scope:
                self._prepare()
                update_ops = []
                for g, v in converted:
                    if g is None:
                        continue
                    with graph.name_scope("update_" + v.op.name), graph.colocate_with(v.op):
                        update_ops.append(self._update_op(g, v))
                if global_step is None:
                    apply_updates = self._finish(update_ops, scope.rstrip("/") + "/")
                else:
                    with graph.control_dependencies([self._finish(update_ops, "update")]):
                        gs_op = global_step.op
                        with graph.colocate_with(gs_op):
                            apply_updates = state_ops.assign_add(global_step, 1, name=scope)
            if isinstance(apply_updates, Tensor):
                apply_updates = apply_updates.op
            train_op = graph.get_collection_ref(GraphKeys.TRAIN_OP)
            if apply_updates not in train_op:
                train_op.append(apply_updates)
        return apply_updates

    def get_slot(self, var: Any, name: str) -> Variable | None:
        """The slot variable `name` of `var` ("momentum", "m", ...), or None."""
        named = self._slots.get(name)
        if not named:
            return None
        return named.get(_var_key(var))

    def get_slot_names(self) -> list[str]:
        return sorted(self._slots.keys())

    def variables(self) -> list[Variable]:
        """The optimizer's own variables (slots, beta powers) in the default graph."""
        g = get_default_graph()
        out = [v for v in self._non_slot_dict.values() if v.graph is g]
        for named in self._slots.values():
            out.extend(v for v in named.values() if v.graph is g)
        return sorted(out, key=lambda v: v.name)

    # --- for subclasses ------------------------------------------------------------
    def _update_op(self, g: Any, v: Variable) -> Any:
        if isinstance(g, Tensor):
            op = self._apply_dense(g, v)
            if v.constraint is not None:
                with get_default_graph().control_dependencies([op]):
                    return v.assign(v.constraint(v))
            return op
        if v.constraint is not None:
            raise RuntimeError("Cannot use a constraint function on a sparse variable.")
        return self._apply_sparse_duplicate_indices(g, v)

    def _valid_dtypes(self) -> set[dtypes.DType]:
        return {dtypes.float16, dtypes.float32, dtypes.float64}

    def _assert_valid_dtypes(self, tensors: list[Any]) -> None:
        valid = self._valid_dtypes()
        for t in tensors:
            dtype = t.dtype.base_dtype
            if dtype not in valid:
                raise ValueError(
                    f"Invalid type {dtype!r} for {t.name}, expected: "
                    f"{[v for v in sorted(valid, key=_dtype_rank)]}."
                )

    def _create_slots(self, var_list: list[Variable]) -> None:
        pass

    def _prepare(self) -> None:
        pass

    def _apply_dense(self, grad: Tensor, var: Variable) -> Any:
        raise NotImplementedError()

    def _apply_sparse_duplicate_indices(self, grad: IndexedSlices, var: Variable) -> Any:
        unique_indices, positions = array_ops.unique(grad.indices)
        summed = _segment_sum(grad.values, positions, array_ops.shape(unique_indices)[0])
        return self._apply_sparse(IndexedSlices(summed, unique_indices, grad.dense_shape), var)

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Any:
        raise NotImplementedError()

    def _finish(self, update_ops: list[Any], name_scope: str) -> Operation:
        return core_ops.group(*update_ops, name=name_scope)

    def _call_if_callable(self, param: Any) -> Any:
        return param() if callable(param) else param

    # --- slots ---------------------------------------------------------------------
    def _slot_dict(self, slot_name: str) -> dict[Any, Variable]:
        return self._slots.setdefault(slot_name, {})

    def _get_or_make_slot_with_initializer(self, var: Variable, initializer: Any, shape: Any, dtype: Any,
                                           slot_name: str, op_name: str) -> Variable:
        named = self._slot_dict(slot_name)
        key = _var_key(var)
        if key not in named:
            named[key] = _create_slot(var, initializer, shape, dtype, op_name)
        return named[key]

    def _zeros_slot(self, var: Variable, slot_name: str, op_name: str) -> Variable:
        dtype = var.dtype.base_dtype
        return self._get_or_make_slot_with_initializer(
            var, _initializer(init_ops.zeros_initializer(), var), var.shape, dtype, slot_name, op_name)

    def _create_non_slot_variable(self, initial_value: Any, name: str, colocate_with: Variable) -> Variable:
        g = colocate_with.graph
        key = (name, id(g))
        v = self._non_slot_dict.get(key)
        if v is None:
            with g.as_default(), g.colocate_with(colocate_with.op):
                v = Variable(initial_value, name=name, trainable=False)
            self._non_slot_dict[key] = v
        return v

    def _get_non_slot_variable(self, name: str, graph: Any = None) -> Variable | None:
        g = graph if graph is not None else get_default_graph()
        return self._non_slot_dict.get((name, id(g)))


def _initializer(init: Any, var: Variable) -> Any:
    """`init` for a fully defined slot; else a callable giving a value shaped like `var`
    at run time (TensorFlow's `zeros(shape(var.initialized_value()))`)."""
    if var.shape.is_fully_defined():
        return init

    def dynamic(_: Any) -> Tensor:
        value = init(array_ops.shape(var.initialized_value()), dtype=var.dtype.base_dtype)
        return value

    return dynamic


def _gate_graph(grads: list[Any]) -> list[Any]:
    """GATE_GRAPH: every gradient waits for all of them (`control_flow_ops.tuple`)."""
    dense = [g for g in grads if isinstance(g, Tensor)]
    if not dense:
        return grads
    gated = iter(core_ops.tuple(dense))
    return [next(gated) if isinstance(g, Tensor) else g for g in grads]
