"""`cond` and `case`: data-dependent branches built from Switch and Merge.

The paper's section 3.4: `cond(pred, true_fn, false_fn)` switches every value a branch
uses on `pred`, so the branch not taken receives only dead values and none of its ops
runs; a Merge per output forwards the live result.  TensorFlow 1.x's graph layout and
names are kept (v1 control flow):

    cond/Switch = Switch(pred, pred)       cond/switch_t, cond/switch_f = its outputs
    cond/pred_id = Identity(pred)          the predicate every Switch uses
    cond/<op>/Switch = Switch(x, pred_id)  an outside value x used by a branch op
    cond/Merge = Merge(false_result, true_result)

A branch's ops are tracked by a `CondContext` (flowlab/ops/control_flow_context.py);
a constant made inside a branch gets a control input from the branch's pivot
(switch_t or switch_f) so that it is dead when the branch is not taken.

Results may be nested structures (lists, tuples, dicts, namedtuples) of tensors; both
branches must give the same structure and dtypes.  The small `nest` helpers here
(`flatten`, `pack_sequence_as`, `assert_same_structure`) are also used by while_loop.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Operation, Tensor
from flowlab.ops import control_flow_context as cfc
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.control_flow_ops import merge, switch
from flowlab.ops.core_ops import identity

__all__ = ["cond", "case"]


# --- nest: flatten and rebuild nested structures ---------------------------------------
def _is_nested(x: Any) -> bool:
    return isinstance(x, (list, tuple, dict))


def _sorted_keys(d: dict[Any, Any]) -> list[Any]:
    try:
        return sorted(d)
    except TypeError:
        return list(d)


def flatten(x: Any) -> list[Any]:
    """The leaves of a nested structure, depth first (dict values by sorted key)."""
    if isinstance(x, dict):
        return [leaf for k in _sorted_keys(x) for leaf in flatten(x[k])]
    if isinstance(x, (list, tuple)):
        return [leaf for v in x for leaf in flatten(v)]
    return [x]


def pack_sequence_as(structure: Any, flat: list[Any]) -> Any:
    """`flat` arranged as `structure` (the inverse of `flatten`)."""
    it = iter(flat)

    def build(s: Any) -> Any:
        if isinstance(s, dict):
            vals = {k: build(s[k]) for k in _sorted_keys(s)}
            return type(s)((k, vals[k]) for k in s) if type(s) is not dict else {k: vals[k] for k in s}
        if isinstance(s, tuple) and hasattr(s, "_fields"):
            return type(s)(*[build(v) for v in s])
        if isinstance(s, (list, tuple)):
            return type(s)(build(v) for v in s)
        return next(it)

    return build(structure)


def _describe(x: Any) -> str:
    return f"type={type(x).__name__} str={x}"


def assert_same_structure(a: Any, b: Any) -> None:
    """ValueError (TensorFlow's message) unless `a` and `b` nest alike."""

    def same(x: Any, y: Any) -> bool:
        if _is_nested(x) != _is_nested(y):
            return False
        if not _is_nested(x):
            return True
        if isinstance(x, dict) != isinstance(y, dict):
            return False
        if isinstance(x, dict):
            return set(x) == set(y) and all(same(x[k], y[k]) for k in x)
        return len(x) == len(y) and all(same(u, v) for u, v in zip(x, y))

    if not same(a, b):
        raise ValueError(
            "The two structures don't have the same nested structure.\n\n"
            f"First structure: {_describe(a)}\n\nSecond structure: {_describe(b)}"
        )


# --- cond --------------------------------------------------------------------------
def _branch_result(ctx: cfc.CondContext, v: Any) -> Tensor:
    """A branch result as a tensor of the branch: an outside value goes through a
    Switch (the `lambda: x` case), an op becomes the pivot with a dependency on it."""
    if isinstance(v, Operation):
        with v.graph.control_dependencies([v]):
            return identity(ctx.pivot, name="control_dependency")
    t = convert_to_tensor(v)
    if not cfc.value_inside(t, ctx):
        return ctx.add_value(t)
    return t


def _build_branch(g: Any, ctx: cfc.CondContext, fn: Callable[[], Any], what: str) -> tuple[Any, list[Tensor]]:
    # Outer control dependencies apply inside the branch, as in TensorFlow (an op of
    # the branch with no input made in the block gets them).
    with cfc.building(g, ctx, ctx.pivot.op, clear_control_dependencies=False):
        original = fn()
        if original is None:
            raise ValueError(f"'{what}' must have a return value.")
        flat = [_branch_result(ctx, v) for v in flatten(original)]
    return original, flat


def cond(
    pred: Any,
    true_fn: Callable[[], Any] | None = None,
    false_fn: Callable[[], Any] | None = None,
    strict: bool = False,
    name: str | None = None,
    fn1: Callable[[], Any] | None = None,
    fn2: Callable[[], Any] | None = None,
) -> Any:
    """`true_fn()` if `pred` else `false_fn()`, decided when the graph runs.

        r = tf.cond(x > 0, lambda: x * 2.0, lambda: tf.constant(0.0))

    Only the taken branch's ops run.  Values from outside that a branch uses are
    switched on `pred`, so ops outside the branches (even ones a branch uses) run
    whatever `pred` is.

    Args:
      pred: a scalar bool tensor (not a Python bool).
      true_fn, false_fn: callables returning the same structure of tensors (or ops).
      strict: keep a one-element list result as a list (default: unpack it).
      name: name scope (default "cond").
      fn1, fn2: TensorFlow 1.x's deprecated names of true_fn and false_fn.

    Returns:
      The structure the branches return, each tensor a Merge of the two results.

    Raises:
      TypeError: `pred` is a Python bool, or a branch is not callable.
      ValueError: the branches return different structures or dtypes, or nothing.
    """
    if fn1 is not None:
        if true_fn is not None:
            raise TypeError("cond(): 'true_fn' and 'fn1' may not be set simultaneously.")
        true_fn = fn1
    if fn2 is not None:
        if false_fn is not None:
            raise TypeError("cond(): 'false_fn' and 'fn2' may not be set simultaneously.")
        false_fn = fn2
    if true_fn is None:
        raise TypeError("cond(): 'true_fn' argument required")
    if false_fn is None:
        raise TypeError("cond(): 'false_fn' argument required")
    if not callable(true_fn):
        raise TypeError("'true_fn' must be callable.")
    if not callable(false_fn):
        raise TypeError("'false_fn' must be callable.")
    if isinstance(pred, bool):
        raise TypeError("'pred' must not be a Python bool.")
    g = pred.graph if isinstance(pred, Tensor) else get_default_graph()
    with g.as_default(), g.name_scope(name or "cond"):
        pred = convert_to_tensor(pred)
        p_f, p_t = switch(pred, pred)
        pivot_t = identity(p_t, name="switch_t")
        pivot_f = identity(p_f, name="switch_f")
        pred_id = identity(pred, name="pred_id")
        outer = cfc.current_context(g)
        ctx_t = cfc.CondContext(g, outer, pred_id, pivot_t, 1)
        ctx_f = cfc.CondContext(g, outer, pred_id, pivot_f, 0)
        for ctx in (ctx_t, ctx_f):
            cfc.set_context(ctx.pivot.op, ctx)
            ctx._external[pred_id] = pred_id
        orig_t, res_t = _build_branch(g, ctx_t, true_fn, "true_fn")
        orig_f, res_f = _build_branch(g, ctx_f, false_fn, "false_fn")
        assert_same_structure(orig_t, orig_f)
        for a, b in zip(res_t, res_f):
            if a.dtype.base_dtype is not b.dtype.base_dtype:
                raise ValueError(
                    "Outputs of 'true_fn' and 'false_fn' must have the same type(s). Received "
                    f"{a.dtype.base_dtype.name} from 'true_fn' and {b.dtype.base_dtype.name} "
                    "from 'false_fn'."
                )
        merges = []
        for a, b in zip(res_f, res_t):
            m = merge([a, b])[0]
            g._scratch.setdefault(_CONDS_OF_MERGE, {})[m.op] = (ctx_f, ctx_t)
            merges.append(m)
        if isinstance(orig_t, Operation) and isinstance(orig_f, Operation):
            return merges[0]
        result = pack_sequence_as(orig_t, merges)
        if not strict and isinstance(result, (list, tuple)) and len(result) == 1 \
                and not hasattr(result, "_fields"):
            return result[0]
        return result


# graph._scratch key: Merge op -> (false context, true context) of the cond that made
# it; the gradient of Merge reads the predicate from here.
_CONDS_OF_MERGE = "control_flow_cond_merges"


def cond_contexts_of_merge(op: Operation) -> Any:
    return op.graph._scratch.get(_CONDS_OF_MERGE, {}).get(op)


def _assert_at_most_n_true(predicates: list[Tensor], n: int, msg: str) -> Operation:
    """An Assert that at most `n` of `predicates` are true at run time (TensorFlow's
    ops and message: "<msg>: more than <n> conditions (<names>) evaluated as True:")."""
    from flowlab.ops import array_ops, math_ops
    from flowlab.ops.check_ops import Assert
    from flowlab.ops.constant_op import constant

    preds_c = array_ops.stack(list(predicates), name="preds_c")
    num_true = math_ops.reduce_sum(math_ops.cast(preds_c, "int32"), name="num_true_conds")
    condition = math_ops.less_equal(num_true, constant(n, name="n_true_conds"))
    names = ", ".join(getattr(p, "name", "?") for p in predicates)
    return Assert(condition, [f"{msg}: more than {n} conditions ({names}) evaluated as True:", preds_c],
                  summarize=len(predicates))


def _default_from_last_pair(predicates: list[Tensor], actions: list[Callable[[], Any]]) -> Any:
    """Without a default, the last pair's fn is it, guarded as TensorFlow guards it: at
    run time, its predicate must hold and no other may (InvalidArgumentError else)."""
    from flowlab.ops import array_ops
    from flowlab.ops.check_ops import Assert

    k = len(predicates) - 1
    predicate, action = predicates[k], actions[k]

    def default_action() -> Any:
        others_msg = (f"Implementation error: selected default action #{k} was called, but "
                      "some of other predicates are True: ")
        default_msg = ["Input error: None of conditions evaluated as True:",
                       array_ops.stack(list(predicates), name="preds_c")]
        g = get_default_graph()
        with g.control_dependencies([_assert_at_most_n_true(predicates[:k], 0, others_msg),
                                     Assert(predicate, default_msg)]):
            return action()

    return default_action, predicates[:k], actions[:k]


def case(
    pred_fn_pairs: Any,
    default: Callable[[], Any] | None = None,
    exclusive: bool = False,
    strict: bool = False,
    name: str = "case",
) -> Any:
    """The result of the first `fn` whose `pred` is true, else `default()`.

        r = tf.case([(x < 0, lambda: -x), (x > 10, lambda: x / 10)], default=lambda: x)

    Built as nested conds (`case/cond/cond/...`), TensorFlow 1.x's layout, with its
    run-time checks (Asserts, InvalidArgumentError when violated).

    Args:
      pred_fn_pairs: a list or tuple of (scalar bool tensor, callable) pairs, or a dict
        (then ordered by the predicates' names, as TensorFlow orders it, unless it is an
        OrderedDict).
      default: callable for when no pred is true.  Without one, the last pair's fn is
        the default, checked at run time: its pred must be true and no other.
      exclusive: check at run time that at most one pred is true.
      strict: as for `cond`.
      name: name scope (default "case").

    Raises:
      TypeError: `pred_fn_pairs` is not a list, tuple or dict, a pair is not
        (bool tensor, callable).
      ValueError: no pairs and no default.
    """
    if not isinstance(pred_fn_pairs, (list, tuple, dict)):
        raise TypeError("'pred_fn_pairs' must be a list, tuple, or dict. "
                        f"Received: {type(pred_fn_pairs)}")
    if isinstance(pred_fn_pairs, OrderedDict):
        pairs = list(pred_fn_pairs.items())
    elif isinstance(pred_fn_pairs, dict):
        pairs = sorted(pred_fn_pairs.items(), key=lambda item: item[0].name)
    else:
        pairs = list(pred_fn_pairs)
    for p in pairs:
        if not isinstance(p, tuple) or len(p) != 2:
            raise TypeError(f"Each entry in 'pred_fn_pairs' must be a 2-tuple. Received {p}.")
        pred, fn = p
        if not isinstance(pred, Tensor):
            raise TypeError(f"pred must be a Tensor, got: {pred}")
        if pred.dtype.base_dtype is not dtypes.bool:
            raise TypeError(f"pred must be Tensor of type bool: {pred.name}")
        if not callable(fn):
            raise TypeError(f"fn for pred {pred.name} must be callable.")
    if not pairs:
        raise ValueError("not enough values to unpack (expected 2, got 0)")
    predicates = [p for p, _ in pairs]
    actions = [f for _, f in pairs]
    g = get_default_graph()
    with g.name_scope(name or "case"):
        if default is None:
            default, predicates, actions = _default_from_last_pair(predicates, actions)

        def build(i: int) -> Any:
            if i == len(predicates):
                return default()
            return cond(predicates[i], actions[i], lambda: build(i + 1), strict=strict)

        if exclusive:
            with g.control_dependencies([_assert_at_most_n_true(
                    predicates, 1, "Input error: exclusive=True")]):
                return build(0)
        return build(0)
