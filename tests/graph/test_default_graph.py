"""The default graph: `as_default()` nesting, `reset_default_graph`, and which
builder state is per thread."""

from __future__ import annotations

import threading

import pytest

import flowlab as fl


# --- the default graph -------------------------------------------------------------
def test_as_default_nesting_and_reset():
    g0 = fl.get_default_graph()
    g1, g2 = fl.Graph(), fl.Graph()
    with g1.as_default() as x:
        assert x is g1 and fl.get_default_graph() is g1
        with g2.as_default():
            assert fl.get_default_graph() is g2
            assert fl.constant(1.0).graph is g2
        assert fl.get_default_graph() is g1
        with pytest.raises(AssertionError, match="Do not use tf.reset_default_graph"):
            fl.reset_default_graph()
    assert fl.get_default_graph() is g0
    fl.reset_default_graph()
    assert fl.get_default_graph() is not g0


def test_reset_default_graph_inside_as_default_like_tensorflow(tf1):
    for mod in (tf1, fl):
        with mod.Graph().as_default():
            with pytest.raises(AssertionError):
                mod.reset_default_graph()


def test_default_graph_is_per_thread_for_as_default():
    g0 = fl.get_default_graph()
    g1 = fl.Graph()
    seen = []
    with g1.as_default():
        t = threading.Thread(target=lambda: seen.append(fl.get_default_graph()))
        t.start()
        t.join()
    assert seen[0] is not g1
    # flowlab shares the global default graph between threads (TensorFlow gives each
    # thread its own); see the module docstring of flowlab.graph.graph.
    assert seen[0] is g0


def test_builder_state_is_per_thread():
    g = fl.get_default_graph()
    a = fl.constant(1.0, name="a")
    seen = []

    def other():
        seen.append(g.get_name_scope())
        seen.append(fl.no_op(name="t").control_inputs)
        seen.append(fl.no_op(name="u").device)

    with fl.name_scope("outer"), fl.control_dependencies([a]), fl.device("/cpu:0"):
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert seen == ["", [], ""]


def test_concurrent_op_creation_gets_unique_names():
    g = fl.Graph()
    errors = []

    def work():
        try:
            with g.as_default():
                for _ in range(50):
                    fl.no_op(name="x")
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    names_ = [o.name for o in g.get_operations()]
    assert len(names_) == len(set(names_)) == 200


def test_graph_repr_and_seed():
    g = fl.Graph()
    assert g.seed is None
    with g.as_default():
        fl.set_random_seed(3)
        fl.no_op()
    assert g.seed == 3
    assert repr(g) == "<flowlab.Graph with 1 ops, version 1>"
