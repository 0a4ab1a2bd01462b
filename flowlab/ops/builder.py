"""Building ops from their declarations: `apply_op` and `convert_to_tensor`.

`apply_op("MatMul", a=x, b=y, transpose_a=True, name="mm")` converts the inputs to
tensors, infers type attrs from them (Python values take the dtype already inferred
for their type attr, as TensorFlow does: `x_f32 + 1` makes a float32 1), checks and
defaults the attrs, runs the shape function, and adds the op to the graph.  Type
errors are TypeErrors and shape errors ValueErrors, raised before the op exists, and
both name the op, its type, the argument and where the caller is.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import numpy as np

from flowlab.graph import dtypes
from flowlab.graph.graph import Graph, get_default_graph
from flowlab.graph.provisional_names import adopt
from flowlab.graph.tensor import Operation, Tensor, user_traceback
from flowlab.graph.tensor_shape import TensorShape, as_shape
from flowlab.ops.constant_op import make_const, to_numpy
from flowlab.ops.op_def import ArgDef, AttrDef, OpDef, get_op_def

# --- conversion to tensors ---------------------------------------------------------
_CONVERSION: list[tuple[int, type, Callable[..., Tensor]]] = []


def register_tensor_conversion_function(
    base_type: type, conversion_func: Callable[..., Tensor], priority: int = 100
) -> None:
    """`conversion_func(value, dtype=None, name=None, as_ref=False) -> Tensor`."""
    _CONVERSION.append((priority, base_type, conversion_func))
    _CONVERSION.sort(key=lambda e: e[0])


def convert_to_tensor(
    value: Any,
    dtype: Any = None,
    name: str | None = None,
    preferred_dtype: Any = None,
    as_ref: bool = False,
    dtype_hint: Any = None,
) -> Tensor:
    """A Tensor for `value` (Tensor, Variable, Python or NumPy value)."""
    dt = None if dtype is None else dtypes.as_dtype(dtype)
    if isinstance(value, Tensor):
        if dt is not None and value.dtype.base_dtype is not dt.base_dtype:
            raise ValueError(
                f"Tensor conversion requested dtype {dt.name} for Tensor with dtype "
                f"{value.dtype.base_dtype.name}: {value!r}"
            )
        return value
    for _, base, fn in _CONVERSION:
        if isinstance(value, base):
            t = fn(value, dtype=dt, name=name, as_ref=as_ref)
            if dt is not None and t.dtype.base_dtype is not dt.base_dtype:
                raise ValueError(
                    f"Tensor conversion requested dtype {dt.name} for {type(value).__name__} "
                    f"with dtype {t.dtype.base_dtype.name}"
                )
            return t
    if isinstance(value, Operation):
        raise TypeError(
            f"Can't convert Operation '{value.name}' to Tensor (target dtype={dt}, "
            f"name={name!r}). Use op.outputs[i] for one of its outputs."
        )
    if dt is None:
        hint = preferred_dtype if preferred_dtype is not None else dtype_hint
        # A NumPy value keeps its own dtype: a preferred dtype only guides Python values
        # (TensorFlow refuses to cast a NumPy array implicitly, then falls back).
        if hint is not None and not isinstance(value, (np.ndarray, np.generic)):
            try:
                arr = to_numpy(value, dtypes.as_dtype(hint))
            except (TypeError, ValueError):
                arr = to_numpy(value, None)
        else:
            arr = to_numpy(value, None)
    else:
        arr = to_numpy(value, dt)
    return make_const(arr, name or "Const")


def convert_n_to_tensor(values: Any, dtype: Any = None, name: str | None = None) -> list[Tensor]:
    return [convert_to_tensor(v, dtype, name) for v in values]


# --- op construction ---------------------------------------------------------------
def apply_op(op_type: str, name: str | None = None, **kwargs: Any) -> Any:
    """Create an op of a declared type; returns its output Tensor, list of Tensors
    (several outputs), or the Operation (no outputs)."""
    op = create_op(op_type, name, **kwargs)
    return outputs_of(op)


def outputs_of(op: Operation) -> Any:
    od: OpDef = op.op_def
    outs = op.outputs
    if not od.outputs:
        return op
    if len(od.outputs) == 1 and not od.outputs[0].is_list:
        return outs[0]
    if len(od.outputs) == 1:
        return outs
    # Several output args: one entry per arg (a list for list args).
    res: list[Any] = []
    i = 0
    for arg in od.outputs:
        n = _output_count(arg, op._attrs)
        res.append(outs[i : i + n] if arg.is_list else outs[i])
        i += n
    return res


def _output_count(arg: ArgDef, attrs: dict[str, Any]) -> int:
    if arg.number_attr is not None:
        return int(attrs[arg.number_attr])
    if arg.type_list_attr is not None:
        return len(attrs[arg.type_list_attr])
    return 1


def create_op(op_type: str, name: str | None = None, **kwargs: Any) -> Operation:
    od = get_op_def(op_type)
    g = graph_of(kwargs.values())
    name = name or op_type
    inferred: dict[str, Any] = {}
    # Attrs given explicitly fix type attrs before any input is converted.
    for key, adef in od.attrs.items():
        if key in kwargs and adef.kind == "type" and kwargs[key] is not None:
            inferred[key] = dtypes.as_dtype(kwargs[key]).base_dtype

    # Inputs convert inside a scope named after the op, so that the constants they
    # make are named "Reshape/shape" (TensorFlow's rule); the scope's own name is
    # the op's unique name.
    adoptions: list[tuple[Tensor, str]] = []
    with g.as_default(), g.name_scope(name) as scope:
        inputs: list[Tensor] = []
        ref_inputs: list[Tensor] = []
        for arg in od.inputs:
            if arg.name not in kwargs:
                raise TypeError(f"{op_type} '{name}': missing input argument '{arg.name}'")
            value = kwargs[arg.name]
            converted = _convert_arg(od, name, arg, value, inferred, adoptions)
            inputs.extend(converted)
            if arg.is_ref:
                ref_inputs.extend(converted)

    attrs: dict[str, Any] = {}
    for key, adef in od.attrs.items():
        if key in inferred:
            value = inferred[key]
        elif key in kwargs and kwargs[key] is not None:
            value = kwargs[key]
        elif adef.has_default:
            value = adef.default
        elif key in kwargs and adef.kind in ("shape",):
            value = None
        else:
            raise TypeError(f"{op_type} '{name}': missing required attr '{key}'")
        attrs[key] = _check_attr(od, name, adef, value)
    extra = set(kwargs) - {a.name for a in od.inputs} - set(od.attrs)
    if extra:
        raise TypeError(f"{op_type} '{name}': unexpected arguments {sorted(extra)}")

    out_dtypes: list[dtypes.DType] = []
    for arg in od.outputs:
        out_dtypes.extend(_arg_dtypes(arg, attrs))

    unique = scope[:-1]
    shape_fn = od.shape_fn

    def checked_shapes(op: Operation) -> list[Any]:
        if shape_fn is None:
            return [TensorShape(None)] * len(out_dtypes)
        try:
            return list(shape_fn(op))
        except ValueError as e:
            shapes = ", ".join(_shape_str(t.shape) for t in op._inputs)
            where = op.defined_at()
            raise ValueError(
                f"{e} for '{unique}' (op: '{op_type}') with input shapes: {shapes}"
                + (f" (defined at {where})" if where else "") + _shape_advice(op_type)
            ) from None

    # An op that takes a reference (Assign, ScatterUpdate, Apply*) is built colocated
    # with each ref input's op, as TensorFlow's op_def_library does: it gets the
    # variable's device and `_class`, whatever device scope encloses it.
    with contextlib.ExitStack() as stack:
        for t in ref_inputs:
            stack.enter_context(g.colocate_with(t.op))
        op = g._create_op(op_type, inputs, out_dtypes, attrs, unique, od, checked_shapes)
    # Values an array builder converted before calling us take their names from the op
    # now that it exists (`Reshape/shape`; flowlab/graph/provisional_names.py).
    for t, base in adoptions:
        with g.name_scope(scope):
            adopt(g, t, g.unique_name(base, mark_as_used=False), op)
    return op


def _shape_str(s: TensorShape) -> str:
    if s.ndims is None:
        return "?"
    return "[" + ",".join("?" if d is None else str(d) for d in s.as_tuple()) + "]"  # type: ignore[union-attr]


def graph_of(values: Any) -> Graph:
    """The graph of the first Tensor, Operation or Variable among `values` (looking one
    level into lists), else the default graph: ops join their inputs' graph.  While a
    dataset function is traced (flowlab.data.function), every op joins the function
    graph, which captures inputs from the graphs enclosing it."""
    default = get_default_graph()
    if getattr(default, "is_function_graph", False):
        return default
    for v in values or ():
        if isinstance(v, (list, tuple)):
            for x in v:
                g = getattr(x, "graph", None)
                if isinstance(g, Graph):
                    return g
            continue
        g = getattr(v, "graph", None)
        if isinstance(g, Graph):
            return g
    return get_default_graph()


def _convert_arg(
    od: OpDef, name: str, arg: ArgDef, value: Any, inferred: dict[str, Any],
    adoptions: list[tuple[Tensor, str]],
) -> list[Tensor]:
    if arg.is_list:
        if isinstance(value, (Tensor, np.ndarray)) or not isinstance(value, (list, tuple)):
            raise TypeError(
                f"Expected list for '{arg.name}' argument to '{od.name}' Op '{name}', not {value!r}."
            )
        if arg.number_attr is not None:
            inferred[arg.number_attr] = len(value)
        if arg.type_list_attr is not None:
            ts = [_to_tensor(od, name, arg, v, None, index=i, adoptions=adoptions) for i, v in enumerate(value)]
            inferred[arg.type_list_attr] = [t.dtype.base_dtype for t in ts]
            return ts
        want = arg.fixed_type or inferred.get(arg.type_attr)  # type: ignore[arg-type]
        if want is None:
            # Nothing fixes the type yet: each element converts on its own, and all
            # must agree (TensorFlow's rule; `add_n([1, x_f32])` is an error).
            ts = [_to_tensor(od, name, arg, v, None, index=i, adoptions=adoptions) for i, v in enumerate(value)]
            types = [t.dtype.base_dtype for t in ts]
            if any(t is not types[0] for t in types):
                raise TypeError(
                    f"Tensors in list passed to '{arg.name}' of '{od.name}' Op have types "
                    f"[{', '.join(t.name for t in types)}] that don't all match."
                )
            if arg.type_attr is not None and ts:
                inferred[arg.type_attr] = types[0]
            return ts
        ts = [_to_tensor(od, name, arg, v, want, index=i, adoptions=adoptions) for i, v in enumerate(value)]
        if arg.type_attr is not None:
            inferred[arg.type_attr] = want
        return ts
    want = arg.fixed_type or (inferred.get(arg.type_attr) if arg.type_attr else None)
    hint = None
    t = None
    if want is None and arg.type_attr is not None:
        # A type attr's default guides Python values (`Tidx = int32`).
        adef = od.attrs[arg.type_attr]
        hint = adef.default if adef.has_default else None
        if hint is not None and adef.allowed is not None and not _tensor_like(value):
            t = _first_conversion(arg, value, adef.allowed)
    if t is None:
        t = _to_tensor(od, name, arg, value, want, hint=hint, adoptions=adoptions)
    if arg.type_attr is not None and arg.type_attr not in inferred:
        inferred[arg.type_attr] = t.dtype.base_dtype
    return [t]


def _tensor_like(value: Any) -> bool:
    return isinstance(value, Tensor) or (hasattr(value, "_as_graph_element")
                                         and not isinstance(value, (list, tuple)))


def _first_conversion(arg: ArgDef, value: Any, allowed: Any) -> Tensor | None:
    """TensorFlow's op_def_library converts a Python value for a type attr with a
    default and allowed types first on its own; a dtype outside the allowed ones is
    converted again with the default (`[]` for Reshape's shape: a float32
    `Reshape/shape` left unread, then the int32 `Reshape/shape_1`)."""
    try:
        t = convert_to_tensor(value, name=arg.name)
    except (TypeError, ValueError):  # the second conversion reports it
        return None
    return t if t.dtype.base_dtype in allowed else None


def _to_tensor(
    od: OpDef,
    name: str,
    arg: ArgDef,
    value: Any,
    want: dtypes.DType | None,
    index: int | None = None,
    hint: dtypes.DType | None = None,
    adoptions: list[tuple[Tensor, str]] | None = None,
) -> Tensor:
    argname = arg.name if index is None else f"{arg.name}[{index}]"
    # TensorFlow names a converted list element `<arg>_<i>` (internal_convert_n_to_tensor).
    const_name = arg.name if index is None else f"{arg.name}_{index}"
    if _tensor_like(value):
        t = convert_to_tensor(value, as_ref=arg.is_ref) if not isinstance(value, Tensor) else value
        if t.op._provisional is not None and adoptions is not None:
            adoptions.append((t, const_name))
        if want is not None and t.dtype.base_dtype is not want:
            first = next((a.name for a in od.inputs if a.type_attr == arg.type_attr), arg.name)
            of = f" of argument '{first}'" if arg.fixed_type is None else ""
            raise TypeError(
                f"Input '{argname}' of '{od.name}' Op has type {t.dtype.base_dtype.name} that does "
                f"not match type {want.name}{of}."
                + _where() + f" Cast the {t.dtype.base_dtype.name} input with tf.cast(value, "
                f"tf.{want.name}) (or make both the same dtype where they are made): ops never "
                "convert between dtypes on their own."
            )
    else:
        try:
            t = convert_to_tensor(value, dtype=want, name=const_name, preferred_dtype=hint)
        except (TypeError, ValueError) as e:
            raise TypeError(
                f"Expected {want.name if want else 'a tensor'} for argument '{argname}' of "
                f"'{od.name}' Op '{name}', got {value!r} of type '{type(value).__name__}' "
                f"instead. Error: {e}"
            ) from None
    if arg.is_ref and not t.dtype.is_ref_dtype:
        raise TypeError(
            f"'{od.name}' Op '{name}' requires that input '{argname}' be a mutable tensor "
            f"(e.g. a Variable); got {t.name} of type {t.dtype.name}."
        )
    if arg.type_attr is not None:
        adef = od.attrs[arg.type_attr]
        if adef.allowed is not None and t.dtype.base_dtype not in adef.allowed:
            allowed = ", ".join(d.name for d in adef.allowed)
            raise TypeError(
                f"Value passed to parameter '{argname}' has DataType {t.dtype.base_dtype.name} not "
                f"in list of allowed values: {allowed} (op '{od.name}' '{name}')." + _where()
            )
    return t


def _where() -> str:
    tb = user_traceback(1)
    return f" (at {tb[0]})" if tb else ""


def _arg_dtypes(arg: ArgDef, attrs: dict[str, Any]) -> list[dtypes.DType]:
    if arg.type_list_attr is not None:
        ts = list(attrs[arg.type_list_attr])
    else:
        t = arg.fixed_type or attrs[arg.type_attr]  # type: ignore[index]
        n = int(attrs[arg.number_attr]) if arg.number_attr else 1
        ts = [t] * n
    if arg.is_ref:
        ts = [t._as_ref() for t in ts]
    return ts


_INT64_MAX = (1 << 63) - 1


def _int64_dims(dims: Any, value: Any, arg: str) -> Any:
    """A shape attr's dims must fit in int64, as in TensorShapeProto."""
    for d in dims or ():
        if d is not None and d > _INT64_MAX:
            shown = list(value) if isinstance(value, (list, tuple)) else value
            raise TypeError(f"Error converting {shown!r} (arg name = {arg}) to a TensorShape: "
                            f"Value out of range: {d}")
    return dims


def _check_attr(od: OpDef, name: str, adef: AttrDef, value: Any) -> Any:
    kind = adef.kind
    where = f"attr '{adef.name}' of {od.name} '{name}'"
    try:
        if kind == "type":
            value = dtypes.as_dtype(value).base_dtype
            if adef.allowed is not None and value not in adef.allowed:
                allowed = ", ".join(d.name for d in adef.allowed)
                raise TypeError(f"DataType {value.name} for {where} not in list of allowed values: {allowed}")
            return value
        if kind == "int":
            if isinstance(value, (float, np.floating)) and value != int(value):
                raise TypeError(f"Expected int for {where}, got {value!r}")
            value = int(value)
            if adef.minimum is not None and value < adef.minimum:
                raise ValueError(f"{where} = {value} must be at least minimum {adef.minimum}")
            return value
        if kind == "float":
            return float(value)
        if kind == "bool":
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"Expected bool for {where}, got {value!r}")
            return bool(value)
        if kind == "string":
            return value.decode() if isinstance(value, bytes) else str(value)
        if kind == "shape":
            if value is None:
                return None
            s = as_shape(value)
            return _int64_dims(s.as_tuple(), value, adef.name)
        if kind == "tensor":
            return value
        if kind == "list(type)":
            return [dtypes.as_dtype(v).base_dtype for v in value]
        if kind == "list(int)":
            return [int(v) for v in value]
        if kind == "list(float)":
            return [float(v) for v in value]
        if kind == "list(string)":
            return [v.decode() if isinstance(v, bytes) else str(v) for v in value]
        if kind == "list(bool)":
            return [bool(v) for v in value]
        if kind == "list(shape)":
            return [_int64_dims(as_shape(v).as_tuple(), v, adef.name) for v in value]
        return value
    except (TypeError, ValueError) as e:
        if str(e).startswith(("Expected", "DataType", "Error converting")) or where in str(e):
            raise
        raise TypeError(f"Bad value {value!r} for {where}: {e}") from None


# What to do about a shape error, after TensorFlow's words (which tests match).
_SHAPE_ADVICE = {
    "MatMul": "For tf.matmul(a, b), a's last dimension must equal b's first (transpose_a=True "
              "or transpose_b=True flips one)",
    "BatchMatMulV2": "For tf.matmul(a, b), a's last dimension must equal b's second-to-last "
                     "(adjoint_a=True or adjoint_b=True flips one)",
}


def _shape_advice(op_type: str) -> str:
    tip = _SHAPE_ADVICE.get(op_type, "The inputs' shapes are listed in order above")
    return (f". {tip}; print each input's .shape where it is made, and make them agree with "
            "tf.reshape, tf.transpose or tf.expand_dims.")
