"""A tf.test.TestCase suite as TF 1.x projects write their unit tests: test methods
using self.test_session()/self.cached_session(), assertAllClose, assertAllEqual,
assertShapeEqual, assertRaisesOpError, assertAllInRange, get_temp_dir, run through
unittest; `results` records each test's outcome and the values it checked."""
import os
import unittest

import numpy as np

seen = {}


class SquareTest(tf.test.TestCase):

    def testSquare(self):
        with self.test_session():
            x = tf.square([2, 3])
            self.assertAllEqual(x.eval(), [4, 9])
            seen["square"] = x.eval()

    def testSoftmaxSumsToOne(self):
        with self.cached_session() as sess:
            logits = tf.constant([[1.0, 2.0, 3.0], [0.5, 0.5, -1.0]])
            p = sess.run(tf.nn.softmax(logits))
            self.assertAllClose(p.sum(axis=1), [1.0, 1.0])
            self.assertShapeEqual(p, tf.nn.softmax(logits))
            self.assertAllInRange(p, 0.0, 1.0)
            seen["softmax"] = p

    def testGradient(self):
        with self.test_session() as sess:
            x = tf.constant([1.0, 2.0, 3.0])
            y = tf.reduce_sum(x * x * x)
            g = tf.gradients(y, x)[0]
            self.assertAllClose(sess.run(g), 3 * np.array([1.0, 4.0, 9.0]), rtol=1e-6)
            seen["grad"] = sess.run(g)

    def testOpError(self):
        with self.test_session():
            x = tf.placeholder(tf.float32)
            checked = tf.check_numerics(x, "bad value")
            with self.assertRaisesOpError("bad value"):
                checked.eval(feed_dict={x: np.float32(np.nan)})

    def testVariableAndTempDir(self):
        with self.test_session() as sess:
            v = tf.Variable([1.0, 2.0])
            sess.run(v.initializer)
            sess.run(v.assign_add([0.5, 0.5]))
            self.assertAllClose(v.eval(), [1.5, 2.5])
            saver = tf.train.Saver([v])
            path = saver.save(sess, os.path.join(self.get_temp_dir(), "v.ckpt"))
            self.assertTrue(tf.gfile.Exists(path + ".index"))
            seen["v"] = v.eval()

    def testExpectedFailure(self):
        with self.test_session():
            self.assertAllEqual(tf.constant([1, 2]).eval(), [1, 3])


suite = unittest.TestLoader().loadTestsFromTestCase(SquareTest)
outcome = unittest.TestResult()
suite.run(outcome)
results = {
    "run": outcome.testsRun,
    "failures": sorted(t.id().split(".")[-1] for t, _ in outcome.failures),
    "errors": sorted(t.id().split(".")[-1] for t, _ in outcome.errors),
    "seen": seen,
}
