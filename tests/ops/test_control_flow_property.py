"""Property: random programs of nested cond and while_loop over scalars give the same
values as the same program run as plain Python.

A program is an expression tree over float64 scalars: variables (`a`, `b`, and inside
a loop its state `s` and counter `i`), small constants, `+ - * min max`, conditionals
`cond(l < r, then, else)` and loops `while i < n and s ? guard: s = body`.  `_py`
evaluates it in Python (NumPy scalar min/max, so NaN propagates the same way), `_tf`
builds it with flowlab's cond and while_loop; IEEE arithmetic makes them equal bit for
bit.
"""

from __future__ import annotations

import operator

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowlab as fl

_CMP = {"<": operator.lt, ">": operator.gt, "==": operator.eq}
_BIN = {"+": operator.add, "-": operator.sub, "*": operator.mul,
        "min": np.minimum, "max": np.maximum}

_leaf = st.one_of(
    st.sampled_from(["a", "b", "s", "i"]).map(lambda v: ("var", v)),
    st.integers(-3, 3).map(lambda c: ("const", float(c))),
)


def _extend(children):
    return st.one_of(
        st.tuples(st.just("bin"), st.sampled_from(sorted(_BIN)), children, children),
        st.tuples(st.just("cond"), st.sampled_from(sorted(_CMP)), children, children,
                  children, children),
        st.tuples(st.just("while"), st.integers(0, 4), st.sampled_from(sorted(_CMP)),
                  children, children, children),
    )


programs = st.recursive(_leaf, _extend, max_leaves=10)


def _py(e, env):
    kind = e[0]
    if kind == "var":
        return env[e[1]]
    if kind == "const":
        return np.float64(e[1])
    if kind == "bin":
        return np.float64(_BIN[e[1]](_py(e[2], env), _py(e[3], env)))
    if kind == "cond":
        taken = _CMP[e[1]](_py(e[2], env), _py(e[3], env))
        return _py(e[4], env) if taken else _py(e[5], env)
    _, n, cmp, init, guard, body = e
    s, i = _py(init, env), 0
    while i < n and _CMP[cmp](s, _py(guard, {**env, "s": s, "i": np.float64(i)})):
        s = _py(body, {**env, "s": s, "i": np.float64(i)})
        i += 1
    return s


def _tf(e, env):
    kind = e[0]
    if kind == "var":
        return env[e[1]]
    if kind == "const":
        return fl.constant(e[1], fl.float64)
    if kind == "bin":
        x, y = _tf(e[2], env), _tf(e[3], env)
        op = e[1]
        if op == "min":
            return fl.minimum(x, y)
        if op == "max":
            return fl.maximum(x, y)
        return _BIN[op](x, y)
    if kind == "cond":
        p = _CMP[e[1]](_tf(e[2], env), _tf(e[3], env)) if e[1] != "==" else \
            fl.equal(_tf(e[2], env), _tf(e[3], env))
        return fl.cond(p, lambda: _tf(e[4], env), lambda: _tf(e[5], env))
    _, n, cmp, init, guard, body = e

    def inner(i, s):
        return {**env, "s": s, "i": fl.cast(i, fl.float64)}

    def cond(i, s):
        g = _tf(guard, inner(i, s))
        c = fl.equal(s, g) if cmp == "==" else _CMP[cmp](s, g)
        return fl.logical_and(i < n, c)

    def body_fn(i, s):
        return i + 1, _tf(body, inner(i, s))

    return fl.while_loop(cond, body_fn, [0, _tf(init, env)])[1]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs, st.integers(-3, 3), st.integers(-3, 3))
def test_random_cond_while_programs_match_python(program, a, b):
    env_py = {"a": np.float64(a), "b": np.float64(b), "s": np.float64(0.5), "i": np.float64(-1.0)}
    expected = _py(program, env_py)
    with fl.Graph().as_default():
        pa = fl.placeholder(fl.float64, [], name="a")
        pb = fl.placeholder(fl.float64, [], name="b")
        env = {"a": pa, "b": pb, "s": fl.constant(0.5, fl.float64),
               "i": fl.constant(-1.0, fl.float64)}
        out = fl.convert_to_tensor(_tf(program, env))
        with fl.Session() as sess:
            got = sess.run(out, {pa: a, pb: b})
    np.testing.assert_array_equal(np.float64(got), expected, err_msg=repr(program))
