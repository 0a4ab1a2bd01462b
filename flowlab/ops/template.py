"""`tf.make_template`: a function whose `tf.get_variable` calls make variables the
first time it is called and share them on every later call, inside one variable
scope (made unique from `name_`, on the first call or at construction with
`create_scope_now_`).  A later call that would create a new trainable variable is a
ValueError, as in TensorFlow (a tf.Variable where tf.get_variable was meant)."""

from __future__ import annotations

import functools
from typing import Any

from flowlab.graph.graph import GraphKeys, get_default_graph
from flowlab.ops.variable_scope import variable_scope

__all__ = ["make_template", "Template"]


class Template:
    """The callable `make_template` returns."""

    def __init__(self, name: str, func: Any, create_scope_now: bool = False, unique_name: str | None = None,
                 custom_getter: Any = None) -> None:
        if name is None:
            raise ValueError("name cannot be None.")
        self._func, self._name = func, name
        self._unique_name, self._custom_getter = unique_name, custom_getter
        self._variable_scope: Any = None
        if create_scope_now:
            with variable_scope(self._unique_name, self._name, custom_getter=self._custom_getter) as vs:
                self._variable_scope = vs
        self._variables_created = False

    def _call_func(self, args: tuple, kwargs: dict[str, Any]) -> Any:
        g = get_default_graph()
        trainable_at_start = len(g.get_collection(GraphKeys.TRAINABLE_VARIABLES))
        result = self._func(*args, **kwargs)
        if self._variables_created:
            trainable = g.get_collection(GraphKeys.TRAINABLE_VARIABLES)
            if trainable_at_start != len(trainable):
                raise ValueError("Trainable variable created when calling a template after the first time, "
                                 "perhaps you used tf.Variable when you meant tf.get_variable: "
                                 f"{trainable[trainable_at_start:]}")
        else:
            self._variables_created = True
        return result

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._variable_scope is not None:
            with variable_scope(self._variable_scope, reuse=True if self._variables_created else None):
                return self._call_func(args, kwargs)
        with variable_scope(self._unique_name, self._name, custom_getter=self._custom_getter) as vs:
            self._variable_scope = vs
            return self._call_func(args, kwargs)

    @property
    def name(self) -> str:
        return self._name

    @property
    def func(self) -> Any:
        return self._func

    @property
    def variable_scope(self) -> Any:
        return self._variable_scope

    @property
    def variable_scope_name(self) -> str | None:
        """The scope's name with a trailing "/" (so that "layer" does not match "layer_1")."""
        if self._variable_scope is None:
            return None
        name = self._variable_scope.name
        return name if not name or name.endswith("/") else name + "/"

    def _collection(self, key: str) -> list[Any]:
        if self._variable_scope is None:
            return []
        return get_default_graph().get_collection(key, self.variable_scope_name)

    @property
    def variables(self) -> list[Any]:
        return self.global_variables + self.local_variables

    @property
    def trainable_variables(self) -> list[Any]:
        return self._collection(GraphKeys.TRAINABLE_VARIABLES)

    @property
    def non_trainable_variables(self) -> list[Any]:
        trainable = self.trainable_variables
        return [v for v in self.variables if all(v is not t for t in trainable)]

    @property
    def global_variables(self) -> list[Any]:
        return self._collection(GraphKeys.GLOBAL_VARIABLES)

    @property
    def local_variables(self) -> list[Any]:
        return self._collection(GraphKeys.LOCAL_VARIABLES)


def make_template(name_: str, func_: Any, create_scope_now_: bool = False, unique_name_: str | None = None,
                  custom_getter_: Any = None, **kwargs: Any) -> Template:
    """`func_` (with `kwargs` bound) wrapped so that its variables are shared.

    >>> scale = tf.make_template("scale", lambda x: x * tf.get_variable("w", [], initializer=tf.ones_initializer()))
    >>> y1, y2 = scale(a), scale(b)        # one variable, scale/w
    """
    if kwargs:
        func_ = functools.partial(func_, **kwargs)
    return Template(name_, func_, create_scope_now=create_scope_now_, unique_name=unique_name_,
                    custom_getter=custom_getter_)
