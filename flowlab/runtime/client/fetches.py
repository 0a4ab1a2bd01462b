"""Fetch structures: flatten what the user asked for, and rebuild it with values.

`Session.run` accepts a Tensor, an Operation (its value is None), a name
("x:0" or "train_op"), a Variable, an IndexedSlices-like object with `_fetch_parts`,
or any nesting of lists, tuples, namedtuples and dicts of those.  A `FetchMapper`
resolves the structure once: the unique tensors to compute, the ops to run, and a
function that puts the computed values back into the user's structure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flowlab.graph.graph import Graph
from flowlab.graph.tensor import Operation, Tensor


class FetchMapper:
    """Resolved fetches: `tensors` to compute, `targets` to run, `build(values)`."""

    def __init__(self, graph: Graph, fetches: Any) -> None:
        self.graph = graph
        self.tensors: list[Tensor] = []
        self.targets: list[Operation] = []
        self._tensor_index: dict[int, int] = {}
        self._build = self._resolve(fetches)

    def build(self, values: list[Any]) -> Any:
        return self._build(values)

    def _add_tensor(self, t: Tensor) -> int:
        i = self._tensor_index.get(id(t))
        if i is None:
            i = self._tensor_index[id(t)] = len(self.tensors)
            self.tensors.append(t)
        return i

    def _resolve(self, fetch: Any) -> Callable[[list[Any]], Any]:
        if fetch is None:
            raise TypeError(f"Fetch argument {fetch!r} has invalid type {type(fetch)}, must be a string or Tensor. (Can not convert a NoneType into a Tensor or Operation.)")
        if isinstance(fetch, (list, tuple)) and not isinstance(fetch, str):
            subs = [self._resolve(f) for f in fetch]
            if isinstance(fetch, tuple) and hasattr(fetch, "_fields"):
                cls = type(fetch)
                return lambda vals: cls(*[s(vals) for s in subs])
            if isinstance(fetch, tuple):
                return lambda vals: tuple(s(vals) for s in subs)
            return lambda vals: [s(vals) for s in subs]
        if isinstance(fetch, dict):
            keys = list(fetch.keys())
            subs = [self._resolve(fetch[k]) for k in keys]
            dict_cls: Any = type(fetch)

            def build_dict(vals: list[Any]) -> Any:
                d = dict_cls()
                for k, s in zip(keys, subs):
                    d[k] = s(vals)
                return d

            return build_dict
        if hasattr(fetch, "_fetch_parts"):
            # Composite values (IndexedSlices, SparseTensor): fetch parts, rebuild value.
            parts, rebuild = fetch._fetch_parts()
            subs = [self._resolve(p) for p in parts]
            return lambda vals: rebuild(*[s(vals) for s in subs])
        try:
            element = self.graph.as_graph_element(fetch, allow_tensor=True, allow_operation=True)
        except TypeError as e:
            raise TypeError(
                f"Fetch argument {fetch!r} has invalid type {type(fetch)}, must be a string or "
                f"Tensor. ({e})"
            ) from None
        except ValueError as e:
            raise ValueError(f"Fetch argument {fetch!r} cannot be interpreted as a Tensor. ({e})") from None
        except KeyError as e:
            raise ValueError(f"Fetch argument {fetch!r} cannot be interpreted as a Tensor. ({e.args[0]})") from None
        if isinstance(element, Operation):
            if element not in self.targets:
                self.targets.append(element)
            return lambda vals: None
        i = self._add_tensor(element)
        return lambda vals: vals[i]
