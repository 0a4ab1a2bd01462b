"""Kernels of the fused optimizer updates (flowlab.ops.training_ops), for CPU and GPU.

Each kernel reads its variable and slot variables (the `VariableState`s of its
`Ref(T)` inputs), computes the new values with the formulas of TensorFlow's CPU
kernels (training_ops.cc) in the variable's dtype, and stores every new array with
`step.write_var` (never mutating a stored array).  With `use_locking` all the
variables' locks are held for the whole read-modify-write.  The sparse kernels
update the rows `indices` as TensorFlow's CPU kernels do, one index after another
(so repeated indices apply repeatedly); other rows keep their values.

Written once over `ctx.xp` and registered for CPU and GPU.  On a GPU every input is
in device memory, as TensorFlow declares them: the scalars (lr, beta1_power, ...) are
0-d device arrays and `indices` a device array (validated with one small
device-to-host read, `bad.any()`).  Repeated indices are applied in rounds (all first
occurrences, then all second ones, ...: `state_kernels.occurrence_rounds`), which
equals the sequential order on any device without a Python loop per row.

The CPU path is the training step's hot spot (docs/notes/training-performance.md):
checks are attribute reads, and the dense Adam and SGD updates compute in place on
fresh temporaries (fewer allocations), in the same arithmetic order as the plain
formulas so values are identical.  On the straight-line path the dense host kernels
(SGD, Momentum, Adagrad, Adadelta, RMSProp, centered RMSProp, Adam) defer their
update to the step's commit, where it is written into the variables' own arrays when
nothing else holds them (flowlab.kernels.in_place_updates); the formulas here are
also that module's fallback and the reference of its bodies.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.kernels import in_place_updates as _ip
from flowlab.kernels.registry import ALL, can_forward, kernel
from flowlab.kernels.resources import VariableState
from flowlab.kernels.state_kernels import occurrence_rounds


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
    # An attribute read (NumPy arrays and scalars, CuPy arrays); np.shape dispatches
    # through __array_function__ and costs ~10x more.  Python numbers are scalars.
    return getattr(v, "shape", ())


def _check_scalars(names: tuple[str, ...], values: tuple[Any, ...]) -> None:
    for v in values:
        if getattr(v, "shape", ()):  # a non-empty shape: not a scalar (rare)
            break
    else:
        return
    for n, v in zip(names, values):
        if _shape(v) != ():
            raise errors.InvalidArgumentError(None, None, f"{n} is not a scalar: {_shape_str(_shape(v))}")


def _stored(v: Any, dtype: Any) -> Any:
    """A new value as the variable keeps it: the variable's dtype, read-only on the
    host (0-d as a NumPy scalar), a device array as it is (CuPy has no read-only flag)."""
    t = type(v)
    if t is np.ndarray:
        if v.dtype != dtype:
            v = v.astype(dtype)
        if v.ndim == 0:
            return v[()]
        v.flags.writeable = False
        return v
    if isinstance(v, (np.generic, int, float)):
        return dtype.type(v)
    return v if v.dtype == dtype else v.astype(dtype)


def _run(ctx: Any, step: Any, refs: list[VariableState], names: tuple[str, ...], grad: Any,
         compute: Callable[..., tuple[Any, ...]], indices: Any = None) -> VariableState:
    with _locked(ctx, refs):
        vals = [r.read() for r in refs]
        var = vals[0]
        shape = var.shape
        for n, v in zip(names[1:], vals[1:]):
            if v.shape != shape:
                raise errors.InvalidArgumentError(
                    None, None,
                    f"var and {n} do not have the same shape{_shape_str(shape)} {_shape_str(v.shape)}",
                )
        if indices is None:
            if _shape(grad) != shape:
                raise errors.InvalidArgumentError(
                    None, None,
                    f"var and grad do not have the same shape{_shape_str(shape)} "
                    f"{_shape_str(_shape(grad))}",
                )
            new: list[Any] | tuple[Any, ...] = compute(*vals, grad)
        else:
            new = _sparse(ctx.xp, vals, grad, indices, compute)
        dtype = var.dtype
        for r, v in zip(refs, new):
            step.write_var(r, _stored(v, dtype))
    return refs[0]


def _sparse(xp: Any, vals: list[Any], grad: Any, indices: Any,
            compute: Callable[..., tuple[Any, ...]]) -> list[Any]:
    var = vals[0]
    if var.ndim < 1:
        raise errors.InvalidArgumentError(None, None, "var must be at least 1 dimensional")
    idx = xp.asarray(indices) if isinstance(indices, (int, np.generic)) else indices
    if idx.ndim != 1:
        raise errors.InvalidArgumentError(None, None, "indices must be one-dimensional")
    g_shape = _shape(grad)
    if len(g_shape) < 1 or g_shape[1:] != var.shape[1:]:
        raise errors.InvalidArgumentError(
            None, None,
            f"var and grad must match in dimension 1 and beyond: var {_shape_str(var.shape)} "
            f"grad {_shape_str(g_shape)}",
        )
    if g_shape[0] != idx.shape[0]:
        raise errors.InvalidArgumentError(
            None, None, "grad must be the same size as indices in the first dimension."
        )
    n = var.shape[0]
    bad = (idx < 0) | (idx >= n)
    if bad.any():  # on a GPU: one small device-to-host read
        i = int(xp.argmax(bad))
        raise errors.InvalidArgumentError(
            None, None, f"Index {int(idx[i])} at offset {i} in indices is out of range"
        )
    out = [xp.array(v, copy=True) for v in vals]
    if idx.shape[0] == 0:
        return out
    for pos in occurrence_rounds(xp, idx):
        j = idx if pos is None else idx[pos]
        g = grad if pos is None else grad[pos]
        rows = compute(*(o[j] for o in out), g)
        for o, r in zip(out, rows):
            o[j] = r
    return out


def _rsqrt(xp: Any, x: Any) -> Any:
    return 1 / xp.sqrt(x)


# --- formulas (TensorFlow's training_ops.cc, CPU) ----------------------------------
def _sgd(xp: Any, alpha: Any) -> Callable[..., tuple[Any, ...]]:
    def f(v: Any, g: Any) -> tuple[Any, ...]:
        if not getattr(g, "ndim", 0) or not getattr(v, "ndim", 0):
            return (v - g * alpha,)
        upd = g * alpha  # one fresh temporary that also holds the result
        return (xp.subtract(v, upd, out=upd),)
    return f


def _momentum(lr: Any, momentum: Any, nesterov: bool) -> Callable[..., tuple[Any, ...]]:
    def f(var: Any, accum: Any, grad: Any) -> tuple[Any, ...]:
        accum = accum * momentum + grad
        if nesterov:
            var = var - (grad * lr + accum * momentum * lr)
        else:
            var = var - accum * lr
        return var, accum
    return f


def _adagrad(xp: Any, lr: Any, update_slots: bool) -> Callable[..., tuple[Any, ...]]:
    def f(var: Any, accum: Any, grad: Any) -> tuple[Any, ...]:
        if update_slots:
            accum = accum + grad * grad
        return var - grad * lr * _rsqrt(xp, accum), accum
    return f


def _adadelta(xp: Any, lr: Any, rho: Any, epsilon: Any) -> Callable[..., tuple[Any, ...]]:
    def f(var: Any, accum: Any, accum_update: Any, grad: Any) -> tuple[Any, ...]:
        accum = accum * rho + grad * grad * (1 - rho)
        update = xp.sqrt(accum_update + epsilon) * _rsqrt(xp, accum + epsilon) * grad
        var = var - update * lr
        accum_update = accum_update * rho + update * update * (1 - rho)
        return var, accum, accum_update
    return f


def _rmsprop(xp: Any, lr: Any, rho: Any, momentum: Any, epsilon: Any) -> Callable[..., tuple[Any, ...]]:
    def f(var: Any, ms: Any, mom: Any, grad: Any) -> tuple[Any, ...]:
        ms = ms + (grad * grad - ms) * (1 - rho)
        mom = mom * momentum + (grad * lr) / xp.sqrt(ms + epsilon)
        return var - mom, ms, mom
    return f


def _centered_rmsprop(xp: Any, lr: Any, rho: Any, momentum: Any, epsilon: Any) -> Callable[..., tuple[Any, ...]]:
    def f(var: Any, mg: Any, ms: Any, mom: Any, grad: Any) -> tuple[Any, ...]:
        ms = ms + (grad * grad - ms) * (1 - rho)
        mg = mg + (grad - mg) * (1 - rho)
        denom = (ms - mg * mg) + epsilon
        mom = mom * momentum + (grad * lr) / xp.sqrt(denom)
        return var - mom, mg, ms, mom
    return f


def _adam(xp: Any, alpha: Any, beta1: Any, beta2: Any, epsilon: Any,
          nesterov: bool) -> Callable[..., tuple[Any, ...]]:
    def f(var: Any, m: Any, v: Any, g: Any, scratch: Any = None) -> tuple[Any, ...]:
        # `scratch`: a dying array of g's shape to hold the denominator (the gradient).
        if nesterov or not getattr(g, "ndim", 0):
            m = m + (g - m) * (1 - beta1)
            v = v + (g * g - v) * (1 - beta2)
            if nesterov:
                var = var - ((g * (1 - beta1) + beta1 * m) * alpha) / (xp.sqrt(v) + epsilon)
            else:
                var = var - (m * alpha) / (xp.sqrt(v) + epsilon)
            return var, m, v
        # The same arithmetic, in the same order, but in place on fresh temporaries:
        # a large update allocates 4 arrays instead of 10 (3 with `scratch`), and the
        # new variable value reuses the update's buffer.
        m_new = g - m
        m_new *= 1 - beta1
        m_new += m
        v_new = g * g
        v_new -= v
        v_new *= 1 - beta2
        v_new += v
        denom = xp.sqrt(v_new) if scratch is None else xp.sqrt(v_new, out=scratch)
        denom += epsilon
        upd = m_new * alpha
        upd /= denom
        return xp.subtract(var, upd, out=upd), m_new, v_new
    return f


# --- kernels -----------------------------------------------------------------------
# Every kernel on every device (ALL): the scalars and indices in device memory, as
# TensorFlow's GPU registrations have them (no HostMemory).
_LR = ("lr",)
_LR_MOM = ("lr", "momentum")
_ADADELTA = ("lr", "rho", "epsilon")
_RMS = ("lr", "rho", "momentum", "epsilon")
_ADAM = ("beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon")
_V = ("var",)
_VA = ("var", "accum")
_VAU = ("var", "accum", "accum_update")
_VMM = ("var", "ms", "mom")
_VCMM = ("var", "mg", "ms", "mom")
_VMV = ("var", "m", "v")


# The dense host kernels defer their update where the plan allows (`ctx.defers`, the
# plain case of `_ip.plain`): checked now, written in place when the step commits
# (flowlab.kernels.in_place_updates).  The gradient is scratch only when it dies here
# (`can_forward`, called in the kernel itself: it counts references).
@kernel("ApplyGradientDescent", devices=ALL, step=True, forward=(2,), defer=True)
def apply_gradient_descent(ctx: Any, step: Any, var: VariableState, alpha: Any, delta: Any) -> Any:
    _check_scalars(("alpha",), (alpha,))
    if ctx.defers and _ip.plain(ctx.attrs["use_locking"], (var,), delta):
        mine = bool(ctx.forwardable) and can_forward(delta)
        step.defer(_ip.InPlaceUpdate(_ip.SGD, _sgd(np, alpha), (var,), (alpha,), delta, mine))
        return var
    return _run(ctx, step, [var], _V, delta, _sgd(ctx.xp, alpha))


@kernel("ApplyMomentum", devices=ALL, step=True, forward=(3,), defer=True)
def apply_momentum(ctx: Any, step: Any, var: Any, accum: Any, lr: Any, grad: Any, momentum: Any) -> Any:
    _check_scalars(_LR_MOM, (lr, momentum))
    nesterov = ctx.attrs["use_nesterov"]
    f = _momentum(lr, momentum, nesterov)
    if ctx.defers and _ip.plain(ctx.attrs["use_locking"], (var, accum), grad):
        mine = bool(ctx.forwardable) and can_forward(grad)
        arith = _ip.NESTEROV if nesterov else _ip.MOMENTUM
        step.defer(_ip.InPlaceUpdate(arith, f, (var, accum), (lr, momentum), grad, mine))
        return var
    return _run(ctx, step, [var, accum], _VA, grad, f)


@kernel("SparseApplyMomentum", devices=ALL, step=True)
def sparse_apply_momentum(ctx: Any, step: Any, var: Any, accum: Any, lr: Any, grad: Any, indices: Any,
                          momentum: Any) -> Any:
    _check_scalars(_LR_MOM, (lr, momentum))
    f = _momentum(lr, momentum, ctx.attrs["use_nesterov"])
    return _run(ctx, step, [var, accum], _VA, grad, f, indices)


@kernel("ApplyAdagrad", devices=ALL, step=True, forward=(3,), defer=True)
def apply_adagrad(ctx: Any, step: Any, var: Any, accum: Any, lr: Any, grad: Any) -> Any:
    _check_scalars(_LR, (lr,))
    update_slots = ctx.attrs["update_slots"]
    f = _adagrad(ctx.xp, lr, update_slots)
    if update_slots and ctx.defers and _ip.plain(ctx.attrs["use_locking"], (var, accum), grad):
        mine = bool(ctx.forwardable) and can_forward(grad)
        step.defer(_ip.InPlaceUpdate(_ip.ADAGRAD, f, (var, accum), (lr,), grad, mine))
        return var
    return _run(ctx, step, [var, accum], _VA, grad, f)


@kernel("SparseApplyAdagrad", devices=ALL, step=True)
def sparse_apply_adagrad(ctx: Any, step: Any, var: Any, accum: Any, lr: Any, grad: Any, indices: Any) -> Any:
    _check_scalars(_LR, (lr,))
    return _run(ctx, step, [var, accum], _VA, grad, _adagrad(ctx.xp, lr, ctx.attrs["update_slots"]),
                indices)


@kernel("ApplyAdadelta", devices=ALL, step=True, defer=True)  # never scratch: it reads grad late
def apply_adadelta(ctx: Any, step: Any, var: Any, accum: Any, accum_update: Any, lr: Any, rho: Any,
                   epsilon: Any, grad: Any) -> Any:
    _check_scalars(_ADADELTA, (lr, rho, epsilon))
    f = _adadelta(ctx.xp, lr, rho, epsilon)
    states = (var, accum, accum_update)
    if ctx.defers and _ip.plain(ctx.attrs["use_locking"], states, grad):
        step.defer(_ip.InPlaceUpdate(_ip.ADADELTA, f, states, (lr, rho, epsilon), grad, False))
        return var
    return _run(ctx, step, list(states), _VAU, grad, f)


@kernel("SparseApplyAdadelta", devices=ALL, step=True)
def sparse_apply_adadelta(ctx: Any, step: Any, var: Any, accum: Any, accum_update: Any, lr: Any, rho: Any,
                          epsilon: Any, grad: Any, indices: Any) -> Any:
    _check_scalars(_ADADELTA, (lr, rho, epsilon))
    return _run(ctx, step, [var, accum, accum_update], _VAU, grad, _adadelta(ctx.xp, lr, rho, epsilon),
                indices)


@kernel("ApplyRMSProp", devices=ALL, step=True, forward=(7,), defer=True)
def apply_rms_prop(ctx: Any, step: Any, var: Any, ms: Any, mom: Any, lr: Any, rho: Any, momentum: Any,
                   epsilon: Any, grad: Any) -> Any:
    _check_scalars(_RMS, (lr, rho, momentum, epsilon))
    f = _rmsprop(ctx.xp, lr, rho, momentum, epsilon)
    states = (var, ms, mom)
    if ctx.defers and _ip.plain(ctx.attrs["use_locking"], states, grad):
        mine = bool(ctx.forwardable) and can_forward(grad)
        step.defer(_ip.InPlaceUpdate(_ip.RMSPROP, f, states, (lr, rho, momentum, epsilon), grad, mine))
        return var
    return _run(ctx, step, list(states), _VMM, grad, f)


@kernel("SparseApplyRMSProp", devices=ALL, step=True)
def sparse_apply_rms_prop(ctx: Any, step: Any, var: Any, ms: Any, mom: Any, lr: Any, rho: Any, momentum: Any,
                          epsilon: Any, grad: Any, indices: Any) -> Any:
    _check_scalars(_RMS, (lr, rho, momentum, epsilon))
    return _run(ctx, step, [var, ms, mom], _VMM, grad, _rmsprop(ctx.xp, lr, rho, momentum, epsilon), indices)


@kernel("ApplyCenteredRMSProp", devices=ALL, step=True, forward=(8,), defer=True)
def apply_centered_rms_prop(ctx: Any, step: Any, var: Any, mg: Any, ms: Any, mom: Any, lr: Any, rho: Any,
                            momentum: Any, epsilon: Any, grad: Any) -> Any:
    _check_scalars(_RMS, (lr, rho, momentum, epsilon))
    f = _centered_rmsprop(ctx.xp, lr, rho, momentum, epsilon)
    states = (var, mg, ms, mom)
    if ctx.defers and _ip.plain(ctx.attrs["use_locking"], states, grad):
        mine = bool(ctx.forwardable) and can_forward(grad)
        scalars = (lr, rho, momentum, epsilon)
        step.defer(_ip.InPlaceUpdate(_ip.CENTERED_RMSPROP, f, states, scalars, grad, mine))
        return var
    return _run(ctx, step, list(states), _VCMM, grad, f)


@kernel("SparseApplyCenteredRMSProp", devices=ALL, step=True)
def sparse_apply_centered_rms_prop(ctx: Any, step: Any, var: Any, mg: Any, ms: Any, mom: Any, lr: Any,
                                   rho: Any, momentum: Any, epsilon: Any, grad: Any, indices: Any) -> Any:
    _check_scalars(_RMS, (lr, rho, momentum, epsilon))
    return _run(ctx, step, [var, mg, ms, mom], _VCMM, grad,
                _centered_rmsprop(ctx.xp, lr, rho, momentum, epsilon), indices)


# Adam's step size from the last update's scalars, which every update of a step reads
# (the same immutable NumPy scalars: a Const and the beta-power variables' values):
# (lr, beta1_power, beta2_power, alpha), replaced as a whole so threads see one tuple.
_LAST_ALPHA: tuple[Any, ...] = (None, None, None, None)
_IMMUTABLE = frozenset({np.float16, np.float32, np.float64})


@kernel("ApplyAdam", devices=ALL, step=True, forward=(9,), defer=True)
def apply_adam(ctx: Any, step: Any, var: Any, m: Any, v: Any, beta1_power: Any, beta2_power: Any, lr: Any,
               beta1: Any, beta2: Any, epsilon: Any, grad: Any) -> Any:
    _check_scalars(_ADAM, (beta1_power, beta2_power, lr, beta1, beta2, epsilon))
    xp = ctx.xp
    global _LAST_ALPHA
    last = _LAST_ALPHA
    if last[0] is lr and last[1] is beta1_power and last[2] is beta2_power:
        alpha = last[3]  # the step's other updates read the same scalars
    else:
        alpha = lr * xp.sqrt(1 - beta2_power) / (1 - beta1_power)
        if type(lr) in _IMMUTABLE and type(beta1_power) in _IMMUTABLE and type(beta2_power) in _IMMUTABLE:
            _LAST_ALPHA = (lr, beta1_power, beta2_power, alpha)
    nesterov = ctx.attrs["use_nesterov"]
    if ctx.defers and _ip.plain(ctx.attrs["use_locking"], (var, m, v), grad):
        # Checked; written at the end of the step (flowlab.runtime.task.deferred_updates).
        mine = bool(ctx.forwardable) and can_forward(grad)
        f = _adam(xp, alpha, beta1, beta2, epsilon, nesterov)
        arith = _ip.ADAM_NESTEROV if nesterov else _ip.ADAM
        step.defer(_ip.InPlaceUpdate(arith, f, (var, m, v), (alpha, beta1, beta2, epsilon), grad, mine))
        return var
    if ctx.forwardable and not nesterov and can_forward(grad):
        # The usual dense step on the host: the gradient dies here (buffer forwarding),
        # the scratch of the denominator: 3 new arrays instead of 4.
        done = _adam_into_grad(ctx, step, var, m, v, alpha, beta1, beta2, epsilon, grad)
        if done is not None:
            return done
    f = _adam(xp, alpha, beta1, beta2, epsilon, nesterov)
    return _run(ctx, step, [var, m, v], _VMV, grad, f)


def _adam_into_grad(ctx: Any, step: Any, var: VariableState, m: VariableState, v: VariableState,
                    alpha: Any, beta1: Any, beta2: Any, epsilon: Any, g: np.ndarray) -> Any:
    """`_adam`'s arithmetic, in its order, with `g`'s buffer as the denominator; None
    (nothing done) for every case but the plain one (`_ip.plain`, no Nesterov).  The
    new values are fresh arrays: the step's undo log keeps the old ones."""
    if not _ip.plain(ctx.attrs["use_locking"], (var, m, v), g):
        return None
    write = step.write_var
    for state, new in zip((var, m, v), _adam_fresh(var.value, m.value, v.value, alpha, beta1, beta2,
                                                   epsilon, g)):
        write(state, new)
    return var


def _adam_fresh(x: np.ndarray, mv: np.ndarray, vv: np.ndarray, alpha: Any, beta1: Any, beta2: Any,
                epsilon: Any, g: np.ndarray) -> tuple[np.ndarray, ...]:
    """New read-only (var, m, v) arrays by `_adam`; `g` is overwritten (the denominator)."""
    new = _adam(np, alpha, beta1, beta2, epsilon, False)(x, mv, vv, g, g)
    for a in new:
        a.flags.writeable = False
    return new
