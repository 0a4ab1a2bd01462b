"""Property: a random graph with random `tf.device("/cpu:N")` constraints over four
virtual CPUs gives exactly the values of the same graph on one device -- through
the fused straight-line path, through one Execution per partition (a traced step),
with the graph optimizer on and off, and with `cond` and `while_loop` in the graph;
and random programs of nested `cond`s and `while_loop`s whose inner ops carry random
device constraints (loops spanning devices: control-loop skeletons) give exactly the
values of one device."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowlab as fl

N_DEVICES = 4
SHAPE = (3, 3)

# Each op maps (list of earlier tensors, picks) -> a new [3, 3] float64 tensor.
UNARY = {
    "tanh": lambda a: fl.tanh(a),
    "neg": lambda a: -a,
    "identity": lambda a: fl.identity(a),
    "transpose": lambda a: fl.transpose(a),
    "row_sum": lambda a: fl.reduce_sum(a, axis=0, keepdims=True) + a,
    "sum_all": lambda a: fl.reduce_sum(a) * a,
}
BINARY = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "sub": lambda a, b: fl.subtract(a, b),
    "matmul": lambda a, b: fl.matmul(a, b) * 0.1,
    "maximum": lambda a, b: fl.maximum(a, b),
    "concat_slice": lambda a, b: fl.concat([a, b], axis=0)[1:4],
    "add_n": lambda a, b: fl.add_n([a, b, a]),
    "cond": lambda a, b: fl.cond(fl.reduce_sum(a) > fl.reduce_sum(b), lambda: a - b, lambda: b * 0.5),
    "while": lambda a, b: fl.while_loop(
        lambda i, x: i < 3, lambda i, x: (i + 1, fl.tanh(x) + b), [fl.constant(0), a]
    )[1],
}
OPS = sorted(UNARY) + sorted(BINARY)

node = st.tuples(
    st.sampled_from(OPS),
    st.integers(0, 10**6),  # picks the inputs among earlier tensors
    st.integers(0, 10**6),
    st.one_of(st.none(), st.integers(0, N_DEVICES - 1)),  # the device constraint
    st.booleans(),  # a control dependency on the previous node
)
graphs = st.lists(node, min_size=1, max_size=10)


def build(spec, with_devices):
    """The graph of `spec`; returns (placeholder, fetches)."""
    x = fl.placeholder(fl.float64, SHAPE, name="x")
    k = fl.constant(np.linspace(-1.0, 1.0, 9).reshape(SHAPE), name="k")
    values = [x, k]
    for op, p1, p2, device, ctrl in spec:
        a, b = values[p1 % len(values)], values[p2 % len(values)]
        deps = [values[-1].op] if ctrl else []
        with fl.device(f"/cpu:{device}" if with_devices and device is not None else None):
            with fl.control_dependencies(deps):
                out = UNARY[op](a) if op in UNARY else BINARY[op](a, b)
        values.append(out)
    return x, values[2:]


def run(spec, with_devices, optimize, traced):
    g = fl.Graph()
    with g.as_default():
        x, fetches = build(spec, with_devices)
        cfg = fl.ConfigProto(device_count={"CPU": N_DEVICES if with_devices else 1})
        if not optimize:
            cfg.graph_options.optimizer_options.opt_level = fl.OptimizerOptions.L0
        xv = np.arange(9, dtype=np.float64).reshape(SHAPE) / 7.0
        with fl.Session(graph=g, config=cfg) as s:
            kw = {}
            if traced:
                kw = dict(options=fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE), run_metadata=fl.RunMetadata())
            out = s.run(fetches, {x: xv}, **kw)
            assert len(s._rendezvous) == 0
            return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs, st.booleans(), st.booleans())
def test_partitioned_equals_single_device(spec, optimize, traced):
    expected = run(spec, with_devices=False, optimize=False, traced=False)
    actual = run(spec, with_devices=True, optimize=optimize, traced=traced)
    for e, a in zip(expected, actual):
        assert a.dtype == e.dtype
        np.testing.assert_array_equal(a, e)


def test_a_loop_on_one_device_with_inputs_and_consumers_elsewhere_is_partitioned():
    x = fl.placeholder(fl.float32, [])
    with fl.device("/cpu:0"):
        start = x * 2.0
    with fl.device("/cpu:1"):
        _, r = fl.while_loop(lambda i, v: i < 4, lambda i, v: (i + 1, v * 2.0), [fl.constant(0), start])
    with fl.device("/cpu:2"):
        out = r + 1.0
    with fl.Session(config=fl.ConfigProto(device_count={"CPU": N_DEVICES})) as s:
        assert s.run(out, {x: 1.0}) == 33.0
        parts = s.partitions(out, {x: 1.0})
        assert len(parts) == 3 and [p.tensor for p in parts.pairs] == ["mul:0", "while/Exit_1:0"]


def test_a_loop_spanning_devices_is_partitioned_with_control_loop_skeletons():
    x = fl.placeholder(fl.float32, [])

    def body(i, v):
        with fl.device("/cpu:1"):
            v2 = v * 2.0
        with fl.device("/cpu:2"):
            return i + 1, v2 + 1.0

    with fl.device("/cpu:0"):
        _, r = fl.while_loop(lambda i, v: i < 5, body, [fl.constant(0), x])
    with fl.Session(config=fl.ConfigProto(device_count={"CPU": N_DEVICES})) as s:
        assert s.run(r, {x: 1.0}) == 63.0
        parts = s.partitions(r, {x: 1.0})
        assert len(parts) == 3 and "while/LoopCond:0" in {p.tensor for p in parts.pairs}
        for dev in list(parts)[1:]:
            assert any(n["name"].startswith("_cloop") and n["op"] == "NextIteration" for n in parts[dev]["node"])


# --- random cond/while programs whose inner ops span devices ---------------------------------
# A block is a list of statements; each appends one [2] float64 tensor to the values
# in scope.  ("op", name, pick, pick, device), ("cond", pick, device, block, block),
# ("while", iterations, pick, device, block, parallel_iterations).
ELEMENTWISE = {
    "tanh": lambda a, b: fl.tanh(a),
    "add": lambda a, b: a + b,
    "mix": lambda a, b: a * 0.5 - b * 0.25,
    "max": lambda a, b: fl.maximum(a, b),
    "sin": lambda a, b: fl.sin(a) + b,
}
device_choice = st.one_of(st.none(), st.integers(0, N_DEVICES - 1))
pick = st.integers(0, 10**6)
leaf = st.tuples(st.just("op"), st.sampled_from(sorted(ELEMENTWISE)), pick, pick, device_choice)


def _blocks(inner):
    block = st.lists(inner, min_size=1, max_size=3)
    return st.one_of(
        st.tuples(st.just("cond"), pick, device_choice, block, block),
        st.tuples(st.just("while"), st.integers(0, 3), pick, device_choice, block, st.sampled_from([1, 10])),
    )


statement = st.recursive(leaf, lambda inner: st.one_of(inner, _blocks(inner)), max_leaves=8)
programs = st.lists(statement, min_size=1, max_size=4)


def _on(device, with_devices):
    return fl.device(f"/cpu:{device}" if with_devices and device is not None else None)


def build_block(block, values, with_devices):
    """Run the statements of `block` over `values` (a list, extended); returns its last."""
    for stmt in block:
        kind = stmt[0]
        if kind == "op":
            _, name, p1, p2, device = stmt
            a, b = values[p1 % len(values)], values[p2 % len(values)]
            with _on(device, with_devices):
                values.append(ELEMENTWISE[name](a, b))
        elif kind == "cond":
            _, p1, device, then_block, else_block = stmt
            a = values[p1 % len(values)]
            with _on(device, with_devices):
                pred = fl.reduce_sum(a) > 0.0
                values.append(fl.cond(
                    pred,
                    lambda b=then_block: build_block(b, list(values), with_devices),
                    lambda b=else_block: build_block(b, list(values), with_devices),
                ))
        else:
            _, n, p1, device, body, par = stmt
            start = values[p1 % len(values)]
            outer = list(values)

            def step(i, v, body=body, outer=outer):
                return i + 1, build_block(body, [v, *outer], with_devices)

            with _on(device, with_devices):
                values.append(fl.while_loop(lambda i, v, n=n: i < n, step, [fl.constant(0), start],
                                            parallel_iterations=par)[1])
    return values[-1]


def run_program(program, with_devices, traced):
    g = fl.Graph()
    with g.as_default():
        x = fl.placeholder(fl.float64, [2], name="x")
        values = [x, fl.constant(np.array([0.5, -1.5]), name="k")]
        build_block(program, values, with_devices)
        fetches = values[2:]
        cfg = fl.ConfigProto(device_count={"CPU": N_DEVICES if with_devices else 1})
        with fl.Session(graph=g, config=cfg) as s:
            # A deadline, so that a partitioning that deadlocks fails rather than hangs.
            kw: dict = {"options": fl.RunOptions(timeout_in_ms=20000)}
            if traced:
                kw = dict(options=fl.RunOptions(trace_level=fl.RunOptions.FULL_TRACE, timeout_in_ms=20000),
                          run_metadata=fl.RunMetadata())
            out = s.run(fetches, {x: np.array([0.25, -0.75])}, **kw)
            assert len(s._rendezvous) == 0
            return out


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs, st.booleans())
def test_cond_and_while_spanning_devices_equal_single_device(program, traced):
    expected = run_program(program, with_devices=False, traced=False)
    actual = run_program(program, with_devices=True, traced=traced)
    for e, a in zip(expected, actual):
        assert a.dtype == e.dtype
        np.testing.assert_array_equal(a, e)
