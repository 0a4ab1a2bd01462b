"""A TF1 unit-test file run as a script: tf.test.TestCase subclasses (self.session(),
assertAllClose, assertAllEqual, assertEqual on shapes, assertRaises on a build-time
ValueError, a parameterised helper), ended by `if __name__ == "__main__":
tf.test.main()`, which runs them under absl and exits.  Run in a subprocess; the
values each test saw are the results."""
import numpy as np

results = {"seen": {}}


class MatmulTest(tf.test.TestCase):

    def _check(self, a, b):
        with self.session() as sess:
            got = sess.run(tf.matmul(tf.constant(a), tf.constant(b)))
        self.assertAllClose(got, np.matmul(a, b))
        return got

    def testSmall(self):
        results["seen"]["small"] = self._check(np.eye(2, dtype=np.float32), np.ones([2, 3], np.float32))

    def testRandom(self):
        rng = np.random.RandomState(1)
        results["seen"]["random"] = self._check(rng.randn(3, 4).astype(np.float32),
                                                rng.randn(4, 2).astype(np.float32))

    def testShapeError(self):
        with self.assertRaises(ValueError):
            tf.matmul(tf.ones([2, 3]), tf.ones([2, 3]))

    def testStaticShape(self):
        x = tf.placeholder(tf.float32, [None, 3])
        self.assertEqual(tf.matmul(x, tf.ones([3, 5])).get_shape().as_list(), [None, 5])


class VariableTest(tf.test.TestCase):

    def testAssignAdd(self):
        with self.session() as sess:
            v = tf.Variable(1.0)
            sess.run(tf.global_variables_initializer())
            self.assertAllEqual(sess.run(tf.assign_add(v, 2.0)), 3.0)
            results["seen"]["v"] = sess.run(v)


if __name__ == "__main__":
    tf.test.main()
