"""`tf.Variable` (TensorFlow 1.x's reference variable) and the variable collections.

A `Variable` is a handful of graph ops under one name scope, as TensorFlow builds
them (paper section 3.1; white paper section 4.6):

    v/initial_value   the initial value (or v/Initializer/... for a callable)
    v                 VariableV2: the reference (dtype float32_ref)
    v/Assign          the initializer: Assign(v, initial value)
    v/read            Identity(v): the snapshot that `v + 1`, `tf.matmul(x, v)` read

Using a Variable where a tensor is expected reads it (`v.value()`); ops that update
it (`tf.assign`, optimizers) take the reference (`v._ref()`).  Variables join the
GLOBAL_VARIABLES collection (and TRAINABLE_VARIABLES when trainable), which
`global_variables_initializer()` groups into one op named "init".  Values live in the
session, not the graph: each new Session starts with every variable uninitialized.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import Graph, GraphKeys, get_default_graph
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape, as_shape
from flowlab.ops import state_ops
from flowlab.ops.builder import convert_to_tensor, register_tensor_conversion_function
from flowlab.ops.core_ops import group, identity, no_op
from flowlab.ops.slice_spec import SaveSliceInfo

__all__ = [
    "Variable", "VariableAggregation", "VariableSynchronization", "global_variables", "local_variables", "trainable_variables",
    "model_variables", "moving_average_variables", "all_variables",
    "global_variables_initializer", "local_variables_initializer", "variables_initializer",
    "initialize_all_variables", "initialize_variables", "initialize_local_variables",
    "report_uninitialized_variables", "assert_variables_initialized",
    "tables_initializer", "initialize_all_tables",
]

class VariableSynchronization(enum.Enum):
    """When a distributed variable's copies are brought in step (TensorFlow's enum; a
    single-process flowlab variable has one copy, so only ON_READ's default of
    `trainable=False` has an effect)."""

    AUTO = 0
    NONE = 1
    ON_WRITE = 2
    ON_READ = 3


class VariableAggregation(enum.Enum):
    """How a distributed variable's updates are combined (TensorFlow's enum;
    ONLY_FIRST_TOWER is the old name of ONLY_FIRST_REPLICA)."""

    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3
    ONLY_FIRST_TOWER = 3  # noqa: PIE796 - TensorFlow's deprecated alias

    def __hash__(self) -> int:
        return hash(self.value)


def _sync_aggregation_trainable(synchronization: Any, aggregation: Any, trainable: Any,
                                name: Any) -> tuple[VariableSynchronization,
                                                    VariableAggregation, bool]:
    """TensorFlow's defaults and checks of a variable's synchronization, aggregation and
    trainable arguments."""
    if aggregation is None:
        aggregation = VariableAggregation.NONE
    elif not isinstance(aggregation, VariableAggregation):
        try:
            aggregation = VariableAggregation(aggregation)
        except ValueError:
            raise ValueError(f"Invalid variable aggregation mode: {aggregation} for variable: "
                             f"{name}") from None
    if synchronization is None:
        synchronization = VariableSynchronization.AUTO
    else:
        try:
            synchronization = VariableSynchronization(synchronization)
        except ValueError:
            raise ValueError(f"Invalid variable synchronization mode: {synchronization} for "
                             f"variable: {name}") from None
    if trainable is None:
        trainable = synchronization != VariableSynchronization.ON_READ
    return synchronization, aggregation, trainable


# Every operator a Tensor overloads; a Variable applies it to its value.
_OPERATORS = (
    "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__div__",
    "__rdiv__", "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__",
    "__rmod__", "__lt__", "__le__", "__gt__", "__ge__", "__and__", "__rand__", "__or__",
    "__ror__", "__xor__", "__rxor__", "__pow__", "__rpow__", "__invert__", "__neg__",
    "__abs__", "__matmul__", "__rmatmul__", "__getitem__",
)


class Variable:
    """A mutable tensor that persists across `Session.run` calls (TF1 `tf.Variable`).

        v = tf.Variable([1.0, 2.0], name="v")     # v.name == "v:0", dtype float32_ref
        inc = v.assign_add([1.0, 1.0])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(inc)                          # array([2., 3.], dtype=float32)

    `initial_value` is a tensor or anything convertible to one, or a callable that
    builds it (called under "<name>/Initializer").  Resource variables
    (`use_resource=True`) are not supported: flowlab implements TF1's reference
    variables.
    """

    SaveSliceInfo = SaveSliceInfo  # TensorFlow's spelling: tf.Variable.SaveSliceInfo(...)

    # NumPy arrays on the left of an operator defer to the Variable.
    __array_priority__ = 100

    def __init__(
        self,
        initial_value: Any = None,
        trainable: bool | None = None,
        collections: Any = None,
        validate_shape: bool = True,
        caching_device: Any = None,
        name: str | None = None,
        variable_def: Any = None,
        dtype: Any = None,
        expected_shape: Any = None,
        import_scope: str | None = None,
        constraint: Callable[[Tensor], Tensor] | None = None,
        use_resource: bool | None = None,
        synchronization: Any = None,
        aggregation: Any = None,
        shape: Any = None,
    ) -> None:
        del expected_shape, import_scope  # accepted, unused (as TF1)
        self._synchronization, self._aggregation, trainable = _sync_aggregation_trainable(
            synchronization, aggregation, trainable, name)
        if use_resource:
            raise NotImplementedError(
                "Resource variables (use_resource=True) are not supported by flowlab; it "
                "implements TensorFlow 1.x reference variables. Leave use_resource unset."
            )
        if variable_def is not None:
            raise NotImplementedError("Variable(variable_def=...) (from_proto) is not supported.")
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        if collections is None:
            collections = [GraphKeys.GLOBAL_VARIABLES]
        if not isinstance(collections, (list, tuple, set)):
            raise ValueError(
                "collections argument to Variable constructor must be a list, tuple, or "
                f"set. Got {collections} of type {type(collections)}"
            )
        if constraint is not None and not callable(constraint):
            raise ValueError("The `constraint` argument must be a callable.")
        if trainable is None:
            trainable = True
        if trainable and GraphKeys.TRAINABLE_VARIABLES not in collections:
            collections = list(collections) + [GraphKeys.TRAINABLE_VARIABLES]
        self._trainable = bool(trainable)
        self._constraint = constraint
        self._caching_device = caching_device
        self._save_slice_info: Any = None
        dt = None if dtype is None else dtypes.as_dtype(dtype)
        g = initial_value.graph if isinstance(initial_value, Tensor) else get_default_graph()
        with g.as_default(), _init_scope(g):
            self._build(g, initial_value, dt, validate_shape, caching_device, name, shape)
        g.add_to_collections(collections, self)

    def _build(
        self, g: Graph, initial_value: Any, dtype: dtypes.DType | None, validate_shape: bool,
        caching_device: Any, name: str | None, shape: Any,
    ) -> None:
        with g.name_scope(name or "Variable") as scope:
            if callable(initial_value):
                # device(None) and colocated with the variable (by name: it does not exist
                # yet), as TensorFlow's `loc:@<name>` attr scope does: the initializer runs
                # where the variable lives, so a ps task's table is never built elsewhere
                # and sent over.
                first_new = len(g.get_operations())
                with g.name_scope("Initializer"), g.device(None):
                    value = initial_value()
                    self._initial_value = convert_to_tensor(value, dtype=dtype, name="initial_value")
                for op in g.get_operations()[first_new:]:
                    if not op._colocation:
                        op._colocation = (scope.rstrip("/"),)
            else:
                self._initial_value = convert_to_tensor(initial_value, dtype=dtype, name="initial_value")
            iv = self._initial_value
            if shape is not None:
                var_shape = as_shape(shape)
            else:
                var_shape = iv.shape if validate_shape else TensorShape(None)
            if validate_shape and not iv.shape.is_fully_defined():
                raise ValueError(
                    f'initial_value must have a shape specified: Tensor("{iv.name}", '
                    f"dtype={iv.dtype.name})"
                )
            self._variable = state_ops.variable_op_v2(var_shape, iv.dtype.base_dtype, name=scope)
            self._initializer_op = state_ops.assign(
                self._variable, iv, validate_shape=validate_shape
            ).op
            if caching_device is not None:
                with g.device(caching_device):
                    self._snapshot = identity(self._variable, name="read")
            else:
                with g.colocate_with(self._variable.op):
                    self._snapshot = identity(self._variable, name="read")

    # --- what it is ---------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._variable.name

    @property
    def synchronization(self) -> VariableSynchronization:
        return self._synchronization

    @property
    def aggregation(self) -> VariableAggregation:
        return self._aggregation

    @property
    def _shared_name(self) -> str:
        return self._variable.op.name

    @property
    def op(self) -> Operation:
        return self._variable.op

    @property
    def dtype(self) -> dtypes.DType:
        return self._variable.dtype

    @property
    def shape(self) -> TensorShape:
        return self._variable.shape

    def get_shape(self) -> TensorShape:
        return self._variable.shape

    def set_shape(self, shape: Any) -> None:
        self._variable.set_shape(shape)
        self._snapshot.set_shape(shape)

    @property
    def graph(self) -> Graph:
        return self._variable.graph

    @property
    def device(self) -> str:
        return self._variable.device

    @property
    def initializer(self) -> Operation:
        return self._initializer_op

    @property
    def initial_value(self) -> Tensor:
        return self._initial_value

    @property
    def constraint(self) -> Callable[[Tensor], Tensor] | None:
        return self._constraint

    @property
    def trainable(self) -> bool:
        return self._trainable

    def _as_graph_element(self) -> Tensor:
        return self._variable

    def _ref(self) -> Tensor:
        """The reference tensor (the VariableV2 output): what update ops take."""
        return self._variable

    def value(self) -> Tensor:
        """The snapshot tensor `<name>/read` that reads the current value."""
        return self._snapshot

    def read_value(self) -> Tensor:
        """A new Identity op (named "read" in the current scope) reading the value."""
        return identity(self._variable, name="read")

    def _get_save_slice_info(self) -> Any:
        return self._save_slice_info

    def _set_save_slice_info(self, info: Any) -> None:
        self._save_slice_info = info

    def ref(self) -> _Reference:
        """A hashable handle to this variable (for use as a dict key)."""
        return _Reference(self)

    experimental_ref = ref

    # --- running ------------------------------------------------------------------
    def eval(self, session: Any = None) -> Any:
        """The variable's value in `session` (default: the default session)."""
        return self._variable.eval(session=session)

    def load(self, value: Any, session: Any = None) -> None:
        """Write `value` into the variable by running its initializer with the
        initial value fed; adds no ops to the graph."""
        # Operation.run finds the default session (the runtime installs that hook).
        try:
            self._initializer_op.run({self._initializer_op.inputs[1]: value}, session)
        except ValueError as e:
            if session is None and "No default session" in str(e):
                raise ValueError(
                    "Either session argument should be provided or default session should be "
                    "established"
                ) from None
            raise

    def initialized_value(self) -> Tensor:
        """The value after the initializer has run, for initializing another variable
        from this one.  (TensorFlow returns `cond(is_initialized, read, initial_value)`;
        without a cond it is the value read after the initializer, which re-runs the
        initializer whenever it is evaluated.)"""
        g = self.graph
        with g.as_default(), _init_scope(g):
            try:
                from flowlab.ops.cond import cond
            except ImportError:
                cond = None
            if cond is not None:
                return cond(self.is_initialized(), self.read_value, lambda: self._initial_value)
            with g.control_dependencies([self._initializer_op]):
                return identity(self._variable, name="initialized_value")

    def is_initialized(self, name: str | None = None) -> Tensor:
        return state_ops.is_variable_initialized(self._variable, name=name)

    # --- updates ------------------------------------------------------------------
    def assign(self, value: Any, use_locking: bool = False, name: str | None = None,
               read_value: bool = True) -> Any:
        """`self = value`: the new value's tensor, or the op when `read_value=False`."""
        t = state_ops.assign(self._variable, value, use_locking=use_locking, name=name)
        return t if read_value else t.op

    def assign_add(self, delta: Any, use_locking: bool = False, name: str | None = None,
                   read_value: bool = True) -> Any:
        t = state_ops.assign_add(self._variable, delta, use_locking=use_locking, name=name)
        return t if read_value else t.op

    def assign_sub(self, delta: Any, use_locking: bool = False, name: str | None = None,
                   read_value: bool = True) -> Any:
        t = state_ops.assign_sub(self._variable, delta, use_locking=use_locking, name=name)
        return t if read_value else t.op

    def _scatter(self, fn: Callable[..., Tensor], sparse_delta: Any, use_locking: bool, name: str | None) -> Tensor:
        if hasattr(sparse_delta, "indices") and hasattr(sparse_delta, "values"):
            indices, values = sparse_delta.indices, sparse_delta.values
        elif isinstance(sparse_delta, tuple) and len(sparse_delta) == 2:
            indices, values = sparse_delta
        else:
            raise TypeError(f"sparse_delta is not IndexedSlices: {sparse_delta!r}")
        return fn(self._variable, indices, values, use_locking=use_locking, name=name)

    def scatter_update(self, sparse_delta: Any, use_locking: bool = False, name: str | None = None) -> Tensor:
        """Rows `sparse_delta.indices` = `sparse_delta.values` (IndexedSlices, or an
        `(indices, values)` pair)."""
        return self._scatter(state_ops.scatter_update, sparse_delta, use_locking, name)

    def scatter_add(self, sparse_delta: Any, use_locking: bool = False, name: str | None = None) -> Tensor:
        return self._scatter(state_ops.scatter_add, sparse_delta, use_locking, name)

    def scatter_sub(self, sparse_delta: Any, use_locking: bool = False, name: str | None = None) -> Tensor:
        return self._scatter(state_ops.scatter_sub, sparse_delta, use_locking, name)

    def scatter_mul(self, sparse_delta: Any, use_locking: bool = False, name: str | None = None) -> Tensor:
        return self._scatter(state_ops.scatter_mul, sparse_delta, use_locking, name)

    def scatter_div(self, sparse_delta: Any, use_locking: bool = False, name: str | None = None) -> Tensor:
        return self._scatter(state_ops.scatter_div, sparse_delta, use_locking, name)

    def scatter_min(self, sparse_delta: Any, use_locking: bool = False, name: str | None = None) -> Tensor:
        return self._scatter(state_ops.scatter_min, sparse_delta, use_locking, name)

    def scatter_max(self, sparse_delta: Any, use_locking: bool = False, name: str | None = None) -> Tensor:
        return self._scatter(state_ops.scatter_max, sparse_delta, use_locking, name)

    def scatter_nd_update(self, indices: Any, updates: Any, name: str | None = None) -> Tensor:
        """`self[indices[i]] = updates[i]` (each row of `indices` indexes leading dims)."""
        return state_ops.scatter_nd_update(self._variable, indices, updates, use_locking=True, name=name)

    def scatter_nd_add(self, indices: Any, updates: Any, name: str | None = None) -> Tensor:
        return state_ops.scatter_nd_add(self._variable, indices, updates, use_locking=True, name=name)

    def scatter_nd_sub(self, indices: Any, updates: Any, name: str | None = None) -> Tensor:
        return state_ops.scatter_nd_sub(self._variable, indices, updates, use_locking=True, name=name)

    def count_up_to(self, limit: int) -> Tensor:
        return state_ops.count_up_to(self._variable, limit=limit)

    # --- Python protocol ----------------------------------------------------------
    def __repr__(self) -> str:
        return f"<tf.Variable '{self.name}' shape={_shape_repr(self.shape)} dtype={self.dtype.name}>"

    __str__ = __repr__

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        # TensorFlow 1.x graph mode: identity, so variables work as dict keys.
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    def __iter__(self) -> Any:
        return iter(self.value())


def _shape_repr(s: TensorShape) -> str:
    if s.ndims is None:
        return "<unknown>"
    dims = tuple(s.as_tuple())  # type: ignore[arg-type]
    return repr(dims)


def _make_operator(operator: str) -> Callable[..., Any]:
    def run_op(self: Variable, *args: Any, **kwargs: Any) -> Any:
        fn = getattr(Tensor, operator, None)
        if fn is None:
            return NotImplemented
        return fn(self.value(), *args, **kwargs)

    run_op.__name__ = operator
    run_op.__doc__ = f"`Tensor.{operator}` applied to the variable's value."
    return run_op


for _op in _OPERATORS:
    setattr(Variable, _op, _make_operator(_op))

# `tf.compat.v1.VariableV1` is the same class here.
VariableV1 = Variable


class _Reference:
    """A hashable, comparable handle to a Variable (`v.ref()`)."""

    __slots__ = ("_wrapped",)

    def __init__(self, wrapped: Variable) -> None:
        self._wrapped = wrapped

    def deref(self) -> Variable:
        return self._wrapped

    def __hash__(self) -> int:
        return id(self._wrapped)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Reference) and other._wrapped is self._wrapped

    def __repr__(self) -> str:
        return f"<Reference wrapping {self._wrapped!r}>"


def _to_tensor(v: Variable, dtype: Any = None, name: str | None = None, as_ref: bool = False) -> Tensor:
    if dtype is not None and dtypes.as_dtype(dtype).base_dtype is not v.dtype.base_dtype:
        raise ValueError(
            f"Incompatible type conversion requested to type '{dtypes.as_dtype(dtype).name}' for "
            f"variable of type '{v.dtype.name}' (Variable: {v!r})."
        )
    return v._ref() if as_ref else v.value()


register_tensor_conversion_function(Variable, _to_tensor)


def _init_scope(g: Graph) -> Any:
    """Variables and their initializers ignore the surrounding control dependencies
    (TensorFlow's `init_scope`): an initializer must not wait for a training step."""
    return g.control_dependencies(None)


# --- collections -------------------------------------------------------------------
def global_variables(scope: str | None = None) -> list[Any]:
    """Variables in GLOBAL_VARIABLES (shared across machines; saved by Saver)."""
    return get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


def local_variables(scope: str | None = None) -> list[Any]:
    """Variables in LOCAL_VARIABLES (per process, e.g. epoch counters)."""
    return get_default_graph().get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def trainable_variables(scope: str | None = None) -> list[Any]:
    """Variables created with `trainable=True` (what optimizers update)."""
    return get_default_graph().get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def model_variables(scope: str | None = None) -> list[Any]:
    return get_default_graph().get_collection(GraphKeys.MODEL_VARIABLES, scope)


def moving_average_variables(scope: str | None = None) -> list[Any]:
    return get_default_graph().get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


def all_variables() -> list[Any]:
    """Deprecated name of `global_variables()`."""
    return global_variables()


def variables_initializer(var_list: Any, name: str = "init") -> Operation:
    """One op that runs the initializers of `var_list` (a NoOp when it is empty)."""
    var_list = list(var_list)
    if var_list:
        return group(*[v.initializer for v in var_list], name=name)
    return no_op(name=name)


def global_variables_initializer() -> Operation:
    """The op (named "init") that initializes every global variable."""
    return variables_initializer(global_variables())


def local_variables_initializer() -> Operation:
    return variables_initializer(local_variables())


def tables_initializer(name: str = "init_all_tables") -> Operation:
    """One op that runs every table initializer of the graph (its TABLE_INITIALIZERS
    collection); a NoOp when there are none."""
    inits = get_default_graph().get_collection(GraphKeys.TABLE_INITIALIZERS)
    if inits:
        return group(*inits, name=name)
    return no_op(name=name)


initialize_all_variables = global_variables_initializer
initialize_variables = variables_initializer
initialize_local_variables = local_variables_initializer
initialize_all_tables = tables_initializer


def assert_variables_initialized(var_list: Any = None) -> Tensor | None:
    """A tensor whose evaluation fails with FailedPreconditionError when a variable of
    `var_list` (default: global and local) is not initialized: the ranks of the
    variables' values (None when there are no variables)."""
    from flowlab.ops.array_ops import stack
    from flowlab.ops.builder import apply_op

    g = get_default_graph()
    if var_list is None:
        var_list = global_variables() + local_variables()
        if not var_list:
            var_list = [op.outputs[0] for op in g.get_operations() if op.type == "VariableV2"]
    var_list = list(var_list)
    if not var_list:
        return None
    ranks = []
    for v in var_list:
        with g.colocate_with(v.op):
            ranks.append(apply_op("Rank", input=convert_to_tensor(v), name="Rank"))
    return ranks[0] if len(ranks) == 1 else stack(ranks)


def report_uninitialized_variables(
    var_list: Any = None, name: str = "report_uninitialized_variables"
) -> Tensor:
    """A 1-D string tensor with the names of the variables (default: global and
    local) that are not initialized in the running session."""
    from flowlab.ops.array_ops import boolean_mask, stack
    from flowlab.ops.constant_op import constant
    from flowlab.ops.math_ops import logical_not

    g = get_default_graph()
    if var_list is None:
        var_list = global_variables() + local_variables()
        if not var_list:
            var_list = [op.outputs[0] for op in g.get_operations() if op.type == "VariableV2"]
    var_list = list(var_list)
    with g.name_scope(name):
        inits = [state_ops.is_variable_initialized(v) for v in var_list]
        # The checks run beside their variables; the string work on the host CPU.
        with g.device("/cpu:0"):
            if not var_list:
                return constant([], dtype=dtypes.string)
            mask = logical_not(stack(inits))
            names = constant([v.op.name for v in var_list])
            return boolean_mask(names, mask)
