"""Kernels of the proximal optimizer updates: FTRL, proximal gradient descent,
proximal Adagrad and Adagrad dual averaging (flowlab.ops.training_ops).

Each kernel reads its variable and slot variables (the `VariableState`s of its
`Ref(T)` inputs), computes their new values with the formulas of TensorFlow's CPU
kernels (core/kernels/training_ops.cc) in the variable's dtype, and stores every new
array with `step.write_var` (a stored array is never mutated; the undo log can roll
the step back).  With `use_locking` the variables' locks are held for the whole
read-modify-write.

Written once over `ctx.xp` (NumPy on a CPU, CuPy on a GPU), so each kernel is
registered for both device types.  The sparse kernels update the rows `indices`:
all at once when the indices are unique (what the optimizers pass: they sum
duplicates first), else one row after another as TensorFlow's loop does, so a
repeated index applies twice.

TensorFlow quirks kept on purpose (the numbers must match):
- sparse AdagradDA on a matrix divides by the global step first (another
  arrangement of the same formula, in T), on a vector computes in float64.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.registry import ALL, kernel
from flowlab.kernels.resources import VariableState

Rows = Callable[..., tuple[Any, ...]]


def _shape_str(shape: tuple[int, ...]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _locked(ctx: Any, refs: list[VariableState]) -> Any:
    if not ctx.attrs["use_locking"]:
        return contextlib.nullcontext()
    stack = contextlib.ExitStack()
    for r in sorted({id(r): r for r in refs}.values(), key=id):
        stack.enter_context(r.lock)
    return stack


def _bad(msg: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, msg)


def _scalars(checks: list[tuple[str, Any, str | None]]) -> None:
    """(message head, value, None | ">0" | ">=0" | "<=0"): TensorFlow's scalar checks."""
    for head, v, cond in checks:
        ok = np.shape(v) == ()
        if ok and cond is not None:
            x = float(v)
            ok = x > 0 if cond == ">0" else x >= 0 if cond == ">=0" else x <= 0
        if not ok:
            raise _bad(f"{head}{_shape_str(np.shape(v))}")


def _run(ctx: Any, step: Any, refs: list[VariableState], names: list[str], grad: Any, rows: Rows,
         indices: Any = None) -> VariableState:
    xp = ctx.xp
    with _locked(ctx, refs):
        vals = [r.read() for r in refs]
        shape = tuple(np.shape(vals[0]))
        for n, v in zip(names[1:], vals[1:]):
            if tuple(np.shape(v)) != shape:
                raise _bad(f"var and {n} do not have the same shape{_shape_str(shape)} "
                           f"{_shape_str(np.shape(v))}")
        if indices is None:
            if tuple(np.shape(grad)) != shape:
                raise _bad(f"var and grad do not have the same shape{_shape_str(shape)} "
                           f"{_shape_str(np.shape(grad))}")
            new = rows(*vals, grad)
        else:
            new = _sparse(xp, vals, grad, indices, rows)
        dtype = np.dtype(vals[0].dtype) if hasattr(vals[0], "dtype") else np.asarray(vals[0]).dtype
        for r, v in zip(refs, new):
            step.write_var(r, _own(xp, v, dtype))
    return refs[0]


def _own(xp: Any, v: Any, dtype: Any) -> Any:
    """`v` as a stored value of `dtype`: a read-only array, or a NumPy scalar for 0-d."""
    if xp is np:
        if np.ndim(v) == 0:
            return dtype.type(v)
        a = np.asarray(v, dtype=dtype)
        if a is v:  # the kernel's own fresh result: freeze it without a copy
            a.flags.writeable = False
        return a
    return xp.asarray(v, dtype=dtype)


def _sparse(xp: Any, vals: list[Any], grad: Any, indices: Any, rows: Rows) -> list[Any]:
    var = vals[0]
    shape = tuple(np.shape(var))
    if len(shape) < 1:
        raise _bad("var must be at least 1 dimensional")
    idx_shape = tuple(np.shape(indices))
    if len(idx_shape) != 1:
        raise _bad("indices must be one-dimensional")
    gshape = tuple(np.shape(grad))
    for d in range(1, len(shape)):
        if len(gshape) <= d or gshape[d] != shape[d]:
            raise _bad(f"var and grad must match in dimension {d}")
    if not gshape or gshape[0] != idx_shape[0]:
        raise _bad("grad must be the same size as indices in the first dimension.")
    if int(np.prod(shape[1:], dtype=np.int64)) <= 0:
        raise _bad("Inner dimension should be greater than zero.")
    idx = np.asarray(indices.get() if hasattr(indices, "get") else indices)
    bad = (idx < 0) | (idx >= shape[0])
    if bad.any():
        i = int(np.argmax(bad))
        raise _bad(f"Index {int(idx[i])} at offset {i} in indices is out of range")
    out = [xp.array(v, copy=True) for v in vals]
    if idx.size == 0:
        return out
    if np.unique(idx).size == idx.size:
        new = rows(*(o[idx] for o in out), grad)
        for o, r in zip(out, new):
            o[idx] = r
    else:  # TensorFlow's row loop: a repeated row is updated again from its new value
        for i, j in enumerate(idx.tolist()):
            new = rows(*(o[j] for o in out), grad[i])
            for o, r in zip(out, new):
                o[j] = r
    return out


# --- formulas (TensorFlow's training_ops.cc, CPU) ----------------------------------
def _ftrl(xp: Any, lr: Any, l1: Any, l2: Any, shrinkage: Any, lr_power: Any, times_lr: bool,
          sparse: bool, scalar_loop: bool) -> Rows:
    def f(var: Any, accum: Any, linear: Any, grad: Any) -> tuple[Any, ...]:
        g = grad if shrinkage is None else grad + 2 * shrinkage * var
        new_accum = accum + grad * grad
        if lr_power == -0.5 and not scalar_loop:
            power, old_power = xp.sqrt(new_accum), xp.sqrt(accum)
        else:  # the sparse kernel's loop over a vector's elements always takes pow
            power, old_power = new_accum ** -lr_power, accum ** -lr_power
        if times_lr:
            linear = linear + g * lr - (power - old_power) * var
            l1_t, y = l1 * lr, power + 2 * l2 * lr
        else:
            linear = linear + g - (power - old_power) / lr * var
            l1_t, y = l1, power / lr + 2 * l2
        if sparse:
            var = (xp.clip(linear, -l1_t, l1_t) - linear) / y
        else:
            var = xp.where(xp.abs(linear) > l1_t, (l1_t * xp.sign(linear) - linear) / y, 0)
        return var, new_accum, linear
    return f


def _shrink(xp: Any, prox: Any, shift: Any, l1: Any, scale: Any) -> Any:
    """TensorFlow's proximal step: sign(v) * max(|v| - shift * l1, 0) / scale (l1 > 0)."""
    if l1 > 0:
        return xp.sign(prox) * xp.maximum(xp.abs(prox) - shift * l1, 0) / scale
    return prox / scale


def _proximal_gd(xp: Any, alpha: Any, l1: Any, l2: Any) -> Rows:
    def f(var: Any, delta: Any) -> tuple[Any, ...]:
        prox = var - delta * alpha
        return (_shrink(xp, prox, alpha, l1, 1 + l2 * alpha),)
    return f


def _proximal_adagrad(xp: Any, lr: Any, l1: Any, l2: Any) -> Rows:
    def f(var: Any, accum: Any, grad: Any) -> tuple[Any, ...]:
        accum = accum + grad * grad
        rate = lr * (1 / xp.sqrt(accum))
        prox = var - grad * rate
        return _shrink(xp, prox, rate, l1, 1 + l2 * rate), accum
    return f


def _adagrad_da(xp: Any, lr: Any, l1: Any, l2: Any, global_step: Any, sparse_rank: int) -> Rows:
    def f(var: Any, ga: Any, gga: Any, grad: Any) -> tuple[Any, ...]:
        ga = ga + grad
        gga = gga + grad * grad
        t = np.float32(global_step)
        if sparse_rank == 1:  # the scalar loop, in float64
            lr64, gs = float(lr), float(global_step)
            den = gs * float(l2) * lr64 + xp.sqrt(xp.asarray(gga, dtype=np.float64))
            ga64 = xp.asarray(ga, dtype=np.float64)
            if l1 > 0:
                v = xp.sign(-ga64) * lr64 * xp.maximum(xp.abs(ga64) - gs * float(l1), 0.0) / den
            else:
                v = (-ga64 * lr64) / den
            return v, ga, gga
        dt = np.dtype(ga.dtype).type
        if sparse_rank > 1:
            gs_t = dt(global_step)
            den = l2 + xp.sqrt(gga) / float(gs_t * lr)
            if l1 > 0:
                return -1 * xp.sign(ga) * xp.maximum(xp.abs(ga) / gs_t - l1, 0) / den, ga, gga
            return -1 * (ga / gs_t) / den, ga, gga
        den = l2 * dt(t * lr) + xp.sqrt(gga)
        if l1 > 0:
            return lr * -1 * xp.sign(ga) * xp.maximum(xp.abs(ga) - dt(t) * l1, 0) / den, ga, gga
        return lr * ga * -1 / den, ga, gga
    return f


def _rank(ref: VariableState) -> int:
    # TensorFlow's sparse kernels loop over elements (not rows) for a vector variable.
    return len(np.shape(ref.read()))


# --- kernels -----------------------------------------------------------------------
def _ftrl_kernel(ctx: Any, step: Any, var: Any, accum: Any, linear: Any, grad: Any, indices: Any,
                 lr: Any, l1: Any, l2: Any, shrinkage: Any, lr_power: Any) -> Any:
    sparse = indices is not None
    if sparse:
        _scalars([("lr is not a positive scalar: ", lr, ">0"),
                  ("l1 regularization strength is not a non-negative scalar: ", l1, ">=0"),
                  ("l2 regularization strength is not a non-negative scalar: ", l2, ">=0"),
                  ("lr_power is not a non-positive scalar: ", lr_power, "<=0")])
        if shrinkage is not None:
            _scalars([("l2 shrinkage regularization strength is not a non-negative scalar: ", shrinkage,
                       ">=0")])
    else:
        _scalars([("lr is not a scalar: ", lr, None), ("l1 regularization strength is not a scalar: ", l1, None),
                  ("l2 regularization strength is not a scalar: ", l2, None),
                  ("lr_power is not a scalar", lr_power, None)])
        if shrinkage is not None:
            _scalars([("l2 shrinkage regularization strength is not a scalar: ", shrinkage, None)])
    times_lr = bool(ctx.attrs["multiply_linear_by_lr"])
    f = _ftrl(ctx.xp, lr, l1, l2, shrinkage, lr_power, times_lr, sparse, sparse and _rank(var) == 1)
    return _run(ctx, step, [var, accum, linear], ["var", "accum", "linear"], grad, f, indices)


@kernel("ApplyFtrl", devices=ALL, step=True)
def apply_ftrl(ctx: Any, step: Any, var: Any, accum: Any, linear: Any, grad: Any, lr: Any, l1: Any, l2: Any,
               lr_power: Any) -> Any:
    return _ftrl_kernel(ctx, step, var, accum, linear, grad, None, lr, l1, l2, None, lr_power)


@kernel("ApplyFtrlV2", devices=ALL, step=True)
def apply_ftrl_v2(ctx: Any, step: Any, var: Any, accum: Any, linear: Any, grad: Any, lr: Any, l1: Any,
                  l2: Any, l2_shrinkage: Any, lr_power: Any) -> Any:
    return _ftrl_kernel(ctx, step, var, accum, linear, grad, None, lr, l1, l2, l2_shrinkage, lr_power)


@kernel("SparseApplyFtrl", devices=ALL, step=True)
def sparse_apply_ftrl(ctx: Any, step: Any, var: Any, accum: Any, linear: Any, grad: Any, indices: Any, lr: Any,
                      l1: Any, l2: Any, lr_power: Any) -> Any:
    return _ftrl_kernel(ctx, step, var, accum, linear, grad, indices, lr, l1, l2, None, lr_power)


@kernel("SparseApplyFtrlV2", devices=ALL, step=True)
def sparse_apply_ftrl_v2(ctx: Any, step: Any, var: Any, accum: Any, linear: Any, grad: Any, indices: Any,
                         lr: Any, l1: Any, l2: Any, l2_shrinkage: Any, lr_power: Any) -> Any:
    return _ftrl_kernel(ctx, step, var, accum, linear, grad, indices, lr, l1, l2, l2_shrinkage, lr_power)


def _l1_l2_checks(l1: Any, l2: Any) -> list[tuple[str, Any, str | None]]:
    return [("l1 regularization strength is not a non-negative scalar: ", l1, ">=0"),
            ("l2 regularization strength is not a non-negative scalar: ", l2, ">=0")]


@kernel("ApplyProximalGradientDescent", devices=ALL, step=True)
def apply_proximal_gradient_descent(ctx: Any, step: Any, var: Any, alpha: Any, l1: Any, l2: Any,
                                    delta: Any) -> Any:
    _scalars([("alpha is not a scalar: ", alpha, None), *_l1_l2_checks(l1, l2)])
    return _run(ctx, step, [var], ["var"], delta, _proximal_gd(ctx.xp, alpha, l1, l2))


@kernel("SparseApplyProximalGradientDescent", devices=ALL, step=True)
def sparse_apply_proximal_gradient_descent(ctx: Any, step: Any, var: Any, alpha: Any, l1: Any, l2: Any,
                                           grad: Any, indices: Any) -> Any:
    _scalars([("alpha is not a scalar: ", alpha, None), *_l1_l2_checks(l1, l2)])
    return _run(ctx, step, [var], ["var"], grad, _proximal_gd(ctx.xp, alpha, l1, l2), indices)


@kernel("ApplyProximalAdagrad", devices=ALL, step=True)
def apply_proximal_adagrad(ctx: Any, step: Any, var: Any, accum: Any, lr: Any, l1: Any, l2: Any,
                           grad: Any) -> Any:
    _scalars([("lr is not a positive scalar: ", lr, ">0"), *_l1_l2_checks(l1, l2)])
    return _run(ctx, step, [var, accum], ["var", "accum"], grad, _proximal_adagrad(ctx.xp, lr, l1, l2))


@kernel("SparseApplyProximalAdagrad", devices=ALL, step=True)
def sparse_apply_proximal_adagrad(ctx: Any, step: Any, var: Any, accum: Any, lr: Any, l1: Any, l2: Any,
                                  grad: Any, indices: Any) -> Any:
    _scalars([("lr is not a positive scalar: ", lr, ">0"), *_l1_l2_checks(l1, l2)])
    return _run(ctx, step, [var, accum], ["var", "accum"], grad, _proximal_adagrad(ctx.xp, lr, l1, l2),
                indices)


def _da_checks(lr: Any, l1: Any, l2: Any, global_step: Any) -> None:
    _scalars([("lr is not a scalar: ", lr, None), ("l1 regularization strength is not a scalar: ", l1, None),
              ("l2 regularization strength is not a scalar: ", l2, None),
              ("global_step is not a scalar: ", global_step, None)])


@kernel("ApplyAdagradDA", devices=ALL, step=True)
def apply_adagrad_da(ctx: Any, step: Any, var: Any, ga: Any, gga: Any, grad: Any, lr: Any, l1: Any, l2: Any,
                     global_step: Any) -> Any:
    _da_checks(lr, l1, l2, global_step)
    return _run(ctx, step, [var, ga, gga], ["var", "accum", "accum"], grad,
                _adagrad_da(ctx.xp, lr, l1, l2, int(global_step), 0))


@kernel("SparseApplyAdagradDA", devices=ALL, step=True)
def sparse_apply_adagrad_da(ctx: Any, step: Any, var: Any, ga: Any, gga: Any, grad: Any, indices: Any, lr: Any,
                            l1: Any, l2: Any, global_step: Any) -> Any:
    _da_checks(lr, l1, l2, global_step)
    rows = _adagrad_da(ctx.xp, lr, l1, l2, int(global_step), 1 if _rank(var) == 1 else 2)
    return _run(ctx, step, [var, ga, gga], ["var", "accum", "accum"], grad, rows, indices)
