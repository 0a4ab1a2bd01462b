import numpy as np

import flowlab as fl
from tests.difftest import assert_same


def test_identity_of_fed_placeholder():
    x = fl.placeholder(fl.float32, [None, 2], name="x")
    y = fl.identity(x)
    with fl.Session() as s:
        out = s.run(y, {x: [[3, 4]]})
    np.testing.assert_array_equal(out, np.array([[3, 4]], np.float32))
    assert out.dtype == np.float32


def test_constant_matches_tensorflow(tf1):
    assert_same(tf1, lambda tf: [tf.constant(1.5), tf.constant([1, 2]), tf.constant(7, shape=[2, 2])])
