"""`tf.einsum`: Einstein summation as TensorFlow 2.21 builds it.

The equation is parsed once (`parse`): whitespace dropped, an implicit output
("ij,jk") made explicit (the labels that occur once, sorted, after the ellipsis).
One or two operands build one `Einsum` op named "einsum/Einsum" with that equation;
more are contracted pairwise, left to right, keeping the labels that later operands
or the output still need (TensorFlow orders the pairs with opt_einsum; the values are
the same, the intermediate equations may differ).  The gradient of each operand is
another einsum of the output gradient with the other operand, broadcast back over
labels only that operand had, put back on the diagonal for a label it repeats ("ii"),
and summed over batch dimensions it was broadcast in.
Kernel: flowlab.kernels.einsum_kernels (`numpy.einsum` over `ctx.xp`; cupy has einsum).
"""

from __future__ import annotations

import re
from typing import Any

from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops import array_ops, math_ops
from flowlab.ops.builder import apply_op, convert_to_tensor, graph_of
from flowlab.ops.gradient_registry import gradient
from flowlab.ops.op_def import op_def

__all__ = ["einsum"]

_ELL = "."  # one character standing for "..." inside parsed subscripts


def parse(equation: str, n_inputs: int) -> tuple[list[str], str]:
    """(input subscripts, output subscripts) with "..." written as "."."""
    eq = re.sub(r"\s", "", equation)
    if "->" in eq:
        lhs, out = eq.split("->", 1)
        if "->" in out:
            raise ValueError(f"Invalid einsum equation '{equation}': more than one '->'")
    else:
        lhs, out = eq, None
    ins = [s.replace("...", _ELL) for s in lhs.split(",")]
    if len(ins) != n_inputs:
        raise ValueError(f"Expected {len(ins)} input tensors for einsum equation '{equation}', got {n_inputs}")
    for s in ins + ([out.replace("...", _ELL)] if out is not None else []):
        if not re.fullmatch(r"\.?[A-Za-z]*\.?[A-Za-z]*", s) or s.count(_ELL) > 1:
            raise ValueError(f"Invalid einsum equation '{equation}': subscripts must be letters, at most one "
                             "ellipsis per operand")
    if out is None:
        counts: dict[str, int] = {}
        for s in ins:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        out = ("." if any(_ELL in s for s in ins) else "") + "".join(
            sorted(c for c, k in counts.items() if k == 1 and c != _ELL))
    else:
        out = out.replace("...", _ELL)
        for c in out:
            if c != _ELL and not any(c in s for s in ins):
                raise ValueError(f"Invalid einsum equation '{equation}': output label '{c}' is in no input")
    return ins, out


def _unparse(ins: list[str], out: str) -> str:
    return ",".join(ins).replace(_ELL, "...") + "->" + out.replace(_ELL, "...")


def _label_dims(ins: list[str], shapes: list[tuple[Any, ...] | None]) -> tuple[dict[str, Any], tuple[Any, ...] | None]:
    dims: dict[str, Any] = {}
    ell: tuple[Any, ...] | None = ()
    from flowlab.ops.math_defs import broadcast_dims
    for s, shape in zip(ins, shapes):
        if shape is None:
            if _ELL in s:
                ell = None
            continue
        n_ell = len(shape) - (len(s) - (1 if _ELL in s else 0))
        if n_ell < 0 or (n_ell > 0 and _ELL not in s):
            raise ValueError(f"Expected input with {len(s)} dimensions for subscripts '{s.replace(_ELL, '...')}', "
                             f"got rank {len(shape)}")
        pos = 0
        for c in s:
            if c == _ELL:
                if ell is not None:
                    ell = broadcast_dims(ell, shape[pos:pos + n_ell])
                pos += n_ell
                continue
            d = shape[pos]
            pos += 1
            old = dims.get(c)
            if old is not None and d is not None and old != d and old != 1 and d != 1:
                raise ValueError(f"Expected dimension {old} at axis {pos - 1} of the input shaped "
                                 f"{list(shape)} but got dimension {d}")
            dims[c] = d if old is None or old == 1 else old
    return dims, ell


def _einsum_shape(op: Operation) -> list[Any]:
    ins, out = parse(op.get_attr("equation"), len(op.inputs))
    dims, ell = _label_dims(ins, [t.shape.as_tuple() for t in op.inputs])
    if _ELL in out and ell is None:
        return [TensorShape(None)]
    res: list[Any] = []
    for c in out:
        res.extend(ell if c == _ELL else [dims.get(c)])  # type: ignore[arg-type]
    return [TensorShape(res)]


op_def("Einsum", inputs=["inputs: N * T"], outputs=["output: T"],
       attrs=["equation: string", "N: int >= 1", "T: type"], shape_fn=_einsum_shape)


def _pair_output(a: str, b: str, keep: str) -> str:
    seen = ""
    if _ELL in a or _ELL in b:
        seen = _ELL
    for c in a + b:
        if c != _ELL and c in keep and c not in seen:
            seen += c
    return seen


def einsum(equation: str, *inputs: Any, **kwargs: Any) -> Tensor:
    """Einstein summation: `tf.einsum("ij,jk->ik", a, b)` is a matmul."""
    name = kwargs.pop("name", None)
    kwargs.pop("optimize", None)
    if kwargs:
        raise TypeError(f"Invalid keyword arguments for this function: {', '.join(sorted(kwargs))}. "
                        "Expected: name, optimize")
    g = graph_of(list(inputs))
    with g.as_default(), g.name_scope(name or "einsum"):
        tensors = [convert_to_tensor(x, name="x") for x in inputs]
        for t in tensors[1:]:
            if t.dtype.base_dtype != tensors[0].dtype.base_dtype:
                raise TypeError(f"Input 'inputs' of 'Einsum' Op has type {t.dtype.name} that does not match type "
                                f"{tensors[0].dtype.name} of argument 'inputs'.")
        ins, out = parse(equation, len(tensors))
        while len(ins) > 2:
            keep = "".join(ins[2:]) + out
            mid = _pair_output(ins[0], ins[1], keep)
            t = apply_op("Einsum", inputs=tensors[:2], equation=_unparse(ins[:2], mid), name="Einsum")
            ins, tensors = [mid, *ins[2:]], [t, *tensors[2:]]
        return apply_op("Einsum", inputs=tensors, equation=_unparse(ins, out), name="Einsum")


def _sum_to(grad: Any, x: Tensor) -> Any:
    """Sum `grad` down to x's static shape (batch dims x was broadcast in)."""
    sg, sx = grad.shape.as_tuple(), x.shape.as_tuple()
    if sg is None or sx is None or sg == sx:
        return grad
    if None in sg or None in sx:
        raise NotImplementedError("flowlab's einsum gradient needs static shapes when an operand's ellipsis "
                                  "dimensions are broadcast")
    lead = len(sg) - len(sx)
    axes = list(range(lead)) + [lead + i for i, d in enumerate(sx) if d == 1 and sg[lead + i] != 1]
    if axes:
        grad = math_ops.reduce_sum(grad, axes)
    return array_ops.reshape(grad, list(sx))


def _positions(x: Tensor, subs: str) -> tuple[Any, list[tuple[str, int]]]:
    """x's dynamic shape and (label, axis) for each label of `subs` ("." spans n axes)."""
    rank = x.shape.ndims
    if rank is None:
        raise NotImplementedError("flowlab's einsum gradient needs the operand's rank")
    n_ell = rank - len(subs.replace(_ELL, ""))
    axes: list[tuple[str, int]] = []
    pos = 0
    for c in subs:
        for k in range(n_ell if c == _ELL else 1):
            axes.append((c, pos + k))
        pos += n_ell if c == _ELL else 1
    return array_ops.shape(x), axes


def _expand_unique(gx: Any, x: Tensor, sx: str, kept: str) -> Any:
    """Broadcast gx (labels `kept`) to one axis per distinct label of x, over the labels
    only x had: the forward pass summed them."""
    shape_x, axes = _positions(x, sx)
    dims, full, seen = [], [], set()
    for c, a in axes:
        key = (c, a) if c == _ELL else c
        if key in seen:
            continue
        seen.add(key)
        full.append(shape_x[a])
        dims.append(shape_x[a] if c == _ELL or c in kept else 1)
    return array_ops.broadcast_to(array_ops.reshape(gx, array_ops.stack(dims)), array_ops.stack(full))


def _to_diagonals(gx: Any, x: Tensor, sx: str, unique: str) -> Any:
    """gx has one axis per label of `unique`; x repeats some labels.  Insert the repeated
    axes and zero everything off their diagonals."""
    shape_x, axes = _positions(x, sx)
    first: dict[str, int] = {}
    for c, a in axes:
        if c == _ELL:
            continue
        first.setdefault(c, a)
    out = gx
    for c, a in axes:
        if c != _ELL and first[c] != a:
            out = array_ops.expand_dims(out, a)
    result = out
    rank = len(axes)
    for c, a in axes:
        p = first.get(c, a)
        if c == _ELL or p == a:
            continue
        n = shape_x[a]
        eye = math_ops.cast(math_ops.equal(array_ops.expand_dims(math_ops.range(n), 1),
                                           array_ops.expand_dims(math_ops.range(n), 0)), gx.dtype)
        # eye is symmetric, so its two axes can stand at p and a in either order.
        mask = array_ops.reshape(eye, array_ops.stack([n if i in (p, a) else 1 for i in range(rank)]))
        result = result * mask
    return array_ops.broadcast_to(result, shape_x)


@gradient("Einsum")
def _einsum_grad(op: Operation, grad: Any) -> Any:
    ins, out = parse(op.get_attr("equation"), len(op.inputs))
    grads = []
    for i, x in enumerate(op.inputs):
        sx = ins[i]
        others = [(ins[j], op.inputs[j]) for j in range(len(ins)) if j != i]
        # A label repeated in x (a diagonal, "ii->i") is differentiated once, then the
        # gradient is placed back on that diagonal.
        unique = "".join(c for k, c in enumerate(sx) if c not in sx[:k])
        present = out + "".join(s for s, _ in others)
        kept = "".join(c for c in unique if c == _ELL or c in present)
        if _ELL in kept and _ELL not in present:
            raise NotImplementedError(f"flowlab's einsum gradient does not handle an ellipsis summed away "
                                      f"({op.get_attr('equation')!r})")
        eq = _unparse([out] + [s for s, _ in others], kept)
        gx = apply_op("Einsum", inputs=[grad] + [t for _, t in others], equation=eq, name="Einsum")
        if kept != unique:
            gx = _expand_unique(gx, x, sx, kept)
        if unique != sx:
            gx = _to_diagonals(gx, x, sx, unique)
        grads.append(_sum_to(gx, x))
    return grads
