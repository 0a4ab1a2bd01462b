"""`raw_rnn`: an RNN whose inputs, stopping and emitted values come from a Python
`loop_fn` (TensorFlow 1.x's `tf.nn.raw_rnn`, e.g. a seq2seq decoder's loop).

State: one `while_loop` (paper section 3.4) over the loop variables

    (time, elements_finished, next_input, emit_ta, state, loop_state)

`loop_fn(time, cell_output, cell_state, loop_state)` is called once before the loop
with `cell_output = cell_state = loop_state = None` (it gives the first input, the
initial state and, optionally, the structure to emit), then once per iteration after
the cell with `time + 1`.  It returns `(finished, next_input, next_cell_state,
emit_output, next_loop_state)`.

Invariants, as TensorFlow's:
- the loop runs while some batch entry is unfinished (`not reduce_all(finished)`);
- a batch entry already finished when a step starts emits zeros and keeps its state
  (`where(finished, old, new)`; scalars and TensorArrays pass through unchanged);
- `finished` only grows (`finished or next_finished`);
- `emit_ta` are dynamic-size TensorArrays, one per leaf of the emit structure: the
  structure (per-example shapes, without the batch dimension) and dtypes of the
  `emit_output` given to the first call, else `cell.output_size` in the state's dtype;
- a `next_loop_state` of None keeps the previous loop state; without any loop state a
  surrogate int32 0 travels through the loop and None is returned.

The cell's variables are made before the loop when the input depth is known (as in
`dynamic_rnn`), so their initializers never land inside the loop frame.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.tensor import Tensor
from flowlab.graph.tensor_shape import TensorShape, as_shape
from flowlab.nn.rnn import _build_cell, _check_cell
from flowlab.ops import array_ops, math_ops
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.cond import assert_same_structure, flatten, pack_sequence_as
from flowlab.ops.const_fold import constant_value
from flowlab.ops.constant_op import constant
from flowlab.ops.tensor_array_ops import TensorArray
from flowlab.ops.variable_scope import variable_scope

__all__ = ["raw_rnn"]


def _as_shape_vector(x: Any, what: str) -> Tensor:
    """An int, TensorShape or int tensor as a 1-D int32 tensor (TensorFlow's rnn `_concat`)."""
    if isinstance(x, Tensor):
        if x.shape.ndims == 0:
            return array_ops.expand_dims(x, 0)
        if x.shape.ndims != 1:
            raise ValueError(f"{what} tensor must be either a scalar or vector, but saw tensor: {x}")
        return x
    s = TensorShape(x) if not isinstance(x, TensorShape) else x
    if not s.is_fully_defined():
        raise ValueError(f"Provided a {what} or suffix of None: {x}")
    return constant(s.as_list(), dtype=dtypes.int32)


def _concat(prefix: Any, suffix: Any) -> Tensor:
    return array_ops.concat([_as_shape_vector(prefix, "prefix"), _as_shape_vector(suffix, "suffix")], 0)


def _static_shape(size: Any) -> TensorShape:
    """The per-example shape a size stands for (a shape tensor: its known value)."""
    if isinstance(size, Tensor):
        v = constant_value(size)
        return as_shape(None if v is None else [int(d) for d in v])
    return TensorShape(size) if not isinstance(size, TensorShape) else size


def _is_ta(x: Any) -> bool:
    return isinstance(x, TensorArray)


def raw_rnn(cell: Any, loop_fn: Callable[..., Any], parallel_iterations: int | None = None,
            swap_memory: bool = False, scope: Any = None) -> tuple[Any, Any, Any]:
    """An RNN driven by `loop_fn` (`tf.nn.raw_rnn`).

        def loop_fn(time, cell_output, cell_state, loop_state):
            state = cell.zero_state(batch, tf.float32) if cell_output is None else cell_state
            finished = time >= sequence_length
            next_input = tf.cond(tf.reduce_all(finished), lambda: zeros, lambda: inputs_ta.read(time))
            return finished, next_input, state, cell_output, None

        emit_ta, final_state, _ = tf.nn.raw_rnn(cell, loop_fn)
        outputs = emit_ta.stack()          # [time, batch, cell.output_size]

    Args:
      cell: an RNNCell.
      loop_fn: callable (time, cell_output, cell_state, loop_state) -> (finished,
        next_input, next_cell_state, emit_output, next_loop_state); called first with
        time 0 and None for the other three.
      parallel_iterations: iterations that may run at once (default 32).
      swap_memory: accepted (as while_loop).
      scope: the variable scope (default "rnn").

    Returns:
      (emit_ta, final_state, final_loop_state): TensorArrays of the emitted values
      ([batch, ...] per step), the cell's final state, and the final loop state (None
      when loop_fn never gave one).

    Raises:
      TypeError: `cell` is not a cell or `loop_fn` is not callable.
      ValueError: loop_fn's structures change between calls, or the inputs' batch
        sizes disagree.
    """
    from flowlab.ops.while_loop import while_loop

    _check_cell(cell)
    if not callable(loop_fn):
        raise TypeError(f"Argument `loop_fn` must be a callable. Received: {loop_fn}.")
    parallel_iterations = parallel_iterations or 32
    with variable_scope(scope or "rnn"):
        time = constant(0, dtype=dtypes.int32)
        (elements_finished, next_input, initial_state, emit_structure,
         init_loop_state) = loop_fn(time, None, None, None)
        flat_input = [convert_to_tensor(x) for x in flatten(next_input)]
        next_input = pack_sequence_as(next_input, flat_input)
        loop_state = init_loop_state if init_loop_state is not None \
            else constant(0, dtype=dtypes.int32)
        input_shapes = [x.shape for x in flat_input]
        static_batch = input_shapes[0].with_rank_at_least(1)[0] \
            if input_shapes[0].ndims is not None else TensorShape([None])[0]
        for s in input_shapes:
            if s.ndims is not None:
                static_batch.assert_is_compatible_with(s.with_rank_at_least(1)[0])
        const_batch_size = static_batch.value
        batch_size: Any = const_batch_size
        if batch_size is None:
            batch_size = array_ops.shape(flat_input[0])[0]
        assert_same_structure(initial_state, cell.state_size)
        flat_state = [convert_to_tensor(s) for s in flatten(initial_state)]
        state = pack_sequence_as(initial_state, flat_state)
        if emit_structure is not None:
            flat_emit_structure = [convert_to_tensor(e) for e in flatten(emit_structure)]
            flat_emit_size = [e.shape if e.shape.is_fully_defined() else array_ops.shape(e)
                              for e in flat_emit_structure]
            flat_emit_dtypes = [e.dtype.base_dtype for e in flat_emit_structure]
        else:
            emit_structure = cell.output_size
            flat_emit_size = flatten(emit_structure)
            flat_emit_dtypes = [flat_state[0].dtype.base_dtype] * len(flat_emit_size)
        if len(flat_input) == 1 and flat_input[0].shape.ndims == 2:
            _build_cell(cell, flat_input[0].shape[1].value, flat_input[0].dtype.base_dtype)
        flat_emit_ta = [
            TensorArray(dtype=dt, dynamic_size=True, size=0,
                        element_shape=TensorShape([const_batch_size]).concatenate(_static_shape(sz)),
                        name=f"rnn_output_{i}")
            for i, (dt, sz) in enumerate(zip(flat_emit_dtypes, flat_emit_size))
        ]
        emit_ta = pack_sequence_as(emit_structure, flat_emit_ta)
        flat_zero_emit = [array_ops.zeros(_concat(batch_size, sz), dt)
                          for sz, dt in zip(flat_emit_size, flat_emit_dtypes)]
        zero_emit = pack_sequence_as(emit_structure, flat_zero_emit)

        def condition(unused_time: Any, elements_finished: Any, *_: Any) -> Tensor:
            return math_ops.logical_not(math_ops.reduce_all(elements_finished))

        def body(time: Any, elements_finished: Any, current_input: Any, emit_ta: Any,
                 state: Any, loop_state: Any) -> tuple[Any, ...]:
            next_output, cell_state = cell(current_input, state)
            assert_same_structure(state, cell_state)
            assert_same_structure(cell.output_size, next_output)
            next_time = time + 1
            (next_finished, next_input, next_state, emit_output,
             next_loop_state) = loop_fn(next_time, next_output, cell_state, loop_state)
            assert_same_structure(state, next_state)
            assert_same_structure(current_input, next_input)
            assert_same_structure(emit_ta, emit_output)
            loop_state = loop_state if next_loop_state is None else next_loop_state

            def copy_some_through(current: Any, candidate: Any) -> Any:
                def one(cur: Any, cand: Any) -> Any:
                    if _is_ta(cur) or cur.shape.ndims == 0:
                        return cand
                    return array_ops.where(elements_finished, cur, cand)

                flat = [one(c, d) for c, d in zip(flatten(current), flatten(candidate))]
                return pack_sequence_as(current, flat)

            emit_output = copy_some_through(zero_emit, emit_output)
            next_state = copy_some_through(state, next_state)
            flat_ta = [ta.write(time, e) for ta, e in zip(flatten(emit_ta), flatten(emit_output))]
            emit_ta = pack_sequence_as(emit_ta, flat_ta)
            elements_finished = math_ops.logical_or(elements_finished, next_finished)
            return (next_time, elements_finished, next_input, emit_ta, next_state, loop_state)

        returned = while_loop(
            condition, body,
            loop_vars=[time, elements_finished, next_input, emit_ta, state, loop_state],
            parallel_iterations=parallel_iterations, swap_memory=swap_memory)
        emit_ta, final_state, final_loop_state = returned[-3:]
        if init_loop_state is None:
            final_loop_state = None
        return emit_ta, final_state, final_loop_state
