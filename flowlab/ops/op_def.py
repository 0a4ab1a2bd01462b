"""Op declarations: the one source of truth for an op's signature.

`op_def("MatMul", inputs=["a: T", "b: T"], outputs=["product: T"],
attrs=["transpose_a: bool = false", "transpose_b: bool = false", "T: {float32, ...}"],
shape_fn=...)` declares an op once.  The builder (`apply_op`), the kernel registry,
the gradient registry, GraphDef import and placement all read this declaration.

Argument specs ("name: type"):
    "x: T"           one tensor whose dtype is type attr T
    "idx: int32"     one tensor of a fixed dtype
    "values: N * T"  N tensors of the same type attr (N an int attr)
    "args: Tlist"    a list of tensors whose dtypes are the list(type) attr Tlist
    "ref: Ref(T)"    a reference (mutable variable) of type T
    "refs: Ref(N * T)"  N references of the same type attr (RefMerge's inputs)
Attr specs ("name: kind [= default]"): kind is `type`, a dtype set `{float32, int32}`
or group (`numeric`, `real`, `floating`, `integer`, `all`), `int`, `int >= 1`, `float`,
`bool`, `string`, `shape`, `tensor`, `list(type)`, `list(int)`, `list(float)`,
`list(string)`, `list(shape)`, `func`.

The registry refuses a second declaration of a name and says where the first was.
"""

from __future__ import annotations

import ast
import re
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flowlab.graph import dtypes

_GROUPS: dict[str, tuple[dtypes.DType, ...]] = {
    "numeric": dtypes.NUMERIC,
    "real": dtypes.REAL,
    "floating": dtypes.FLOATING,
    "integer": dtypes.INTEGER,
    "signed": dtypes.SIGNED + dtypes.FLOATING + dtypes.COMPLEX,
    "complex": dtypes.COMPLEX,
    "all": dtypes.ALL_TYPES,
    "number_or_bool": dtypes.NUMERIC + (dtypes.bool,),
    "index": (dtypes.int32, dtypes.int64),
}


@dataclass(frozen=True)
class ArgDef:
    """One input or output argument."""

    name: str
    type_attr: str | None = None  # "T"
    fixed_type: dtypes.DType | None = None  # int32
    number_attr: str | None = None  # "N" for "N * T"
    type_list_attr: str | None = None  # "Tlist"
    is_ref: bool = False

    @property
    def is_list(self) -> bool:
        return self.number_attr is not None or self.type_list_attr is not None


@dataclass(frozen=True)
class AttrDef:
    name: str
    kind: str  # type, int, float, bool, string, shape, tensor, list(...), func
    default: Any = None
    has_default: bool = False
    allowed: tuple[dtypes.DType, ...] | None = None
    minimum: int | None = None


@dataclass
class OpDef:
    """An op's declaration.  `shape_fn(op) -> [TensorShape-like per output]`."""

    name: str
    inputs: list[ArgDef]
    outputs: list[ArgDef]
    attrs: dict[str, AttrDef]
    shape_fn: Callable[[Any], list[Any]] | None = None
    is_stateful: bool = False
    # Control-flow ops that forward a live input although another is dead (Merge),
    # or produce dead outputs (Switch); the executor takes its frame path for them.
    is_control_flow: bool = False
    doc: str = ""
    defined_at: str = field(default="", repr=False)

    def input_arg(self, name: str) -> ArgDef:
        for a in self.inputs:
            if a.name == name:
                return a
        raise KeyError(name)


_REGISTRY: dict[str, OpDef] = {}


def op_def(
    name: str,
    inputs: list[str] = (),  # type: ignore[assignment]
    outputs: list[str] = (),  # type: ignore[assignment]
    attrs: list[str] = (),  # type: ignore[assignment]
    shape_fn: Callable[[Any], list[Any]] | None = None,
    stateful: bool = False,
    control_flow: bool = False,
    doc: str = "",
) -> OpDef:
    """Declare and register an op; returns its OpDef."""
    if name in _REGISTRY:
        raise ValueError(
            f"Op '{name}' is already declared (first at {_REGISTRY[name].defined_at}); "
            "an op is declared once."
        )
    attr_defs = {a.name: a for a in (parse_attr(s) for s in attrs)}
    in_defs = [_resolve_list_type(parse_arg(s), attr_defs) for s in inputs]
    out_defs = [_resolve_list_type(parse_arg(s), attr_defs) for s in outputs]
    for arg in in_defs + out_defs:
        for ref in (arg.type_attr, arg.number_attr, arg.type_list_attr):
            if ref is not None and ref not in attr_defs:
                raise ValueError(f"Op '{name}': argument '{arg.name}' uses undeclared attr '{ref}'")
    frame = traceback.extract_stack(limit=2)[0]
    d = OpDef(
        name, in_defs, out_defs, attr_defs, shape_fn, stateful, control_flow, doc,
        f"{frame.filename}:{frame.lineno}",
    )
    _REGISTRY[name] = d
    return d


def _resolve_list_type(arg: ArgDef, attrs: dict[str, AttrDef]) -> ArgDef:
    """"components: Tcomponents" names a list of tensors when the attr is list(type)."""
    adef = attrs.get(arg.type_attr) if arg.type_attr is not None else None
    if adef is not None and adef.kind == "list(type)" and arg.number_attr is None:
        return ArgDef(arg.name, type_list_attr=arg.type_attr, is_ref=arg.is_ref)
    return arg


def get_op_def(name: str) -> OpDef:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"Op type not registered '{name}'") from None


def registered_ops() -> dict[str, OpDef]:
    return dict(_REGISTRY)


# --- spec parsing -------------------------------------------------------------------
_ARG = re.compile(r"^\s*(\w+)\s*:\s*(.+?)\s*$")


def parse_arg(spec: str) -> ArgDef:
    m = _ARG.match(spec)
    if not m:
        raise ValueError(f"bad argument spec {spec!r}")
    name, t = m.group(1), m.group(2)
    is_ref = False
    rm = re.match(r"^Ref\(\s*(.+?)\s*\)$", t)
    if rm:
        is_ref, t = True, rm.group(1)
    nm = re.match(r"^(\w+)\s*\*\s*(\w+)$", t)
    if nm:
        number, t = nm.group(1), nm.group(2)
        if _is_dtype_name(t):
            return ArgDef(name, fixed_type=dtypes.as_dtype(t), number_attr=number, is_ref=is_ref)
        return ArgDef(name, type_attr=t, number_attr=number, is_ref=is_ref)
    if not re.match(r"^\w+$", t):
        raise ValueError(f"bad argument spec {spec!r}")
    if _is_dtype_name(t):
        return ArgDef(name, fixed_type=dtypes.as_dtype(t), is_ref=is_ref)
    return ArgDef(name, type_attr=t, is_ref=is_ref)


def _is_dtype_name(t: str) -> bool:
    try:
        dtypes.as_dtype(t)
        return t[0].islower()
    except TypeError:
        return False


_ATTR = re.compile(r"^\s*(\w+)\s*:\s*(.+?)\s*(?:(?<![<>])=(?!=)\s*(.+?))?\s*$")


def parse_attr(spec: str) -> AttrDef:
    m = _ATTR.match(spec)
    if not m:
        raise ValueError(f"bad attr spec {spec!r}")
    name, kind, default_src = m.group(1), m.group(2), m.group(3)
    allowed = None
    minimum = None
    if kind.startswith("{"):
        allowed = tuple(dtypes.as_dtype(x.strip()) for x in kind.strip("{}").split(","))
        kind = "type"
    elif kind in _GROUPS:
        allowed = _GROUPS[kind]
        kind = "type"
    elif kind.startswith("list(type)") or kind == "list(type)":
        kind = "list(type)"
    else:
        mm = re.match(r"^(int|list\(\w+\))\s*>=\s*(-?\d+)$", kind)
        if mm:
            kind, minimum = mm.group(1), int(mm.group(2))
    if kind not in (
        "type", "int", "float", "bool", "string", "shape", "tensor", "func",
        "list(type)", "list(int)", "list(float)", "list(string)", "list(shape)", "list(bool)",
    ):
        raise ValueError(f"attr spec {spec!r}: unknown kind {kind!r}")
    if default_src is None:
        return AttrDef(name, kind, None, False, allowed, minimum)
    return AttrDef(name, kind, _parse_default(kind, default_src), True, allowed, minimum)


def _parse_default(kind: str, src: str) -> Any:
    if kind == "type":
        return dtypes.as_dtype(src)
    if src in ("false", "true"):
        return src == "true"
    if kind == "shape":
        return None if src == "unknown" else tuple(ast.literal_eval(src))
    if src == "None":
        return None
    value = ast.literal_eval(src)
    if kind == "float":
        return float(value)
    if kind.startswith("list("):
        return list(value)
    return value
