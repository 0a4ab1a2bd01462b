"""RNN cells (`tf.nn.rnn_cell`): one time step of a recurrent network, built from ops.

A cell maps `(inputs [batch, depth], state)` to `(output, new_state)`.  It creates its
variables on the first call, inside a variable scope named after the cell
("basic_lstm_cell", "lstm_cell", "gru_cell", "basic_rnn_cell", made unique like a
`tf.layers` layer) under the scope where it is first called, and reuses them on every
later call.  So `dynamic_rnn(BasicLSTMCell(8), x, dtype=tf.float32)` owns
`rnn/basic_lstm_cell/kernel` and `rnn/basic_lstm_cell/bias`, as in TensorFlow, and a
checkpoint or a variable list written by one loads into the other.

The arithmetic is TensorFlow 1.x's, op for op (concat([inputs, h]) @ kernel + bias, the
gates split in the order i, j, f, o for LSTMs and r, u for GRUs, the forget bias added
before the sigmoid), so that results agree to float rounding.

`build_for(input_depth, dtype)` may be called ahead of the first step; `dynamic_rnn`
does so, so that variables are created outside its while loop.  A subclass either
implements `_create_variables(depth, dtype)` or, as in TensorFlow, overrides
`build(inputs_shape)` and calls `add_variable`.
"""

from __future__ import annotations

import collections
import hashlib
import re
from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor import Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops import array_ops, math_ops, nn_ops, slicing
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.constant_op import constant
from flowlab.ops.init_ops import constant_initializer, zeros_initializer
from flowlab.ops.variable_scope import get_variable, variable_scope

__all__ = [
    "RNNCell", "BasicRNNCell", "GRUCell", "BasicLSTMCell", "LSTMCell", "LSTMStateTuple",
    "MultiRNNCell", "DropoutWrapper", "ResidualWrapper",
]


class LSTMStateTuple(collections.namedtuple("LSTMStateTuple", ("c", "h"))):
    """The state of an LSTM: the cell `c` and the hidden/output `h`."""

    __slots__ = ()

    @property
    def dtype(self) -> Any:
        c, h = self
        if c.dtype != h.dtype:
            raise TypeError(f"Inconsistent internal state: {c.dtype} vs {h.dtype}")
        return c.dtype


def _snake(name: str) -> str:
    s = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower().replace("l_s_t_m", "lstm")


def _map_structure(fn: Any, s: Any) -> Any:
    if isinstance(s, tuple) and hasattr(s, "_fields"):
        return type(s)(*[_map_structure(fn, v) for v in s])
    if isinstance(s, (list, tuple)):
        return type(s)(_map_structure(fn, v) for v in s)
    return fn(s)


def _flat(s: Any) -> list[Any]:
    if isinstance(s, (list, tuple)):
        return [x for v in s for x in _flat(v)]
    return [s]


def _size_dims(s: Any) -> list[int | None]:
    return TensorShape(s).as_list() if isinstance(s, (list, tuple, TensorShape)) else [s]


def _zeros(batch_size: Any, size: Any, dtype: Any) -> Tensor:
    dims = _size_dims(size)
    if isinstance(batch_size, Tensor):
        shape = array_ops.concat([array_ops.expand_dims(batch_size, 0),
                                  constant(dims, dtypes.int32)], 0)
        z = array_ops.zeros(shape, dtype=dtype)
        z.set_shape([None, *dims])
        return z
    return array_ops.zeros([int(batch_size), *dims], dtype=dtype)


class RNNCell:
    """The abstract cell: `(output, new_state) = cell(inputs, state)`.

    Subclasses set `state_size`, `output_size`, implement `_create_variables(depth,
    dtype)` (called inside the cell's variable scope) and `call(inputs, state)`.
    """

    def __init__(self, trainable: bool = True, name: str | None = None, dtype: Any = None,
                 reuse: Any = None, **kwargs: Any) -> None:
        self._reuse = kwargs.pop("_reuse", reuse)
        self._base_name = name or _snake(type(self).__name__)
        self._dtype = None if dtype is None else dtypes.as_dtype(dtype)
        self._scope: Any = None
        self.built = False

    @property
    def state_size(self) -> Any:
        raise NotImplementedError

    @property
    def output_size(self) -> Any:
        raise NotImplementedError

    @property
    def name(self) -> str:
        return self._scope.name.split("/")[-1] if self._scope is not None else self._base_name

    @property
    def variables(self) -> list[Any]:
        return list(getattr(self, "_variables", []))

    trainable_variables = trainable_weights = weights = variables

    def _set_scope(self, scope: Any = None) -> None:
        if self._scope is not None:
            return
        if self._reuse:
            with variable_scope(scope if scope is not None else self._base_name) as s:
                self._scope = s
        else:
            with variable_scope(scope, default_name=self._base_name) as s:
                self._scope = s

    def build_for(self, input_depth: int, dtype: Any = dtypes.float32) -> None:
        """Create the variables for inputs of `input_depth` features, once, in the
        cell's variable scope and outside any loop or branch being built (TensorFlow's
        init_scope); then call `build(inputs_shape)`."""
        if self.built:
            return
        self._set_scope()
        self._build_dtype = self._dtype or dtypes.as_dtype(dtype)
        with variable_scope(self._scope, reuse=self._reuse, auxiliary_name_scope=False):
            with get_default_graph().control_dependencies(None):
                self.build(TensorShape([None, int(input_depth)]))
        self.built = True

    def build(self, inputs_shape: Any) -> None:
        """Create the variables (TensorFlow's Layer.build; subclasses may override it
        and call `add_variable`)."""
        depth = TensorShape(inputs_shape)[-1].value
        self._variables = [*self.variables, *self._create_variables(int(depth), self._build_dtype)]

    def add_variable(self, name: str, shape: Any, dtype: Any = None, initializer: Any = None,
                     trainable: bool = True, **kwargs: Any) -> Any:
        """A variable of this cell (`Layer.add_weight`), in its scope."""
        v = get_variable(name, shape, dtype=dtype or getattr(self, "_build_dtype", dtypes.float32),
                         initializer=initializer, trainable=trainable)
        self._variables = [*self.variables, v]
        return v

    add_weight = add_variable

    def _create_variables(self, depth: int, dtype: dtypes.DType) -> list[Any]:
        return []

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> Any:
        inputs = convert_to_tensor(inputs)
        if scope is not None and self._scope is None:
            self._set_scope(scope)
        if not self.built:
            depth = inputs.shape.with_rank(2)[1].value
            if depth is None:
                raise ValueError(
                    f"The last dimension of the inputs to `{type(self).__name__}` should be "
                    f"defined. Found `None`.")
            self.build_for(depth, inputs.dtype.base_dtype)
        with variable_scope(self._scope, reuse=True, auxiliary_name_scope=False):
            with get_default_graph().name_scope(self._base_name):
                return self.call(inputs, state)

    def call(self, inputs: Tensor, state: Any) -> Any:
        raise NotImplementedError

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        """Zeros of the state's structure: [batch_size, size] per leaf."""
        with get_default_graph().name_scope(type(self).__name__ + "ZeroState"):
            return _map_structure(lambda s: _zeros(batch_size, s, dtype), self.state_size)

    def get_initial_state(self, inputs: Any = None, batch_size: Any = None, dtype: Any = None) -> Any:
        if inputs is not None:
            inputs = convert_to_tensor(inputs)
            batch_size = inputs.shape[0].value
            if batch_size is None:
                batch_size = array_ops.shape(inputs)[0]
            dtype = dtype or inputs.dtype
        return self.zero_state(batch_size, dtype)


def _weight(name: str, shape: list[int], dtype: Any, initializer: Any = None) -> Any:
    return get_variable(name, shape, dtype=dtype, initializer=initializer)


def _activation(fn: Any) -> Any:
    return math_ops.tanh if fn is None else fn


class BasicRNNCell(RNNCell):
    """`output = new_state = activation(concat([inputs, state]) @ kernel + bias)`."""

    def __init__(self, num_units: int, activation: Any = None, reuse: Any = None,
                 name: str | None = None, dtype: Any = None, **kwargs: Any) -> None:
        super().__init__(name=name, dtype=dtype, reuse=reuse)
        self._num_units = int(num_units)
        self._activation = _activation(activation)

    @property
    def state_size(self) -> int:
        return self._num_units

    @property
    def output_size(self) -> int:
        return self._num_units

    def _create_variables(self, depth: int, dtype: dtypes.DType) -> list[Any]:
        self._kernel = _weight("kernel", [depth + self._num_units, self._num_units], dtype)
        self._bias = _weight("bias", [self._num_units], dtype, zeros_initializer())
        return [self._kernel, self._bias]

    def call(self, inputs: Tensor, state: Any) -> Any:
        gate_inputs = math_ops.matmul(array_ops.concat([inputs, state], 1), self._kernel)
        output = self._activation(nn_ops.bias_add(gate_inputs, self._bias))
        return output, output


class GRUCell(RNNCell):
    """Gated recurrent unit (Cho et al. 2014), TensorFlow's variant: reset gate `r`,
    update gate `u`, `new_h = u * h + (1 - u) * tanh([x, r * h] @ W + b)`."""

    def __init__(self, num_units: int, activation: Any = None, reuse: Any = None,
                 kernel_initializer: Any = None, bias_initializer: Any = None,
                 name: str | None = None, dtype: Any = None, **kwargs: Any) -> None:
        super().__init__(name=name, dtype=dtype, reuse=reuse)
        self._num_units = int(num_units)
        self._activation = _activation(activation)
        self._kernel_initializer = kernel_initializer
        self._bias_initializer = bias_initializer

    @property
    def state_size(self) -> int:
        return self._num_units

    @property
    def output_size(self) -> int:
        return self._num_units

    def _create_variables(self, depth: int, dtype: dtypes.DType) -> list[Any]:
        n = self._num_units
        bias_init = self._bias_initializer
        with variable_scope("gates"):
            self._gate_kernel = _weight("kernel", [depth + n, 2 * n], dtype, self._kernel_initializer)
            self._gate_bias = _weight("bias", [2 * n], dtype,
                                      bias_init if bias_init is not None else constant_initializer(1.0))
        with variable_scope("candidate"):
            self._candidate_kernel = _weight("kernel", [depth + n, n], dtype, self._kernel_initializer)
            self._candidate_bias = _weight("bias", [n], dtype,
                                           bias_init if bias_init is not None else zeros_initializer())
        return [self._gate_kernel, self._gate_bias, self._candidate_kernel, self._candidate_bias]

    def call(self, inputs: Tensor, state: Any) -> Any:
        gate_inputs = math_ops.matmul(array_ops.concat([inputs, state], 1), self._gate_kernel)
        value = math_ops.sigmoid(nn_ops.bias_add(gate_inputs, self._gate_bias))
        r, u = array_ops.split(value=value, num_or_size_splits=2, axis=1)
        candidate = math_ops.matmul(array_ops.concat([inputs, r * state], 1), self._candidate_kernel)
        c = self._activation(nn_ops.bias_add(candidate, self._candidate_bias))
        new_h = u * state + (1 - u) * c
        return new_h, new_h


class BasicLSTMCell(RNNCell):
    """The LSTM of Zaremba et al. 2014 without peepholes or projection; `forget_bias`
    is added to the forget gate before its sigmoid."""

    def __init__(self, num_units: int, forget_bias: float = 1.0, state_is_tuple: bool = True,
                 activation: Any = None, reuse: Any = None, name: str | None = None,
                 dtype: Any = None, **kwargs: Any) -> None:
        super().__init__(name=name, dtype=dtype, reuse=reuse)
        self._num_units = int(num_units)
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = _activation(activation)

    @property
    def state_size(self) -> Any:
        n = self._num_units
        return LSTMStateTuple(n, n) if self._state_is_tuple else 2 * n

    @property
    def output_size(self) -> int:
        return self._num_units

    def _create_variables(self, depth: int, dtype: dtypes.DType) -> list[Any]:
        n = self._num_units
        self._kernel = _weight("kernel", [depth + n, 4 * n], dtype)
        self._bias = _weight("bias", [4 * n], dtype, zeros_initializer())
        return [self._kernel, self._bias]

    def call(self, inputs: Tensor, state: Any) -> Any:
        one = constant(1, dtype=dtypes.int32)
        if self._state_is_tuple:
            c, h = state
        else:
            c, h = array_ops.split(value=state, num_or_size_splits=2, axis=one)
        gate_inputs = math_ops.matmul(array_ops.concat([inputs, h], 1), self._kernel)
        gate_inputs = nn_ops.bias_add(gate_inputs, self._bias)
        i, j, f, o = array_ops.split(value=gate_inputs, num_or_size_splits=4, axis=one)
        forget_bias = constant(self._forget_bias, dtype=f.dtype)
        sigmoid, add, mul = math_ops.sigmoid, math_ops.add, math_ops.multiply
        new_c = add(mul(c, sigmoid(add(f, forget_bias))), mul(sigmoid(i), self._activation(j)))
        new_h = mul(self._activation(new_c), sigmoid(o))
        new_state = (LSTMStateTuple(new_c, new_h) if self._state_is_tuple
                     else array_ops.concat([new_c, new_h], 1))
        return new_h, new_state


class LSTMCell(RNNCell):
    """The LSTM of Hochreiter & Schmidhuber 1997 with optional peepholes
    (`use_peepholes`), cell clipping (`cell_clip`) and a projection of the output
    (`num_proj`, `proj_clip`), as TensorFlow's `LSTMCell`."""

    def __init__(self, num_units: int, use_peepholes: bool = False, cell_clip: float | None = None,
                 initializer: Any = None, num_proj: int | None = None, proj_clip: float | None = None,
                 num_unit_shards: Any = None, num_proj_shards: Any = None, forget_bias: float = 1.0,
                 state_is_tuple: bool = True, activation: Any = None, reuse: Any = None,
                 name: str | None = None, dtype: Any = None, **kwargs: Any) -> None:
        super().__init__(name=name, dtype=dtype, reuse=reuse)
        self._num_units = int(num_units)
        self._use_peepholes = use_peepholes
        self._cell_clip = cell_clip
        self._initializer = initializer
        self._num_proj = num_proj
        self._proj_clip = proj_clip
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = _activation(activation)

    @property
    def state_size(self) -> Any:
        n, p = self._num_units, self._num_proj or self._num_units
        return LSTMStateTuple(n, p) if self._state_is_tuple else n + p

    @property
    def output_size(self) -> int:
        return self._num_proj or self._num_units

    def _create_variables(self, depth: int, dtype: dtypes.DType) -> list[Any]:
        n = self._num_units
        h_depth = self._num_proj or n
        self._kernel = _weight("kernel", [depth + h_depth, 4 * n], dtype, self._initializer)
        self._bias = _weight("bias", [4 * n], dtype, zeros_initializer())
        made = [self._kernel, self._bias]
        if self._use_peepholes:
            self._w_f_diag = _weight("w_f_diag", [n], dtype, self._initializer)
            self._w_i_diag = _weight("w_i_diag", [n], dtype, self._initializer)
            self._w_o_diag = _weight("w_o_diag", [n], dtype, self._initializer)
            made += [self._w_f_diag, self._w_i_diag, self._w_o_diag]
        if self._num_proj is not None:
            with variable_scope("projection"):
                self._proj_kernel = _weight("kernel", [n, self._num_proj], dtype, self._initializer)
            made.append(self._proj_kernel)
        return made

    def call(self, inputs: Tensor, state: Any) -> Any:
        n = self._num_units
        num_proj = self._num_proj or n
        sigmoid = math_ops.sigmoid
        if self._state_is_tuple:
            c_prev, m_prev = state
        else:
            c_prev = slicing.slice(state, [0, 0], [-1, n])
            m_prev = slicing.slice(state, [0, n], [-1, num_proj])
        lstm_matrix = math_ops.matmul(array_ops.concat([inputs, m_prev], 1), self._kernel)
        lstm_matrix = nn_ops.bias_add(lstm_matrix, self._bias)
        i, j, f, o = array_ops.split(value=lstm_matrix, num_or_size_splits=4, axis=1)
        if self._use_peepholes:
            c = (sigmoid(f + self._forget_bias + self._w_f_diag * c_prev) * c_prev
                 + sigmoid(i + self._w_i_diag * c_prev) * self._activation(j))
        else:
            c = sigmoid(f + self._forget_bias) * c_prev + sigmoid(i) * self._activation(j)
        if self._cell_clip is not None:
            c = math_ops.clip_by_value(c, -self._cell_clip, self._cell_clip)
        if self._use_peepholes:
            m = sigmoid(o + self._w_o_diag * c) * self._activation(c)
        else:
            m = sigmoid(o) * self._activation(c)
        if self._num_proj is not None:
            m = math_ops.matmul(m, self._proj_kernel)
            if self._proj_clip is not None:
                m = math_ops.clip_by_value(m, -self._proj_clip, self._proj_clip)
        new_state = LSTMStateTuple(c, m) if self._state_is_tuple else array_ops.concat([c, m], 1)
        return m, new_state


class MultiRNNCell(RNNCell):
    """Cells stacked: the output of cell i is the input of cell i + 1; the state is the
    tuple of their states.  Cell i's variables live under "cell_i/"."""

    def __init__(self, cells: list[RNNCell], state_is_tuple: bool = True) -> None:
        super().__init__()
        if not cells:
            raise ValueError("Must specify at least one cell for MultiRNNCell.")
        self._cells = list(cells)
        self._state_is_tuple = state_is_tuple

    @property
    def state_size(self) -> Any:
        if self._state_is_tuple:
            return tuple(c.state_size for c in self._cells)
        return sum(_flat_size(c.state_size) for c in self._cells)

    @property
    def output_size(self) -> Any:
        return self._cells[-1].output_size

    @property
    def variables(self) -> list[Any]:
        return [v for c in self._cells for v in c.variables]

    def _create_variables(self, depth: int, dtype: dtypes.DType) -> list[Any]:
        for i, cell in enumerate(self._cells):
            with variable_scope(f"cell_{i}"):
                cell.build_for(depth, dtype)
            depth = _flat_size(cell.output_size)
        return []

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        with get_default_graph().name_scope(type(self).__name__ + "ZeroState"):
            if self._state_is_tuple:
                return tuple(c.zero_state(batch_size, dtype) for c in self._cells)
            return _zeros(batch_size, self.state_size, dtype)

    def call(self, inputs: Tensor, state: Any) -> Any:
        cur_inp = inputs
        new_states = []
        start = 0
        for i, cell in enumerate(self._cells):
            with variable_scope(f"cell_{i}"):
                if self._state_is_tuple:
                    cur_state = state[i]
                else:
                    size = _flat_size(cell.state_size)
                    cur_state = slicing.slice(state, [0, start], [-1, size])
                    start += size
                cur_inp, new_state = cell(cur_inp, cur_state)
                new_states.append(new_state)
        if self._state_is_tuple:
            return cur_inp, tuple(new_states)
        return cur_inp, array_ops.concat(new_states, 1)


def _flat_size(size: Any) -> int:
    return sum(int(s) for s in _flat(size))


class _Wrapper(RNNCell):
    """A cell around another: same sizes, state and variables (no scope of its own,
    as TensorFlow's v1 wrappers)."""

    def __init__(self, cell: RNNCell) -> None:
        super().__init__()
        self.cell = cell

    @property
    def state_size(self) -> Any:
        return self.cell.state_size

    @property
    def output_size(self) -> Any:
        return self.cell.output_size

    @property
    def variables(self) -> list[Any]:
        return self.cell.variables

    @property
    def built(self) -> bool:  # type: ignore[override]
        return getattr(self.cell, "built", True)

    @built.setter
    def built(self, value: bool) -> None:
        pass

    def build_for(self, input_depth: int, dtype: Any = dtypes.float32) -> None:
        if isinstance(self.cell, RNNCell):
            self.cell.build_for(input_depth, dtype)

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        return self.cell.zero_state(batch_size, dtype)


class DropoutWrapper(_Wrapper):
    """Dropout on a cell's inputs, outputs and (new) state, with keep probabilities;
    a probability of exactly 1.0 (a Python number) adds no op, as in TensorFlow."""

    def __init__(self, cell: RNNCell, input_keep_prob: Any = 1.0, output_keep_prob: Any = 1.0,
                 state_keep_prob: Any = 1.0, variational_recurrent: bool = False,
                 input_size: Any = None, dtype: Any = None, seed: int | None = None,
                 dropout_state_filter_visitor: Any = None) -> None:
        super().__init__(cell)
        if variational_recurrent:
            raise NotImplementedError("DropoutWrapper(variational_recurrent=True) is not supported")
        for name, p in (("input", input_keep_prob), ("output", output_keep_prob),
                        ("state", state_keep_prob)):
            if isinstance(p, (int, float)) and not 0.0 < p <= 1.0:
                raise ValueError(f"Parameter {name}_keep_prob must be between 0 and 1: {p}")
        self._input_keep_prob = input_keep_prob
        self._output_keep_prob = output_keep_prob
        self._state_keep_prob = state_keep_prob
        self._seed = seed
        self._state_filter = dropout_state_filter_visitor or _default_dropout_state_filter

    def _gen_seed(self, salt_prefix: str, index: int) -> int | None:
        """TensorFlow's seed for one dropout: md5 of the seed, the salt and the leaf's
        position (so each leaf and each of input/state/output draws its own stream)."""
        if self._seed is None:
            return None
        text = (str(self._seed) + f"{salt_prefix}_{index}").encode("utf-8")
        return int(hashlib.md5(text).hexdigest()[:8], 16) & 0x7FFFFFFF

    def _dropout(self, values: Any, salt_prefix: str, keep_prob: Any, flags: list[bool] | None = None) -> Any:
        from flowlab.ops.nn_impl import dropout

        leaves = _flat(values)
        flags = [True] * len(leaves) if flags is None else flags
        out = iter([dropout(v, rate=1.0 - keep_prob, seed=self._gen_seed(salt_prefix, i)) if do else v
                    for i, (v, do) in enumerate(zip(leaves, flags))])
        return _map_structure(lambda _: next(out), values)

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> Any:
        def should(p: Any) -> bool:  # TensorFlow's: anything but a Python float 1.0 adds dropout
            return not isinstance(p, float) or p < 1

        if should(self._input_keep_prob):
            inputs = self._dropout(inputs, "input", self._input_keep_prob)
        output, new_state = self.cell(inputs, state, scope=scope)
        if should(self._state_keep_prob):
            new_state = self._dropout(new_state, "state", self._state_keep_prob,
                                      _state_flags(self._state_filter, new_state))
        if should(self._output_keep_prob):
            output = self._dropout(output, "output", self._output_keep_prob)
        return output, new_state


def _default_dropout_state_filter(substate: Any) -> Any:
    """TensorFlow's default: no dropout on an LSTM's memory `c`, nor on a TensorArray."""
    from flowlab.ops.tensor_array_ops import TensorArray

    if isinstance(substate, LSTMStateTuple):
        return LSTMStateTuple(c=False, h=True)
    return not isinstance(substate, TensorArray)


def _state_flags(visitor: Any, s: Any) -> list[bool]:
    """Per leaf of `s`, whether to drop it out: `visitor` answers for each substructure
    True (go on into it), False (none of it) or a structure of such answers."""
    answer = visitor(s)
    nested = isinstance(s, (list, tuple))
    if isinstance(answer, bool):
        if not answer:
            return [False] * len(_flat(s))
        return [f for child in s for f in _state_flags(visitor, child)] if nested else [True]
    out: list[bool] = []
    for child, a in zip(s, answer):
        out += _state_flags(visitor, child) if a is True else [False] * len(_flat(child)) if a is False \
            else _state_flags(lambda _x, a=a: a, child)
    return out


class ResidualWrapper(_Wrapper):
    """`output = inputs + cell(inputs)` (or `residual_fn(inputs, output)`)."""

    def __init__(self, cell: RNNCell, residual_fn: Any = None) -> None:
        super().__init__(cell)
        self._residual_fn = residual_fn

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> Any:
        output, new_state = self.cell(inputs, state, scope=scope)
        if self._residual_fn is not None:
            return self._residual_fn(inputs, output), new_state
        return _add_structures(inputs, output), new_state


def _add_structures(a: Any, b: Any) -> Any:
    fa, fb = _flat(a), _flat(b)
    it = iter([math_ops.add(x, y) for x, y in zip(fa, fb)])
    return _map_structure(lambda _: next(it), b)
