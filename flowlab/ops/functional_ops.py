"""`map_fn`, `foldl`, `foldr` and `scan`: higher-order functions as dataflow loops.

As in TensorFlow 1.x (paper section 3.4), each is a `while_loop` over the first
dimension of `elems`: the elements are unstacked into TensorArrays before the loop,
each iteration reads its element, applies `fn`, and (map, scan) writes the result into
an output TensorArray that is stacked after the loop.  `fn` is traced once, so the
graph has one copy of it whatever the length; gradients come from the loop's and the
TensorArrays' gradients.

`elems` and the results may be nested structures (tuples, lists, dicts) of tensors;
`dtype` (map_fn) or `initializer` (fold, scan) gives the structure of the result when
it differs from `elems`.  Names and loop layout follow TensorFlow ("map/while/...",
"foldl/while/...", "scan/while/...").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Tensor
from flowlab.graph.tensor_shape import Dimension, TensorShape
from flowlab.ops import array_ops
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.constant_op import constant
from flowlab.ops.tensor_array_ops import TensorArray

__all__ = ["map_fn", "foldl", "foldr", "scan", "TensorArray"]


def _nest() -> Any:
    # The nest helpers live with cond/while_loop; imported late so that importing
    # flowlab does not require the control-flow modules' import order.
    from flowlab.ops import cond

    return cond


def _is_nested(x: Any) -> bool:
    return isinstance(x, (list, tuple, dict))


class _Structure:
    """Flatten/pack for one value that may or may not be a nested structure."""

    def __init__(self, template: Any) -> None:
        self.template = template
        self.nested = _is_nested(template)

    def flatten(self, x: Any) -> list[Any]:
        return _nest().flatten(x) if self.nested else [x]

    def pack(self, flat: list[Any]) -> Any:
        return _nest().pack_sequence_as(self.template, list(flat)) if self.nested else flat[0]


def _check_fn(fn: Any) -> None:
    if not callable(fn):
        raise TypeError(f"fn must be callable. Received: {fn}")


def _elements(elems_flat: list[Any]) -> tuple[list[Tensor], Any]:
    """The elements as tensors and their count (a Python int when static)."""
    if not elems_flat:
        raise ValueError("elems must not be empty")
    tensors = [convert_to_tensor(e, name="elem") for e in elems_flat]
    if tensors[0].shape.ndims == 0:
        if len(tensors) == 1:
            raise ValueError("elems must be a 1+ dimensional Tensor, not a scalar")
        raise ValueError("elements in elems must be 1+ dimensional Tensors, not scalars")
    first = tensors[0].shape
    n = first[0].value if first.ndims is not None else None
    return tensors, (n if n else array_ops.shape(tensors[0])[0])


def _unstack_all(tensors: list[Tensor], n: Any, element_shapes: bool = False) -> list[TensorArray]:
    return [
        TensorArray(t.dtype.base_dtype, size=n, dynamic_size=False, infer_shape=True,
                    element_shape=t.shape[1:] if element_shapes and t.shape.ndims is not None
                    else None).unstack(t)
        for t in tensors
    ]


def _static_n(tensors: list[Tensor]) -> Dimension:
    n = Dimension(tensors[0].shape.with_rank_at_least(1)[0].value if tensors[0].shape.ndims is not None else None)
    for t in tensors[1:]:
        d = t.shape.with_rank_at_least(1)[0].value if t.shape.ndims is not None else None
        n.assert_is_compatible_with(Dimension(d))
    return n


def _set_leading(results: list[Tensor], n: Dimension) -> None:
    for r in results:
        if r.shape.ndims is not None:
            r.set_shape(TensorShape([n.value]).concatenate(r.shape[1:]))


def _while(cond: Callable[..., Any], body: Callable[..., Any], loop_vars: Any, n: Any,
           parallel_iterations: int, back_prop: bool, swap_memory: bool) -> Any:
    from flowlab.ops.while_loop import while_loop

    return while_loop(cond, body, loop_vars, parallel_iterations=parallel_iterations,
                      back_prop=back_prop, swap_memory=swap_memory, maximum_iterations=n)


def map_fn(fn: Callable[[Any], Any], elems: Any, dtype: Any = None,
           parallel_iterations: int | None = None, back_prop: bool = True,
           swap_memory: bool = False, infer_shape: bool = True, name: str | None = None,
           fn_output_signature: Any = None) -> Any:
    """`fn` applied to each element of `elems` along dimension 0, results stacked.

        squares = tf.map_fn(lambda x: x * x, tf.constant([1, 2, 3]))   # [1, 4, 9]

    Args:
      fn: callable from one element (structured like `elems`) to a result structured
        like `dtype` (or like `elems` when `dtype` is None).
      elems: a tensor or nested structure of tensors, all of the same first dimension.
      dtype: the result's dtype structure when it differs from `elems`'.
      parallel_iterations: iterations that may run at once (default 10).
      back_prop: whether gradients flow through the loop.
      swap_memory: accepted.
      infer_shape: whether the results must have one static shape.
      name: name scope ("map").
      fn_output_signature: TensorFlow 2's name for `dtype`.
    Returns:
      The stacked results, structured like `dtype` (or `elems`).
    Raises:
      TypeError: `fn` is not callable.
      ValueError: scalar or empty `elems`, or `fn`'s result has another structure.
    """
    _check_fn(fn)
    if fn_output_signature is not None:
        if dtype is not None:
            raise ValueError("Only one of dtype and fn_output_signature may be specified")
        dtype = fn_output_signature
    parallel_iterations = parallel_iterations or 10
    inp = _Structure(elems)
    elems_flat = inp.flatten(elems)
    g = get_default_graph()
    with g.name_scope(name or "map"):
        tensors, n = _elements(elems_flat)
        if dtype is None:
            out = inp
            dtype_flat = [t.dtype.base_dtype for t in tensors]
        else:
            out = _Structure(dtype)
            dtype_flat = [dtypes.as_dtype(d) for d in out.flatten(dtype)]
        elems_ta = _unstack_all(tensors, n)
        i = constant(0)
        accs_ta = [TensorArray(dt, size=n, dynamic_size=False, infer_shape=infer_shape)
                   for dt in dtype_flat]

        def compute(i: Tensor, tas: list[TensorArray]) -> Any:
            packed = inp.pack([ta.read(i) for ta in elems_ta])
            values = fn(packed)
            _nest().assert_same_structure(dtype if dtype is not None else elems, values)
            flat = out.flatten(values)
            return i + 1, [ta.write(i, v) for ta, v in zip(tas, flat)]

        _, r_a = _while(lambda i, _: i < n, compute, (i, accs_ta), n, parallel_iterations,
                        back_prop, swap_memory)
        results = [r.stack() for r in r_a]
        _set_leading(results, _static_n(tensors))
        return out.pack(results)


def foldl(fn: Callable[[Any, Any], Any], elems: Any, initializer: Any = None,
          parallel_iterations: int = 10, back_prop: bool = True, swap_memory: bool = False,
          name: str | None = None) -> Any:
    """`fn(...fn(fn(initializer, e0), e1)..., e_{n-1})` over `elems` along dimension 0.

    Args:
      fn: callable (accumulator, element) -> accumulator.
      elems: a tensor or nested structure of tensors, unstacked on dimension 0.
      initializer: the first accumulator (default: the first element, then the fold
        starts at the second).
      parallel_iterations, back_prop, swap_memory: as `while_loop`.
      name: name scope ("foldl").
    Returns:
      The final accumulator.
    Raises:
      TypeError: `fn` is not callable.
    """
    return _fold(fn, elems, initializer, parallel_iterations, back_prop, swap_memory,
                 name or "foldl", reverse=False)


def foldr(fn: Callable[[Any, Any], Any], elems: Any, initializer: Any = None,
          parallel_iterations: int = 10, back_prop: bool = True, swap_memory: bool = False,
          name: str | None = None) -> Any:
    """`foldl` from the last element to the first (`tf.foldr`)."""
    return _fold(fn, elems, initializer, parallel_iterations, back_prop, swap_memory,
                 name or "foldr", reverse=True)


def _fold(fn: Any, elems: Any, initializer: Any, parallel_iterations: int, back_prop: bool,
          swap_memory: bool, name: str, reverse: bool) -> Any:
    _check_fn(fn)
    inp = _Structure(elems)
    with get_default_graph().name_scope(name):
        tensors, n = _elements(inp.flatten(elems))
        elems_ta = _unstack_all(tensors, n)
        if reverse:
            if initializer is None:
                i = n - 1
                a = inp.pack([ta.read(i) for ta in elems_ta])
            else:
                i, a = n, initializer

            def compute(i: Any, a: Any) -> Any:
                i -= 1
                return [i, fn(a, inp.pack([ta.read(i) for ta in elems_ta]))]

            def cond(i: Any, a: Any) -> Any:
                return i > 0
        else:
            if initializer is None:
                a = inp.pack([ta.read(0) for ta in elems_ta])
                i = constant(1)
            else:
                a, i = initializer, constant(0)

            def compute(i: Any, a: Any) -> Any:
                return [i + 1, fn(a, inp.pack([ta.read(i) for ta in elems_ta]))]

            def cond(i: Any, a: Any) -> Any:
                return i < n

        _, r_a = _while(cond, compute, [i, a], n, parallel_iterations, back_prop, swap_memory)
        return r_a


def scan(fn: Callable[[Any, Any], Any], elems: Any, initializer: Any = None,
         parallel_iterations: int = 10, back_prop: bool = True, swap_memory: bool = False,
         infer_shape: bool = True, reverse: bool = False, name: str | None = None) -> Any:
    """Every intermediate accumulator of a fold, stacked (`tf.scan`).

        tf.scan(lambda a, x: a + x, tf.constant([1, 2, 3, 4]))   # [1, 3, 6, 10]

    Args:
      fn: callable (accumulator, element) -> accumulator, structured like
        `initializer` (or `elems` when there is none).
      elems: a tensor or nested structure of tensors, unstacked on dimension 0.
      initializer: the first accumulator (default: the first element, which is then
        also the first output).
      parallel_iterations, back_prop, swap_memory: as `while_loop`.
      infer_shape: whether the accumulators must have one static shape.
      reverse: scan from the last element to the first.
      name: name scope ("scan").
    Returns:
      The stacked accumulators, structured like the accumulator.
    Raises:
      TypeError: `fn` is not callable.
      ValueError: `fn`'s result has another structure than the accumulator.
    """
    _check_fn(fn)
    inp = _Structure(elems)
    out = inp if initializer is None else _Structure(initializer)
    with get_default_graph().name_scope(name or "scan"):
        tensors, n = _elements(inp.flatten(elems))
        elems_ta = _unstack_all(tensors, n, element_shapes=True)
        if initializer is None:
            a_flat = [ta.read(n - 1 if reverse else 0) for ta in elems_ta]
            i = 1
        else:
            a_flat = [convert_to_tensor(v) for v in out.flatten(initializer)]
            i = 0
        accs_ta = [TensorArray(a.dtype.base_dtype, size=n, dynamic_size=False,
                               element_shape=a.shape if infer_shape else None,
                               infer_shape=infer_shape) for a in a_flat]
        if initializer is None:
            accs_ta = [ta.write(n - 1 if reverse else 0, a) for ta, a in zip(accs_ta, a_flat)]

        def compute(i: Tensor, a_flat: list[Any], tas: list[TensorArray]) -> Any:
            packed_elems = inp.pack([ta.read(i) for ta in elems_ta])
            a_out = fn(out.pack(a_flat), packed_elems)
            _nest().assert_same_structure(elems if initializer is None else initializer, a_out)
            flat_out = out.flatten(a_out)
            tas = [ta.write(i, v) for ta, v in zip(tas, flat_out)]
            return (i - 1 if reverse else i + 1), flat_out, tas

        if reverse:
            initial_i = n - 1 - i

            def condition(i: Any, _1: Any, _2: Any) -> Any:
                return i >= 0
        else:
            initial_i = i

            def condition(i: Any, _1: Any, _2: Any) -> Any:
                return i < n

        _, _, r_a = _while(condition, compute, (initial_i, a_flat, accs_ta), n,
                           parallel_iterations, back_prop, swap_memory)
        results = [r.stack() for r in r_a]
        _set_leading(results, _static_n(tensors))
        return out.pack(results)
