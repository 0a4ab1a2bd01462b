"""`tf.test`: TensorFlow 1.x's `TestCase` and `main`, so TF1-style unit tests run.

`TestCase` is a `unittest.TestCase` (absl's `absltest.TestCase`, as TensorFlow's)
that starts every test as TensorFlow's does: a fresh default graph with graph-level
seed 87654321 (`DEFAULT_GRAPH_SEED`), Python's and NumPy's generators seeded with it,
no cached session.  It adds the sessions (`session`, `cached_session`,
`test_session`: the graph and the session become the defaults inside the block;
`use_gpu=False` pins ops to the CPU, `force_gpu=True` to the GPU), `evaluate`, and
TensorFlow's assertions with their tolerances and messages: `assertAllClose`
(nested lists, tuples, dicts, namedtuples, tensors), `assertAllCloseAccordingToType`,
`assertNotAllClose`, `assertAllEqual`, `assertNotAllEqual`, `assertNear`,
`assertArrayNear`, `assertAllInRange`, `assertAllGreater`/`Less`(`Equal`),
`assertShapeEqual`, `assertDeviceEqual`, `assertRaisesOpError`,
`assertRaisesWithPredicateMatch`, `get_temp_dir`.

    class AddTest(tf.test.TestCase):
        def testAdd(self):
            with self.cached_session():
                self.assertAllClose(tf.add(1.0, 2.0).eval(), 3.0)

    if __name__ == "__main__":
        tf.test.main()
"""

from __future__ import annotations

import collections.abc
import contextlib
import os
import random
import re
import tempfile
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import numpy as np
from absl.testing import absltest

from flowlab import errors
from flowlab.gradient_checker import compute_gradient, compute_gradient_error
from flowlab.graph.device_spec import DeviceSpec
from flowlab.graph.graph import Graph, get_default_graph, reset_default_graph
from flowlab.graph.tensor import Operation, Tensor
from flowlab.runtime.session import Session, get_default_session

__all__ = ["TestCase", "main", "get_temp_dir", "compute_gradient", "compute_gradient_error", "is_gpu_available", "gpu_device_name", "is_built_with_cuda",
           "is_built_with_gpu_support", "mock", "DEFAULT_GRAPH_SEED"]

DEFAULT_GRAPH_SEED = 87654321


def _is_graph_value(x: Any) -> bool:
    return isinstance(x, (Tensor, Operation)) or hasattr(x, "_as_graph_element") or (
        hasattr(x, "dense_shape") and hasattr(x, "indices") and isinstance(getattr(x, "values", None), Tensor))


class TestCase(absltest.TestCase):
    """TensorFlow 1.x's `tf.test.TestCase` (graph mode)."""

    def __init__(self, methodName: str = "runTest") -> None:  # noqa: N803 - unittest's name
        super().__init__(methodName)
        self._cached_session: Session | None = None
        self._cached_graph: Graph | None = None
        self._cached_config: Any = None
        self._cached_force_gpu = False
        self._tempdir: str | None = None
        self._set_default_seed = True

    def setUp(self) -> None:
        super().setUp()
        self._clear_cached_session()
        random.seed(DEFAULT_GRAPH_SEED)
        np.random.seed(DEFAULT_GRAPH_SEED)
        reset_default_graph()
        if self._set_default_seed:
            get_default_graph().seed = DEFAULT_GRAPH_SEED
        if self.id().endswith(".test_session"):
            self.skipTest("Not a test.")

    def tearDown(self) -> None:
        self._clear_cached_session()
        super().tearDown()

    def _clear_cached_session(self) -> None:
        if self._cached_session is not None:
            self._cached_session.close()
            self._cached_session = None

    def get_temp_dir(self) -> str:
        """A temporary directory for this test (the same one on every call)."""
        if not self._tempdir:
            self._tempdir = tempfile.mkdtemp(dir=get_temp_dir())
        return self._tempdir

    # --- sessions --------------------------------------------------------------------------
    @contextlib.contextmanager
    def _defaults(self, sess: Session, use_gpu: bool, force_gpu: bool) -> Iterator[Session]:
        with sess.graph.as_default(), sess.as_default():
            if force_gpu:
                with sess.graph.device(gpu_device_name() or "/device:GPU:0"):
                    yield sess
            elif use_gpu:
                yield sess
            else:
                with sess.graph.device("/device:CPU:0"):
                    yield sess

    def _new_session(self, graph: Graph | None, config: Any, force_gpu: bool) -> Session:
        if config is None:
            from flowlab.runtime.config import ConfigProto

            config = ConfigProto(allow_soft_placement=not force_gpu)
        return Session(graph=graph, config=config)

    @contextlib.contextmanager
    def session(self, graph: Graph | None = None, config: Any = None, use_gpu: bool = True,
                force_gpu: bool = False) -> Iterator[Session]:
        """A new session on `graph` (the default graph), closed at the end of the block."""
        with self._new_session(graph, config, force_gpu) as sess, self._defaults(sess, use_gpu, force_gpu):
            yield sess

    @contextlib.contextmanager
    def cached_session(self, graph: Graph | None = None, config: Any = None, use_gpu: bool = True,
                       force_gpu: bool = False) -> Iterator[Session]:
        """The test's one session (made on first use, closed in tearDown)."""
        if self._cached_session is None:
            self._cached_session = self._new_session(graph, config, force_gpu)
            self._cached_graph, self._cached_config, self._cached_force_gpu = graph, config, force_gpu
        else:
            for what, cached, given in (("graph", self._cached_graph, graph), ("config", self._cached_config, config)):
                if cached is not given:
                    raise ValueError(f"The {what} used to get the cached session is different than the one that "
                                     "was used to create the session. Maybe create a new session with "
                                     "self.session()")
            if self._cached_force_gpu is not force_gpu:
                raise ValueError("The force_gpu value used to get the cached session is different than the "
                                 "one that was used to create the session. Maybe create a new session with "
                                 "self.session()")
        with self._defaults(self._cached_session, use_gpu, force_gpu) as sess:
            yield sess

    @contextlib.contextmanager
    def test_session(self, graph: Graph | None = None, config: Any = None, use_gpu: bool = True,
                     force_gpu: bool = False) -> Iterator[Session]:
        """`cached_session` under its deprecated name (a new session for another graph)."""
        if self.id().endswith(".test_session"):
            self.skipTest('Tests that have the name "test_session" are automatically skipped by TensorFlow '
                          "test fixture, as the name is reserved for creating sessions within tests. Please "
                          "rename your test if you have a test with this name.")
        if graph is None or graph is self._cached_graph or self._cached_session is None:
            with self.cached_session(graph, config, use_gpu, force_gpu) as sess:
                yield sess
        else:
            with self.session(graph, config, use_gpu, force_gpu) as sess:
                yield sess

    def evaluate(self, tensors: Any) -> Any:
        """The values of `tensors` (any nested structure), run in the default session
        or in the test's cached session."""
        sess = get_default_session()
        if sess is None:
            with self.test_session() as s:
                return s.run(tensors)
        return sess.run(tensors)

    # --- assertions -------------------------------------------------------------------------
    def _nd(self, a: Any) -> np.ndarray:
        if _is_graph_value(a):
            a = self.evaluate(a)
        if not isinstance(a, np.ndarray):
            try:
                return np.array(a)
            except ValueError as e:
                if "inhomogeneous shape" in str(e):
                    return np.array(a, dtype=object)
                raise
        return a

    def _both(self, a: Any, b: Any) -> tuple[Any, Any]:
        if _is_graph_value(a) and _is_graph_value(b):
            return tuple(self.evaluate((a, b)))  # type: ignore[return-value]
        return a, b

    def _array_close(self, a: Any, b: Any, rtol: float, atol: float, msg: str | None) -> None:
        a, b = self._both(a, b)
        a, b = self._nd(a), self._nd(b)
        if a.shape != b.shape and (b.ndim <= 3 or b.size < 500):
            shape_msg = f"Shape mismatch: expected {a.shape}, got {b.shape} with contents {b}."
        else:
            shape_msg = f"Shape mismatch: expected {a.shape}, got {b.shape}."
        self.assertEqual(a.shape, b.shape, shape_msg)
        msgs = [msg]
        if not np.allclose(a, b, rtol=rtol, atol=atol):
            cond = np.logical_or(np.abs(a - b) > atol + rtol * np.abs(b), np.isnan(a) != np.isnan(b))
            if a.ndim:
                where = np.where(cond)
                x, y = a[where], b[where]
                msgs.append(f"not close where = {where}")
            else:
                x, y = a, b
            msgs.append(f"not close lhs = {x}")
            msgs.append(f"not close rhs = {y}")
            msgs.append(f"not close dif = {np.abs(x - y)}")
            msgs.append(f"not close tol = {atol + rtol * np.abs(y)}")
            msgs.append(f"dtype = {a.dtype}, shape = {a.shape}")
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg="\n".join(str(m) for m in msgs),
                                       equal_nan=True)

    def _all_close(self, a: Any, b: Any, rtol: float, atol: float, path: list[Any], msg: str | None) -> None:
        path_str = ("[" + "][".join(str(p) for p in path) + "]") if path else ""
        msg = msg or ""
        if hasattr(a, "_asdict"):
            a = a._asdict()
        if hasattr(b, "_asdict"):
            b = b._asdict()
        a_dict = isinstance(a, collections.abc.Mapping)
        if a_dict != isinstance(b, collections.abc.Mapping):
            raise ValueError(f"Can't compare dict to non-dict, a{path_str} vs b{path_str}. {msg}")
        mismatch = f"Mismatched value: a{path_str} is different from b{path_str}. {msg}"
        if a_dict:
            self.assertCountEqual(a.keys(), b.keys(), msg=f"mismatched keys: a{path_str} has keys {a.keys()}, "
                                  f"but b{path_str} has keys {b.keys()}. {msg}")
            for k in a:
                self._all_close(a[k], b[k], rtol, atol, [*path, k], msg)
        elif isinstance(a, (list, tuple)):
            try:
                a2, b2 = self._both(a, b)
                self._array_close(self._nd(a2), self._nd(b2), rtol, atol, mismatch)
            except (ValueError, TypeError, NotImplementedError):
                if len(a) != len(b):
                    raise ValueError(f"Mismatched length: a{path_str} has {len(a)} items, but b{path_str} has "
                                     f"{len(b)} items. {msg}") from None
                for i, (x, y) in enumerate(zip(a, b)):
                    self._all_close(x, y, rtol, atol, [*path, str(i)], msg)
        else:
            try:
                self._array_close(a, b, rtol, atol, mismatch)
            except TypeError as e:
                e.args = ((e.args[0] + f" : Error: a{path_str} has {type(a)}, but b{path_str} has {type(b)}. "
                           f"{msg}"),) + e.args[1:]
                raise

    def assertAllClose(self, a: Any, b: Any, rtol: float = 1e-6, atol: float = 1e-6,  # noqa: N802
                       msg: str | None = None) -> None:
        """`a` and `b` (arrays, tensors, or nested lists/tuples/dicts of them) are
        element-wise within `atol + rtol * |b|`."""
        self._all_close(a, b, rtol, atol, [], msg)

    def assertAllCloseAccordingToType(self, a: Any, b: Any, rtol: float = 1e-6, atol: float = 1e-6,  # noqa: N802
                                      float_rtol: float = 1e-6, float_atol: float = 1e-6,
                                      half_rtol: float = 1e-3, half_atol: float = 1e-3,
                                      bfloat16_rtol: float = 1e-2, bfloat16_atol: float = 1e-2,
                                      msg: str | None = None) -> None:
        """`assertAllClose` with looser tolerances for float32/complex64 and float16."""
        a, b = self._both(a, b)
        a, b = self._nd(a), self._nd(b)
        if np.float32 in (a.dtype, b.dtype) or np.complex64 in (a.dtype, b.dtype):
            rtol, atol = max(rtol, float_rtol), max(atol, float_atol)
        if np.float16 in (a.dtype, b.dtype):
            rtol, atol = max(rtol, half_rtol), max(atol, half_atol)
        self.assertAllClose(a, b, rtol=rtol, atol=atol, msg=msg)

    def assertNotAllClose(self, a: Any, b: Any, rtol: float = 1e-6, atol: float = 1e-6,  # noqa: N802
                          msg: str | None = None) -> None:
        try:
            self.assertAllClose(a, b, rtol=rtol, atol=atol, msg=msg)
        except AssertionError:
            return
        raise AssertionError(f"The two values are close at all elements. {msg or ''}")

    def assertAllEqual(self, a: Any, b: Any, msg: str | None = None) -> None:  # noqa: N802
        """`a` and `b` have the same shape and values (NaN equals NaN for floats)."""
        msg = msg or ""
        a, b = self._both(a, b)
        a, b = self._nd(a), self._nd(b)
        if b.ndim <= 3 or b.size < 500:
            self.assertEqual(a.shape, b.shape, f"Shape mismatch: expected {a.shape}, got {b.shape}. "
                             f"Contents: {b!r}. \n{msg}.")
        else:
            self.assertEqual(a.shape, b.shape, f"Shape mismatch: expected {a.shape}, got {b.shape}. {msg}")
        same = a == b
        if a.dtype.kind == "f":
            same = np.logical_or(same, np.logical_and(np.isnan(a), np.isnan(b)))
        if not np.all(same):
            msgs = [msg]
            diff = np.logical_not(same)
            if a.ndim:
                where = np.where(diff)
                x, y = a[where], b[where]
                msgs.append(f"not equal where = {where}")
            else:
                x, y = a, b
            msgs.append(f"not equal lhs = {x!r}")
            msgs.append(f"not equal rhs = {y!r}")
            np.testing.assert_array_equal(a, b, err_msg="\n".join(msgs))

    def assertNotAllEqual(self, a: Any, b: Any, msg: str | None = None) -> None:  # noqa: N802
        try:
            self.assertAllEqual(a, b)
        except AssertionError:
            return
        raise AssertionError(f"The two values are equal at all elements. {msg or ''}")

    def assertNear(self, f1: float, f2: float, err: float, msg: str | None = None) -> None:  # noqa: N802
        self.assertTrue(f1 == f2 or abs(f1 - f2) <= err,
                        f"{f1:f} != {f2:f} +/- {err:f}{' (' + msg + ')' if msg is not None else ''}")

    def assertArrayNear(self, farray1: Any, farray2: Any, err: float, msg: str | None = None) -> None:  # noqa: N802
        self.assertEqual(len(farray1), len(farray2), msg=msg)
        for f1, f2 in zip(farray1, farray2):
            self.assertNear(float(f1), float(f2), err, msg=msg)

    def assertAllInRange(self, target: Any, lower_bound: float, upper_bound: float,  # noqa: N802
                         open_lower_bound: bool = False, open_upper_bound: bool = False) -> None:
        t = self._nd(target)
        lo = t > lower_bound if open_lower_bound else t >= lower_bound
        hi = t < upper_bound if open_upper_bound else t <= upper_bound
        bad = np.logical_not(np.logical_and(lo, hi))
        if np.any(bad):
            raise AssertionError(f"{int(np.sum(bad))} of the {t.size} element(s) are outside the range "
                                 f"{'(' if open_lower_bound else '['}{lower_bound}, {upper_bound}"
                                 f"{')' if open_upper_bound else ']'}. Subscript(s) and value(s) of the "
                                 f"offending elements:\n{np.argwhere(bad)}")

    def assertAllGreater(self, a: Any, comparison_target: Any) -> None:  # noqa: N802
        self.assertGreater(np.min(self._nd(a)), comparison_target)

    def assertAllLess(self, a: Any, comparison_target: Any) -> None:  # noqa: N802
        self.assertLess(np.max(self._nd(a)), comparison_target)

    def assertAllGreaterEqual(self, a: Any, comparison_target: Any) -> None:  # noqa: N802
        self.assertGreaterEqual(np.min(self._nd(a)), comparison_target)

    def assertAllLessEqual(self, a: Any, comparison_target: Any) -> None:  # noqa: N802
        self.assertLessEqual(np.max(self._nd(a)), comparison_target)

    def assertShapeEqual(self, input_a: Any, input_b: Any, msg: str | None = None) -> None:  # noqa: N802
        """Two arrays or tensors (static shapes) have the same shape."""
        for n, x in (("input_a", input_a), ("input_b", input_b)):
            if not isinstance(x, (np.ndarray, np.generic, Tensor)):
                raise TypeError(f"{n} must be a Numpy ndarray, Numpy scalar, or a Tensor.Instead received {type(x)}")
        shape_a = input_a.get_shape().as_list() if isinstance(input_a, Tensor) else input_a.shape
        shape_b = input_b.get_shape().as_list() if isinstance(input_b, Tensor) else input_b.shape
        self.assertAllEqual(shape_a, shape_b, msg=msg)

    def assertDeviceEqual(self, device1: Any, device2: Any, msg: str | None = None) -> None:  # noqa: N802
        names = [DeviceSpec.from_string(d if isinstance(d, str) else d.to_string()).to_string()
                 for d in (device1, device2)]
        self.assertEqual(names[0], names[1], f"Devices {names[0]} and {names[1]} are not equal. {msg or ''}")

    @contextlib.contextmanager
    def assertRaisesWithPredicateMatch(self, exception_type: type[BaseException],  # noqa: N802
                                       expected_err_re_or_predicate: Any) -> Iterator[None]:
        """The block raises `exception_type` whose message (with the op's name for
        an OpError) matches the regular expression, or that satisfies the predicate."""
        if callable(expected_err_re_or_predicate):
            predicate: Callable[[BaseException], Any] = expected_err_re_or_predicate
        else:
            def predicate(e: BaseException) -> Any:
                if isinstance(e, errors.OpError):
                    text = e.message
                    if e.op is not None:
                        text += "\nCaused by: " + e.op.name
                else:
                    text = str(e)
                return re.search(expected_err_re_or_predicate, text)
        try:
            yield
            self.fail(exception_type.__name__ + " not raised")
        except Exception as e:  # noqa: BLE001 - every exception is checked below
            if not isinstance(e, exception_type) or not predicate(e):
                raise AssertionError(f"Exception of type {type(e)}: {e}") from None

    def assertRaisesOpError(self, expected_err_re_or_predicate: Any) -> Any:  # noqa: N802
        """The block raises an OpError matching the regular expression or predicate."""
        return self.assertRaisesWithPredicateMatch(errors.OpError, expected_err_re_or_predicate)

    def assertStartsWith(self, actual: Any, expected_start: Any, msg: str | None = None) -> None:  # noqa: N802
        if not actual.startswith(expected_start):
            self.fail(f"{actual!r} does not start with {expected_start!r} : {msg or ''}")


def main(argv: list[str] | None = None) -> None:
    """Run the tests of `__main__` (absl's test runner, as TensorFlow's `tf.test.main`)."""
    absltest.main(argv=argv)


def get_temp_dir() -> str:
    """The temporary directory of this test run (absl's `TEST_TMPDIR`, created)."""
    d = absltest.get_default_test_tmpdir()
    os.makedirs(d, exist_ok=True)
    return d


def gpu_device_name() -> str:
    """'/device:GPU:0' when a GPU is usable (CuPy finds CUDA), else ''."""
    return "/device:GPU:0" if is_gpu_available() else ""


def is_gpu_available(cuda_only: bool = False, min_cuda_compute_capability: Any = None) -> bool:
    """Whether a GPU device exists (CuPy finds CUDA)."""
    from flowlab.runtime.task import gpu

    return gpu.gpu_count() > 0


def is_built_with_cuda() -> bool:
    """Whether flowlab can use CUDA here (through CuPy)."""
    return is_gpu_available()


def is_built_with_gpu_support() -> bool:
    return is_gpu_available()
