"""The global step: a scalar int64 variable counting training steps (TF1 training_util)."""

from __future__ import annotations

from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import GraphKeys, get_default_graph
from flowlab.graph.tensor import Tensor
from flowlab.ops import init_ops
from flowlab.ops import variable_scope as vs
from flowlab.ops.variables import Variable

__all__ = ["global_step", "get_global_step", "create_global_step", "get_or_create_global_step",
           "assert_global_step"]


def global_step(sess: Any, global_step_tensor: Any) -> int:
    """The value of the global step in `sess`, as a Python int."""
    return int(sess.run(global_step_tensor))


def assert_global_step(global_step_tensor: Any) -> None:
    if not isinstance(global_step_tensor, (Variable, Tensor)):
        raise TypeError(f'Existing "global_step" must be a Variable or Tensor: {global_step_tensor}.')
    if not global_step_tensor.dtype.base_dtype.is_integer:
        raise TypeError(f'Existing "global_step" does not have integer type: {global_step_tensor.dtype}')
    shape = global_step_tensor.shape
    if shape.ndims != 0 and shape.is_fully_defined():
        raise TypeError(f'Existing "global_step" is not scalar: {shape}')


def get_global_step(graph: Any = None) -> Any:
    """The variable in the GLOBAL_STEP collection (or the tensor "global_step:0"), or None."""
    graph = graph or get_default_graph()
    found = graph.get_collection(GraphKeys.GLOBAL_STEP)
    if len(found) == 1:
        step = found[0]
    elif not found:
        try:
            step = graph.get_tensor_by_name("global_step:0")
        except (KeyError, ValueError):
            return None
    else:
        return None
    assert_global_step(step)
    return step


def create_global_step(graph: Any = None) -> Variable:
    """Create the int64 scalar variable "global_step" (zero, not trainable)."""
    graph = graph or get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    with graph.as_default(), graph.name_scope(None):
        return vs.get_variable(
            GraphKeys.GLOBAL_STEP, shape=[], dtype=dtypes.int64, initializer=init_ops.zeros_initializer(),
            trainable=False, collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP])


def get_or_create_global_step(graph: Any = None) -> Any:
    """The global step of `graph`, created when it has none."""
    graph = graph or get_default_graph()
    step = get_global_step(graph)
    if step is None:
        step = create_global_step(graph)
    return step


GLOBAL_STEP_READ_KEY = "global_step_read_op_cache"


def _get_or_create_global_step_read(graph: Any = None) -> Any:
    """TensorFlow's global step read for the session-run hooks: `global_step + 0` (the
    variable's value if initialized, else its initial value), made once per graph
    (collection "global_step_read_op_cache"), or None without a global step.  Fetched
    with the train op, it is the step before that run's increment (the "stale" step the
    hooks add one to), where a fetch of the variable itself is the step after it."""
    from flowlab.ops.cond import cond
    from flowlab.ops.state_ops import is_variable_initialized

    graph = graph or get_default_graph()
    found = graph.get_collection(GLOBAL_STEP_READ_KEY)
    if len(found) > 1:
        raise RuntimeError(f"There are multiple items in collection {GLOBAL_STEP_READ_KEY}. "
                           "There should be only one.")
    if found:
        return found[0]
    step = get_global_step(graph)
    if step is None:
        return None
    with graph.as_default(), graph.name_scope(None), graph.name_scope(step.op.name + "/"):
        if isinstance(step, Variable):
            value = cond(is_variable_initialized(step), step.read_value, lambda: step.initial_value)
        else:
            value = step
        read = value + 0  # "global_step/add", as TensorFlow names it
        graph.add_to_collection(GLOBAL_STEP_READ_KEY, read)
    return read
