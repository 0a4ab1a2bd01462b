"""FtrlOptimizer, ProximalGradientDescentOptimizer, ProximalAdagradOptimizer and
AdagradDAOptimizer against TensorFlow: 20 dense and sparse (embedding_lookup) steps,
slot names, the variables a checkpoint would hold, the op types built, the raw ops'
errors, and the sparse ops with repeated indices (TensorFlow's row loop)."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from flowlab.ops.builder import apply_op
from tests.programs.hidden_support import same_error, same_results


class _FlowlabRawOps:
    """`_raw_ops(tf).X(**inputs_and_attrs)` for flowlab (which has no raw_ops module)."""

    def __getattr__(self, op_type):
        return lambda **kw: apply_op(op_type, name=op_type, **kw)


def _raw_ops(tf):
    return tf.raw_ops if hasattr(tf, "raw_ops") else _FlowlabRawOps()

OPTIMIZERS = {
    "ftrl": lambda t, gs: t.FtrlOptimizer(0.1),
    "ftrl_l1_l2": lambda t, gs: t.FtrlOptimizer(0.2, l1_regularization_strength=0.05,
                                               l2_regularization_strength=0.1),
    "ftrl_power": lambda t, gs: t.FtrlOptimizer(0.1, learning_rate_power=-0.7, initial_accumulator_value=0.3,
                                               l1_regularization_strength=0.01),
    "ftrl_shrinkage": lambda t, gs: t.FtrlOptimizer(0.1, l1_regularization_strength=0.01,
                                                   l2_regularization_strength=0.02,
                                                   l2_shrinkage_regularization_strength=0.1),
    "ftrl_beta": lambda t, gs: t.FtrlOptimizer(0.1, beta=0.5, l2_regularization_strength=0.1),
    "ftrl_zero_accum": lambda t, gs: t.FtrlOptimizer(0.1, initial_accumulator_value=0.0),
    "proximal_gd": lambda t, gs: t.ProximalGradientDescentOptimizer(0.05),
    "proximal_gd_l1_l2": lambda t, gs: t.ProximalGradientDescentOptimizer(0.05, 0.1, 0.2),
    "proximal_adagrad": lambda t, gs: t.ProximalAdagradOptimizer(0.1),
    "proximal_adagrad_l1_l2": lambda t, gs: t.ProximalAdagradOptimizer(0.2, initial_accumulator_value=0.5,
                                                                      l1_regularization_strength=0.05,
                                                                      l2_regularization_strength=0.1),
    "adagrad_da": lambda t, gs: t.AdagradDAOptimizer(0.1, gs),
    "adagrad_da_l1_l2": lambda t, gs: t.AdagradDAOptimizer(0.3, gs, initial_gradient_squared_accumulator_value=0.2,
                                                          l1_regularization_strength=0.01,
                                                          l2_regularization_strength=0.02),
}


def _training(kind: str, steps: int = 20, dtype: str = "float32"):
    def prog(tf):
        rng = np.random.RandomState(0)
        w = tf.Variable(rng.randn(3, 2).astype(dtype), name="w")
        b = tf.Variable(np.array([0.3, -0.2], dtype), name="b")
        emb = tf.Variable(rng.randn(5, 2).astype(dtype), name="emb")
        vec = tf.Variable(rng.randn(6).astype(dtype), name="vec")
        gs = tf.train.get_or_create_global_step()
        x = tf.constant(rng.randn(4, 3).astype(dtype))
        ids = tf.constant([[0, 3], [3, 1]])
        e = tf.reduce_sum(tf.nn.embedding_lookup(emb, ids), axis=1)
        v = tf.nn.embedding_lookup(vec, tf.constant([5, 0, 5, 2]))
        y = tf.nn.tanh(tf.matmul(x, w) + b)
        loss = (tf.reduce_mean(tf.square(y - 0.5)) + tf.reduce_sum(tf.sin(e) * tf.cos(e))
                + tf.reduce_sum(tf.square(v - 1.0)))
        opt = OPTIMIZERS[kind](tf.train, gs)
        train = opt.minimize(loss, global_step=gs)
        names = sorted(x.name for x in tf.global_variables())
        slots = opt.get_slot_names()
        slot_vars = sorted(x.name for x in opt.variables())
        types = sorted(op.type for op in tf.get_default_graph().get_operations() if "Apply" in op.type)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(steps):
                sess.run(train)
            return sess.run([w, b, emb, vec, gs, loss] + opt.variables()), names, slots, slot_vars, types
    prog.__name__ = f"training_{kind}"
    return prog


@pytest.mark.parametrize("kind", sorted(OPTIMIZERS))
def test_twenty_steps_dense_and_sparse(tf1, kind):
    same_results(tf1, _training(kind), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("kind", ["ftrl_shrinkage", "proximal_adagrad_l1_l2", "adagrad_da_l1_l2", "proximal_gd"])
def test_float64_variables(tf1, kind):
    if kind.startswith("proximal"):
        # TensorFlow does not cast the proximal optimizers' hyper-parameters: a float64
        # variable meets float32 scalars, a TypeError when the update op is built.
        same_error(tf1, _training(kind, 2, "float64"))
    else:
        same_results(tf1, _training(kind, 5, "float64"), rtol=1e-10, atol=1e-12)


def test_slot_names_and_checkpoint_variables():
    with fl.Graph().as_default():
        w = fl.Variable([[1.0, 2.0]], name="w")
        gs = fl.train.get_or_create_global_step()
        loss = fl.reduce_sum(w * w)
        expected = {
            "Ftrl": (fl.train.FtrlOptimizer(0.1), ["accum", "linear"], ["w/Ftrl:0", "w/Ftrl_1:0"]),
            "named": (fl.train.FtrlOptimizer(0.1, name="F", accum_name="acc", linear_name="lin"),
                      ["accum", "linear"], ["w/acc:0", "w/lin:0"]),
            "PA": (fl.train.ProximalAdagradOptimizer(0.1), ["accumulator"], ["w/ProximalAdagrad:0"]),
            "DA": (fl.train.AdagradDAOptimizer(0.1, gs), ["gradient_accumulator", "gradient_squared_accumulator"],
                   ["w/AdagradDA:0", "w/AdagradDA_1:0"]),
            "PGD": (fl.train.ProximalGradientDescentOptimizer(0.1), [], []),
        }
        for opt, slots, names in expected.values():
            opt.minimize(loss)
            assert opt.get_slot_names() == slots
            assert [v.name for v in opt.variables()] == names
        saved = fl.train.Saver()._var_list if hasattr(fl.train.Saver(), "_var_list") else None
        all_names = {v.name for v in fl.global_variables()}
        assert {"w/Ftrl:0", "w/Ftrl_1:0", "w/acc:0", "w/lin:0", "w/ProximalAdagrad:0", "w/AdagradDA:0",
                "w/AdagradDA_1:0"} <= all_names
        del saved


def test_optimizer_graph_names_match(tf1):
    def prog(tf):
        w = tf.Variable([[1.0, -2.0], [0.5, 3.0]], name="w")
        e = tf.Variable(np.ones((3, 2), np.float32), name="e")
        gs = tf.train.get_or_create_global_step()
        loss = tf.reduce_sum(w * w) + tf.reduce_sum(tf.nn.embedding_lookup(e, [0, 2, 0]))
        for opt in [tf.train.FtrlOptimizer(0.1, l2_shrinkage_regularization_strength=0.1),
                    tf.train.ProximalGradientDescentOptimizer(0.1, 0.01),
                    tf.train.ProximalAdagradOptimizer(0.1), tf.train.AdagradDAOptimizer(0.1, gs)]:
            opt.minimize(loss, global_step=gs)
        g = tf.get_default_graph()
        keep = ("Ftrl", "Proximal", "AdagradDA", "w/", "e/")
        return sorted((op.name, op.type, tuple(i.name for i in op.inputs)) for op in g.get_operations()
                      if op.name.startswith(keep) and "Initializer" not in op.name)
    same_results(tf1, prog)


def test_constructor_errors(tf1):
    same_error(tf1, lambda tf: tf.train.FtrlOptimizer(0.1, learning_rate_power=0.5),
               "learning_rate_power 0.500000 needs to be negative or zero")
    same_error(tf1, lambda tf: tf.train.FtrlOptimizer(0.1, initial_accumulator_value=-1.0),
               "initial_accumulator_value -1.000000 needs to be positive or zero")
    same_error(tf1, lambda tf: tf.train.FtrlOptimizer(0.1, l1_regularization_strength=-1.0),
               "l1_regularization_strength -1.000000 needs to be positive or zero")
    same_error(tf1, lambda tf: tf.train.FtrlOptimizer(0.1, l2_shrinkage_regularization_strength=-1.0),
               "needs to be positive or zero")
    same_error(tf1, lambda tf: tf.train.ProximalAdagradOptimizer(0.1, initial_accumulator_value=0.0),
               "initial_accumulator_value must be positive: 0.0")
    same_error(tf1, lambda tf: tf.train.AdagradDAOptimizer(0.1, None, initial_gradient_squared_accumulator_value=0),
               "initial_gradient_squared_accumulator_value must be positive: 0")


def _raw(op: str, repeated: bool):
    def prog(tf):
        rng = np.random.RandomState(1)
        var = tf.Variable(rng.randn(4, 3).astype(np.float32))
        vec = tf.Variable(rng.randn(4).astype(np.float32))
        s1 = tf.Variable(np.full((4, 3), 0.2, np.float32))
        s2 = tf.Variable(rng.randn(4, 3).astype(np.float32) * 0.1)
        t1 = tf.Variable(np.full((4,), 0.2, np.float32))
        t2 = tf.Variable(rng.randn(4).astype(np.float32) * 0.1)
        idx = tf.constant([2, 0, 2] if repeated else [2, 0, 3])
        g = tf.constant(rng.randn(3, 3).astype(np.float32))
        gv = tf.constant(rng.randn(3).astype(np.float32))
        raw = _raw_ops(tf)
        gs = tf.constant(3, tf.int64)
        ups = {
            "ftrl": lambda v, a, b, gr: raw.SparseApplyFtrl(var=v, accum=a, linear=b, grad=gr, indices=idx, lr=0.1,
                                                           l1=0.01, l2=0.02, lr_power=-0.5),
            "ftrl_v2_times_lr": lambda v, a, b, gr: raw.SparseApplyFtrlV2(
                var=v, accum=a, linear=b, grad=gr, indices=idx, lr=0.1, l1=0.01, l2=0.02, l2_shrinkage=0.05,
                lr_power=-0.6, multiply_linear_by_lr=True),
            "proximal_gd": lambda v, a, b, gr: raw.SparseApplyProximalGradientDescent(
                var=v, alpha=0.1, l1=0.05, l2=0.1, grad=gr, indices=idx),
            "proximal_adagrad": lambda v, a, b, gr: raw.SparseApplyProximalAdagrad(
                var=v, accum=a, lr=0.1, l1=0.05, l2=0.1, grad=gr, indices=idx),
            "adagrad_da": lambda v, a, b, gr: raw.SparseApplyAdagradDA(
                var=v, gradient_accumulator=b, gradient_squared_accumulator=a, grad=gr, indices=idx, lr=0.1,
                l1=0.01, l2=0.02, global_step=gs),
        }
        ops = [ups[op](var, s1, s2, g), ups[op](vec, t1, t2, gv)]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(ops)
            sess.run(ops)
            return sess.run([var, vec, s1, s2, t1, t2])
    prog.__name__ = f"raw_{op}_{'repeated' if repeated else 'unique'}"
    return prog


@pytest.mark.parametrize("repeated", [False, True])
@pytest.mark.parametrize("op", ["ftrl", "ftrl_v2_times_lr", "proximal_gd", "proximal_adagrad", "adagrad_da"])
def test_sparse_raw_ops(tf1, op, repeated):
    same_results(tf1, _raw(op, repeated), rtol=2e-5, atol=2e-6)


def _dense_raw(op: str):
    def prog(tf):
        rng = np.random.RandomState(2)
        var = tf.Variable(rng.randn(2, 3).astype(np.float32))
        a = tf.Variable(np.full((2, 3), 0.2, np.float32))
        b = tf.Variable(rng.randn(2, 3).astype(np.float32) * 0.1)
        g = tf.constant(rng.randn(2, 3).astype(np.float32))
        raw = _raw_ops(tf)
        ups = {
            "ftrl_times_lr": lambda: raw.ApplyFtrl(var=var, accum=a, linear=b, grad=g, lr=0.1, l1=0.01, l2=0.02,
                                                  lr_power=-0.5, multiply_linear_by_lr=True),
            "ftrl_v2_times_lr": lambda: raw.ApplyFtrlV2(var=var, accum=a, linear=b, grad=g, lr=0.1, l1=0.01, l2=0.02,
                                                       l2_shrinkage=0.05, lr_power=-0.4, multiply_linear_by_lr=True),
            "proximal_gd_no_l1": lambda: raw.ApplyProximalGradientDescent(var=var, alpha=0.1, l1=0.0, l2=0.1,
                                                                          delta=g),
            "adagrad_da_no_l1": lambda: raw.ApplyAdagradDA(
                var=var, gradient_accumulator=b, gradient_squared_accumulator=a, grad=g, lr=0.1, l1=0.0, l2=0.02,
                global_step=tf.constant(2, tf.int64)),
        }
        up = ups[op]()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(3):
                sess.run(up)
            return sess.run([var, a, b])
    prog.__name__ = f"dense_raw_{op}"
    return prog


@pytest.mark.parametrize("op", ["ftrl_times_lr", "ftrl_v2_times_lr", "proximal_gd_no_l1", "adagrad_da_no_l1"])
def test_dense_raw_ops(tf1, op):
    same_results(tf1, _dense_raw(op), rtol=2e-5, atol=2e-6)


def _bad_run(build):
    def prog(tf):
        up = build(tf)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(up)
    return prog


def test_runtime_errors(tf1):
    def v(tf, shape=(3, 2)):
        return tf.Variable(np.ones(shape, np.float32))
    same_error(tf1, _bad_run(lambda tf: _raw_ops(tf).SparseApplyProximalAdagrad(
        var=v(tf), accum=v(tf), lr=-0.1, l1=0.0, l2=0.0, grad=np.ones((1, 2), np.float32), indices=[0])),
        "lr is not a positive scalar: []")
    same_error(tf1, _bad_run(lambda tf: _raw_ops(tf).SparseApplyFtrl(
        var=v(tf), accum=v(tf), linear=v(tf), grad=np.ones((1, 2), np.float32), indices=[3], lr=0.1, l1=0.0,
        l2=0.0, lr_power=-0.5)), "Index 3 at offset 0 in indices is out of range")
    same_error(tf1, _bad_run(lambda tf: _raw_ops(tf).SparseApplyFtrl(
        var=v(tf), accum=v(tf), linear=v(tf), grad=np.ones((1, 2), np.float32), indices=[0], lr=0.1, l1=0.0,
        l2=0.0, lr_power=0.5)), "lr_power is not a non-positive scalar: []")
    same_error(tf1, _bad_run(lambda tf: _raw_ops(tf).SparseApplyAdagradDA(
        var=v(tf), gradient_accumulator=v(tf), gradient_squared_accumulator=v(tf),
        grad=np.ones((2, 2), np.float32), indices=[0], lr=0.1, l1=0.0, l2=0.0,
        global_step=tf.constant(1, tf.int64))), "Dimensions must be equal, but are 1 and 2")


def test_build_errors(tf1):
    same_error(tf1, lambda tf: _raw_ops(tf).ApplyProximalAdagrad(
        var=tf.Variable(np.ones((3, 2), np.float32)), accum=tf.Variable(np.ones((3, 2), np.float32)), lr=[0.1, 0.2], l1=0.0, l2=0.0, grad=np.ones((3, 2), np.float32)),
        "Shape must be rank 0 but is rank 1")
    same_error(tf1, lambda tf: _raw_ops(tf).ApplyFtrl(
        var=tf.Variable(np.ones((3, 2), np.float32)), accum=tf.Variable(np.ones((3, 2), np.float32)),
        linear=tf.Variable(np.ones((3, 2), np.float32)), grad=np.ones((3, 3), np.float32), lr=0.1, l1=0.0, l2=0.0,
        lr_power=-0.5))
    same_error(tf1, lambda tf: _raw_ops(tf).ApplyAdagradDA(
        var=tf.Variable(np.ones((2,), np.float32)), gradient_accumulator=tf.Variable(np.ones((2,), np.float32)),
        gradient_squared_accumulator=tf.Variable(np.ones((2,), np.float32)), grad=np.ones((2,), np.float32),
        lr=0.1, l1=0.0, l2=0.0, global_step=tf.constant(1)))
