"""The cond/while graphs flowlab builds, pinned node by node.

The control-flow contexts rewire the ops of a branch or loop body (Switches and
Enters for outside values, pivot control inputs, proxies for outside control
inputs).  This file pins the result -- every node's name, type, inputs (control
inputs included), device and attrs -- for a set of cond, while and gradient
programs, so that a change of *how* the contexts do it (when the rewiring happens)
cannot change *what* they build.  Nodes are compared by name: the order in which
plumbing ops join the graph is not part of the contract.

Regenerate (only for a deliberate change of the built graphs):
    .venv/bin/python tests/ops/test_graph_hook_golden.py --write
"""

from __future__ import annotations

import json
import pathlib
import sys

import numpy as np
import pytest

import flowlab as tf

GOLDEN = pathlib.Path(__file__).with_name("test_graph_hook_golden.json")


def _cond_program() -> None:
    x = tf.placeholder(tf.float32, [3], name="x")
    w = tf.Variable(np.ones(3, np.float32), name="w")
    p = tf.reduce_sum(x) > 0
    # outside values, a constant (pivot control input), an op result, a variable
    r = tf.cond(p, lambda: x * 2.0 + w, lambda: tf.constant([0.0, 1.0, 2.0]))
    # nested conds sharing one outside value at both levels
    q = tf.cond(p,
                lambda: tf.cond(x[0] > 1.0, lambda: x + 1.0, lambda: x - 1.0) + x,
                lambda: tf.identity(x))
    # a branch returning an outside value untouched, and an op result
    s, t = tf.cond(p, lambda: (x, tf.no_op()), lambda: (x * 3.0, tf.no_op()))
    # inside a control_dependencies block, and a branch with its own control deps
    with tf.control_dependencies([r]):
        u = tf.cond(p, lambda: tf.square(x), lambda: tf.abs(x), name="ctl")
    with tf.name_scope("outer"):
        def branch() -> tf.Tensor:
            with tf.control_dependencies([q.op]):
                return tf.identity(x, name="after_q") * 1.5
        v = tf.cond(p, branch, lambda: x)
    tf.gradients(tf.reduce_sum(r + q + s + u + v), [x, w])
    del t


def _while_program() -> None:
    x = tf.placeholder(tf.float32, [3], name="x")
    k = tf.placeholder(tf.float32, [], name="k")
    outside = tf.identity(x, name="outside_op")
    # an outside value (constant Enter), constants in cond and body
    i, a = tf.while_loop(lambda i, a: i < 5, lambda i, a: (i + 1, a * k + x),
                         [tf.constant(0), x])

    def body(i: tf.Tensor, a: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        # an outside control input (a proxy through an Enter), a cond in the body,
        # an inner loop reading an outer value, and ops after them in the scope
        with tf.control_dependencies([outside.op]):
            b = tf.identity(a) * 2.0
        c = tf.cond(i > 2, lambda: b + x, lambda: b - k)
        _, d = tf.while_loop(lambda j, d: j < 2, lambda j, d: (j + 1, d + c * k),
                             [tf.constant(0), c])
        return i + 1, tf.identity(d) * 0.5

    _, e = tf.while_loop(lambda i, a: i < 3, body, [tf.constant(0), x], name="second")
    # a loop inside a cond branch
    f = tf.cond(k > 0,
                lambda: tf.while_loop(lambda j, s: j < 4, lambda j, s: (j + 1, s * x),
                                      [0, x])[1],
                lambda: x)
    tf.gradients(tf.reduce_sum(a + e + f), [x, k])
    del i


def _tensor_array_program() -> None:
    x = tf.placeholder(tf.float32, [4, 3], name="x")
    y = tf.map_fn(lambda r: r * 2.0 + 1.0, x)
    z = tf.scan(lambda acc, r: acc + r, x)
    tf.gradients(tf.reduce_sum(y + z), x)


PROGRAMS = {
    "cond": _cond_program,
    "while": _while_program,
    "tensor_array": _tensor_array_program,
}


def dump(program) -> dict[str, dict]:
    g = tf.Graph()
    with g.as_default():
        program()
    return {n["name"]: n for n in g.as_graph_def()["node"]}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_built_graph_is_pinned(name: str) -> None:
    want = json.loads(GOLDEN.read_text())[name]
    got = json.loads(json.dumps(dump(PROGRAMS[name])))
    again = (" (a deliberate change of the built graphs? regenerate with "
             "`.venv/bin/python tests/ops/test_graph_hook_golden.py --write`)")
    assert sorted(got) == sorted(want), "node names differ" + again
    for n in sorted(want):
        assert got[n] == want[n], f"node {n} differs" + again


if __name__ == "__main__" and "--write" in sys.argv:
    GOLDEN.write_text(json.dumps({k: dump(p) for k, p in PROGRAMS.items()}, indent=0, sort_keys=True))
