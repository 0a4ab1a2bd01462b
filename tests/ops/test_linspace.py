import numpy as np
import pytest

import flowlab as fl
from tests.difftest import assert_same


@pytest.mark.parametrize("start, stop, num", [(0.0, 1.0, 5), (1.0, 2.0, 3), (0.0, 1.0, 1), (0.0, 1.0, 0),
                                              (-3.5, 10.25, 7), (5.0, -5.0, 11)])
def test_linspace_matches_tensorflow(tf1, start, stop, num):
    assert_same(tf1, lambda tf: tf.linspace(start, stop, num))


def test_linspace_float64_and_fed_num():
    n = fl.placeholder(fl.int32, [])
    x = fl.linspace(fl.constant(0.0, fl.float64), 1.0, n)
    assert x.dtype == fl.float64 and x.shape.as_list() == [None]
    with fl.Session() as s:
        np.testing.assert_allclose(s.run(x, {n: 4}), np.linspace(0, 1, 4))
        with pytest.raises(fl.errors.InvalidArgumentError, match="num >= 0"):
            s.run(x, {n: -1})
