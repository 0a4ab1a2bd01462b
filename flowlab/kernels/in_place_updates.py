"""Deferred optimizer updates written in place, with the logged update's values.

A dense optimizer kernel on the straight-line path (`ctx.defers`,
flowlab.runtime.task.deferred_updates) checks its inputs, then hands the step an
`InPlaceUpdate`: the variables, the gradient, the scalars and the optimizer's
`Arithmetic`.  When the step commits, `prepare` decides:

* every variable the update writes holds its array alone (`alone`: nothing else --
  a fetched value, an earlier read still alive, a view, another step's undo log --
  has it): it allocates the scratch buffers and returns the closure that writes the
  new values into the variables' own arrays, as TensorFlow's kernels update a ref
  variable;
* else it computes new arrays with the kernel's formula (the logged path's own
  function, flowlab.kernels.training_kernels) and returns the closure that stores
  them with `step.write_var`.

Everything that can fail (an allocation) happens in `prepare`; the closures cannot.

Same bits: each in-place body below performs the operations of its formula in
training_kernels, on the same operands, in the same order (only commuted, which
IEEE addition and multiplication allow), so the values equal the logged path's for
every dtype.  A body writes a scratch buffer named `t` only after its last read of
the gradient, so that `t` may be the gradient's own buffer when the kernel found it
dying there (`ctx.forwardable` and `can_forward`): one allocation less.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from flowlab.kernels import batch_blocks
from flowlab.kernels.resources import VariableState


class Arithmetic(NamedTuple):
    """An optimizer's in-place body: `fn(*scalars, *variables, g, *scratch)`, with
    `scratch` buffers of `g`'s shape; the last one may be `g` itself when `g_last`."""

    name: str
    fn: Callable[..., None]
    scratch: int
    g_last: bool


def plain(use_locking: bool, states: tuple[VariableState, ...], g: Any) -> bool:
    """The case a deferred update handles: no locking, a NumPy gradient, distinct
    variables holding initialized NumPy arrays of its shape and dtype."""
    if use_locking or type(g) is not np.ndarray:
        return False
    shape, dtype = g.shape, g.dtype
    for s in states:
        x = s.value
        if type(x) is not np.ndarray or x.shape != shape or x.dtype != dtype:
            return False
    return len(states) == 1 or len(set(states)) == len(states)  # identity-hashed


def _held_refs(state: VariableState) -> int:
    x = state.value
    return sys.getrefcount(x)


def _probe_alone() -> int:
    state = VariableState("probe", np.dtype(np.float32), (1,))
    state.value = np.zeros(1, np.float32)
    return _held_refs(state)


# The count `_held_refs` sees for an array that only its VariableState holds.
_ALONE = _probe_alone()


def alone(state: VariableState) -> bool:
    """Whether `state`'s array may be written in place: an array owning its data that
    nothing but the variable holds (no fetched value, earlier read, view, undo log)."""
    x = state.value
    if type(x) is not np.ndarray or x.base is not None:
        return False
    del x  # counted by `_held_refs` as the probe was: with no other local reference
    return _held_refs(state) <= _ALONE


def _frozen(v: Any, dtype: Any) -> np.ndarray:
    if v.dtype != dtype:
        v = v.astype(dtype)
    v.flags.writeable = False
    return v


class InPlaceUpdate:
    """One dense update run when its step commits (see the module docstring)."""

    __slots__ = ("arith", "formula", "states", "scalars", "g", "g_scratch")

    def __init__(self, arith: Arithmetic, formula: Callable[..., tuple[Any, ...]],
                 states: tuple[VariableState, ...], scalars: tuple[Any, ...], g: np.ndarray,
                 g_scratch: bool) -> None:
        self.arith, self.formula, self.states, self.scalars = arith, formula, states, scalars
        self.g, self.g_scratch = g, g_scratch

    def prepare(self, step: Any) -> Callable[[], None]:
        for s in self.states:
            if not alone(s):
                return self._fresh(step)
        g, arith = self.g, self.arith
        mine = self.g_scratch and arith.g_last
        bufs = [np.empty_like(g) for _ in range(arith.scratch - mine)]  # before any write
        if mine:
            bufs.append(g)
        return lambda: self._in_place(bufs)

    def _fresh(self, step: Any) -> Callable[[], None]:
        states = self.states
        dtype = self.g.dtype
        new = [_frozen(v, dtype) for v in self.formula(*(s.value for s in states), self.g)]

        def store() -> None:
            for state, value in zip(states, new):
                step.write_var(state, value)

        return store

    def _in_place(self, bufs: list[np.ndarray]) -> None:
        values = [s.value for s in self.states]
        for a in values:
            a.flags.writeable = True
        fn, scalars, g = self.arith.fn, self.scalars, self.g
        blocks = batch_blocks.bounds(g)
        if len(blocks) > 2:
            # The bodies are elementwise: a block of rows is those rows' whole update,
            # so the values are one call's.  Memory-bound, the update of a large
            # variable gains from a second core's bandwidth (cnn_train's fc1, 12.8 MB:
            # one pass 12.5 -> 18 GB/s on two cores here).  Nothing here raises: NumPy's
            # elementwise loops do not, and the helpers are the step's running pool.
            def block(lo: int, hi: int) -> None:
                fn(*scalars, *(a[lo:hi] for a in values), g[lo:hi], *(b[lo:hi] for b in bufs))

            batch_blocks.each(blocks, block)
        else:
            fn(*scalars, *values, g, *bufs)
        for a in values:
            a.flags.writeable = False
        for state in self.states:  # an optimizer's write is an overwrite (Step.rollback)
            state.overwrites += 1


# --- the bodies: training_kernels' formulas, operation by operation ----------------
def _sgd(alpha: Any, x: np.ndarray, g: np.ndarray, t: np.ndarray) -> None:
    np.multiply(g, alpha, out=t)  # var - g * alpha
    x -= t


def _momentum(lr: Any, momentum: Any, x: np.ndarray, a: np.ndarray, g: np.ndarray, t: np.ndarray) -> None:
    a *= momentum  # accum = accum * momentum + grad
    a += g
    np.multiply(a, lr, out=t)  # var - accum * lr
    x -= t


def _nesterov(lr: Any, momentum: Any, x: np.ndarray, a: np.ndarray, g: np.ndarray, s: np.ndarray,
              t: np.ndarray) -> None:
    a *= momentum  # accum = accum * momentum + grad
    a += g
    np.multiply(a, momentum, out=s)  # var - (grad * lr + accum * momentum * lr)
    s *= lr
    np.multiply(g, lr, out=t)
    t += s
    x -= t


def _adagrad(lr: Any, x: np.ndarray, a: np.ndarray, g: np.ndarray, s: np.ndarray, t: np.ndarray) -> None:
    np.multiply(g, g, out=s)  # accum = accum + grad * grad
    a += s
    np.sqrt(a, out=s)  # var - grad * lr * (1 / sqrt(accum))
    np.divide(1, s, out=s)
    np.multiply(g, lr, out=t)
    t *= s
    x -= t


def _adadelta(lr: Any, rho: Any, epsilon: Any, x: np.ndarray, a: np.ndarray, u: np.ndarray, g: np.ndarray,
              s: np.ndarray, t: np.ndarray) -> None:
    np.multiply(g, g, out=s)  # accum = accum * rho + grad * grad * (1 - rho)
    s *= 1 - rho
    a *= rho
    a += s
    np.add(u, epsilon, out=s)  # update = sqrt(accum_update + eps) * rsqrt(accum + eps) * grad
    np.sqrt(s, out=s)
    np.add(a, epsilon, out=t)
    np.sqrt(t, out=t)
    np.divide(1, t, out=t)
    s *= t
    s *= g
    np.multiply(s, lr, out=t)  # var - update * lr
    x -= t
    u *= rho  # accum_update = accum_update * rho + update * update * (1 - rho)
    np.multiply(s, s, out=t)
    t *= 1 - rho
    u += t


def _rmsprop(lr: Any, rho: Any, momentum: Any, epsilon: Any, x: np.ndarray, ms: np.ndarray, mom: np.ndarray,
             g: np.ndarray, s: np.ndarray, t: np.ndarray) -> None:
    np.multiply(g, g, out=s)  # ms = ms + (grad * grad - ms) * (1 - rho)
    s -= ms
    s *= 1 - rho
    ms += s
    np.add(ms, epsilon, out=s)  # mom = mom * momentum + (grad * lr) / sqrt(ms + eps)
    np.sqrt(s, out=s)
    np.multiply(g, lr, out=t)
    t /= s
    mom *= momentum
    mom += t
    x -= mom  # var - mom


def _centered_rmsprop(lr: Any, rho: Any, momentum: Any, epsilon: Any, x: np.ndarray, mg: np.ndarray,
                      ms: np.ndarray, mom: np.ndarray, g: np.ndarray, s: np.ndarray, t: np.ndarray) -> None:
    np.multiply(g, g, out=s)  # ms = ms + (grad * grad - ms) * (1 - rho)
    s -= ms
    s *= 1 - rho
    ms += s
    np.subtract(g, mg, out=s)  # mg = mg + (grad - mg) * (1 - rho)
    s *= 1 - rho
    mg += s
    np.multiply(mg, mg, out=s)  # denom = (ms - mg * mg) + eps
    np.subtract(ms, s, out=s)
    s += epsilon
    np.sqrt(s, out=s)  # mom = mom * momentum + (grad * lr) / sqrt(denom)
    np.multiply(g, lr, out=t)
    t /= s
    mom *= momentum
    mom += t
    x -= mom  # var - mom


def _adam(alpha: Any, beta1: Any, beta2: Any, epsilon: Any, x: np.ndarray, m: np.ndarray, v: np.ndarray,
          g: np.ndarray, s: np.ndarray, t: np.ndarray) -> None:
    np.multiply(g, g, out=s)  # v = v + (g * g - v) * (1 - beta2)
    s -= v
    s *= 1 - beta2
    np.subtract(g, m, out=t)  # m = m + (g - m) * (1 - beta1)
    t *= 1 - beta1
    m += t
    v += s
    np.sqrt(v, out=s)  # var - (m * alpha) / (sqrt(v) + epsilon)
    s += epsilon
    np.multiply(m, alpha, out=t)
    t /= s
    x -= t


def _adam_nesterov(alpha: Any, beta1: Any, beta2: Any, epsilon: Any, x: np.ndarray, m: np.ndarray,
                   v: np.ndarray, g: np.ndarray, s: np.ndarray, t: np.ndarray) -> None:
    np.multiply(g, g, out=s)  # v = v + (g * g - v) * (1 - beta2)
    s -= v
    s *= 1 - beta2
    v += s
    np.subtract(g, m, out=s)  # m = m + (g - m) * (1 - beta1)
    s *= 1 - beta1
    m += s
    np.multiply(m, beta1, out=s)  # var - ((g * (1 - beta1) + beta1 * m) * alpha) / (sqrt(v) + eps)
    np.multiply(g, 1 - beta1, out=t)
    t += s
    t *= alpha
    np.sqrt(v, out=s)
    s += epsilon
    t /= s
    x -= t


SGD = Arithmetic("sgd", _sgd, 1, True)
MOMENTUM = Arithmetic("momentum", _momentum, 1, True)
NESTEROV = Arithmetic("nesterov", _nesterov, 2, True)
ADAGRAD = Arithmetic("adagrad", _adagrad, 2, True)
ADADELTA = Arithmetic("adadelta", _adadelta, 2, False)  # reads the gradient late
RMSPROP = Arithmetic("rmsprop", _rmsprop, 2, True)
CENTERED_RMSPROP = Arithmetic("centered_rmsprop", _centered_rmsprop, 2, True)
ADAM = Arithmetic("adam", _adam, 2, True)
ADAM_NESTEROV = Arithmetic("adam_nesterov", _adam_nesterov, 2, True)
