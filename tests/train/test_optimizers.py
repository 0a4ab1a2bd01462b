"""Optimizers against TensorFlow: 20 training steps give the same variables and slots
(float32, rtol 1e-5); names of slots and ops; sparse gradients; errors."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl
from flowlab import errors
from flowlab.ops import training_ops

RNG = np.random.RandomState(0)
X = RNG.randn(8, 5).astype(np.float32)
LABELS = RNG.randint(0, 3, size=8).astype(np.int32)
W1 = (RNG.randn(5, 4) * 0.5).astype(np.float32)
B1 = (RNG.randn(4) * 0.1).astype(np.float32)
W2 = (RNG.randn(4, 3) * 0.5).astype(np.float32)
EMB = RNG.randn(10, 4).astype(np.float32)
IDS = np.array([1, 3, 3, 7, 1, 0, 7, 3], np.int32)  # rows 2, 4, 5, 6, 8, 9 never touched

OPTIMIZERS = {
    "sgd": lambda tf: tf.train.GradientDescentOptimizer(0.1),
    "momentum": lambda tf: tf.train.MomentumOptimizer(0.05, 0.9),
    "nesterov": lambda tf: tf.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
    "adagrad": lambda tf: tf.train.AdagradOptimizer(0.3, initial_accumulator_value=0.2),
    "adadelta": lambda tf: tf.train.AdadeltaOptimizer(1.0, rho=0.9, epsilon=1e-6),
    "rmsprop": lambda tf: tf.train.RMSPropOptimizer(0.01),
    "rmsprop_momentum": lambda tf: tf.train.RMSPropOptimizer(0.01, decay=0.8, momentum=0.5, epsilon=1e-6),
    "rmsprop_centered": lambda tf: tf.train.RMSPropOptimizer(0.01, momentum=0.3, epsilon=1e-4, centered=True),
    "adam": lambda tf: tf.train.AdamOptimizer(0.05),
    "adam_custom": lambda tf: tf.train.AdamOptimizer(0.02, beta1=0.8, beta2=0.99, epsilon=1e-4),
}


def _mlp(tf, sparse: bool):
    if sparse:
        emb = tf.Variable(EMB, name="emb")
        x = tf.gather(emb, IDS)
        w1 = tf.Variable(W1[:4], name="w1")
    else:
        emb = None
        x = tf.constant(X)
        w1 = tf.Variable(W1, name="w1")
    b1 = tf.Variable(B1, name="b1")
    w2 = tf.Variable(W2, name="w2")
    h = tf.nn.relu(tf.matmul(x, w1) + b1)
    logits = tf.matmul(h, w2)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=LABELS, logits=logits))
    vs = [v for v in (emb, w1, b1, w2) if v is not None]
    return loss, vs


def _train(tf, make_opt, steps=20):
    """One graph with the dense model (minimized with global_step) and the sparse
    (embedding) model, each with its own optimizer; `steps` steps of both."""
    g = tf.Graph()
    with g.as_default():
        gs = tf.train.get_or_create_global_step()
        runs = {}
        for kind in ("dense", "sparse"):
            loss, vs = _mlp(tf, kind == "sparse")
            opt = make_opt(tf)
            train = opt.minimize(loss, global_step=gs if kind == "dense" else None, var_list=vs)
            runs[kind] = (loss, vs, opt, train)
        with tf.Session(graph=g) as sess:
            sess.run(tf.global_variables_initializer())
            fetch = [(r[3], r[0]) for r in runs.values()]
            losses = [sess.run(fetch) for _ in range(steps)]
            out = {"gs": sess.run(gs)}
            for i, (kind, (_loss, vs, opt, train)) in enumerate(runs.items()):
                slots = {name: [opt.get_slot(v, name) for v in vs] for name in opt.get_slot_names()}
                out[kind] = {
                    "vars": sess.run(vs), "losses": [x[i][1] for x in losses],
                    "slots": {k: sess.run(v) for k, v in slots.items()},
                    "opt_vars": sess.run(opt.variables()),
                    "names": {
                        "opt_vars": [v.name for v in opt.variables()],
                        "slots": {k: [s.name for s in v] for k, v in slots.items()},
                        "train": train.name,
                        "colocation": {
                            v.name: sorted(v.op.colocation_groups())
                            for v in opt.variables()},
                    },
                }
        out["names"] = {
            "vars": [v.name for v in tf.global_variables()],
            "apply_ops": sorted(op.type + ":" + op.name for op in g.get_operations()
                                if op.type.startswith(("Apply", "SparseApply", "ScatterAdd", "ScatterSub"))),
            "train_op_collection": [o.name for o in g.get_collection(tf.GraphKeys.TRAIN_OP)],
        }
    return out


def _compare_runs(expected, actual):
    assert actual["names"] == expected["names"]
    assert actual["gs"] == expected["gs"] == 20
    for kind in ("dense", "sparse"):
        e_run, a_run = expected[kind], actual[kind]
        assert a_run["names"] == e_run["names"]
        for e, a in zip(e_run["vars"], a_run["vars"]):
            assert a.dtype == e.dtype
            np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6, err_msg=kind)
        for k in e_run["slots"]:
            for e, a in zip(e_run["slots"][k], a_run["slots"][k]):
                np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6, err_msg=f"{kind} slot {k}")
        for e, a in zip(e_run["opt_vars"], a_run["opt_vars"]):
            np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6, err_msg=kind)
        np.testing.assert_allclose(a_run["losses"], e_run["losses"], rtol=1e-5, atol=1e-6, err_msg=kind)


@pytest.mark.parametrize("which", sorted(OPTIMIZERS))
def test_training_matches_tensorflow(tf1, which):
    """20 steps of a small MLP (dense gradients) and of an embedding model (gather ->
    IndexedSlices gradients, repeated ids) give TensorFlow's variables and slots."""
    expected = _train(tf1, OPTIMIZERS[which])
    actual = _train(fl, OPTIMIZERS[which])
    _compare_runs(expected, actual)
    assert actual["dense"]["losses"][-1] < actual["dense"]["losses"][0]
    emb = actual["sparse"]["vars"][0]
    untouched = np.setdiff1d(np.arange(10), IDS)
    if not which.startswith("adam"):  # Adam's moments decay every row
        np.testing.assert_array_equal(emb[untouched], EMB[untouched])
    assert not np.allclose(emb[IDS], EMB[IDS])


def test_sparse_gradient_is_indexed_slices():
    loss, vs = _mlp(fl, sparse=True)
    gv = fl.train.MomentumOptimizer(0.1, 0.9).compute_gradients(loss)
    from flowlab.ops.indexed_slices import IndexedSlices
    assert isinstance(gv[0][0], IndexedSlices)
    assert gv[0][1] is vs[0]


def test_compute_gradients_none_for_unconnected_and_var_list():
    a = fl.Variable(1.0, name="a")
    b = fl.Variable(2.0, name="b")
    c = fl.Variable(3.0, name="c")
    loss = a * a + 3.0 * c
    opt = fl.train.GradientDescentOptimizer(0.5)
    gv = opt.compute_gradients(loss)
    assert [v for _, v in gv] == [a, b, c]
    assert gv[1][0] is None
    train = opt.apply_gradients(gv)
    gv2 = opt.compute_gradients(loss, var_list=[c])
    assert [v for _, v in gv2] == [c]
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        grads = sess.run([g for g, _ in gv if g is not None])
        assert grads == [2.0, 3.0]
        sess.run(train)
        assert sess.run([a, b, c]) == [0.0, 2.0, 1.5]


def test_var_list_limits_updates(tf1):
    def build(tf):
        a = tf.Variable([1.0, 2.0], name="a")
        b = tf.Variable([3.0], name="b")
        loss = tf.reduce_sum(a * a) + tf.reduce_sum(b * b)
        train = tf.train.AdamOptimizer(0.1).minimize(loss, var_list=[b])
        return train, a, b

    res = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            train, a, b = build(tf)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                for _ in range(3):
                    sess.run(train)
                va, vb = sess.run([a, b])
        np.testing.assert_array_equal(va, [1.0, 2.0])
        res.append(vb)
    np.testing.assert_allclose(res[1], res[0], rtol=1e-6)
    assert res[1][0] < 2.75


def test_no_gradients_errors(tf1):
    msgs = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            a = tf.Variable(1.0, name="a")
            b = tf.Variable(2.0, name="b")
            opt = tf.train.GradientDescentOptimizer(0.1)
            with pytest.raises(ValueError, match="No gradients provided for any variable: ") as e1:
                opt.apply_gradients([(None, a), (None, b)])
            with pytest.raises(ValueError, match="No gradients provided for any variable, check your graph") as e2:
                opt.minimize(tf.constant(1.0) * 2.0, var_list=[a])
            with pytest.raises(ValueError, match="No variables provided"):
                opt.apply_gradients([])
            with pytest.raises(ValueError, match="gate_gradients must be one of"):
                opt.compute_gradients(a * 2.0, gate_gradients=7)
            with pytest.raises(ValueError, match="Must specify the optimizer name"):
                tf.train.Optimizer(False, "")
            msgs.append((str(e1.value), str(e2.value)))
    assert msgs[0][0] == msgs[1][0]


def test_no_variables_and_invalid_dtype():
    with pytest.raises(ValueError, match="No variables to optimize"):
        fl.train.GradientDescentOptimizer(0.1).compute_gradients(fl.constant(1.0))
    v = fl.Variable(1, name="v")
    with pytest.raises(ValueError, match=r"Invalid type tf.int32 for mul:0, expected: \[tf.float32, tf.float64"):
        fl.train.GradientDescentOptimizer(0.1).compute_gradients(v * 2)


def test_apply_gradients_bad_gradient_type():
    v = fl.Variable(1.0, name="v")
    with pytest.raises(TypeError, match="Gradient must be"):
        fl.train.GradientDescentOptimizer(0.1).apply_gradients([(object(), v)])


def test_minimize_increments_global_step_and_train_op_names(tf1):
    def build(tf):
        w = tf.Variable([1.0, -1.0], name="w")
        gs = tf.train.get_or_create_global_step()
        with tf.name_scope("outer"):
            train = tf.train.AdamOptimizer(0.1).minimize(tf.reduce_sum(w * w), global_step=gs)
        ops = sorted(o.name for o in tf.get_default_graph().get_operations()
                     if "Adam" in o.name or "beta" in o.name or "global_step" in o.name)
        return train, gs, w, ops

    names = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            train, gs, w, ops = build(tf)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                for _ in range(4):
                    sess.run(train)
                assert tf.train.global_step(sess, gs) == 4
                assert sess.run(gs).dtype == np.int64
            names.append((train.name, train.type, ops))
    assert names[0][:2] == names[1][:2] == ("outer/Adam", "AssignAdd")
    assert names[1][2] == names[0][2]


def test_slots_are_reused_per_variable_and_colocated():
    w = fl.Variable([1.0, 2.0], name="w")
    opt = fl.train.MomentumOptimizer(0.1, 0.9)
    opt.minimize(fl.reduce_sum(w * w))
    opt.minimize(fl.reduce_sum(w * w * w))
    slot = opt.get_slot(w, "momentum")
    assert slot.name == "w/Momentum:0"
    assert [v.name for v in opt.variables()] == ["w/Momentum:0"]
    assert opt.get_slot(w, "nope") is None
    assert opt.get_slot_names() == ["momentum"]
    assert slot not in fl.trainable_variables()
    assert slot in fl.global_variables()
    assert slot.op.colocation_groups() == [b"loc:@w"]
    # A second optimizer of the same name gets fresh slots.
    opt2 = fl.train.MomentumOptimizer(0.1, 0.9)
    opt2.minimize(fl.reduce_sum(w * w))
    assert opt2.get_slot(w, "momentum").name == "w/Momentum_1:0"


def test_callable_and_tensor_learning_rate(tf1):
    def build(tf):
        w = tf.Variable([1.0, 2.0], name="w")
        lr = tf.placeholder(tf.float32, [], name="lr")
        t1 = tf.train.GradientDescentOptimizer(lr).minimize(tf.reduce_sum(w * w))
        t2 = tf.train.MomentumOptimizer(lambda: 0.25, 0.5).minimize(tf.reduce_sum(w * w))
        return t1, t2, w, lr

    for tf in (tf1, fl):
        with tf.Graph().as_default():
            t1, t2, w, lr = build(tf)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                sess.run(t1, {lr: 0.25})
                sess.run(t2)
                np.testing.assert_allclose(sess.run(w), [0.25, 0.5])


def test_gradient_descent_sparse_duplicates_accumulate(tf1):
    def build(tf):
        v = tf.Variable([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], name="v")
        grad = tf.IndexedSlices(tf.constant([[1.0, 1.0], [2.0, 2.0], [4.0, 4.0]]), tf.constant([2, 0, 2]),
                                tf.constant([3, 2]))
        return tf.train.GradientDescentOptimizer(0.5).apply_gradients([(grad, v)]), v

    for tf in (tf1, fl) if hasattr(fl, "IndexedSlices") else (tf1,):
        with tf.Graph().as_default():
            train, v = build(tf)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                sess.run(train)
                np.testing.assert_allclose(sess.run(v), [[0.0, 1.0], [3.0, 4.0], [2.5, 3.5]])


def test_float64_variables(tf1):
    def build(tf):
        w = tf.Variable(np.array([0.5, -1.5]), name="w")
        train = tf.train.AdamOptimizer(0.1).minimize(tf.reduce_sum(tf.square(w - 1.0)))
        return train, w

    res = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            train, w = build(tf)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                for _ in range(5):
                    sess.run(train)
                res.append(sess.run(w))
    assert res[1].dtype == np.float64
    np.testing.assert_allclose(res[1], res[0], rtol=1e-12)


# --- the fused ops themselves ---------------------------------------------------------
def _run_op(build):
    with fl.Session() as sess:
        out = build()
        sess.run(fl.global_variables_initializer())
        return sess, out


def test_apply_adam_formula_against_numpy():
    var0 = np.array([1.0, -2.0, 3.0], np.float32)
    g = np.array([0.5, 0.25, -1.0], np.float32)
    var = fl.Variable(var0, name="var")
    m = fl.Variable(np.full(3, 0.1, np.float32), name="m")
    v = fl.Variable(np.full(3, 0.2, np.float32), name="v")
    op = training_ops.apply_adam(var, m, v, 0.9 ** 3, 0.999 ** 3, 0.01, 0.9, 0.999, 1e-8, g)
    assert op.op.type == "ApplyAdam" and op.op.name == "ApplyAdam"
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        out = sess.run(op)
        f = np.float32
        alpha = f(0.01) * np.sqrt(f(1) - f(0.999 ** 3)) / (f(1) - f(0.9 ** 3))
        m1 = f(0.1) + (g - f(0.1)) * (f(1) - f(0.9))
        v1 = f(0.2) + (g * g - f(0.2)) * (f(1) - f(0.999))
        np.testing.assert_allclose(out, var0 - m1 * alpha / (np.sqrt(v1) + f(1e-8)), rtol=1e-6)
        np.testing.assert_allclose(sess.run(m), m1, rtol=1e-6)
        assert out.dtype == np.float32


def test_adam_updates_in_one_step_with_different_scalars_against_numpy():
    """Updates of one step that share the beta powers but not the learning rate (two
    optimizers), then share all scalars: each gets its own step size (the kernel
    reuses the last update's only for the very same scalars), over 3 steps."""
    f = np.float32
    w0, u0 = np.array([1.0, -2.0], f), np.array([0.5, 3.0], f)
    w, u = fl.Variable(w0), fl.Variable(u0)
    loss = fl.reduce_sum(w * w) + fl.reduce_sum(3.0 * u * u)
    (gw, gu) = fl.gradients(loss, [w, u])
    b1p, b2p = fl.Variable(f(0.9)), fl.Variable(f(0.999))
    slots = [fl.Variable(np.zeros(2, f)) for _ in range(4)]
    upd_w = training_ops.apply_adam(w, slots[0], slots[1], b1p, b2p, 0.1, 0.9, 0.999, 1e-8, gw)
    upd_u = training_ops.apply_adam(u, slots[2], slots[3], b1p, b2p, 0.02, 0.9, 0.999, 1e-8, gu)
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        want = {"w": (w0.copy(), np.zeros(2, f), np.zeros(2, f), f(0.1), lambda x: 2 * x),
                "u": (u0.copy(), np.zeros(2, f), np.zeros(2, f), f(0.02), lambda x: 6 * x)}
        for _ in range(3):
            sess.run([upd_w, upd_u])
            for key, (x, m, v, lr, grad) in list(want.items()):
                g = grad(x).astype(f)
                alpha = lr * np.sqrt(f(1) - f(0.999)) / (f(1) - f(0.9))
                m = m + (g - m) * (f(1) - f(0.9))
                v = v + (g * g - v) * (f(1) - f(0.999))
                want[key] = (x - m * alpha / (np.sqrt(v) + f(1e-8)), m, v, lr, grad)
        np.testing.assert_allclose(sess.run(w), want["w"][0], rtol=1e-6)
        np.testing.assert_allclose(sess.run(u), want["u"][0], rtol=1e-6)


def test_fused_op_shape_errors():
    var = fl.Variable([1.0, 2.0], name="var")
    acc = fl.Variable([1.0, 2.0, 3.0], name="acc")
    with pytest.raises(ValueError, match="ApplyMomentum"):
        training_ops.apply_momentum(var, acc, 0.1, [1.0, 1.0], 0.9)
    with pytest.raises(ValueError, match="rank 0"):
        training_ops.apply_gradient_descent(var, [0.1, 0.2], [1.0, 1.0])
    with pytest.raises(ValueError):
        training_ops.apply_gradient_descent(var, 0.1, [1.0, 1.0, 1.0])


def test_fused_op_runtime_errors():
    var = fl.Variable([[1.0, 2.0], [3.0, 4.0]], name="var")
    acc = fl.Variable(np.zeros((2, 2), np.float32), name="acc")
    idx = fl.placeholder(fl.int32, [None])
    grad = fl.placeholder(fl.float32, [None, 2])
    sp = training_ops.sparse_apply_adagrad(var, acc, 0.1, grad, idx)
    uninit = fl.Variable([0.0], name="uninit")
    gd = training_ops.apply_gradient_descent(uninit, 0.1, [1.0])
    with fl.Session() as sess:
        sess.run([var.initializer, acc.initializer])
        with pytest.raises(errors.InvalidArgumentError, match="Index 5 at offset 1 in indices is out of range"):
            sess.run(sp, {idx: [0, 5], grad: np.ones((2, 2), np.float32)})
        with pytest.raises(errors.InvalidArgumentError, match="grad must be the same size as indices"):
            sess.run(sp, {idx: [0], grad: np.ones((2, 2), np.float32)})
        # A failed step leaves the variables as they were.
        np.testing.assert_array_equal(sess.run(var), [[1.0, 2.0], [3.0, 4.0]])
        with pytest.raises(errors.FailedPreconditionError, match="uninit"):
            sess.run(gd)
        out = sess.run(sp, {idx: [1, 1], grad: np.ones((2, 2), np.float32)})
        # Repeated indices apply one after the other, as TensorFlow's kernel.
        first = 3.0 - 0.1 / np.sqrt(1.0)
        np.testing.assert_allclose(out[1], [first - 0.1 / np.sqrt(2.0), first + 1.0 - 0.1 / np.sqrt(2.0)],
                                   rtol=1e-6)
        np.testing.assert_array_equal(out[0], [1.0, 2.0])


def test_use_locking_attr():
    w = fl.Variable([1.0], name="w")
    op = fl.train.MomentumOptimizer(0.1, 0.9, use_locking=True).minimize(fl.reduce_sum(w * w))
    apply = fl.get_default_graph().get_operation_by_name("Momentum/update_w/ApplyMomentum")
    assert apply.get_attr("use_locking") is True
    assert apply.get_attr("use_nesterov") is False
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())
        sess.run(op)
        np.testing.assert_allclose(sess.run(w), [0.8])


def test_sparse_fused_ops_match_tensorflow(tf1):
    def build(tf):
        var = tf.Variable(np.arange(12, dtype=np.float32).reshape(4, 3) / 10, name="var")
        s1 = tf.Variable(np.full((4, 3), 0.5, np.float32), name="s1")
        s2 = tf.Variable(np.full((4, 3), 0.25, np.float32), name="s2")
        s3 = tf.Variable(np.full((4, 3), 0.125, np.float32), name="s3")
        g = tf.constant([[1.0, -2.0, 0.5], [0.3, 0.2, -0.1]])
        i = tf.constant([2, 0])
        ops = [
            tf.raw_ops.SparseApplyMomentum(var=var, accum=s1, lr=0.1, grad=g, indices=i, momentum=0.9,
                                           use_nesterov=True)
            if hasattr(tf, "raw_ops") else training_ops.sparse_apply_momentum(var, s1, 0.1, g, i, 0.9,
                                                                              use_nesterov=True),
        ]
        return ops, var, s1, s2, s3, g, i

    def run(tf, which):
        with tf.Graph().as_default():
            var, s1, s2, s3 = (tf.Variable(np.arange(12, dtype=np.float32).reshape(4, 3) / 10 + k, name=f"v{k}")
                               for k in range(4))
            g = tf.constant([[1.0, -2.0, 0.5], [0.3, 0.2, -0.1]])
            i = tf.constant([2, 0], tf.int64)
            mod = tf.raw_ops if tf is tf1 else None

            def call(name, **kw):
                if mod is not None:
                    return getattr(mod, name)(**kw)
                snake = {"SparseApplyMomentum": "sparse_apply_momentum", "SparseApplyAdagrad": "sparse_apply_adagrad",
                         "SparseApplyAdadelta": "sparse_apply_adadelta", "SparseApplyRMSProp": "sparse_apply_rms_prop",
                         "SparseApplyCenteredRMSProp": "sparse_apply_centered_rms_prop"}[name]
                return getattr(training_ops, snake)(**kw)

            op = {
                "momentum": lambda: call("SparseApplyMomentum", var=var, accum=s1, lr=0.1, grad=g, indices=i,
                                         momentum=0.9, use_nesterov=True),
                "adagrad": lambda: call("SparseApplyAdagrad", var=var, accum=s1, lr=0.1, grad=g, indices=i),
                "adadelta": lambda: call("SparseApplyAdadelta", var=var, accum=s1, accum_update=s2, lr=0.5, rho=0.9,
                                         epsilon=1e-3, grad=g, indices=i),
                "rmsprop": lambda: call("SparseApplyRMSProp", var=var, ms=s1, mom=s2, lr=0.1, rho=0.9, momentum=0.5,
                                        epsilon=1e-3, grad=g, indices=i),
                "centered": lambda: call("SparseApplyCenteredRMSProp", var=var, mg=s1, ms=s2, mom=s3, lr=0.1,
                                         rho=0.9, momentum=0.5, epsilon=1e-3, grad=g, indices=i),
            }[which]()
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                sess.run(op)
                sess.run(op)
                return sess.run([var, s1, s2, s3])

    for which in ("momentum", "adagrad", "adadelta", "rmsprop", "centered"):
        expected, actual = run(tf1, which), run(fl, which)
        for e, a in zip(expected, actual):
            np.testing.assert_allclose(a, e, rtol=1e-6, err_msg=which)


def test_slots_of_a_variable_of_unknown_shape(tf1):
    def build(tf):
        w = tf.Variable(tf.ones([3]), validate_shape=False, name="w")
        opt = tf.train.RMSPropOptimizer(0.1, momentum=0.5, centered=True)
        train = opt.minimize(tf.reduce_sum(w * w))
        return train, opt, w

    res = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            train, opt, w = build(tf)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                sess.run(train)
                sess.run(train)
                res.append(sess.run([w] + [opt.get_slot(w, n) for n in opt.get_slot_names()]))
    for e, a in zip(*res):
        np.testing.assert_allclose(a, e, rtol=1e-6)


def test_gate_modes_and_variable_scope_names(tf1):
    res = []
    for tf in (tf1, fl):
        with tf.Graph().as_default():
            w = tf.Variable([1.0, 2.0], name="w")
            with tf.variable_scope("train"):
                opt = tf.train.AdamOptimizer(0.1)
                t = opt.minimize(tf.reduce_sum(w * w), gate_gradients=tf.train.Optimizer.GATE_GRAPH)
            gv = tf.train.MomentumOptimizer(0.1, 0.9).compute_gradients(
                tf.reduce_sum(w * w * w), gate_gradients=tf.train.Optimizer.GATE_NONE)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                sess.run(t)
                res.append(([v.name for v in opt.variables()], sess.run(w), sess.run(gv[0][0])))
    assert res[1][0] == res[0][0] == ["train/beta1_power:0", "train/beta2_power:0", "train/w/Adam:0",
                                      "train/w/Adam_1:0"]
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-6)
    np.testing.assert_allclose(res[1][2], res[0][2], rtol=1e-6)


def test_locked_updates_from_many_threads_are_exact():
    import threading

    w = fl.Variable(np.zeros(3, np.float32), name="w")
    loss = fl.reduce_sum(w * fl.constant([1.0, 2.0, 4.0]))
    train = fl.train.MomentumOptimizer(1.0, 0.0, use_locking=True).minimize(loss)
    with fl.Session() as sess:
        sess.run(fl.global_variables_initializer())

        def work():
            for _ in range(50):
                sess.run(train)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        np.testing.assert_array_equal(sess.run(w), [-200.0, -400.0, -800.0])
