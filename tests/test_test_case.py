"""tf.test.TestCase and tf.test.main: one TF1-style test class, run with TensorFlow's
TestCase and with flowlab's, must give the same outcomes test by test."""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import unittest

import numpy as np
import pytest

import flowlab as fl


def make_case(tf):
    class Case(tf.test.TestCase):
        def testEvalInCachedSession(self):
            with self.cached_session() as sess:
                x = tf.constant([1.0, 2.0])
                self.assertAllClose((x * 2).eval(), [2.0, 4.0])
                self.assertIs(tf.get_default_session(), sess)
            with self.cached_session() as again:
                self.assertIs(again, sess)

        def testSessionIsNewEachTime(self):
            with self.session() as a:
                pass
            with self.session() as b:
                self.assertIsNot(a, b)

        def testTestSession(self):
            with self.test_session() as sess:
                self.assertEqual(sess.run(tf.constant(3)), 3)

        def testEvaluateNested(self):
            x = tf.constant([1, 2])
            out = self.evaluate({"a": x, "b": [x + 1, (x * 2,)]})
            self.assertAllEqual(out["a"], [1, 2])
            self.assertAllEqual(out["b"][1][0], [2, 4])

        def testAssertAllCloseTensorsAndStructures(self):
            self.assertAllClose(tf.constant([1.0, 2.0]), [1.0, 2.0 + 1e-7])
            self.assertAllClose({"a": [1.0, (2.0, 3.0)]}, {"a": [1.0, (2.0, 3.0)]})
            Pt = collections.namedtuple("Pt", "x y")
            self.assertAllClose(Pt(1.0, 2.0), Pt(1.0, 2.0))

        def testAssertAllCloseFails(self):
            with self.assertRaises(AssertionError):
                self.assertAllClose([1.0, 2.0], [1.0, 2.1])

        def testAssertAllCloseDictMismatch(self):
            self.assertAllClose({"a": 1.0}, [1.0])

        def testAssertAllCloseLengthMismatch(self):
            self.assertAllClose([[1.0], [1.0, 2.0]], [[1.0]])

        def testAssertAllCloseAccordingToType(self):
            self.assertAllCloseAccordingToType(np.float16([1.0]), np.float16([1.0005]))

        def testAssertAllCloseAccordingToTypeFloat64Fails(self):
            self.assertAllCloseAccordingToType(np.float64([1.0]), np.float64([1.0005]))

        def testAssertNotAllClose(self):
            self.assertNotAllClose([1.0], [2.0])

        def testAssertAllEqual(self):
            self.assertAllEqual(tf.constant([[1, 2]]), [[1, 2]])
            self.assertAllEqual([np.nan], [np.nan])

        def testAssertAllEqualShapeFails(self):
            self.assertAllEqual([1, 2], [[1, 2]])

        def testAssertAllEqualValueFails(self):
            self.assertAllEqual([1, 2], [1, 3])

        def testAssertShapeEqual(self):
            self.assertShapeEqual(np.zeros([2, 3]), tf.zeros([2, 3]))

        def testAssertShapeEqualFails(self):
            self.assertShapeEqual(np.zeros([2, 3]), tf.zeros([3, 2]))

        def testAssertShapeEqualType(self):
            self.assertShapeEqual([1], tf.zeros([1]))

        def testAssertRaisesOpError(self):
            with self.cached_session():
                with self.assertRaisesOpError("Input to reshape is a tensor with 4 values"):
                    tf.reshape(tf.placeholder(tf.float32), [3]).eval(feed_dict={"Placeholder:0": np.zeros(4)})

        def testAssertRaisesOpErrorWrongMessage(self):
            with self.cached_session():
                with self.assertRaisesOpError("no such text"):
                    tf.reshape(tf.placeholder(tf.float32), [3]).eval(feed_dict={"Placeholder:0": np.zeros(4)})

        def testAssertRaisesOpErrorNotRaised(self):
            with self.assertRaisesOpError("x"):
                pass

        def testAssertRaisesWithPredicateMatch(self):
            with self.assertRaisesWithPredicateMatch(ValueError, lambda e: "bad" in str(e)):
                raise ValueError("bad thing")

        def testNearAndRange(self):
            self.assertNear(1.0, 1.05, 0.1)
            self.assertArrayNear([1.0, 2.0], [1.01, 2.0], 0.1)
            self.assertAllInRange([1, 2, 3], 1, 3)
            self.assertAllGreater([2, 3], 1)
            self.assertAllLessEqual([2, 3], 3)

        def testAllInRangeFails(self):
            self.assertAllInRange([1, 2, 3], 1, 3, open_upper_bound=True)

        def testFreshGraphAndSeed(self):
            self.assertEqual(len(tf.get_default_graph().get_operations()), 0)
            self.assertEqual(tf.get_default_graph().seed, 87654321)
            self.assertEqual(np.random.randint(1000), np.random.RandomState(87654321).randint(1000))
            tf.constant(1.0)

        def testGraphIsFreshAgain(self):
            self.assertEqual(len(tf.get_default_graph().get_operations()), 0)

        def testTempDir(self):
            d = self.get_temp_dir()
            self.assertTrue(os.path.isdir(d))
            self.assertEqual(d, self.get_temp_dir())

        def testUseGpuFalsePinsCpu(self):
            with self.session(use_gpu=False):
                c = tf.constant(1.0)
            self.assertDeviceEqual(c.device, "/device:CPU:0")

        def testCachedSessionOtherGraph(self):
            with self.cached_session():
                pass
            with self.cached_session(graph=tf.Graph()):
                pass

        def test_session(self):
            raise AssertionError("never runs: the name is reserved")

    return Case


def _outcomes(tf):
    case = make_case(tf)
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(case)
    out = {t.id().rsplit(".", 1)[1]: "pass" for t in suite}
    result = unittest.TestResult()
    suite.run(result)
    for t, _ in result.failures:
        out[t.id().rsplit(".", 1)[1]] = "fail"
    for t, tb in result.errors:
        out[t.id().rsplit(".", 1)[1]] = "error:" + tb.strip().splitlines()[-1].split(":")[0]
    for t, _ in result.skipped:
        out[t.id().rsplit(".", 1)[1]] = "skip"
    return out


def test_same_outcomes_as_tensorflow(tf1):
    expected, actual = _outcomes(tf1), _outcomes(fl)
    assert actual == expected
    assert expected["testAssertAllCloseFails"] == "pass" and expected["test_session"] == "skip"
    assert expected["testAssertAllEqualValueFails"] == "fail"


def test_failure_messages_as_tensorflow(tf1):
    msgs = []
    for tf in (tf1, fl):
        case = make_case(tf)("testAssertAllEqualShapeFails")
        with pytest.raises(AssertionError) as info:
            case.setUp()
            case.testAssertAllEqualShapeFails()
        case.tearDown()
        msgs.append(str(info.value))
    assert msgs[1] == msgs[0]


PROGRAM = """
import os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
if os.environ["WHICH"] == "tf":
    import tensorflow.compat.v1 as tf
else:
    import flowlab as tf
tf.disable_v2_behavior()

class T(tf.test.TestCase):
    def testOk(self):
        with self.cached_session():
            self.assertAllEqual(tf.add(1, 2).eval(), 3)
    def testBad(self):
        self.assertAllEqual(int(os.environ.get("BAD", "1")), 1)

if __name__ == "__main__":
    tf.test.main()
"""


@pytest.mark.parametrize("bad", ["1", "2"])
def test_main_exits_as_tensorflow(tf1, tmp_path, bad):
    path = tmp_path / "t.py"
    path.write_text(PROGRAM)
    codes = []
    for which in ("tf", "fl"):
        p = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120,
                           env={**os.environ, "WHICH": which, "BAD": bad})
        codes.append((p.returncode, "Ran 2 tests" in p.stderr, p.stderr.strip().splitlines()[-1]))
    assert codes[1] == codes[0]


def _gradient_case(tf):
    x_np = np.random.RandomState(4).randn(2, 3)
    w_np = np.random.RandomState(5).randn(3, 2)
    with tf.Graph().as_default(), tf.Session().as_default():
        x = tf.constant(x_np)
        w = tf.constant(w_np)
        y = tf.tanh(tf.matmul(x, w))
        pairs = tf.test.compute_gradient([x, w], [[2, 3], [3, 2]], y, [2, 2], x_init_value=[x_np, w_np])
        err = tf.test.compute_gradient_error(x, [2, 3], tf.reduce_sum(y * y), [], x_init_value=x_np)
        v = tf.Variable(np.float32(2.0))
        err_v = tf.test.compute_gradient_error(v, [], v * v, [], init_targets=[v.initializer],
                                               x_init_value=np.float32(2.0))
    return pairs, err, err_v


def test_compute_gradient_as_tensorflow(tf1):
    (p_tf, e_tf, v_tf), (p_fl, e_fl, v_fl) = _gradient_case(tf1), _gradient_case(fl)
    for (jt_tf, jn_tf), (jt_fl, jn_fl) in zip(p_tf, p_fl):
        assert jt_fl.shape == jt_tf.shape and jt_fl.dtype == jt_tf.dtype
        np.testing.assert_allclose(jt_fl, jt_tf, rtol=1e-12)
        np.testing.assert_allclose(jn_fl, jn_tf, rtol=1e-9)
    np.testing.assert_allclose(e_fl, e_tf, rtol=1e-6)
    np.testing.assert_allclose(v_fl, v_tf, rtol=1e-4)
    assert e_fl < 1e-4


def test_compute_gradient_refuses_integers(tf1):
    msgs = []
    for tf in (tf1, fl):
        with tf.Graph().as_default(), tf.Session().as_default():
            x = tf.constant([1, 2])
            with pytest.raises(TypeError) as info:  # the int32 grad_ys constant of 1.0
                tf.test.compute_gradient(x, [2], x * 2, [2])
            msgs.append(str(info.value))
    assert msgs[1] == msgs[0]


def test_compute_gradient_sparse_gather(tf1):
    results = []
    for tf in (tf1, fl):
        with tf.Graph().as_default(), tf.Session().as_default():
            params = tf.constant(np.arange(6.0).reshape(3, 2))
            y = tf.gather(params, [2, 0, 2])
            results.append(tf.test.compute_gradient(params, [3, 2], y, [3, 2],
                                                    x_init_value=np.arange(6.0).reshape(3, 2)))
    for a, b in zip(results[0], results[1]):
        np.testing.assert_allclose(b, a, rtol=1e-9)
