"""L-BFGS as a graph: one quasi-Newton iteration per `sess.run(train_op)`.

TensorFlow 1.x had no graph L-BFGS (tf.contrib.opt.ScipyOptimizerInterface drove SciPy
from Python), so the API is flowlab's own, shaped like a tf.train optimizer:

    opt = tf.train.LBFGSOptimizer(learning_rate=1.0, history_size=10)
    train = opt.minimize(loss)                    # fixed step: x += learning_rate * d
    train = opt.minimize(loss, loss_fn=f)         # Armijo backtracking from learning_rate

The variables are flattened into one vector x.  Non-trainable Variables hold the history:
ring buffers S, Y ([history_size, n]), rho ([history_size]), the number of stored pairs,
and the previous x and gradient.  Each iteration (1) forms the newest pair s = x - x_prev,
y = g - g_prev and stores it when y.s > 1e-10 (else skips it, keeping the inverse Hessian
estimate positive definite); (2) computes d = -H g by the two-loop recursion, built with
tf.while_loop over the stored pairs (newest to oldest, then back), with H0 = (s.y / y.y) I
from the newest pair; d = -g when it is not a descent direction; (3) takes the step.

A line search must evaluate the loss away from the current variables; a loss Tensor
cannot be re-run inside a loop, so `loss_fn(values) -> scalar`, which builds the loss
from a list of tensors standing for the variables, is traced inside the while_loop.  The
step starts at learning_rate and is multiplied by `backtrack` until
f(x + t d) <= f(x) + c1 t g.d, at most `max_backtracks` times.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flowlab.graph import dtypes
from flowlab.graph.graph import get_default_graph
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops import array_ops, core_ops, math_ops, slicing, state_ops, variable_scope
from flowlab.ops.builder import convert_to_tensor
from flowlab.ops.constant_op import constant
from flowlab.ops.gradients_impl import gradients
from flowlab.ops.init_ops import zeros_initializer
from flowlab.ops.variables import trainable_variables
from flowlab.ops.while_loop import while_loop

__all__ = ["LBFGSOptimizer"]


class LBFGSOptimizer:
    """Limited-memory BFGS over a graph (flowlab's API; see the module docstring).

    Args:
      learning_rate: the step (fixed) or the first trial step of the line search.
      history_size: number m of (s, y) pairs kept.
      c1, backtrack, max_backtracks: the Armijo condition's constant, the step's shrink
        factor and the most shrinks per iteration (used when `minimize` gets `loss_fn`).
      name: the name scope of the ops and the prefix of the history variables.
    """

    def __init__(self, learning_rate: float = 1.0, history_size: int = 10, c1: float = 1e-4,
                 backtrack: float = 0.5, max_backtracks: int = 20, name: str = "LBFGS") -> None:
        if history_size < 1:
            raise ValueError(f"history_size must be >= 1, got {history_size}")
        self._lr, self._m = float(learning_rate), int(history_size)
        self._c1, self._shrink, self._max_bt = float(c1), float(backtrack), int(max_backtracks)
        self._name = name

    def minimize(self, loss: Any, var_list: Any = None, loss_fn: Callable[[list[Any]], Any] | None = None,
                 global_step: Any = None, name: str | None = None) -> Any:
        """One L-BFGS iteration as an op.

        Args:
          loss: scalar Tensor of the variables; its gradient drives the iteration.
          var_list: variables to optimize (default: the trainable variables).
          loss_fn: callable mapping a list of tensors (one per variable, same shapes) to the
            loss; given, the step comes from the Armijo backtracking line search.
          global_step: incremented by one per iteration when given.

        Returns:
          The train op.

        Raises:
          ValueError: no variables, or a variable the loss does not depend on.
        """
        var_list = list(var_list) if var_list is not None else trainable_variables()
        if not var_list:
            raise ValueError("No variables to optimize.")
        grads = gradients(loss, var_list)
        for g, v in zip(grads, var_list):
            if g is None:
                raise ValueError(f"No gradient for variable {v.op.name}: the loss does not depend on it.")
        dtype = var_list[0].dtype.base_dtype
        if any(v.dtype.base_dtype != dtype for v in var_list):
            raise ValueError("LBFGSOptimizer needs variables of one dtype, got "
                             f"{sorted({v.dtype.base_dtype.name for v in var_list})}")
        shapes = [v.shape.as_list() for v in var_list]
        sizes = [int(TensorShape(s).num_elements()) for s in shapes]
        n, m = sum(sizes), self._m
        with get_default_graph().name_scope(name or self._name) as scope:
            with variable_scope.variable_scope(None, default_name=self._name + "_history"):  # one per minimize
                zeros = zeros_initializer()
                hist = {k: variable_scope.get_variable(k, shape, dtype=dtype, initializer=zeros, trainable=False)
                        for k, shape in (("S", [m, n]), ("Y", [m, n]), ("rho", [m]),
                                         ("x_prev", [n]), ("g_prev", [n]))}
                count = variable_scope.get_variable("num_pairs", [], dtype=dtypes.int32, initializer=zeros, trainable=False)
                step = variable_scope.get_variable("iteration", [], dtype=dtypes.int32, initializer=zeros, trainable=False)
            flat = lambda ts: array_ops.concat([array_ops.reshape(t, [-1]) for t in ts], 0)  # noqa: E731
            x = flat([core_ops.identity(v) for v in var_list])
            g = flat([convert_to_tensor(gr) for gr in grads])
            S, Y, rho = (core_ops.identity(hist[k]) for k in ("S", "Y", "rho"))
            num = core_ops.identity(count)
            # (1) the newest pair, stored when it has positive curvature
            s_new, y_new = x - core_ops.identity(hist["x_prev"]), g - core_ops.identity(hist["g_prev"])
            ys = math_ops.reduce_sum(y_new * s_new)
            keep = math_ops.logical_and(math_ops.greater(core_ops.identity(step), 0), math_ops.greater(ys, constant(1e-10, dtype)))
            slot = array_ops.one_hot(math_ops.floormod(num, m), m, dtype=dtype)
            row = array_ops.expand_dims(slot, 1)
            S = array_ops.where(keep, S * (1 - row) + row * s_new, S)
            Y = array_ops.where(keep, Y * (1 - row) + row * y_new, Y)
            rho = array_ops.where(keep, rho * (1 - slot) + slot / array_ops.where(keep, ys, constant(1.0, dtype)), rho)
            num = array_ops.where(keep, num + 1, num)
            d = -self._two_loop(g, S, Y, rho, num, m, dtype)
            gd = math_ops.reduce_sum(g * d)
            d = array_ops.where(gd < 0, d, -g)
            gd = math_ops.reduce_sum(g * d)
            t = self._step(x, d, gd, loss, loss_fn, shapes, sizes, dtype)
            x_new = x + t * d
            parts = array_ops.split(x_new, sizes, 0) if len(sizes) > 1 else [x_new]
            # every write waits for every read of this iteration (no read-after-write race)
            with get_default_graph().control_dependencies([x_new, g, S, Y, rho, num, keep]):
                updates = self._writes(var_list, parts, shapes, hist, count, step, S, Y, rho, num,
                                       x, g, global_step)
            return core_ops.group(*updates, name=scope.rstrip("/") if isinstance(scope, str) else None)

    @staticmethod
    def _writes(var_list: list[Any], parts: list[Any], shapes: list[Any], hist: dict[str, Any],
                count: Any, step: Any, S: Any, Y: Any, rho: Any, num: Any, x: Any, g: Any,
                global_step: Any) -> list[Any]:
        updates = [state_ops.assign(v, array_ops.reshape(p, s)) for v, p, s in zip(var_list, parts, shapes)]
        updates += [state_ops.assign(hist["S"], S), state_ops.assign(hist["Y"], Y), state_ops.assign(hist["rho"], rho),
                    state_ops.assign(count, num), state_ops.assign(hist["x_prev"], x), state_ops.assign(hist["g_prev"], g),
                    state_ops.assign_add(step, 1)]
        if global_step is not None:
            updates.append(state_ops.assign_add(global_step, 1))
        return updates

    @staticmethod
    def _two_loop(g: Any, S: Any, Y: Any, rho: Any, num: Any, m: int, dtype: Any) -> Any:
        """H g by the two-loop recursion over the min(num, m) stored pairs."""
        stored = math_ops.minimum(num, m)

        def newest_first(i: Any, q: Any, alphas: Any) -> Any:
            j = math_ops.floormod(num - 1 - i, m)
            a = slicing.gather(rho, j) * math_ops.reduce_sum(slicing.gather(S, j) * q)
            return i + 1, q - a * slicing.gather(Y, j), alphas + a * array_ops.one_hot(j, m, dtype=dtype)

        _, q, alphas = while_loop(lambda i, q, a: i < stored, newest_first,
                                     [constant(0), g, array_ops.zeros([m], dtype)])
        last = math_ops.floormod(num - 1, m)
        sy = math_ops.reduce_sum(slicing.gather(S, last) * slicing.gather(Y, last))
        yy = math_ops.reduce_sum(math_ops.square(slicing.gather(Y, last)))
        gamma = array_ops.where(stored > 0, sy / array_ops.where(stored > 0, yy, constant(1.0, dtype)),
                         constant(1.0, dtype))

        def oldest_first(i: Any, r: Any) -> Any:
            j = math_ops.floormod(num - stored + i, m)
            b = slicing.gather(rho, j) * math_ops.reduce_sum(slicing.gather(Y, j) * r)
            return i + 1, r + slicing.gather(S, j) * (slicing.gather(alphas, j) - b)

        _, r = while_loop(lambda i, r: i < stored, oldest_first, [constant(0), gamma * q])
        return r

    def _step(self, x: Any, d: Any, gd: Any, loss: Any, loss_fn: Any, shapes: list[Any],
              sizes: list[int], dtype: Any) -> Any:
        lr = constant(self._lr, dtype)
        if loss_fn is None:
            return lr
        f0 = math_ops.cast(loss, dtype)

        def f_at(t: Any) -> Any:
            xt = x + t * d
            parts = array_ops.split(xt, sizes, 0) if len(sizes) > 1 else [xt]
            return math_ops.cast(loss_fn([array_ops.reshape(p, s) for p, s in zip(parts, shapes)]), dtype)

        c1, shrink = constant(self._c1, dtype), constant(self._shrink, dtype)

        def too_long(k: Any, t: Any) -> Any:
            return math_ops.logical_and(k < self._max_bt, f_at(t) > f0 + c1 * t * gd)

        _, t = while_loop(too_long, lambda k, t: (k + 1, t * shrink), [constant(0), lr])
        return t
