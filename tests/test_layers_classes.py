"""tf.layers classes (Dense, Conv*, pooling, Dropout, Flatten, SeparableConv*, Layer)
and the functional layers added with them, differential against TensorFlow's own legacy
TF1 layers (`tensorflow.python.keras.legacy_tf_layers`, which TensorFlow 2.21 still
ships although `tf.compat.v1.layers` is gone with Keras 3).  BatchNormalization has no
legacy class there; it is checked against TensorFlow's primitives (tests/ops/test_batch_norm).
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same

RS = np.random.RandomState(5)


@pytest.fixture
def tfl(tf1: Any) -> Any:
    """tf.compat.v1 whose `layers` are TensorFlow's legacy TF1 layer classes."""
    from tensorflow.python.keras.legacy_tf_layers import base, convolutional, core, pooling  # type: ignore[import-not-found]

    shim = types.SimpleNamespace(**{k: getattr(tf1, k) for k in dir(tf1)
                                    if not k.startswith("__") and k != "layers"})
    shim.__name__ = "tf_legacy_layers"
    members = {}
    for m in (base, convolutional, core, pooling):
        members.update({k: getattr(m, k) for k in dir(m) if not k.startswith("_")})
    shim.layers = types.SimpleNamespace(**members)
    return shim


# Literal references, so that every name is visibly run under both libraries.
_LAYERS = {
    "Conv1D": lambda tf: tf.layers.Conv1D, "Conv2D": lambda tf: tf.layers.Conv2D,
    "Conv3D": lambda tf: tf.layers.Conv3D, "Conv2DTranspose": lambda tf: tf.layers.Conv2DTranspose,
    "Conv3DTranspose": lambda tf: tf.layers.Conv3DTranspose,
    "MaxPooling1D": lambda tf: tf.layers.MaxPooling1D, "MaxPooling2D": lambda tf: tf.layers.MaxPooling2D,
    "MaxPooling3D": lambda tf: tf.layers.MaxPooling3D, "AveragePooling1D": lambda tf: tf.layers.AveragePooling1D,
    "AveragePooling2D": lambda tf: tf.layers.AveragePooling2D,
    "AveragePooling3D": lambda tf: tf.layers.AveragePooling3D,
    "conv1d": lambda tf: tf.layers.conv1d, "conv3d": lambda tf: tf.layers.conv3d,
    "conv3d_transpose": lambda tf: tf.layers.conv3d_transpose,
    "separable_conv1d": lambda tf: tf.layers.separable_conv1d,
    "separable_conv2d": lambda tf: tf.layers.separable_conv2d,
    "max_pooling1d": lambda tf: tf.layers.max_pooling1d, "max_pooling3d": lambda tf: tf.layers.max_pooling3d,
    "average_pooling1d": lambda tf: tf.layers.average_pooling1d,
    "average_pooling3d": lambda tf: tf.layers.average_pooling3d,
}


def _init(shape: list[int], scale: float = 0.3) -> Any:
    return RS.randn(*shape).astype(np.float32) * scale


def _names(tf: Any) -> Any:
    return tf.constant([v.op.name for v in tf.global_variables()] or [""])


def test_dense_class_reused(tfl: Any) -> None:
    """One Dense object called twice: one set of variables, the second call reusing it."""
    x1, x2 = _init([3, 4], 1), _init([2, 5, 4], 1)
    k = _init([4, 6])

    def build(tf: Any) -> Any:
        layer = tf.layers.Dense(6, activation=tf.nn.relu, kernel_initializer=tf.constant_initializer(k),
                                bias_initializer=tf.constant_initializer(0.1))
        y1 = layer(tf.constant(x1))
        y2 = layer.apply(tf.constant(x2))
        other = tf.layers.Dense(2, use_bias=False, name="head",
                                kernel_initializer=tf.glorot_uniform_initializer(seed=4))(y1)
        extra = [tf.constant(v.name) for v in layer.trainable_variables] + [tf.constant(tf.layers.Dense(1, name="x").name)]
        return [y1, y2, other, _names(tf), extra, tf.constant(str(y2.shape))]

    assert_same(tfl, build, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls,shape,kw", [
    ("Conv1D", [2, 9, 3], dict(filters=4, kernel_size=3, strides=2, padding="same")),
    ("Conv1D", [2, 9, 3], dict(filters=2, kernel_size=2, dilation_rate=2)),
    ("Conv2D", [2, 7, 6, 3], dict(filters=4, kernel_size=(3, 2), strides=(2, 1), padding="same")),
    ("Conv3D", [2, 5, 6, 4, 2], dict(filters=3, kernel_size=2, strides=(1, 2, 1), activation="relu")),
    ("Conv2DTranspose", [2, 4, 3, 2], dict(filters=3, kernel_size=3, strides=2, padding="same")),
    ("Conv3DTranspose", [2, 3, 4, 2, 2], dict(filters=2, kernel_size=2, strides=2)),
    ("Conv3DTranspose", [2, 3, 4, 2, 2], dict(filters=2, kernel_size=3, strides=(1, 2, 1), padding="same")),
])
def test_conv_classes(tfl: Any, cls: str, shape: list[int], kw: dict) -> None:
    x = _init(shape, 1)

    def build(tf: Any) -> Any:
        kw2 = dict(kw, kernel_initializer=tf.glorot_uniform_initializer(seed=3),
                   bias_initializer=tf.constant_initializer(0.2))
        if kw2.get("activation") == "relu":
            kw2["activation"] = tf.nn.relu
        layer = _LAYERS[cls](tf)(**kw2)
        y = layer(tf.constant(x))
        g = tf.gradients(tf.reduce_sum(y * y), [layer.kernel])
        return [y, g, _names(tf), tf.constant(str(y.shape))]

    assert_same(tfl, build, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("fn,shape,kw", [
    ("conv1d", [2, 8, 3], dict(filters=2, kernel_size=3)),
    ("conv3d", [1, 4, 4, 4, 2], dict(filters=2, kernel_size=3, padding="same")),
    ("conv3d_transpose", [1, 2, 3, 2, 2], dict(filters=2, kernel_size=2, strides=2)),
    ("separable_conv1d", [2, 9, 3], dict(filters=4, kernel_size=3, depth_multiplier=2)),
    ("separable_conv2d", [2, 6, 6, 3], dict(filters=4, kernel_size=3, strides=2, padding="same")),
    ("separable_conv2d", [2, 7, 7, 2], dict(filters=3, kernel_size=2, dilation_rate=2)),
])
def test_functional_conv_layers(tfl: Any, fn: str, shape: list[int], kw: dict) -> None:
    x = _init(shape, 1)

    def build(tf: Any) -> Any:
        inits = ({"depthwise_initializer": tf.glorot_uniform_initializer(seed=1),
                  "pointwise_initializer": tf.glorot_uniform_initializer(seed=2)}
                 if fn.startswith("separable") else {"kernel_initializer": tf.glorot_uniform_initializer(seed=1)})
        xt = tf.constant(x)
        y = _LAYERS[fn](tf)(xt, **kw, **inits, bias_initializer=tf.constant_initializer(-0.1))
        y2 = _LAYERS[fn](tf)(xt, **kw, **inits, name="again")
        return [y, y2, tf.gradients(tf.reduce_sum(y), xt), _names(tf)]

    assert_same(tfl, build, rtol=1e-4, atol=1e-5)


def test_separable_classes(tfl: Any) -> None:
    x1, x2 = _init([2, 7, 3], 1), _init([2, 5, 5, 2], 1)

    def build(tf: Any) -> Any:
        a = tf.layers.SeparableConv1D(3, 2, depth_multiplier=2, use_bias=False,
                                      depthwise_initializer=tf.constant_initializer(_init([2, 3, 2], 1)),
                                      pointwise_initializer=tf.constant_initializer(_init([1, 6, 3], 1)))
        b = tf.layers.SeparableConv2D(2, 3, padding="same", activation=tf.nn.relu,
                                      depthwise_initializer=tf.glorot_uniform_initializer(seed=7),
                                      pointwise_initializer=tf.glorot_uniform_initializer(seed=8))
        return [a(tf.constant(x1)), b(tf.constant(x2)), _names(tf),
                tf.constant([v.name for v in b.weights])]

    RS.seed(3)
    before = RS.get_state()
    assert_same(tfl, lambda tf: (RS.set_state(before), build(tf))[1], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("cls,shape,kw", [
    ("MaxPooling1D", [2, 9, 3], dict(pool_size=3, strides=2)),
    ("AveragePooling1D", [2, 9, 3], dict(pool_size=2, strides=1, padding="same")),
    ("MaxPooling2D", [2, 6, 5, 3], dict(pool_size=(2, 3), strides=2, padding="same")),
    ("AveragePooling2D", [2, 6, 5, 3], dict(pool_size=2, strides=(2, 1))),
    ("MaxPooling3D", [2, 4, 5, 6, 2], dict(pool_size=2, strides=2)),
    ("AveragePooling3D", [2, 4, 5, 6, 2], dict(pool_size=(2, 3, 2), strides=1, padding="same")),
])
def test_pooling_classes(tfl: Any, cls: str, shape: list[int], kw: dict) -> None:
    x = _init(shape, 1)

    def build(tf: Any) -> Any:
        xt = tf.constant(x)
        y = _LAYERS[cls](tf)(**kw)(xt)
        return [y, tf.gradients(tf.reduce_sum(y * y), xt), tf.constant(str(y.shape))]

    assert_same(tfl, build)


@pytest.mark.parametrize("fn,shape", [("max_pooling1d", [2, 8, 3]), ("average_pooling1d", [2, 8, 3]),
                                      ("max_pooling3d", [1, 4, 4, 4, 2]), ("average_pooling3d", [1, 4, 4, 4, 2])])
def test_functional_pooling(tfl: Any, fn: str, shape: list[int]) -> None:
    x = _init(shape, 1)
    assert_same(tfl, lambda tf: _LAYERS[fn](tf)(tf.constant(x), 2, 2, padding="same"))


def test_channels_first_pooling_and_conv1d(tfl: Any) -> None:
    """channels_first runs through the ops' NC* formats; TensorFlow's CPU kernels refuse
    them, so only the static shapes and variables are compared."""
    def build(tf: Any) -> Any:
        x = tf.placeholder(tf.float32, [None, 3, 8])
        y = tf.layers.MaxPooling1D(2, 2, data_format="channels_first")(x)
        z = tf.layers.Conv1D(4, 3, data_format="channels_first")(x)
        return [tf.constant(str(y.shape)), tf.constant(str(z.shape)), _names(tf)]

    assert_same(tfl, build)


def test_dropout_and_flatten_classes(tfl: Any) -> None:
    x = _init([3, 2, 4], 1)

    def build(tf: Any) -> Any:
        xt = tf.constant(x)
        d = tf.layers.Dropout(0.5, seed=1)
        f = tf.layers.Flatten()
        p = tf.placeholder_with_default(False, [])
        return [d(xt), d(xt, training=False), f(xt), d(f(xt), training=p),
                tf.constant([d(xt).op.name, f(xt).op.name])]

    assert_same(tfl, build)


def test_custom_layer_subclass(tfl: Any) -> None:
    """A user's Layer subclass: build/add_weight/call, the scope from the class name."""
    x = _init([2, 3], 1)

    def build(tf: Any) -> Any:
        class ScaleShift(tf.layers.Layer):
            def build(self, input_shape: Any) -> None:
                self.w = self.add_weight("w", [int(input_shape[-1])], initializer=tf.constant_initializer(2.0))
                self.b = self.add_weight("b", [], initializer=tf.constant_initializer(0.5), trainable=False)
                super().build(input_shape)

            def call(self, inputs: Any) -> Any:
                return inputs * self.w + self.b

        layer = ScaleShift()
        y = layer(tf.constant(x))
        y2 = layer(y)
        again = ScaleShift(name="named")(y2)
        return [y, y2, again, _names(tf), tf.constant(layer.scope_name), tf.constant(y2.op.name),
                tf.constant([v.op.name for v in layer.trainable_weights + layer.non_trainable_weights]),
                tf.constant(layer.built)]

    assert_same(tfl, build)


def test_input_spec(tfl: Any) -> None:
    def build(tf: Any) -> Any:
        a = tf.layers.InputSpec(ndim=4, axes={-1: 3})
        b = tf.layers.InputSpec(shape=(None, 3), dtype="float32")
        return tf.constant([repr(a), repr(b), str(a.ndim), str(b.ndim), str(b.shape), str(a.axes),
                            str(sorted(b.get_config().items()))])

    assert_same(tfl, build)


def test_layer_errors(tfl: Any) -> None:
    for mod in (tfl, fl):
        with mod.Graph().as_default():
            with pytest.raises(ValueError, match="expected min_ndim=4, found ndim=3"):
                mod.layers.Conv2D(2, 3)(mod.placeholder(mod.float32, [None, 4, 3]))
            with pytest.raises(ValueError, match="should be defined. Found `None`"):
                mod.layers.Dense(2)(mod.placeholder(mod.float32, [None, None]))
            with pytest.raises(ValueError, match="has not been used yet"):
                _ = mod.layers.Dense(2).scope_name


def test_batch_normalization_class(tf1: Any) -> None:
    """fl.layers.BatchNormalization against TensorFlow's batch-norm layer spelled out with
    primitives (the legacy class is not in TensorFlow 2.21): a training call with its
    updates, then an inference call of the same object reusing the variables."""
    from tests.ops.test_batch_norm import _tf_layer

    x = RS.randn(4, 3, 3, 2).astype(np.float32)

    def run(mod: Any) -> Any:
        with mod.Graph().as_default():
            xt = mod.constant(x)
            if mod is fl:
                layer = fl.layers.BatchNormalization(momentum=0.9)
                y = layer(xt, training=True)
                assert len(layer.updates) == 2 and len(layer.weights) == 4
                assert [v.op.name for v in layer.trainable_weights] == ["batch_normalization/gamma",
                                                                        "batch_normalization/beta"]
            else:
                y = _tf_layer(mod, xt, True, momentum=0.9)
            with mod.control_dependencies(mod.get_collection(mod.GraphKeys.UPDATE_OPS)):
                y = mod.identity(y)
            if mod is fl:
                inf = layer(xt, training=False)
            else:
                with mod.variable_scope(mod.get_variable_scope(), reuse=True):
                    inf = _tf_layer(mod, xt, False, momentum=0.9)
            with mod.Session() as s:
                s.run(mod.global_variables_initializer())
                first = s.run(y)
                return first, s.run(inf), [v.op.name for v in mod.global_variables()]

    e, a = run(tf1), run(fl)
    np.testing.assert_allclose(a[0], e[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(a[1], e[1], rtol=1e-5, atol=1e-5)
    assert a[2] == e[2]
