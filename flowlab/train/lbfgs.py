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
        import flowlab as fl

        var_list = list(var_list) if var_list is not None else fl.trainable_variables()
        if not var_list:
            raise ValueError("No variables to optimize.")
        grads = fl.gradients(loss, var_list)
        for g, v in zip(grads, var_list):
            if g is None:
                raise ValueError(f"No gradient for variable {v.op.name}: the loss does not depend on it.")
        dtype = var_list[0].dtype.base_dtype
        if any(v.dtype.base_dtype != dtype for v in var_list):
            raise ValueError("LBFGSOptimizer needs variables of one dtype, got "
                             f"{sorted({v.dtype.base_dtype.name for v in var_list})}")
        shapes = [v.shape.as_list() for v in var_list]
        sizes = [int(fl.TensorShape(s).num_elements()) for s in shapes]
        n, m = sum(sizes), self._m
        with fl.name_scope(name or self._name) as scope:
            with fl.variable_scope(None, default_name=self._name + "_history"):  # one per minimize
                zeros = fl.zeros_initializer()
                hist = {k: fl.get_variable(k, shape, dtype=dtype, initializer=zeros, trainable=False)
                        for k, shape in (("S", [m, n]), ("Y", [m, n]), ("rho", [m]),
                                         ("x_prev", [n]), ("g_prev", [n]))}
                count = fl.get_variable("num_pairs", [], dtype=fl.int32, initializer=zeros, trainable=False)
                step = fl.get_variable("iteration", [], dtype=fl.int32, initializer=zeros, trainable=False)
            flat = lambda ts: fl.concat([fl.reshape(t, [-1]) for t in ts], 0)  # noqa: E731
            x = flat([fl.identity(v) for v in var_list])
            g = flat([fl.convert_to_tensor(gr) for gr in grads])
            S, Y, rho = (fl.identity(hist[k]) for k in ("S", "Y", "rho"))
            num = fl.identity(count)
            # (1) the newest pair, stored when it has positive curvature
            s_new, y_new = x - fl.identity(hist["x_prev"]), g - fl.identity(hist["g_prev"])
            ys = fl.reduce_sum(y_new * s_new)
            keep = fl.logical_and(fl.greater(fl.identity(step), 0), fl.greater(ys, fl.constant(1e-10, dtype)))
            slot = fl.one_hot(fl.floormod(num, m), m, dtype=dtype)
            row = fl.expand_dims(slot, 1)
            S = fl.where(keep, S * (1 - row) + row * s_new, S)
            Y = fl.where(keep, Y * (1 - row) + row * y_new, Y)
            rho = fl.where(keep, rho * (1 - slot) + slot / fl.where(keep, ys, fl.constant(1.0, dtype)), rho)
            num = fl.where(keep, num + 1, num)
            d = -self._two_loop(fl, g, S, Y, rho, num, m, dtype)
            gd = fl.reduce_sum(g * d)
            d = fl.where(gd < 0, d, -g)
            gd = fl.reduce_sum(g * d)
            t = self._step(fl, x, d, gd, loss, loss_fn, shapes, sizes, dtype)
            x_new = x + t * d
            parts = fl.split(x_new, sizes, 0) if len(sizes) > 1 else [x_new]
            # every write waits for every read of this iteration (no read-after-write race)
            with fl.control_dependencies([x_new, g, S, Y, rho, num, keep]):
                updates = self._writes(fl, var_list, parts, shapes, hist, count, step, S, Y, rho, num,
                                       x, g, global_step)
            return fl.group(*updates, name=scope.rstrip("/") if isinstance(scope, str) else None)

    @staticmethod
    def _writes(fl: Any, var_list: list[Any], parts: list[Any], shapes: list[Any], hist: dict[str, Any],
                count: Any, step: Any, S: Any, Y: Any, rho: Any, num: Any, x: Any, g: Any,
                global_step: Any) -> list[Any]:
        updates = [fl.assign(v, fl.reshape(p, s)) for v, p, s in zip(var_list, parts, shapes)]
        updates += [fl.assign(hist["S"], S), fl.assign(hist["Y"], Y), fl.assign(hist["rho"], rho),
                    fl.assign(count, num), fl.assign(hist["x_prev"], x), fl.assign(hist["g_prev"], g),
                    fl.assign_add(step, 1)]
        if global_step is not None:
            updates.append(fl.assign_add(global_step, 1))
        return updates

    @staticmethod
    def _two_loop(fl: Any, g: Any, S: Any, Y: Any, rho: Any, num: Any, m: int, dtype: Any) -> Any:
        """H g by the two-loop recursion over the min(num, m) stored pairs."""
        stored = fl.minimum(num, m)

        def newest_first(i: Any, q: Any, alphas: Any) -> Any:
            j = fl.floormod(num - 1 - i, m)
            a = fl.gather(rho, j) * fl.reduce_sum(fl.gather(S, j) * q)
            return i + 1, q - a * fl.gather(Y, j), alphas + a * fl.one_hot(j, m, dtype=dtype)

        _, q, alphas = fl.while_loop(lambda i, q, a: i < stored, newest_first,
                                     [fl.constant(0), g, fl.zeros([m], dtype)])
        last = fl.floormod(num - 1, m)
        sy = fl.reduce_sum(fl.gather(S, last) * fl.gather(Y, last))
        yy = fl.reduce_sum(fl.square(fl.gather(Y, last)))
        gamma = fl.where(stored > 0, sy / fl.where(stored > 0, yy, fl.constant(1.0, dtype)),
                         fl.constant(1.0, dtype))

        def oldest_first(i: Any, r: Any) -> Any:
            j = fl.floormod(num - stored + i, m)
            b = fl.gather(rho, j) * fl.reduce_sum(fl.gather(Y, j) * r)
            return i + 1, r + fl.gather(S, j) * (fl.gather(alphas, j) - b)

        _, r = fl.while_loop(lambda i, r: i < stored, oldest_first, [fl.constant(0), gamma * q])
        return r

    def _step(self, fl: Any, x: Any, d: Any, gd: Any, loss: Any, loss_fn: Any, shapes: list[Any],
              sizes: list[int], dtype: Any) -> Any:
        lr = fl.constant(self._lr, dtype)
        if loss_fn is None:
            return lr
        f0 = fl.cast(loss, dtype)

        def f_at(t: Any) -> Any:
            xt = x + t * d
            parts = fl.split(xt, sizes, 0) if len(sizes) > 1 else [xt]
            return fl.cast(loss_fn([fl.reshape(p, s) for p, s in zip(parts, shapes)]), dtype)

        c1, shrink = fl.constant(self._c1, dtype), fl.constant(self._shrink, dtype)

        def too_long(k: Any, t: Any) -> Any:
            return fl.logical_and(k < self._max_bt, f_at(t) > f0 + c1 * t * gd)

        _, t = fl.while_loop(too_long, lambda k, t: (k + 1, t * shrink), [fl.constant(0), lr])
        return t
