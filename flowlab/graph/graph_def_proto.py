"""GraphDefs that read like TensorFlow's protos: `gd.node[i].op`, `.attr['x'].s`.

TensorFlow's `Graph.as_graph_def()` and `RunMetadata.partition_graphs` give
`GraphDef` protos, and programs read them as such (`[n.name for n in gd.node]`,
`len(gd.node)`, `n.attr['tensor_name'].s`, `pg.versions.producer`, `print(gd)`,
`gd.SerializeToString()`).  flowlab's GraphDefs are JSON dicts (the schema of
`flowlab.graph.graph_def`).  The classes here are both at once: `dict` subclasses
holding exactly the JSON values (so `json.dumps`, `validate_graph_def`, the viewer
and `gd["node"][0]["attr"]` keep working, and they compare equal to plain dicts)
with read-only proto-style properties on top.  `as_graph_def(d)` converts a GraphDef
dict, recursively; the input is not modified.

Proto conventions mirrored: a field that is not set reads as its default (`b""`,
0, 0.0, False, an empty list); `s` is bytes; `type` is the `DataType` enum
(`DT_FLOAT` = 1); `WhichOneof("value")` names the set kind.  A `GraphDef` prints as
protobuf text and serializes to the proto's bytes, both through TensorFlow's message
(flowlab.graph.graph_def_pb), so what a program writes reads back in TensorFlow.
Read-only otherwise: nothing writes back into them (`CopyFrom`, `node.add()` are not
provided).

Invariant: `dict(as_graph_def(d)) == d` for every GraphDef dict `d`.
"""

from __future__ import annotations

from typing import Any

from flowlab.graph.attr_value_json import dtype_from_json

__all__ = ["GraphDef", "NodeDef", "AttrValue", "as_graph_def", "PRODUCER"]

# The `versions.producer` TensorFlow 2.21 writes (TF_GRAPH_DEF_VERSION), so that a
# program comparing it sees the version of the runtime flowlab follows.
PRODUCER = 2474

_KINDS = ("s", "i", "f", "b", "type", "shape", "tensor", "list", "func", "placeholder")


def _bytes(v: Any) -> bytes:
    return v.encode("utf-8") if isinstance(v, str) else bytes(v)


def _float(v: Any) -> float:
    return float(v) if not isinstance(v, str) else float({"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}[v])


def _type(v: Any) -> int:
    return dtype_from_json(v, "attr").as_datatype_enum


class _Dim:
    __slots__ = ("size", "name")

    def __init__(self, size: int) -> None:
        self.size = size
        self.name = ""

    def __repr__(self) -> str:
        return f"dim {{ size: {self.size} }}"


class TensorShapeProto:
    """`dim` (each with `.size`, -1 unknown) and `unknown_rank`, as the proto."""

    __slots__ = ("dim", "unknown_rank")

    def __init__(self, js: dict[str, Any] | None) -> None:
        js = js or {}
        self.dim = [_Dim(int(d)) for d in js.get("dim", [])]
        self.unknown_rank = bool(js.get("unknown_rank", False))

    def __repr__(self) -> str:
        return "unknown_rank: true" if self.unknown_rank else " ".join(map(repr, self.dim))


class NameAttrList:
    """A `func` attr: `.name` (and `.attr`, empty: flowlab writes only the name)."""

    __slots__ = ("name", "attr")

    def __init__(self, js: dict[str, Any] | None) -> None:
        self.name = str((js or {}).get("name", ""))
        self.attr: dict[str, AttrValue] = {}


class ListValue(dict[str, Any]):
    """An attr's `list`: every field is a list (empty when not set)."""

    @property
    def s(self) -> list[bytes]:
        return [_bytes(v) for v in self.get("s", [])]

    @property
    def i(self) -> list[int]:
        return [int(v) for v in self.get("i", [])]

    @property
    def f(self) -> list[float]:
        return [_float(v) for v in self.get("f", [])]

    @property
    def b(self) -> list[bool]:
        return [bool(v) for v in self.get("b", [])]

    @property
    def type(self) -> list[int]:
        return [_type(v) for v in self.get("type", [])]

    @property
    def shape(self) -> list[TensorShapeProto]:
        return [TensorShapeProto(v) for v in self.get("shape", [])]

    @property
    def tensor(self) -> list[dict[str, Any]]:
        return list(self.get("tensor", []))

    @property
    def func(self) -> list[NameAttrList]:
        return [NameAttrList(v) for v in self.get("func", [])]


class AttrValue(dict[str, Any]):
    """One attr: a one-key dict (`{"s": "text"}`) that also reads as the proto."""

    def __init__(self, js: dict[str, Any] | None = None) -> None:
        super().__init__(js or {})
        if isinstance(self.get("list"), dict):
            self["list"] = ListValue(self["list"])

    def WhichOneof(self, group: str) -> str | None:  # noqa: N802 -- the proto's name
        """The kind that is set ("s", "i", "list", ...), as the proto's oneof `value`."""
        if group != "value":
            raise ValueError(f"AttrValue has no oneof {group!r} (only 'value').")
        return next((k for k in _KINDS if k in self), None)

    def HasField(self, name: str) -> bool:  # noqa: N802 -- the proto's name
        if name not in _KINDS:
            raise ValueError(f"AttrValue has no field {name!r}.")
        return name in self

    @property
    def s(self) -> bytes:
        return _bytes(self.get("s", ""))

    @property
    def i(self) -> int:
        return int(self.get("i", 0))

    @property
    def f(self) -> float:
        return _float(self.get("f", 0.0))

    @property
    def b(self) -> bool:
        return bool(self.get("b", False))

    @property
    def type(self) -> int:
        return _type(self["type"]) if "type" in self else 0

    @property
    def shape(self) -> TensorShapeProto:
        return TensorShapeProto(self.get("shape"))

    @property
    def tensor(self) -> dict[str, Any]:
        """The tensor's JSON (`dtype`, `shape`, base64 `data`; see graph_def)."""
        return dict(self.get("tensor", {}))

    @property
    def list(self) -> ListValue:
        v = self.get("list")
        return v if isinstance(v, ListValue) else ListValue()

    @property
    def func(self) -> NameAttrList:
        return NameAttrList(self.get("func"))


class NodeDef(dict[str, Any]):
    """One node: the JSON dict, readable as `n.name`, `n.op`, `n.input`, `n.device`, `n.attr`."""

    def __init__(self, js: dict[str, Any] | None = None) -> None:
        super().__init__(js or {})
        self["input"] = list(self.get("input", []))
        self["attr"] = {k: AttrValue(v) for k, v in (self.get("attr") or {}).items()}

    @property
    def name(self) -> str:
        return str(self.get("name", ""))

    @property
    def op(self) -> str:
        return str(self.get("op", ""))

    @property
    def device(self) -> str:
        return str(self.get("device", ""))

    @property
    def input(self) -> list[str]:
        return list(self["input"])

    @property
    def attr(self) -> dict[str, AttrValue]:
        return dict(self["attr"])


class VersionDef:
    """`producer`, `min_consumer`, `bad_consumers` of a GraphDef, as TensorFlow's."""

    __slots__ = ("producer", "min_consumer", "bad_consumers")

    def __init__(self) -> None:
        self.producer = PRODUCER
        self.min_consumer = 0
        self.bad_consumers: list[int] = []


class FunctionDefLibrary:
    """A GraphDef's `library`: flowlab's partition graphs hold no functions."""

    __slots__ = ("function", "gradient")

    def __init__(self) -> None:
        self.function: list[Any] = []
        self.gradient: list[Any] = []

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FunctionDefLibrary) and not (self.function or other.function)

    __hash__ = None  # type: ignore[assignment]


class GraphDef(dict[str, Any]):
    """A GraphDef dict whose nodes read as `NodeDef`s: `for n in gd.node: n.op`.

    >>> gd = as_graph_def(graph.as_graph_def())          # doctest: +SKIP
    >>> [(n.name, n.op) for n in gd.node]
    """

    def __init__(self, js: dict[str, Any] | None = None) -> None:
        super().__init__(js or {})
        self["node"] = [NodeDef(n) for n in self.get("node", [])]

    @property
    def node(self) -> list[NodeDef]:
        return list(self["node"])

    @property
    def versions(self) -> VersionDef:
        return VersionDef()

    @property
    def library(self) -> FunctionDefLibrary:
        return FunctionDefLibrary()

    def proto(self) -> Any:
        """TensorFlow's `GraphDef` message with this graph's nodes."""
        from flowlab.graph.graph_def_pb import to_proto

        return to_proto(dict(self))

    def SerializeToString(self, **kwargs: Any) -> bytes:  # noqa: N802 -- the proto's name
        return self.proto().SerializeToString(**kwargs)  # type: ignore[no-any-return]

    def ByteSize(self) -> int:  # noqa: N802 -- the proto's name
        return self.proto().ByteSize()  # type: ignore[no-any-return]

    def __str__(self) -> str:  # protobuf text, as printing TensorFlow's GraphDef shows
        return str(self.proto())

    __repr__ = __str__


def as_graph_def(graph_def: dict[str, Any]) -> GraphDef:
    """`graph_def` (a GraphDef dict) as a `GraphDef`; one already converted is returned
    as it is."""
    return graph_def if isinstance(graph_def, GraphDef) else GraphDef(graph_def)
