"""`tf.layers.Layer` and `tf.layers.InputSpec`: TensorFlow 1.x's object-oriented layers.

A layer object holds its configuration; its variables are made the first time it is
called.  That first call fixes the layer's variable scope, as TensorFlow's legacy
layers do: `variable_scope(scope, default_name=<snake-case class name>)`, so a
`Dense` gets "dense", "dense_1", ... and its variables "dense/kernel", "dense/bias".
Every call re-enters that scope (reuse=True after the first) without opening a new
name scope, and places its ops under the scope's original name scope ("dense/MatMul",
then "dense/MatMul_1").  `build(input_shape)` runs once, inside the scope, before the
first `call`; `add_weight` is `get_variable` there, with regularizer losses in
REGULARIZATION_LOSSES.  `updates` (the moving-average assignments of batch
normalization) also go to tf.GraphKeys.UPDATE_OPS.

The functional layers (`tf.layers.dense`, ...) are one call of the matching class,
`Dense(..., name=name, _scope=name, _reuse=reuse).apply(inputs)`, as in TensorFlow.
"""

from __future__ import annotations

import re
from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import GraphKeys, get_default_graph
from flowlab.graph.tensor import Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.variable_scope import VariableScope, get_variable, variable_scope

__all__ = ["Layer", "InputSpec"]


def to_snake_case(name: str) -> str:
    """Keras' layer base name: "Conv2DTranspose" -> "conv2d_transpose"."""
    intermediate = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    insecure = re.sub("([a-z])([A-Z])", r"\1_\2", intermediate).lower()
    return insecure if insecure[0] != "_" else "private" + insecure


class InputSpec:
    """What a layer accepts: dtype, shape or ndim / max_ndim / min_ndim, and the sizes of
    some axes (`{-1: 3}`: the last axis has size 3)."""

    def __init__(self, dtype: Any = None, shape: Any = None, ndim: int | None = None,
                 max_ndim: int | None = None, min_ndim: int | None = None,
                 axes: dict[int, int] | None = None, allow_last_axis_squeeze: bool = False,
                 name: str | None = None) -> None:
        self.dtype = dtypes.as_dtype(dtype).name if dtype is not None else None
        shape = TensorShape(shape) if shape is not None else None
        if shape is not None and shape.ndims is not None:
            self.shape: tuple | None = tuple(shape.as_list())
            self.ndim: int | None = shape.ndims
        else:
            self.ndim, self.shape = ndim, None
        self.max_ndim, self.min_ndim = max_ndim, min_ndim
        self.name = name
        self.allow_last_axis_squeeze = allow_last_axis_squeeze
        try:
            axes = axes or {}
            self.axes = {int(k): v for k, v in axes.items()}
        except (ValueError, TypeError) as e:
            raise TypeError(f"The keys in axes must be integers. Received: axes={axes}") from e
        if self.axes and (self.ndim is not None or self.max_ndim is not None):
            max_dim = (self.ndim if self.ndim else self.max_ndim) - 1
            max_axis = max(self.axes)
            if max_axis > max_dim:
                raise ValueError(f"Axis {max_axis} is greater than the maximum allowed value: {max_dim}")

    def __repr__(self) -> str:
        spec = [f"dtype={self.dtype}" if self.dtype else "",
                f"shape={self.shape}" if self.shape else "",
                f"ndim={self.ndim}" if self.ndim else "",
                f"max_ndim={self.max_ndim}" if self.max_ndim else "",
                f"min_ndim={self.min_ndim}" if self.min_ndim else "",
                f"axes={self.axes}" if self.axes else ""]
        return f"InputSpec({', '.join(x for x in spec if x)})"

    def get_config(self) -> dict[str, Any]:
        return {"dtype": self.dtype, "shape": self.shape, "ndim": self.ndim,
                "max_ndim": self.max_ndim, "min_ndim": self.min_ndim, "axes": self.axes}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> InputSpec:
        return cls(**config)


class Layer:
    """Base class of the tf.layers classes.  Subclasses define `build(input_shape)`
    (make variables with `add_weight`) and `call(inputs, ...)` (build the ops).

    >>> layer = tf.layers.Dense(4)
    >>> y1, y2 = layer(x1), layer(x2)     # one set of variables: dense/kernel, dense/bias
    """

    def __init__(self, trainable: bool = True, name: str | None = None, dtype: Any = None,
                 **kwargs: Any) -> None:
        allowed = {"_scope", "_reuse", "input_shape", "batch_input_shape", "batch_size",
                   "activity_regularizer"}
        for k in kwargs:
            if k not in allowed:
                raise TypeError(f"Keyword argument not understood: {k}")
        self.trainable = trainable
        self.built = False
        self._dtype = dtypes.as_dtype(dtype) if dtype is not None else None
        self._scope = kwargs.pop("_scope", None)
        self._reuse = kwargs.pop("_reuse", None)
        self.activity_regularizer = kwargs.pop("activity_regularizer", None)
        if isinstance(self._scope, str) and not self._scope:
            self._scope = None
        self._given_name = name.name if isinstance(name, VariableScope) else name
        self._base_name = self._given_name or to_snake_case(type(self).__name__)
        self._current_scope: VariableScope | None = None
        self._trainable_weights: list[Any] = []
        self._non_trainable_weights: list[Any] = []
        self._updates: list[Any] = []
        self._losses: list[Any] = []
        self.input_spec: Any = None

    # --- naming ------------------------------------------------------------------
    @property
    def name(self) -> str:
        if self._given_name:
            return self._given_name
        if isinstance(self._scope, VariableScope):
            return self._scope.name.split("/")[-1]
        return self._base_name

    @property
    def scope_name(self) -> str:
        if not isinstance(self._scope, VariableScope):
            raise ValueError(f'No name available for layer scope because the layer "{self.name}" '
                             "has not been used yet. The scope name  is determined the first time "
                             "the layer instance is called. You must therefore call the layer "
                             "before querying `scope_name`.")
        return self._scope.name

    @property
    def dtype(self) -> str | None:
        return self._dtype.name if self._dtype is not None else None

    def _set_scope(self, scope: Any = None) -> None:
        if isinstance(self._scope, VariableScope):
            return
        name = scope if scope is not None else self._scope
        if self._reuse:
            cm = variable_scope(name if name is not None else self._base_name)
        else:
            cm = variable_scope(name, default_name=self._base_name)
        with cm as captured:
            self._scope = captured

    # --- weights -----------------------------------------------------------------
    def add_weight(self, name: str, shape: Any, dtype: Any = None, initializer: Any = None,
                   regularizer: Any = None, trainable: bool | None = None, constraint: Any = None,
                   **kwargs: Any) -> Any:
        """`get_variable(name, shape, ...)` in the layer's scope; the layer keeps it.
        A regularizer's loss goes to REGULARIZATION_LOSSES once per variable."""
        trainable = self.trainable if trainable is None else (trainable and self.trainable)
        dt = dtypes.as_dtype(dtype) if dtype is not None else (self._dtype or dtypes.float32)
        v = get_variable(name, shape, dtype=dt, initializer=initializer, trainable=trainable,
                         constraint=constraint)
        if regularizer is not None and not getattr(v, "_regularized", False):
            g = get_default_graph()
            with g.name_scope(v.op.name + "/Regularizer/"):
                loss = regularizer(v)
            if loss is not None:
                g.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
                self._losses.append(loss)
            v._regularized = True  # a reused layer does not add the loss twice
        if all(v is not w for w in self._trainable_weights + self._non_trainable_weights):
            (self._trainable_weights if trainable else self._non_trainable_weights).append(v)
        return v

    @property
    def trainable_weights(self) -> list[Any]:
        return list(self._trainable_weights) if self.trainable else []

    @property
    def non_trainable_weights(self) -> list[Any]:
        if self.trainable:
            return list(self._non_trainable_weights)
        return self._trainable_weights + self._non_trainable_weights

    @property
    def weights(self) -> list[Any]:
        return self.trainable_weights + self.non_trainable_weights

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights
    variables = weights

    @property
    def updates(self) -> list[Any]:
        return list(self._updates)

    @property
    def losses(self) -> list[Any]:
        return list(self._losses)

    def add_update(self, updates: Any) -> None:
        self._updates.extend(updates if isinstance(updates, (list, tuple)) else [updates])

    def add_loss(self, losses: Any) -> None:
        new = losses if isinstance(losses, (list, tuple)) else [losses]
        self._losses.extend(new)
        for loss in new:
            get_default_graph().add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)

    # --- calling -----------------------------------------------------------------
    def build(self, input_shape: Any) -> None:
        """Make the layer's variables (subclasses); the default makes none."""
        self.built = True

    def call(self, inputs: Any, **kwargs: Any) -> Any:
        """The layer's computation (subclasses); the default is the identity."""
        return inputs

    def compute_output_shape(self, input_shape: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.compute_output_shape")

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        self._set_scope(kwargs.pop("scope", None))
        g = get_default_graph()
        reuse = True if self.built else self._reuse
        with variable_scope(self._scope, reuse=reuse, auxiliary_name_scope=False) as scope:
            self._current_scope = scope
            with g.name_scope(scope.original_name_scope or None):
                if not self.built:
                    first = inputs[0] if isinstance(inputs, (list, tuple)) else inputs
                    if self._dtype is None and isinstance(first, Tensor) and first.dtype.base_dtype.is_floating:
                        self._dtype = first.dtype.base_dtype
                    shapes = ([getattr(x, "shape", None) for x in inputs]
                              if isinstance(inputs, (list, tuple)) else getattr(inputs, "shape", None))
                    self.build(shapes)
                    self.built = True
                outputs = self.call(inputs, *args, **kwargs)
                if self.activity_regularizer is not None:
                    with g.name_scope("ActivityRegularizer"):
                        loss = self.activity_regularizer(outputs)
                    if loss is not None:
                        self.add_loss(loss)
        ref = g.get_collection_ref(GraphKeys.UPDATE_OPS)
        for u in self._updates:
            if all(u is not x for x in ref):
                ref.append(u)
        return outputs

    def apply(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        """The same as calling the layer."""
        return self(inputs, *args, **kwargs)

    def get_config(self) -> dict[str, Any]:
        return {"name": self.name, "trainable": self.trainable, "dtype": self.dtype}
