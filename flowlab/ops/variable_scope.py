"""Variable scopes and `tf.get_variable`: named, shareable variables (TF1).

State, per graph (kept in `graph._scratch`, so a new graph starts clean):
* the *variable store* (flowlab/ops/variable_store.py): full name ("layer1/weights")
  -> Variable, for every variable created through `get_variable`;
* the *scope store*, one per thread: the current `VariableScope` and how many times
  each scope name has been opened (to make `default_name` scopes unique).

`variable_scope("layer1")` opens the variable scope "layer1" and, alongside it, a name
scope that is made unique like any name scope ("layer1/", then "layer1_1/" when the
scope is entered again), exactly as TensorFlow does; variable names depend only on the
variable scope, op names on the name scope.  `reuse` decides what `get_variable`
does with a name: False (the default) creates and refuses an existing one, True
returns an existing one and refuses to create, AUTO_REUSE does either.  Reuse is
inherited by sub-scopes and cannot be switched off inside a reusing scope.

A `partitioner` (argument or scope default) makes `get_variable` return a
`PartitionedVariable` (flowlab/ops/partitioned_variables.py): shards
"<name>/part_0", ... created by the store (`create_partitioned_variables`, the older
spelling that returns the shard list, is flowlab/ops/partitioned_scope.py).
"""

from __future__ import annotations

import contextlib
import enum
import functools
import threading
from collections.abc import Callable
from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import Graph, GraphKeys, get_default_graph
from flowlab.ops.builder import convert_to_tensor, graph_of
from flowlab.ops.partitioned_variables import PartitionedVariable
from flowlab.ops.variable_store import _dtype_str, _VariableStore
from flowlab.ops.variables import Variable

__all__ = [
    "AUTO_REUSE", "VariableScope", "variable_scope", "get_variable", "get_local_variable",
    "get_variable_scope", "no_regularizer",
]


class _ReuseMode(enum.Enum):
    AUTO_REUSE = 1


# get_variable creates the variable if it does not exist, else returns it.
AUTO_REUSE = _ReuseMode.AUTO_REUSE


def no_regularizer(_: Any) -> None:
    """A regularizer that adds nothing (to switch off a scope's regularizer)."""
    return None


# --- scopes ----------------------------------------------------------------------------
class VariableScope:
    """The defaults `get_variable` uses inside a `variable_scope` block: name prefix,
    reuse, initializer, regularizer, dtype, caching device, custom getter."""

    def __init__(
        self, reuse: Any, name: str = "", initializer: Any = None, regularizer: Any = None,
        caching_device: Any = None, partitioner: Any = None, custom_getter: Any = None,
        name_scope: str = "", dtype: Any = dtypes.float32, use_resource: bool | None = None,
        constraint: Any = None,
    ) -> None:
        self._name = name
        self._initializer = initializer
        self._regularizer = regularizer
        self._reuse = reuse
        self._caching_device = caching_device
        self._partitioner = partitioner
        self._custom_getter = custom_getter
        self._name_scope = name_scope
        self._dtype = dtypes.as_dtype(dtype) if dtype is not None else dtypes.float32
        self._use_resource = use_resource
        self._constraint = constraint

    @property
    def name(self) -> str:
        return self._name

    @property
    def original_name_scope(self) -> str:
        """The name scope opened the first time this scope was entered ("foo_1/")."""
        return self._name_scope

    @property
    def reuse(self) -> Any:
        return self._reuse

    @property
    def initializer(self) -> Any:
        return self._initializer

    @property
    def dtype(self) -> dtypes.DType:
        return self._dtype

    @property
    def use_resource(self) -> bool | None:
        return self._use_resource

    @property
    def regularizer(self) -> Any:
        return self._regularizer

    @property
    def caching_device(self) -> Any:
        return self._caching_device

    @property
    def partitioner(self) -> Any:
        return self._partitioner

    @property
    def custom_getter(self) -> Any:
        return self._custom_getter

    @property
    def constraint(self) -> Any:
        return self._constraint

    def reuse_variables(self) -> None:
        """From now on, `get_variable` in this scope returns existing variables."""
        self._reuse = True

    def set_initializer(self, initializer: Any) -> None:
        self._initializer = initializer

    def set_dtype(self, dtype: Any) -> None:
        self._dtype = dtypes.as_dtype(dtype)

    def set_use_resource(self, use_resource: bool | None) -> None:
        self._use_resource = use_resource

    def set_regularizer(self, regularizer: Any) -> None:
        self._regularizer = regularizer

    def set_caching_device(self, caching_device: Any) -> None:
        self._caching_device = caching_device

    def set_partitioner(self, partitioner: Any) -> None:
        self._partitioner = partitioner

    def set_custom_getter(self, custom_getter: Any) -> None:
        self._custom_getter = custom_getter

    def get_collection(self, name: str) -> list[Any]:
        scope = self._name + "/" if self._name else ""
        return get_default_graph().get_collection(name, scope)

    def trainable_variables(self) -> list[Any]:
        return self.get_collection(GraphKeys.TRAINABLE_VARIABLES)

    def global_variables(self) -> list[Any]:
        return self.get_collection(GraphKeys.GLOBAL_VARIABLES)

    def local_variables(self) -> list[Any]:
        return self.get_collection(GraphKeys.LOCAL_VARIABLES)

    def get_variable(
        self, var_store: _VariableStore, name: str, shape: Any = None, dtype: Any = None,
        initializer: Any = None, regularizer: Any = None, reuse: Any = None,
        trainable: bool | None = None, collections: Any = None, caching_device: Any = None,
        partitioner: Any = None, validate_shape: bool = True, use_resource: bool | None = None,
        custom_getter: Any = None, constraint: Any = None, **unused: Any,
    ) -> Variable | PartitionedVariable:
        """`get_variable` with this scope's defaults and name prefix."""
        if regularizer is None:
            regularizer = self._regularizer
        if caching_device is None:
            caching_device = self._caching_device
        if partitioner is None:
            partitioner = self._partitioner
        if custom_getter is None:
            custom_getter = self._custom_getter
        if reuse is None:
            reuse = self._reuse
        if use_resource is None:
            use_resource = self._use_resource
        full_name = self._name + "/" + name if self._name else name
        g = get_default_graph()
        # Variable names depend only on the variable scope: leave the name scope.
        with g.name_scope(None):
            if dtype is not None and initializer is not None and not callable(initializer):
                init_dtype = convert_to_tensor(initializer).dtype.base_dtype
                if init_dtype is not dtypes.as_dtype(dtype).base_dtype:
                    raise ValueError(
                        f"Initializer type '{_dtype_str(init_dtype)}' and explicit dtype "
                        f"'{_dtype_str(dtypes.as_dtype(dtype))}' don't match."
                    )
            if initializer is None:
                initializer = self._initializer
            if constraint is None:
                constraint = self._constraint
            if dtype is None:
                dtype = self._dtype
            return var_store.get_variable(
                full_name, shape=shape, dtype=dtype, initializer=initializer,
                regularizer=regularizer, reuse=reuse, trainable=trainable,
                collections=collections, caching_device=caching_device, partitioner=partitioner,
                validate_shape=validate_shape, use_resource=use_resource,
                custom_getter=custom_getter, constraint=constraint,
            )

    def __repr__(self) -> str:
        return f"<VariableScope '{self._name}' reuse={self._reuse}>"


class _ScopeStore(threading.local):
    """The current variable scope and the open counts of scope names (per thread)."""

    def __init__(self) -> None:
        self.current_scope = VariableScope(False)
        self.variable_scopes_count: dict[str, int] = {}

    def open_variable_scope(self, scope_name: str) -> None:
        self.variable_scopes_count[scope_name] = self.variable_scopes_count.get(scope_name, 0) + 1

    def close_variable_subscopes(self, scope_name: str | None) -> None:
        prefix = None if scope_name is None else scope_name + "/"
        for k in self.variable_scopes_count:
            if prefix is None or k.startswith(prefix):
                self.variable_scopes_count[k] = 0

    def variable_scope_count(self, scope_name: str) -> int:
        return self.variable_scopes_count.get(scope_name, 0)


def _scratch(g: Graph, key: str, factory: Callable[[], Any]) -> Any:
    obj = g._scratch.get(key)
    if obj is None:
        obj = g._scratch.setdefault(key, factory())
    return obj


def _scope_store(g: Graph | None = None) -> _ScopeStore:
    return _scratch(g or get_default_graph(), "variable_scope_store", _ScopeStore)


def _variable_store(g: Graph | None = None) -> _VariableStore:
    return _scratch(g or get_default_graph(), "variable_store", _VariableStore)


def get_variable_scope() -> VariableScope:
    """The current VariableScope (the root scope has name "")."""
    return _scope_store().current_scope


def get_variable(
    name: str, shape: Any = None, dtype: Any = None, initializer: Any = None,
    regularizer: Any = None, trainable: bool | None = None, collections: Any = None,
    caching_device: Any = None, partitioner: Any = None, validate_shape: bool = True,
    use_resource: bool | None = None, custom_getter: Any = None, constraint: Any = None,
    synchronization: Any = None, aggregation: Any = None,
) -> Variable | PartitionedVariable:
    """Get the variable "<scope>/<name>", or create it (`tf.get_variable`).

        with tf.variable_scope("layer1"):
            w = tf.get_variable("w", [784, 100])   # "layer1/w:0", glorot-uniform init
        with tf.variable_scope("layer1", reuse=True):
            assert tf.get_variable("w") is w

    The default initializer is glorot_uniform for floats and zeros for integers,
    bools and strings; `initializer` may also be a tensor or value (then no `shape`).
    With a `partitioner` (here or the scope's) the result is a PartitionedVariable.
    """
    return get_variable_scope().get_variable(
        _variable_store(), name, shape=shape, dtype=dtype, initializer=initializer,
        regularizer=regularizer, trainable=trainable, collections=collections,
        caching_device=caching_device, partitioner=partitioner, validate_shape=validate_shape,
        use_resource=use_resource, custom_getter=custom_getter, constraint=constraint,
    )


def get_local_variable(
    name: str, shape: Any = None, dtype: Any = None, initializer: Any = None,
    regularizer: Any = None, trainable: bool = False, collections: Any = None,
    caching_device: Any = None, partitioner: Any = None, validate_shape: bool = True,
    use_resource: bool | None = None, custom_getter: Any = None, constraint: Any = None,
    synchronization: Any = None, aggregation: Any = None,
) -> Variable:
    """`get_variable` for a non-trainable variable in LOCAL_VARIABLES."""
    collections = list(collections or []) + [GraphKeys.LOCAL_VARIABLES]
    return get_variable(
        name, shape=shape, dtype=dtype, initializer=initializer, regularizer=regularizer,
        trainable=False, collections=collections, caching_device=caching_device,
        partitioner=partitioner, validate_shape=validate_shape, use_resource=use_resource,
        custom_getter=custom_getter, constraint=constraint,
    )


def _wrap_custom_getter(custom_getter: Any, old_getter: Any) -> Any:
    if old_getter is None:
        return custom_getter

    def wrapped(getter: Any, *args: Any, **kwargs: Any) -> Any:
        return custom_getter(functools.partial(old_getter, getter), *args, **kwargs)

    return wrapped


class _PureVariableScope:
    """Switch the current VariableScope (no name scope); restores it on exit."""

    def __init__(
        self, store: _ScopeStore, name_or_scope: Any, reuse: Any, old_name_scope: str | None,
        overrides: dict[str, Any],
    ) -> None:
        self._store = store
        self._name_or_scope = name_or_scope
        self._reuse = reuse
        self._old_name_scope = old_name_scope
        self._overrides = overrides
        self._entered: VariableScope | None = None
        if isinstance(name_or_scope, VariableScope):
            s = name_or_scope
            self._new_name = s.name
            self._cached = VariableScope(
                s.reuse if not reuse else reuse, name=s.name, initializer=s.initializer,
                regularizer=s.regularizer, caching_device=s.caching_device,
                partitioner=s.partitioner, dtype=s.dtype, custom_getter=s.custom_getter,
                name_scope=s.original_name_scope, use_resource=s.use_resource,
                constraint=overrides.get("constraint"),
            )
            self._apply(self._cached, s.custom_getter)

    def _apply(self, scope: VariableScope, old_getter: Any) -> None:
        o = self._overrides
        if o.get("initializer") is not None:
            scope.set_initializer(o["initializer"])
        if o.get("regularizer") is not None:
            scope.set_regularizer(o["regularizer"])
        if o.get("caching_device") is not None:
            scope.set_caching_device(o["caching_device"])
        if o.get("partitioner") is not None:
            scope.set_partitioner(o["partitioner"])
        if o.get("custom_getter") is not None:
            scope.set_custom_getter(_wrap_custom_getter(o["custom_getter"], old_getter))
        if o.get("dtype") is not None:
            scope.set_dtype(o["dtype"])
        if o.get("use_resource") is not None:
            scope.set_use_resource(o["use_resource"])

    def __enter__(self) -> VariableScope:
        st = self._store
        self._old = st.current_scope
        if isinstance(self._name_or_scope, VariableScope):
            st.open_variable_scope(self._new_name)
            self._old_counts = dict(st.variable_scopes_count)
            scope = self._cached
        else:
            old = self._old
            self._new_name = old.name + "/" + self._name_or_scope if old.name else self._name_or_scope
            reuse = self._reuse or old.reuse  # reuse is inherited by sub-scopes
            scope = VariableScope(
                reuse, name=self._new_name, initializer=old.initializer,
                regularizer=old.regularizer, caching_device=old.caching_device,
                partitioner=old.partitioner, dtype=old.dtype, use_resource=old.use_resource,
                custom_getter=old.custom_getter,
                name_scope=self._name_or_scope if self._old_name_scope is None else self._old_name_scope,
                constraint=self._overrides.get("constraint"),
            )
            self._apply(scope, old.custom_getter)
            st.open_variable_scope(self._new_name)
        st.current_scope = scope
        self._entered = scope
        return scope

    def __exit__(self, *exc: Any) -> None:
        st = self._store
        if st.current_scope is not self._entered:
            raise RuntimeError("Improper nesting of variable_scope.")
        if isinstance(self._name_or_scope, VariableScope):
            st.variable_scopes_count = self._old_counts
        else:
            st.close_variable_subscopes(self._new_name)
        st.current_scope = self._old


def _unique_scope_name(store: _ScopeStore, prefix: str) -> str:
    current = store.current_scope.name
    name = current + "/" + prefix if current else prefix
    if store.variable_scope_count(name) == 0:
        return prefix
    i = 1
    while store.variable_scope_count(f"{name}_{i}") > 0:
        i += 1
    return f"{prefix}_{i}"


class variable_scope:  # noqa: N801 - TensorFlow's name
    """Open a variable scope (and a name scope alongside), `tf.variable_scope`.

        with tf.variable_scope("foo"):
            with tf.variable_scope("bar"):
                v = tf.get_variable("v", [1])       # "foo/bar/v:0"
        with tf.variable_scope("foo", reuse=True):  # ops go to name scope "foo_1/"
            v1 = tf.get_variable("bar/v")           # the same variable

    `name_or_scope` is a string or a VariableScope (re-entered, keeping its name);
    with None, `default_name` is made unique ("block", "block_1", ...).
    """

    def __init__(
        self, name_or_scope: Any, default_name: str | None = None, values: Any = None,
        initializer: Any = None, regularizer: Any = None, caching_device: Any = None,
        partitioner: Any = None, custom_getter: Any = None, reuse: Any = None, dtype: Any = None,
        use_resource: bool | None = None, constraint: Any = None, auxiliary_name_scope: bool = True,
    ) -> None:
        if default_name is None and name_or_scope is None:
            raise TypeError("If default_name is None then name_or_scope is required")
        if reuse is False:
            reuse = None  # False means "inherit": a reusing parent cannot be overridden
        if not (reuse is True or reuse is None or reuse is AUTO_REUSE):
            raise ValueError("The reuse parameter must be True or False or None.")
        if not isinstance(auxiliary_name_scope, bool):
            raise TypeError(
                "The auxiliary_name_scope must be `True` or `False`, while get "
                f"{auxiliary_name_scope}"
            )
        self._name_or_scope = name_or_scope
        self._default_name = default_name
        self._reuse = reuse
        self._aux = auxiliary_name_scope
        self._overrides = dict(
            initializer=initializer, regularizer=regularizer, caching_device=caching_device,
            partitioner=partitioner, custom_getter=custom_getter, dtype=dtype,
            use_resource=use_resource, constraint=constraint,
        )
        self._graph = graph_of(values)
        self._stack: contextlib.ExitStack | None = None
        self._pure: _PureVariableScope | None = None
        self._name_scope_cm: Any = None

    def __enter__(self) -> VariableScope:
        stack = contextlib.ExitStack()
        try:
            stack.enter_context(self._graph.as_default())
            scope = self._enter(stack)
        except BaseException:
            stack.close()
            raise
        self._stack = stack
        return scope

    def _enter(self, stack: contextlib.ExitStack) -> VariableScope:
        g = self._graph
        store = _scope_store(g)
        if self._pure is not None:
            # Entering this same object again: same scopes, no new unique names.
            if self._name_scope_cm is not None:
                stack.enter_context(g.name_scope(self._name_scope_cm))
            return stack.enter_context(self._pure)
        forced: str | None = None
        if not self._aux:
            current = g.get_name_scope()
            forced = current + "/" if current else ""
        nos = self._name_or_scope
        if nos is not None:
            if not isinstance(nos, (VariableScope, str)):
                raise TypeError("VariableScope: name_or_scope must be a string or VariableScope.")
            ns_name = nos if isinstance(nos, str) else nos.name.split("/")[-1]
            old_name_scope: str | None = None
            if ns_name or forced is not None:
                opened = stack.enter_context(g.name_scope(forced if forced is not None else ns_name))
                self._name_scope_cm = opened if opened else ""
                old_name_scope = opened if isinstance(nos, str) else nos.original_name_scope
            self._pure = _PureVariableScope(store, nos, self._reuse, old_name_scope, self._overrides)
            return stack.enter_context(self._pure)
        if self._reuse:
            raise ValueError("reuse=True cannot be used without a name_or_scope")
        opened = stack.enter_context(
            g.name_scope(forced if forced is not None else self._default_name)
        )
        self._name_scope_cm = opened if opened else ""
        unique = _unique_scope_name(store, self._default_name)  # type: ignore[arg-type]
        self._pure = _PureVariableScope(store, unique, None, opened, self._overrides)
        return stack.enter_context(self._pure)

    def __exit__(self, *exc: Any) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            stack.__exit__(*exc)



