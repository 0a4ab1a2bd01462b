"""Recurrent networks over time: `static_rnn` (unrolled) and `dynamic_rnn` (a loop).

`static_rnn` calls the cell once per time step while building the graph: T copies of
the cell's ops, sharing its variables.  `dynamic_rnn` builds the cell once, inside a
`while_loop` over time (paper section 3.4): the inputs are unstacked into a
TensorArray, each iteration reads its step and writes its output into another
TensorArray, which is stacked after the loop.  The graph stays the same size for any
sequence length; backpropagation through time comes from the loop's gradient.

With `sequence_length`, both follow TensorFlow: at step t a batch entry whose length
is <= t gets a zero output and keeps its previous state (`where(t >= length, old,
new)`), and the dynamic loop stops after the longest sequence (the remaining outputs
are zeros).  TensorFlow's `static_rnn` also skips the cell with `cond` when every
sequence has ended; the values are the same either way, so this one always selects.

Variable scopes are TensorFlow's: "rnn" unless `scope` is given, the cell's own name
below it ("rnn/basic_lstm_cell/kernel").
"""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.nn.rnn_cell import RNNCell, _flat, _map_structure, _size_dims
from flowlab.ops import array_ops, math_ops
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.constant_op import constant
from flowlab.ops.core_ops import identity
from flowlab.ops.tensor_array_ops import TensorArray
from flowlab.ops.variable_scope import variable_scope

__all__ = ["static_rnn", "dynamic_rnn", "bidirectional_dynamic_rnn"]


def _pack_as(structure: Any, flat: list[Any]) -> Any:
    it = iter(flat)
    return _map_structure(lambda _: next(it), structure)


def _check_cell(cell: Any) -> None:
    for attr in ("output_size", "state_size", "zero_state"):
        if not hasattr(cell, attr):
            raise TypeError(f"The argument 'cell' ({cell}) is not an RNNCell: '{attr}' property "
                            "is missing.")
    if not callable(cell):
        raise TypeError(f"The argument 'cell' ({cell}) is not an RNNCell: not callable.")


def _build_cell(cell: Any, depth: Any, dtype: Any) -> None:
    """Create the cell's variables now, in the current scope, outside any loop."""
    if isinstance(cell, RNNCell) and not cell.built and depth is not None:
        cell.build_for(int(depth), dtype)


def _infer_state_dtype(dtype: Any, state: Any) -> dtypes.DType:
    if dtype is not None:
        return dtypes.as_dtype(dtype)
    leaves = _flat(state)
    if not leaves:
        raise ValueError("Unable to infer dtype from empty state.")
    return leaves[0].dtype.base_dtype


def _zero_output(cell: Any, batch_size: Any, dtype: dtypes.DType) -> Any:
    def zeros(size: Any) -> Tensor:
        dims = _size_dims(size)
        if isinstance(batch_size, Tensor):
            shape = array_ops.stack([batch_size, *dims])
            z = array_ops.zeros(shape, dtype)
            z.set_shape([None, *dims])
            return z
        return array_ops.zeros([int(batch_size), *dims], dtype)

    return _map_structure(zeros, cell.output_size)


def _copy_some_through(copy_cond: Tensor, zero_output: list[Any], state: list[Any],
                       new_output: list[Any], new_state: list[Any]) -> list[Any]:
    """Outputs past a sequence's end are zeros; its state is carried through."""

    def one(old: Any, new: Any) -> Any:
        if new.shape.ndims == 0:
            return new
        return array_ops.where(copy_cond, old, new)

    outs = [one(z, n) for z, n in zip(zero_output, new_output)]
    states = [one(s, n) for s, n in zip(state, new_state)]
    for o, z in zip(outs, zero_output):
        o.set_shape(z.shape)
    return outs + states


def _rnn_step(time: Any, sequence_length: Tensor, zero_output: Any, state: Any,
              call_cell: Any) -> tuple[Any, Any]:
    flat_state, flat_zero = _flat(state), _flat(zero_output)
    copy_cond = time >= sequence_length
    new_output, new_state = call_cell()
    flat_new_output, flat_new_state = _flat(new_output), _flat(new_state)
    if len(flat_new_state) != len(flat_state):
        raise ValueError("The cell's new state does not have the structure of its state.")
    both = _copy_some_through(copy_cond, flat_zero, flat_state, flat_new_output, flat_new_state)
    out = both[: len(flat_zero)]
    st = both[len(flat_zero):]
    return _pack_as(new_output, out), _pack_as(new_state, st)


def _batch_size(flat_input: list[Tensor], batch_axis: int) -> Any:
    for x in flat_input:
        d = x.shape.with_rank_at_least(batch_axis + 1)[batch_axis].value if x.shape.ndims is not None else None
        if d is not None:
            return d
    return array_ops.shape(flat_input[0])[batch_axis]


def _initial_state(cell: Any, initial_state: Any, batch_size: Any, dtype: Any) -> Any:
    if initial_state is not None:
        return initial_state
    if not dtype:
        raise ValueError("If there is no initial_state, you must give a dtype.")
    return cell.zero_state(batch_size, dtype)


def static_rnn(cell: Any, inputs: Any, initial_state: Any = None, dtype: Any = None,
               sequence_length: Any = None, scope: Any = None) -> tuple[list[Any], Any]:
    """The cell unrolled over a Python list of `inputs` ([batch, depth] each).

    Args:
      cell: an RNNCell.
      inputs: a list of T tensors (or nested structures of tensors) of shape [batch, depth].
      initial_state: the first state (default: `cell.zero_state(batch, dtype)`).
      dtype: the state's dtype when there is no `initial_state`.
      sequence_length: int vector [batch]: each entry's length.
      scope: the variable scope (default "rnn").
    Returns:
      (outputs, state): the list of T outputs and the final state.
    Raises:
      TypeError: `cell` is not a cell or `inputs` not a sequence.
      ValueError: empty `inputs`, no dtype and no initial state, a bad sequence_length.
    """
    _check_cell(cell)
    if not isinstance(inputs, (list, tuple)):
        raise TypeError("inputs must be a sequence")
    if not inputs:
        raise ValueError("inputs must not be empty")
    outputs: list[Any] = []
    with variable_scope(scope or "rnn") as varscope:
        first = [convert_to_tensor(x) for x in _flat(inputs[0])]
        for x in first:
            if x.shape.ndims is not None:
                x.shape.with_rank_at_least(2)
                if x.shape[1:].num_elements() is None:
                    raise ValueError("Input size (dimension 1 of inputs) must be accessible via "
                                     "shape inference, but saw value None.")
        batch_size = _batch_size(first, 0)
        state = _initial_state(cell, initial_state, batch_size, dtype)
        if sequence_length is not None:
            sequence_length = convert_to_tensor(sequence_length, name="sequence_length")
            if sequence_length.shape.ndims not in (None, 1):
                raise ValueError("sequence_length must be a vector of length batch_size")
            zero_output = _zero_output(cell, batch_size, _infer_state_dtype(dtype, state))
            sequence_length = math_ops.cast(sequence_length, dtypes.int32)
        for time, input_ in enumerate(inputs):
            if time > 0:
                varscope.reuse_variables()

            def call_cell(input_: Any = input_, state: Any = state) -> Any:
                return cell(input_, state)

            if sequence_length is not None:
                output, state = _rnn_step(time, sequence_length, zero_output, state, call_cell)
            else:
                output, state = call_cell()
            outputs.append(output)
        return outputs, state


def _transpose_batch_time(x: Tensor) -> Tensor:
    """[batch, time, ...] <-> [time, batch, ...]."""
    s = x.shape
    if s.ndims is not None and s.ndims < 2:
        raise ValueError(f"Expected input tensor {x} to have rank at least 2, but saw shape: {s}")
    if s.ndims is not None:
        perm = [1, 0, *range(2, s.ndims)]
        return array_ops.transpose(x, perm)
    rank = array_ops.rank(x)
    perm = array_ops.concat([[1, 0], math_ops.range(2, rank)], 0)
    y = array_ops.transpose(x, perm)
    return y


def dynamic_rnn(cell: Any, inputs: Any, sequence_length: Any = None, initial_state: Any = None,
                dtype: Any = None, parallel_iterations: int | None = None,
                swap_memory: bool = False, time_major: bool = False,
                scope: Any = None) -> tuple[Any, Any]:
    """The cell run over time inside a `while_loop` (`tf.nn.dynamic_rnn`).

    Args:
      cell: an RNNCell.
      inputs: [batch, time, depth] (or [time, batch, depth] with `time_major`), or a
        nested structure of such tensors.
      sequence_length: int vector [batch]: each entry's length; outputs past it are
        zeros and its state is carried through.
      initial_state: the first state (default: zeros of `dtype`).
      dtype: the state's dtype when there is no `initial_state`.
      parallel_iterations: iterations that may run at once (default 32).
      swap_memory: accepted.
      time_major: whether inputs and outputs are [time, batch, ...].
      scope: the variable scope (default "rnn").
    Returns:
      (outputs, state): outputs [batch, time, output_size] (time-major if asked) and
      the final state.
    Raises:
      ValueError: no dtype and no initial state, unknown input depth, a bad
        sequence_length.
    """
    from flowlab.ops.while_loop import while_loop

    _check_cell(cell)
    with variable_scope(scope or "rnn"):
        flat_input = [convert_to_tensor(x) for x in _flat(inputs)]
        if not time_major:
            flat_input = [_transpose_batch_time(x) for x in flat_input]
        parallel_iterations = parallel_iterations or 32
        if sequence_length is not None:
            sequence_length = math_ops.cast(sequence_length, dtypes.int32)
            if sequence_length.shape.ndims not in (None, 1):
                raise ValueError("sequence_length must be a vector of length batch_size, but saw "
                                 f"shape: {sequence_length.shape}")
            sequence_length = identity(sequence_length, name="sequence_length")
        batch_size = _batch_size(flat_input, 1)
        state = _initial_state(cell, initial_state, batch_size, dtype)
        for x in flat_input:
            if x.shape.ndims is not None:
                x.shape.with_rank_at_least(3)
        depth = flat_input[0].shape[2].value if flat_input[0].shape.ndims is not None else None
        _build_cell(cell, depth, flat_input[0].dtype.base_dtype)
        outputs, final_state = _dynamic_rnn_loop(
            cell, flat_input, inputs, state, parallel_iterations, swap_memory, sequence_length,
            dtype, while_loop)
        if not time_major:
            outputs = _map_structure(_transpose_batch_time, outputs)
        return outputs, final_state


def _dynamic_rnn_loop(cell: Any, flat_input: list[Tensor], inputs: Any, state: Any,
                      parallel_iterations: int, swap_memory: bool, sequence_length: Any,
                      dtype: Any, while_loop: Any) -> tuple[Any, Any]:
    flat_output_size = _flat(cell.output_size)
    time_steps = array_ops.shape(flat_input[0])[0]
    batch_size = _batch_size(flat_input, 1)
    got_shapes = [x.shape.with_rank_at_least(3) if x.shape.ndims is not None else TensorShape(None)
                  for x in flat_input]
    for s in got_shapes:
        if s.ndims is None or not s[2:].is_fully_defined():
            raise ValueError("Input size (depth of inputs) must be accessible via shape inference,"
                             " but saw value None.")
    const_time_steps, const_batch = got_shapes[0].as_list()[:2]
    state_dtype = _infer_state_dtype(dtype, state)
    zero_output = _zero_output(cell, batch_size, state_dtype)
    if sequence_length is not None:
        max_sequence_length = math_ops.reduce_max(sequence_length)
    else:
        max_sequence_length = time_steps
    time = constant(0, dtype=dtypes.int32, name="time")
    with get_default_graph().name_scope("dynamic_rnn") as base_name:
        pass
    output_ta = tuple(
        TensorArray(state_dtype, size=time_steps,
                    element_shape=TensorShape([const_batch]).concatenate(_size_dims(size)),
                    tensor_array_name=f"{base_name}output_{i}")
        for i, size in enumerate(flat_output_size))
    input_ta = tuple(
        TensorArray(x.dtype.base_dtype, size=time_steps, element_shape=x.shape[1:],
                    tensor_array_name=f"{base_name}input_{i}").unstack(x)
        for i, x in enumerate(flat_input))

    def time_step(time: Tensor, output_ta_t: Any, state: Any) -> Any:
        input_t = [ta.read(time) for ta in input_ta]
        for x, s in zip(input_t, got_shapes):
            x.set_shape(s[1:])
        input_t = _pack_as(inputs, input_t)

        def call_cell() -> Any:
            return cell(input_t, state)

        if sequence_length is not None:
            output, new_state = _rnn_step(time, sequence_length, zero_output, state, call_cell)
        else:
            output, new_state = call_cell()
        out_flat = _flat(output)
        output_ta_t = tuple(ta.write(time, o) for ta, o in zip(output_ta_t, out_flat))
        return time + 1, output_ta_t, new_state

    loop_bound = math_ops.minimum(time_steps, math_ops.maximum(1, max_sequence_length))
    _, output_final_ta, final_state = while_loop(
        lambda time, *_: time < loop_bound, time_step, (time, output_ta, state),
        parallel_iterations=parallel_iterations, maximum_iterations=time_steps,
        swap_memory=swap_memory)
    final_outputs = []
    for ta, size in zip(output_final_ta, flat_output_size):
        out = ta.stack()
        out.set_shape(TensorShape([const_time_steps, const_batch]).concatenate(_size_dims(size)))
        final_outputs.append(out)
    return _pack_as(cell.output_size, final_outputs), final_state


def _reverse_sequence(x: Tensor, lengths: Any, time_major: bool) -> Tensor:
    """Each batch entry's first `length` steps reversed, the rest kept (TensorFlow's
    ReverseSequence; a plain reverse when there are no lengths)."""
    from flowlab.ops.sequence_ops import reverse_sequence

    seq_axis, batch_axis = (0, 1) if time_major else (1, 0)
    if lengths is None:
        return array_ops.reverse(x, [seq_axis])
    return reverse_sequence(x, lengths, seq_axis=seq_axis, batch_axis=batch_axis)


def bidirectional_dynamic_rnn(cell_fw: Any, cell_bw: Any, inputs: Any, sequence_length: Any = None,
                              initial_state_fw: Any = None, initial_state_bw: Any = None,
                              dtype: Any = None, parallel_iterations: int | None = None,
                              swap_memory: bool = False, time_major: bool = False,
                              scope: Any = None) -> tuple[Any, Any]:
    """A forward and a backward `dynamic_rnn` over the same inputs
    (`tf.nn.bidirectional_dynamic_rnn`); the backward one reads each sequence reversed
    within its length, and its outputs are reversed back.

    Returns:
      ((output_fw, output_bw), (state_fw, state_bw)).
    """
    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            output_fw, state_fw = dynamic_rnn(
                cell_fw, inputs, sequence_length, initial_state_fw, dtype, parallel_iterations,
                swap_memory, time_major, scope=fw_scope)
        with variable_scope("bw") as bw_scope:
            reversed_inputs = _map_structure(
                lambda x: _reverse_sequence(convert_to_tensor(x), sequence_length, time_major), inputs)
            tmp, state_bw = dynamic_rnn(
                cell_bw, reversed_inputs, sequence_length, initial_state_bw, dtype,
                parallel_iterations, swap_memory, time_major, scope=bw_scope)
    output_bw = _map_structure(lambda x: _reverse_sequence(x, sequence_length, time_major), tmp)
    return (output_fw, output_bw), (state_fw, state_bw)
