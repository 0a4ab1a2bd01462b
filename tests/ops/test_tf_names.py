"""flowlab builds TensorFlow's graph, op for op: names, types, inputs, devices.

Each program below is built once under TensorFlow 2.21's `tf.compat.v1` and once
under flowlab, and the two GraphDefs are compared node by node: for every op its
name, type, inputs (control inputs included, as `^name`), requested device and
its `dtype` / `T` attr.  Programs fetch tensors by name (`sess.run("loss:0")`),
checkpoints are keyed by variable names, and issue 5's checks read partition
graphs, so a name is part of the contract.

Programs whose remaining differences lie in code other helpers own are marked
`xfail(strict=True)` with the difference and the file to fix; a fix there turns
the xfail into a failure that asks for the marker to go.  Nothing is normalized but
the order of an op's control inputs (compared as a set: TensorFlow's own order
follows memory addresses once there are more than a few): even the operand order of
a gradient's `Mul` is TensorFlow's.
"""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl

PROGRAMS = {}


def program(fn=None, *, xfail=None):
    def register(f):
        PROGRAMS[f.__name__] = (f, xfail)
        return f
    return register(fn) if fn is not None else register


def _rows(g):
    rows = {}
    for op in g.get_operations():
        # Control inputs in name order: TensorFlow's C++ node keeps them in an edge set
        # that holds more than a few in pointer order, so their order changes between runs.
        ins = [t.name for t in op.inputs] + sorted("^" + c.name for c in op.control_inputs)
        attrs = []
        for a in ("dtype", "T"):
            try:
                v = op.get_attr(a)
            except Exception:  # noqa: BLE001 - the op has no such attr
                continue
            attrs.append((a, str(getattr(v, "name", v))))
        rows[op.name] = (op.type, op.device, tuple(attrs), tuple(ins))
    return rows


def _build(tf, fn):
    g = tf.Graph()
    with g.as_default():
        fn(tf)
    return _rows(g)


def _diff(want, got):
    lines = [f"only in TensorFlow: {n} {want[n][0]}" for n in want if n not in got]
    lines += [f"only in flowlab: {n} {got[n][0]}" for n in got if n not in want]
    lines += [f"differs: {n}\n   tf {want[n]}\n   fl {got[n]}"
              for n in want if n in got and want[n] != got[n]]
    return lines


def _params():
    out = []
    for name, (_, why) in PROGRAMS.items():
        marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
        out.append(pytest.param(name, marks=marks))
    return out


_SHIM = []


@pytest.fixture
def tf_ref(tf1):
    """tf.compat.v1 with TensorFlow's own legacy `layers` (Keras 3 dropped them)."""
    if not _SHIM:
        from tests.programs.hidden_support import tf_with_legacy_keras

        _SHIM.append(tf_with_legacy_keras(tf1))
    return _SHIM[0]


# --- names and scopes --------------------------------------------------------------
@program
def name_scopes(tf):
    with tf.name_scope("a"):
        x = tf.constant(1.0, name="x")
        with tf.name_scope("b"):
            y = tf.add(x, x)
        with tf.name_scope("b"):
            y2 = tf.add(y, x)
    with tf.name_scope("a/"):
        z = tf.identity(x, name="z")
    with tf.name_scope("A"):
        tf.identity(z)
    with tf.name_scope("a"):
        tf.identity(y2)
    with tf.name_scope(None):
        tf.identity(x, name="noscope")
    tf.identity(x, name="add")
    tf.add(x, x)
    tf.identity(x, name="add_1")
    tf.add(x, x)
    with tf.name_scope("x_1"):
        tf.constant(2.0)
    with tf.name_scope("x"):
        tf.constant(2.0)
    with tf.name_scope("Const"):
        tf.constant(2.0)
    tf.constant(3.0)


@program
def capital_names(tf):
    with tf.name_scope("Layer"):
        a = tf.constant(1.0, name="MyConst")
    tf.identity(a, name="Out")
    tf.identity(a, name="out")
    tf.identity(a, name="OUT")


@program
def converted_inputs_take_the_op_scope(tf):
    """Python values become `<op>/<arg>` (`Reshape/shape`, `concat/axis`), list
    elements `<op>/<arg>_<i>`, autopacked lists `<op>/<arg>` with `<op>/<arg>/<i>`."""
    x = tf.placeholder(tf.float32, [None, 6], name="x")
    tf.reshape(x, [-1, 2, 3])
    tf.reshape(x, [tf.shape(x)[0], 3, 2])
    tf.concat([x, x], 1)
    tf.tile(x, [1, 2])
    tf.pad(x, [[0, 1], [1, 0]])
    tf.expand_dims(x, 0)
    tf.transpose(x, [1, 0])
    tf.add_n([x, x, x])
    with tf.name_scope("inner"):
        tf.reshape(x, [3, -1], name="r")
        tf.reshape(x, [2, -1], name="r")


@program
def import_with_prefix(tf):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        tf.add(x, 1.0, name="y")
    gd = g.as_graph_def()
    tf.import_graph_def(gd, name="imp")
    tf.import_graph_def(gd, name="imp")
    tf.import_graph_def(gd)


@program
def group_on_several_devices(tf):
    """One NoOp per device (on it), a root NoOp over them (control_flow_ops.group)."""
    with tf.device("/cpu:0"):
        a = tf.Variable(1.0, name="a")
    with tf.device("/cpu:1"):
        b = tf.Variable(2.0, name="b")
    tf.group(a.assign(3.0), b.assign(4.0), name="g")
    tf.group(a.assign(3.0), b.assign(4.0))
    tf.group(a.assign(5.0))
    c = tf.constant(1.0)
    tf.group(c, tf.identity(c))
    tf.group()


@program
def variables_naming(tf):
    with tf.name_scope("s"):
        v = tf.Variable([1.0, 2.0])
        v2 = tf.Variable(tf.zeros([2]), name="z")
    tf.Variable(3, name="s/z")
    tf.get_variable("g", initializer=tf.constant([1.0]))
    tf.assign(v, [3.0, 4.0])
    tf.assign_add(v2, tf.ones([2]))
    v.assign_sub([1.0, 1.0])
    tf.variables_initializer([v, v2])
    tf.local_variables_initializer()


@program
def variable_scopes_absolute_and_reused(tf):
    with tf.variable_scope("net") as vs:
        with tf.name_scope("block/"):
            tf.constant(1.0, name="c")
        v = tf.get_variable("v", [2])
    with tf.variable_scope(vs, reuse=True):
        tf.identity(tf.get_variable("v"))
    with tf.variable_scope(vs, auxiliary_name_scope=False):
        tf.constant(2.0, name="d")
    with tf.name_scope("net/"):
        tf.identity(v)
    with tf.variable_scope("net_1"):
        tf.get_variable("w", [1])


@program
def import_with_input_map(tf):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        tf.identity(tf.add(x, 1.0, name="y"), name="z")
    c = tf.constant([1.0, 2.0], name="c")
    tf.import_graph_def(g.as_graph_def(), input_map={"x:0": c}, return_elements=["z:0"], name="m")


@program
def array_and_math_ops_named(tf):
    x = tf.placeholder(tf.float32, [2, 3], name="x")
    tf.reduce_sum(x, axis=1, name="rs")
    tf.reduce_mean(x, name="rm")
    tf.argmax(x, 1)
    tf.cast(x, tf.int32)
    tf.concat([x, x], 0, name="cc")
    tf.split(x, 3, axis=1)
    tf.unstack(x)
    tf.zeros_like(x)
    tf.ones([2, 3])
    tf.fill([2], 3.0)
    tf.range(5)
    tf.where(x > 0)
    tf.gather(x, [0], axis=1)
    tf.one_hot([0, 1], 3)
    tf.squeeze(tf.expand_dims(x, 0))
    tf.matmul(x, x, transpose_b=True)
    tf.nn.softmax(x, name="sm")
    tf.nn.bias_add(x, tf.ones([3]))


@program
def variables_scopes_and_saver(tf):
    with tf.variable_scope("layer"):
        w = tf.get_variable("w", [3, 2], initializer=tf.ones_initializer())
        b = tf.get_variable("b", [2], initializer=tf.zeros_initializer())
    with tf.variable_scope("layer", reuse=True):
        w2 = tf.get_variable("w")
    with tf.variable_scope("layer"):
        tf.constant(1.0)
    v = tf.Variable(tf.zeros([2]), name="v")
    u = tf.Variable(1.0)
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    tf.matmul(x, w2) + b + v * u
    del w
    tf.global_variables_initializer()
    tf.train.Saver()


@program
def batch_norm_moments_dropout(tf):
    x = tf.placeholder(tf.float32, [4, 3], name="x")
    m, v = tf.nn.moments(x, [0])
    y = tf.nn.batch_normalization(x, m, v, None, None, 1e-3)
    tf.nn.l2_normalize(y, 1)
    tf.nn.dropout(y, rate=0.5, seed=1)


# --- cond, case, Assert ------------------------------------------------------------
@program
def cond_gradient(tf):
    """The zeros of the branch not taken: `gradients/Switch`, `Identity`, `Shape_1`,
    `zeros` (TensorFlow's ZerosLikeOutsideLoop)."""
    x = tf.placeholder(tf.float32, [], name="x")
    y = tf.cond(x > 0, lambda: x * x, lambda: -x)
    tf.gradients(y, x)


@program
def nested_cond_gradient(tf):
    """The outer Switch of a value read in both levels is named after its first
    reader (`cond/Greater/Switch`); the inner one takes it from there."""
    x = tf.placeholder(tf.float32, [], name="x")
    y = tf.cond(x > 0, lambda: tf.cond(x > 1, lambda: x + 1, lambda: x - 1), lambda: x * 2)
    tf.gradients(y, x)


@program
def nested_cond_first_read_inside(tf):
    """The inner cond reads `x` first: the outer Switch is `.../add/Switch`, the
    inner `.../add/Switch_1` (TensorFlow's AddValue asks the outer context first)."""
    x = tf.placeholder(tf.float32, [], name="x")
    tf.cond(x > 0, lambda: tf.cond(x > 1, lambda: x + 1, lambda: x - 1) + x, lambda: x)


@program
def cond_with_a_variable(tf):
    v = tf.Variable(1.0, name="v")
    x = tf.placeholder(tf.float32, [], name="x")
    y = tf.cond(x > 0, lambda: v * x, lambda: v.assign_add(1.0))
    tf.gradients(y, [x, v])


@program
def cond_in_control_dependencies(tf):
    x = tf.placeholder(tf.float32, [3], name="x")
    a = tf.identity(x, name="a")
    with tf.control_dependencies([a]):
        u = tf.cond(tf.reduce_sum(x) > 0, lambda: tf.square(x),
                    lambda: tf.constant([1.0, 2.0, 3.0]), name="ctl")
        v = tf.cond(tf.reduce_sum(x) > 0, lambda: x, lambda: x * 2.0)
    tf.gradients(tf.reduce_sum(u + v), x)


@program
def cond_in_control_dependencies_no_gradient(tf):
    """Outer control dependencies reach the branch ops (not the Merge)."""
    x = tf.placeholder(tf.float32, [3], name="x")
    a = tf.identity(x, name="a")
    with tf.control_dependencies([a]):
        tf.cond(tf.reduce_sum(x) > 0, lambda: tf.square(x),
                lambda: tf.constant([1.0, 2.0, 3.0]), name="ctl")


@program
def case_with_default(tf):
    x = tf.placeholder(tf.int32, [], name="x")
    tf.case([(x < 0, lambda: tf.constant(-1)), (x > 0, lambda: tf.constant(1))],
            default=lambda: tf.constant(0))


@program
def case_exclusive_without_default(tf):
    x = tf.placeholder(tf.int32, [], name="x")
    tf.case([(x < 0, lambda: tf.constant(-1)), (x > 0, lambda: tf.constant(1))], exclusive=True)


@program
def assert_data_names(tf):
    """Assert's data list: `data_0`, `data_1` (internal_convert_n_to_tensor)."""
    x = tf.placeholder(tf.float32, [], name="x")
    a = tf.Assert(x > 0, [x, "msg"])
    with tf.control_dependencies([a]):
        tf.identity(x)
    tf.Assert(x > 0, ["a", "b", x], name="two")


@program
def assert_positive_and_equal(tf):
    x = tf.placeholder(tf.float32, [], name="x")
    tf.assert_positive(x)
    tf.assert_equal(x, 1.0)


# --- while loops, functional ops, TensorArray ---------------------------------------
@program
def while_gradient(tf):
    x = tf.placeholder(tf.float32, [], name="x")
    _, y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * x), [0, tf.constant(1.0)])
    tf.gradients(y, x)


@program
def while_gradient_twice(tf):
    """A second `gradients` call builds its own forward counter (gradients_1/f_count)."""
    x = tf.placeholder(tf.float32, [], name="x")
    _, y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * x), [0, tf.constant(1.0)])
    tf.gradients(y, x)
    tf.gradients(y * 2.0, x)


@program
def nested_while_gradient(tf):
    """Stacks made where `gradients` was called and entered level by level; the inner
    counters ordered after the outer ones (f_count_3 after Add, b_sync after b_count_7)."""
    x = tf.placeholder(tf.float32, [], name="x")

    def body(i, y):
        _, z = tf.while_loop(lambda j, z: j < 2, lambda j, z: (j + 1, z * x), [0, y])
        return i + 1, z

    _, y = tf.while_loop(lambda i, y: i < 2, body, [0, tf.constant(1.0)])
    tf.gradients(y, x)


@program
def nested_while_forward(tf):
    """An outside value used by an inner loop: `while/while/mul/Enter` (outer loop)
    and `while/while/mul/Enter_1` (inner)."""
    x = tf.placeholder(tf.float32, [], name="x")

    def body(i, y):
        _, z = tf.while_loop(lambda j, z: j < 2, lambda j, z: (j + 1, z * x), [0, y])
        return i + 1, z

    tf.while_loop(lambda i, y: i < 2, body, [0, tf.constant(1.0)])


@program
def cond_in_while_gradient(tf):
    x = tf.placeholder(tf.float32, [], name="x")
    _, y = tf.while_loop(lambda i, y: i < 3,
                         lambda i, y: (i + 1, tf.cond(y > 2.0, lambda: y * x, lambda: y + x)),
                         [0, tf.constant(1.0)])
    tf.gradients(y, x)


@program
def cond_in_while_gradient_unknown_shape(tf):
    # the untaken branch's zeros: a Switch of the input to that side, its Shape pushed
    # beside the cond and popped behind a Switch on the popped predicate
    x = tf.placeholder(tf.float32, [None], name="x")
    _, y = tf.while_loop(lambda i, y: i < 3,
                         lambda i, y: (i + 1, tf.cond(tf.reduce_sum(y) > 2.0,
                                                      lambda: y * x, lambda: y + x)),
                         [0, x])
    tf.gradients(y, x)


@program
def unused_output_in_while_gradient(tf):
    # an op of the body with an output that gets no gradient: zeros made in the
    # backward loop (a Const for a known shape, a stacked Shape for an unknown one)
    x = tf.placeholder(tf.float32, [4], name="x")
    u = tf.placeholder(tf.float32, [None, 2], name="u")

    def body(i, a, b):
        p, _ = tf.split(a, 2)
        q, _ = tf.split(b, 2, axis=1)
        return i + 1, tf.concat([p, p], 0) * 1.5, tf.concat([q, q], 1) * 0.5

    _, a, b = tf.while_loop(lambda i, a, b: i < 3, body, [0, x, u])
    tf.gradients([a, b], [x, u])


@program
def while_in_control_dependencies(tf):
    # the control input comes in per op through an Identity of its Enter
    # (`while/Less/Identity/Enter`); the Merges take none, an outside value's Enter does
    x = tf.placeholder(tf.float32, [], name="x")
    a = tf.identity(x, name="a")
    with tf.control_dependencies([a]):
        tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * x), [0, tf.constant(1.0)])


@program
def control_dependencies_in_while_body(tf):
    # inside the body: the proxy is named under the op's own scope (`Identity_2/Identity`)
    x = tf.placeholder(tf.float32, [3], name="x")
    outside = tf.identity(x, name="outside_op")

    def body(i, a):
        with tf.control_dependencies([outside.op]):
            b = tf.identity(a) * 2.0 + tf.constant(1.0)
        return i + 1, b

    tf.while_loop(lambda i, a: i < 3, body, [tf.constant(0), x])


@program
def cond_in_while_body_in_control_dependencies(tf):
    # a cond inside the loop drops the outside control input (no Identity), as TF does
    x = tf.placeholder(tf.float32, [], name="x")
    a = tf.identity(x, name="a")

    def body(i, y):
        with tf.control_dependencies([a]):
            return i + 1, tf.cond(y > 2.0, lambda: y * 2.0, lambda: y + tf.constant(1.0))

    tf.while_loop(lambda i, y: i < 3, body, [0, tf.constant(1.0)])


@program
def while_in_cond_and_in_control_dependencies(tf):
    # a loop in a cond branch: its variables are switched into the branch first,
    # in the loop's scope (`cond/while/Switch`); a nested loop reads an outer value
    x = tf.placeholder(tf.float32, [3], name="x")
    k = tf.placeholder(tf.float32, [], name="k")
    g = tf.identity(k, name="gate")

    def loop():
        with tf.control_dependencies([g]):
            return tf.while_loop(
                lambda j, s: j < 4,
                lambda j, s: (j + 1, tf.while_loop(lambda m, t: m < 2,
                                                   lambda m, t: (m + 1, t * x + k),
                                                   [0, s])[1]),
                [0, x])[1]

    tf.cond(k > 0, loop, lambda: x)


@program
def tensor_array_ops(tf):
    ta = tf.TensorArray(tf.float32, size=3)
    ta = ta.write(0, 1.0).write(1, 2.0).write(2, 3.0)
    s = ta.stack()
    r = ta.read(1)
    tf.identity(s + r)


@program
def foldl(tf):
    x = tf.placeholder(tf.float32, [4], name="x")
    tf.foldl(lambda a, e: a * e, x)


@program
def map_fn_and_scan_forward(tf):
    x = tf.placeholder(tf.float32, [3, 2], name="x")
    tf.map_fn(lambda r: r * 2.0, x)
    tf.scan(lambda a, e: a + e, x)


@program
def map_fn_gradient(tf):
    x = tf.placeholder(tf.float32, [3, 2], name="x")
    y = tf.map_fn(lambda r: r * 2.0, x)
    tf.gradients(tf.reduce_sum(y), x)


# --- gradients of op families, optimizers, layers -----------------------------------
@program
def grad_ys_given(tf):
    """A given grad_ys is the Identity `gradients/grad_ys_0`."""
    x = tf.placeholder(tf.float32, [3], name="x")
    y = tf.stop_gradient(x * 2) + x * x
    tf.gradients(y, x, grad_ys=tf.ones([3]))
    tf.gradients(y, x, grad_ys=[[1.0, 2.0, 3.0]])
    tf.gradients([y, y], [x])


@program
def optimizers_apply_dense(tf):
    """Every optimizer's slots, update ops and global_step increment, on two variables."""
    w = tf.Variable(tf.ones([3]), name="w")
    b = tf.Variable(tf.zeros([2, 2]), name="b")
    g = tf.placeholder(tf.float32, [3], name="g")
    gb = tf.placeholder(tf.float32, [2, 2], name="gb")
    gs = tf.train.get_or_create_global_step()
    for opt in [tf.train.GradientDescentOptimizer(0.1), tf.train.MomentumOptimizer(0.1, 0.9),
                tf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True, name="Nesterov"),
                tf.train.AdagradOptimizer(0.1), tf.train.AdadeltaOptimizer(0.1),
                tf.train.RMSPropOptimizer(0.1),
                tf.train.RMSPropOptimizer(0.1, momentum=0.9, centered=True, name="RMS2"),
                tf.train.AdamOptimizer(0.1)]:
        opt.apply_gradients([(g, w), (gb, b)], global_step=gs)


@program
def optimizers_apply_sparse(tf):
    w = tf.Variable(tf.ones([4, 3]), name="w")
    vals = tf.placeholder(tf.float32, [2, 3], name="vals")
    sl = tf.IndexedSlices(vals, tf.constant([0, 2]), tf.constant([4, 3]))
    for opt in [tf.train.GradientDescentOptimizer(0.1), tf.train.MomentumOptimizer(0.1, 0.9),
                tf.train.AdagradOptimizer(0.1), tf.train.AdamOptimizer(0.1)]:
        opt.apply_gradients([(sl, w)])


@program
def math_with_broadcasting(tf):
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    y = tf.constant([1.0, 2.0, 3.0])
    z = x * y + 2.0 - x / y
    w = tf.reduce_mean(tf.square(z), axis=1)
    v = tf.maximum(w, 0.5) ** 2
    tf.gradients(tf.reduce_sum(v), [x])


@program
def gradient_descent_minimize(tf):
    x = tf.constant(np.ones((4, 3), np.float32))
    w = tf.Variable(tf.ones([3, 1]), name="w")
    b = tf.Variable(tf.zeros([1]), name="b")
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - 1.0), name="loss")
    gs = tf.train.get_or_create_global_step()
    tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=gs)


@program
def adam_minimize(tf):
    x = tf.constant(np.ones((4, 3), np.float32))
    w = tf.Variable(tf.ones([3, 1]), name="w")
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0), name="loss")
    tf.train.AdamOptimizer(0.01).minimize(loss)


@program
def dense_layers_trained(tf):
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    h = tf.layers.dense(x, 5, activation=tf.nn.relu)
    y = tf.layers.dense(h, 2, name="out")
    tf.train.AdamOptimizer().minimize(tf.reduce_mean(tf.square(y)))


@program
def conv_layers_gradient(tf):
    x = tf.placeholder(tf.float32, [None, 8, 8, 1], name="x")
    h = tf.layers.conv2d(x, 4, 3, padding="same", activation=tf.nn.relu)
    h = tf.layers.max_pooling2d(h, 2, 2)
    h = tf.layers.flatten(h)
    y = tf.layers.dense(h, 2)
    tf.gradients(tf.reduce_sum(y), x)


@program
def losses(tf):
    labels = tf.placeholder(tf.float32, [4, 3], name="labels")
    logits = tf.placeholder(tf.float32, [4, 3], name="logits")
    tf.losses.mean_squared_error(labels, logits)
    tf.losses.softmax_cross_entropy(labels, logits)


@program
def stack_with_python_values(tf):
    a = tf.constant(1.0)
    tf.stack([a, 2.0])


@pytest.mark.parametrize("name", _params())
def test_graph_is_tensorflows(tf_ref, name):
    fn, _ = PROGRAMS[name]
    want = _build(tf_ref, fn)
    got = _build(fl, fn)
    diff = _diff(want, got)
    assert not diff, f"{name}: {len(diff)} differences\n" + "\n".join(diff[:40])


def test_converted_value_kept_when_read_twice():
    """A value converted for one op and read again keeps its first name: renaming
    happens only while the reading op is its sole consumer."""
    x = fl.placeholder(fl.float32, [6], name="x")
    r = fl.reshape(x, [2, 3])
    assert r.op.inputs[1].name == "Reshape/shape:0"
    g = fl.get_default_graph()
    assert [op.name for op in g.get_operations()] == ["x", "Reshape/shape", "Reshape"]
    # The released name is free again.
    assert fl.constant(1.0, name="shape").op.name == "shape"


def test_failed_op_leaves_its_constant_unrenamed():
    x = fl.placeholder(fl.float32, [2, 3], name="x")
    with pytest.raises(ValueError, match="my_reshape"):
        fl.reshape(x, [5], name="my_reshape")
    names = [op.name for op in fl.get_default_graph().get_operations()]
    assert not any(n.startswith("my_reshape") for n in names)
