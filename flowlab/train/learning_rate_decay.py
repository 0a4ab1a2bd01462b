"""Learning-rate schedules of `tf.train` (TF1 `learning_rate_decay`), as graph ops.

Each function returns a scalar tensor computed from `global_step` with TensorFlow's
formula and in the learning rate's dtype, e.g. exponential_decay:
`learning_rate * decay_rate ^ (global_step / decay_steps)` (the exponent floored with
`staircase=True`).
"""

from __future__ import annotations

import math
from typing import Any

from flowlab.graph.graph import get_default_graph
from flowlab.ops import array_ops, core_ops, math_ops
from flowlab.ops.builder import convert_to_tensor

__all__ = ["exponential_decay", "piecewise_constant", "inverse_time_decay", "polynomial_decay",
           "natural_exp_decay", "cosine_decay", "cosine_decay_restarts", "linear_cosine_decay"]


def _need_step(global_step: Any, fn: str) -> None:
    # TensorFlow 2's tf.compat.v1 schedules fail converting the None step.
    del fn
    if global_step is None:
        raise ValueError("None values not supported.")


def exponential_decay(learning_rate: Any, global_step: Any, decay_steps: Any, decay_rate: Any,
                      staircase: bool = False, name: str | None = None) -> Any:
    """`learning_rate * decay_rate ** (global_step / decay_steps)`."""
    _need_step(global_step, "exponential_decay")
    with get_default_graph().name_scope(name or "ExponentialDecay") as scope:
        lr = convert_to_tensor(learning_rate, name="learning_rate")
        dtype = lr.dtype
        decay_steps = math_ops.cast(decay_steps, dtype)
        decay_rate = math_ops.cast(decay_rate, dtype)
        p = math_ops.cast(global_step, dtype) / decay_steps
        if staircase:
            p = math_ops.floor(p)
        return math_ops.multiply(lr, math_ops.pow(decay_rate, p), name=scope)


def natural_exp_decay(learning_rate: Any, global_step: Any, decay_steps: Any, decay_rate: Any,
                      staircase: bool = False, name: str | None = None) -> Any:
    """`learning_rate * exp(-decay_rate) ** (global_step / decay_steps)` (TensorFlow
    builds it as an exponential decay with rate `exp(-decay_rate)`)."""
    _need_step(global_step, "natural_exp_decay")
    rate = math_ops.exp(math_ops.negative(decay_rate))
    return exponential_decay(learning_rate, global_step, decay_steps, rate, staircase=staircase, name=name)


def inverse_time_decay(learning_rate: Any, global_step: Any, decay_steps: Any, decay_rate: Any,
                       staircase: bool = False, name: str | None = None) -> Any:
    """`learning_rate / (1 + decay_rate * global_step / decay_steps)`."""
    _need_step(global_step, "inverse_time_decay")
    with get_default_graph().name_scope(name or "InverseTimeDecay") as scope:
        lr = convert_to_tensor(learning_rate, name="learning_rate")
        dtype = lr.dtype
        p = math_ops.cast(global_step, dtype) / math_ops.cast(decay_steps, dtype)
        if staircase:
            p = math_ops.floor(p)
        # (flowlab's add does not yet convert a Python 1 to the other input's dtype.)
        one = convert_to_tensor(1, dtype=dtype)
        denom = math_ops.add(one, math_ops.multiply(math_ops.cast(decay_rate, dtype), p))
        return math_ops.divide(lr, denom, name=scope)


def polynomial_decay(learning_rate: Any, global_step: Any, decay_steps: Any, end_learning_rate: Any = 0.0001,
                     power: Any = 1.0, cycle: bool = False, name: str | None = None) -> Any:
    """`(lr - end) * (1 - min(step, decay_steps) / decay_steps) ** power + end`; with
    `cycle` the decay restarts every `decay_steps * ceil(step / decay_steps)`."""
    _need_step(global_step, "polynomial_decay")
    with get_default_graph().name_scope(name or "PolynomialDecay") as scope:
        lr = convert_to_tensor(learning_rate, name="learning_rate")
        dtype = lr.dtype
        end = math_ops.cast(end_learning_rate, dtype)
        power_t = math_ops.cast(power, dtype)
        step = math_ops.cast(global_step, dtype)
        steps = math_ops.cast(decay_steps, dtype)
        if cycle:
            multiplier = array_ops.where(math_ops.equal(step, 0), array_ops.ones_like(step),
                                         math_ops.ceil(step / decay_steps))
            steps = math_ops.multiply(steps, multiplier)
        else:
            step = math_ops.minimum(step, steps)
        p = math_ops.divide(step, steps)
        return math_ops.add(math_ops.multiply(lr - end, math_ops.pow(1 - p, power_t)), end, name=scope)


def piecewise_constant(x: Any, boundaries: Any, values: Any, name: str | None = None) -> Any:
    """`values[0]` while x <= boundaries[0], `values[i]` while boundaries[i-1] < x <=
    boundaries[i], `values[-1]` after the last boundary."""
    if len(boundaries) != len(values) - 1:
        raise ValueError("The length of boundaries should be 1 less than the length of values")
    with get_default_graph().name_scope(name or "PiecewiseConstant") as scope:
        x = convert_to_tensor(x)
        bs = [convert_to_tensor(b) for b in boundaries]
        vs = [convert_to_tensor(v) for v in values]
        for i, b in enumerate(bs):
            if b.dtype.base_dtype != x.dtype.base_dtype:
                if not (b.dtype.is_integer and x.dtype.is_integer):
                    raise ValueError(
                        f"Boundaries ({b.dtype.base_dtype}) must have the same dtype as x "
                        f"({x.dtype.base_dtype}).")
                bs[i] = math_ops.cast(b, x.dtype.base_dtype)
        for v in vs[1:]:
            if v.dtype.base_dtype != vs[0].dtype.base_dtype:
                raise ValueError(
                    f"Values must have elements all with the same dtype ({vs[0].dtype.base_dtype} vs "
                    f"{v.dtype.base_dtype}).")
        # From the last interval down: the first boundary at or above x wins.
        result = vs[-1]
        for b, v in reversed(list(zip(bs, vs[:-1]))):
            result = array_ops.where(math_ops.less_equal(x, b), v, result)
        return core_ops.identity(result, name=scope)


def _pi(dtype: Any) -> Any:
    return convert_to_tensor(math.pi, dtype=dtype)


def cosine_decay(learning_rate: Any, global_step: Any, decay_steps: Any, alpha: Any = 0.0,
                 name: str | None = None) -> Any:
    """`lr * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps)) + alpha)`."""
    _need_step(global_step, "cosine_decay")
    with get_default_graph().name_scope(name or "CosineDecay"):
        lr = convert_to_tensor(learning_rate, name="initial_learning_rate")
        dtype = lr.dtype
        steps = math_ops.cast(decay_steps, dtype)
        step = math_ops.minimum(math_ops.cast(global_step, dtype), steps)
        cosine = 0.5 * (1.0 + math_ops.cos(_pi(dtype) * (step / steps)))
        decayed = (1 - alpha) * cosine + alpha
        return math_ops.multiply(lr, decayed)


def cosine_decay_restarts(learning_rate: Any, global_step: Any, first_decay_steps: Any, t_mul: Any = 2.0,
                          m_mul: Any = 1.0, alpha: Any = 0.0, name: str | None = None) -> Any:
    """Cosine decay restarted after `first_decay_steps`, periods growing by `t_mul` and
    peaks shrinking by `m_mul` (SGDR)."""
    _need_step(global_step, "cosine_decay_restarts")
    from flowlab.ops.cond import cond
    with get_default_graph().name_scope(name or "SGDRDecay") as scope:
        lr = convert_to_tensor(learning_rate, name="initial_learning_rate")
        dtype = lr.dtype
        first = math_ops.cast(first_decay_steps, dtype)
        alpha_t = math_ops.cast(alpha, dtype)
        t_mul_t = math_ops.cast(t_mul, dtype)
        m_mul_t = math_ops.cast(m_mul, dtype)
        fraction = math_ops.cast(global_step, dtype) / first

        def compute_step(fraction: Any, geometric: bool) -> Any:
            if geometric:
                i_restart = math_ops.floor(math_ops.log(1.0 - fraction * (1.0 - t_mul_t)) / math_ops.log(t_mul_t))
                sum_r = (1.0 - t_mul_t ** i_restart) / (1.0 - t_mul_t)
                return i_restart, (fraction - sum_r) / t_mul_t ** i_restart
            i_restart = math_ops.floor(fraction)
            return i_restart, fraction - i_restart

        i_restart, fraction = cond(math_ops.equal(t_mul_t, 1.0), lambda: compute_step(fraction, False),
                                   lambda: compute_step(fraction, True))
        m_fac = m_mul_t ** i_restart
        cosine = 0.5 * m_fac * (1.0 + math_ops.cos(_pi(dtype) * fraction))
        decayed = (1 - alpha_t) * cosine + alpha_t
        return math_ops.multiply(lr, decayed, name=scope)


def linear_cosine_decay(learning_rate: Any, global_step: Any, decay_steps: Any, num_periods: Any = 0.5,
                        alpha: Any = 0.0, beta: Any = 0.001, name: str | None = None) -> Any:
    """`lr * ((alpha + linear) * cosine + beta)` with a linear and a cosine decay to
    `decay_steps`."""
    _need_step(global_step, "linear_cosine_decay")
    with get_default_graph().name_scope(name or "LinearCosineDecay") as scope:
        lr = convert_to_tensor(learning_rate, name="initial_learning_rate")
        dtype = lr.dtype
        steps = math_ops.cast(decay_steps, dtype)
        periods = math_ops.cast(num_periods, dtype)
        alpha_t = math_ops.cast(alpha, dtype)
        beta_t = math_ops.cast(beta, dtype)
        step = math_ops.minimum(math_ops.cast(global_step, dtype), steps)
        linear = (steps - step) / steps
        fraction = 2.0 * periods * (step / steps)
        cosine = 0.5 * (1.0 + math_ops.cos(_pi(dtype) * fraction))
        return math_ops.multiply(lr, (alpha_t + linear) * cosine + beta_t, name=scope)
