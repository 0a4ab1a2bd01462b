"""Kernels of the fused optimizer updates (flowlab.ops.training_ops).

Each kernel reads its variable and slot variables (the `VariableState`s of its
`Ref(T)` inputs), computes the new values with the formulas of TensorFlow's CPU
kernels (training_ops.cc) in the variable's dtype, and stores every new array with
`step.write_var` (never mutating a stored array).  With `use_locking` all the
variables' locks are held for the whole read-modify-write.  The sparse kernels
update the rows `indices` one after another, as TensorFlow's do (so repeated
indices apply repeatedly); other rows keep their values.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels.registry import kernel
from flowlab.kernels.resources import VariableState
from flowlab.kernels.state_kernels import _fresh


def _shape_str(shape: tuple[int, ...]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


_UNLOCKED = contextlib.nullcontext()


def _locked(ctx: Any, refs: list[VariableState]) -> Any:
    if not ctx.attrs["use_locking"]:
        return _UNLOCKED  # the usual case: no ExitStack per update
    stack = contextlib.ExitStack()
    seen: set[int] = set()
    for r in sorted(refs, key=id):
        if id(r) not in seen:
            seen.add(id(r))
            stack.enter_context(r.lock)
    return stack


def _shape(v: Any) -> tuple[int, ...]:
    # np.shape / np.ndim dispatch through __array_function__: ~10x slower than the
    # attribute for the arrays and NumPy scalars a step passes (updates run per step).
    return v.shape if isinstance(v, (np.ndarray, np.generic)) else np.shape(v)


def _check_scalars(names: list[str], values: list[Any]) -> None:
    for n, v in zip(names, values):
        if _shape(v) != ():
            raise errors.InvalidArgumentError(None, None, f"{n} is not a scalar: {_shape_str(np.shape(v))}")


def _run(ctx: Any, step: Any, refs: list[VariableState], names: list[str], grad: Any,
         compute: Callable[..., tuple[Any, ...]], indices: Any = None) -> VariableState:
    with _locked(ctx, refs):
        vals = [r.read() for r in refs]
        var = vals[0]
        for n, v in zip(names[1:], vals[1:]):
            if _shape(v) != _shape(var):
                raise errors.InvalidArgumentError(
                    None, None,
                    f"var and {n} do not have the same shape{_shape_str(np.shape(var))} "
                    f"{_shape_str(np.shape(v))}",
                )
        if indices is None:
            if _shape(grad) != _shape(var):
                raise errors.InvalidArgumentError(
                    None, None,
                    f"var and grad do not have the same shape{_shape_str(np.shape(var))} "
                    f"{_shape_str(np.shape(grad))}",
                )
            new = compute(*vals, grad)
        else:
            new = _sparse(vals, grad, indices, compute)
        dtype = var.dtype if isinstance(var, (np.ndarray, np.generic)) else np.asarray(var).dtype
        for r, v in zip(refs, new):
            if type(v) is not np.ndarray or v.dtype != dtype:
                v = np.asarray(v, dtype=dtype) if np.ndim(v) else dtype.type(v)
            step.write_var(r, _fresh(v))
    return refs[0]


def _sparse(vals: list[Any], grad: Any, indices: Any, compute: Callable[..., tuple[Any, ...]]) -> list[Any]:
    var = np.asarray(vals[0])
    idx = np.asarray(indices)
    grad = np.asarray(grad)
    if var.ndim < 1:
        raise errors.InvalidArgumentError(None, None, "var must be at least 1 dimensional")
    if idx.ndim != 1:
        raise errors.InvalidArgumentError(None, None, "indices must be one-dimensional")
    if grad.ndim < 1 or grad.shape[1:] != var.shape[1:]:
        raise errors.InvalidArgumentError(
            None, None,
            f"var and grad must match in dimension 1 and beyond: var {_shape_str(var.shape)} "
            f"grad {_shape_str(grad.shape)}",
        )
    if grad.shape[0] != idx.shape[0]:
        raise errors.InvalidArgumentError(
            None, None, "grad must be the same size as indices in the first dimension."
        )
    n = var.shape[0]
    bad = (idx < 0) | (idx >= n)
    if bad.any():
        i = int(np.argmax(bad))
        raise errors.InvalidArgumentError(
            None, None, f"Index {int(idx[i])} at offset {i} in indices is out of range"
        )
    out = [np.array(v, copy=True) for v in vals]
    if idx.size == 0:
        return out
    if np.unique(idx).size == idx.size:
        rows = compute(*(o[idx] for o in out), grad)
        for o, r in zip(out, rows):
            o[idx] = r
    else:
        for i, j in enumerate(idx):
            rows = compute(*(o[j] for o in out), grad[i])
            for o, r in zip(out, rows):
                o[j] = r
    return out


def _rsqrt(x: Any) -> Any:
    return 1 / np.sqrt(x)


# --- formulas (TensorFlow's training_ops.cc, CPU) ----------------------------------
def _momentum(lr: Any, momentum: Any, nesterov: bool) -> Callable[..., tuple[Any, ...]]:
    def f(var: Any, accum: Any, grad: Any) -> tuple[Any, ...]:
        accum = accum * momentum + grad
        if nesterov:
            var = var - (grad * lr + accum * momentum * lr)
        else:
            var = var - accum * lr
        return var, accum
    return f


def _adagrad(lr: Any, update_slots: bool) -> Callable[..., tuple[Any, ...]]:
    def f(var: Any, accum: Any, grad: Any) -> tuple[Any, ...]:
        if update_slots:
            accum = accum + grad * grad
        return var - grad * lr * _rsqrt(accum), accum
    return f


def _adadelta(lr: Any, rho: Any, epsilon: Any) -> Callable[..., tuple[Any, ...]]:
    def f(var: Any, accum: Any, accum_update: Any, grad: Any) -> tuple[Any, ...]:
        accum = accum * rho + grad * grad * (1 - rho)
        update = np.sqrt(accum_update + epsilon) * _rsqrt(accum + epsilon) * grad
        var = var - update * lr
        accum_update = accum_update * rho + update * update * (1 - rho)
        return var, accum, accum_update
    return f


def _rmsprop(lr: Any, rho: Any, momentum: Any, epsilon: Any) -> Callable[..., tuple[Any, ...]]:
    def f(var: Any, ms: Any, mom: Any, grad: Any) -> tuple[Any, ...]:
        ms = ms + (grad * grad - ms) * (1 - rho)
        mom = mom * momentum + (grad * lr) / np.sqrt(ms + epsilon)
        return var - mom, ms, mom
    return f


def _centered_rmsprop(lr: Any, rho: Any, momentum: Any, epsilon: Any) -> Callable[..., tuple[Any, ...]]:
    def f(var: Any, mg: Any, ms: Any, mom: Any, grad: Any) -> tuple[Any, ...]:
        ms = ms + (grad * grad - ms) * (1 - rho)
        mg = mg + (grad - mg) * (1 - rho)
        denom = (ms - mg * mg) + epsilon
        mom = mom * momentum + (grad * lr) / np.sqrt(denom)
        return var - mom, mg, ms, mom
    return f


# --- kernels -----------------------------------------------------------------------
@kernel("ApplyGradientDescent", devices="CPU", step=True)
def apply_gradient_descent(ctx: Any, step: Any, var: VariableState, alpha: Any, delta: Any) -> Any:
    _check_scalars(["alpha"], [alpha])
    return _run(ctx, step, [var], ["var"], delta, _sgd(alpha))


def _sgd(alpha: Any) -> Callable[..., tuple[Any, ...]]:
    def f(v: Any, g: Any) -> tuple[Any, ...]:
        if type(g) is not np.ndarray or g.ndim == 0 or type(v) is not np.ndarray:
            return (v - g * alpha,)
        upd = g * alpha  # one fresh temporary that also holds the result
        return (np.subtract(v, upd, out=upd),)
    return f


@kernel("ApplyMomentum", devices="CPU", step=True)
def apply_momentum(ctx: Any, step: Any, var: Any, accum: Any, lr: Any, grad: Any, momentum: Any) -> Any:
    _check_scalars(["lr", "momentum"], [lr, momentum])
    f = _momentum(lr, momentum, ctx.attrs["use_nesterov"])
    return _run(ctx, step, [var, accum], ["var", "accum"], grad, f)


@kernel("SparseApplyMomentum", devices="CPU", step=True)
def sparse_apply_momentum(ctx: Any, step: Any, var: Any, accum: Any, lr: Any, grad: Any, indices: Any,
                          momentum: Any) -> Any:
    _check_scalars(["lr", "momentum"], [lr, momentum])
    f = _momentum(lr, momentum, ctx.attrs["use_nesterov"])
    return _run(ctx, step, [var, accum], ["var", "accum"], grad, f, indices)


@kernel("ApplyAdagrad", devices="CPU", step=True)
def apply_adagrad(ctx: Any, step: Any, var: Any, accum: Any, lr: Any, grad: Any) -> Any:
    _check_scalars(["lr"], [lr])
    return _run(ctx, step, [var, accum], ["var", "accum"], grad, _adagrad(lr, ctx.attrs["update_slots"]))


@kernel("SparseApplyAdagrad", devices="CPU", step=True)
def sparse_apply_adagrad(ctx: Any, step: Any, var: Any, accum: Any, lr: Any, grad: Any, indices: Any) -> Any:
    _check_scalars(["lr"], [lr])
    return _run(ctx, step, [var, accum], ["var", "accum"], grad, _adagrad(lr, ctx.attrs["update_slots"]),
                indices)


@kernel("ApplyAdadelta", devices="CPU", step=True)
def apply_adadelta(ctx: Any, step: Any, var: Any, accum: Any, accum_update: Any, lr: Any, rho: Any,
                   epsilon: Any, grad: Any) -> Any:
    _check_scalars(["lr", "rho", "epsilon"], [lr, rho, epsilon])
    return _run(ctx, step, [var, accum, accum_update], ["var", "accum", "accum_update"], grad,
                _adadelta(lr, rho, epsilon))


@kernel("SparseApplyAdadelta", devices="CPU", step=True)
def sparse_apply_adadelta(ctx: Any, step: Any, var: Any, accum: Any, accum_update: Any, lr: Any, rho: Any,
                          epsilon: Any, grad: Any, indices: Any) -> Any:
    _check_scalars(["lr", "rho", "epsilon"], [lr, rho, epsilon])
    return _run(ctx, step, [var, accum, accum_update], ["var", "accum", "accum_update"], grad,
                _adadelta(lr, rho, epsilon), indices)


@kernel("ApplyRMSProp", devices="CPU", step=True)
def apply_rms_prop(ctx: Any, step: Any, var: Any, ms: Any, mom: Any, lr: Any, rho: Any, momentum: Any,
                   epsilon: Any, grad: Any) -> Any:
    _check_scalars(["lr", "rho", "momentum", "epsilon"], [lr, rho, momentum, epsilon])
    return _run(ctx, step, [var, ms, mom], ["var", "ms", "mom"], grad, _rmsprop(lr, rho, momentum, epsilon))


@kernel("SparseApplyRMSProp", devices="CPU", step=True)
def sparse_apply_rms_prop(ctx: Any, step: Any, var: Any, ms: Any, mom: Any, lr: Any, rho: Any, momentum: Any,
                          epsilon: Any, grad: Any, indices: Any) -> Any:
    _check_scalars(["lr", "rho", "momentum", "epsilon"], [lr, rho, momentum, epsilon])
    return _run(ctx, step, [var, ms, mom], ["var", "ms", "mom"], grad, _rmsprop(lr, rho, momentum, epsilon),
                indices)


@kernel("ApplyCenteredRMSProp", devices="CPU", step=True)
def apply_centered_rms_prop(ctx: Any, step: Any, var: Any, mg: Any, ms: Any, mom: Any, lr: Any, rho: Any,
                            momentum: Any, epsilon: Any, grad: Any) -> Any:
    _check_scalars(["lr", "rho", "momentum", "epsilon"], [lr, rho, momentum, epsilon])
    return _run(ctx, step, [var, mg, ms, mom], ["var", "mg", "ms", "mom"], grad,
                _centered_rmsprop(lr, rho, momentum, epsilon))


@kernel("SparseApplyCenteredRMSProp", devices="CPU", step=True)
def sparse_apply_centered_rms_prop(ctx: Any, step: Any, var: Any, mg: Any, ms: Any, mom: Any, lr: Any,
                                   rho: Any, momentum: Any, epsilon: Any, grad: Any, indices: Any) -> Any:
    _check_scalars(["lr", "rho", "momentum", "epsilon"], [lr, rho, momentum, epsilon])
    return _run(ctx, step, [var, mg, ms, mom], ["var", "mg", "ms", "mom"], grad,
                _centered_rmsprop(lr, rho, momentum, epsilon), indices)


@kernel("ApplyAdam", devices="CPU", step=True)
def apply_adam(ctx: Any, step: Any, var: Any, m: Any, v: Any, beta1_power: Any, beta2_power: Any, lr: Any,
               beta1: Any, beta2: Any, epsilon: Any, grad: Any) -> Any:
    _check_scalars(["beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon"],
                   [beta1_power, beta2_power, lr, beta1, beta2, epsilon])
    nesterov = ctx.attrs["use_nesterov"]
    alpha = lr * np.sqrt(1 - beta2_power) / (1 - beta1_power)

    def f(var_: Any, m_: Any, v_: Any, g: Any) -> tuple[Any, ...]:
        if type(g) is not np.ndarray or g.ndim == 0 or nesterov:
            m_ = m_ + (g - m_) * (1 - beta1)
            v_ = v_ + (g * g - v_) * (1 - beta2)
            if nesterov:
                var_ = var_ - ((g * (1 - beta1) + beta1 * m_) * alpha) / (np.sqrt(v_) + epsilon)
            else:
                var_ = var_ - (m_ * alpha) / (np.sqrt(v_) + epsilon)
            return var_, m_, v_
        # The same arithmetic, in the same order, but in place on fresh temporaries:
        # a large update allocates 4 arrays instead of 10 (the step's hot spot), and
        # the new variable value reuses the denominator's buffer.
        m_new = g - m_
        m_new *= 1 - beta1
        m_new += m_
        v_new = g * g
        v_new -= v_
        v_new *= 1 - beta2
        v_new += v_
        denom = np.sqrt(v_new)
        denom += epsilon
        upd = m_new * alpha
        upd /= denom
        return np.subtract(var_, upd, out=denom), m_new, v_new

    return _run(ctx, step, [var, m, v], ["var", "m", "v"], grad, f)
