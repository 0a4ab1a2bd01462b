"""How many threads a task's steps use, and keeping them within the cores.

Three kinds of threads compute a step: the executor's (inter-op: independent ops side
by side, ConfigProto's `inter_op_parallelism_threads`), the intra-op threads that
share one large kernel (`intra_op_parallelism_threads`), and the threads each BLAS
call starts on its own.  `choose` turns the two ConfigProto numbers into a
`ThreadPolicy`; `ThreadPolicy.scope()` applies it around a step, and
`ThreadPolicy.limit_process()` for the life of a process that serves steps (a Dask
task server).

The mechanism this policy exists for (measured, docs/notes/training-performance.md):
OpenBLAS splits a GEMM statically between its threads, and they wait for each other by
spinning.  With another process busy on the cores, a waiting thread spins through its
time slice while the thread it waits for sits in the run queue behind the neighbour: a
128x784 @ 784x512 GEMM with two OpenBLAS threads went from 1.9 ms to 44 ms (CPU time
2.4 -> 22 ms, 89% of it in OpenBLAS's synchronization, 8% in the GEMM kernel).  One
thread per call does not have that cliff.  So the policy is:

* executor threads E: `inter_op` (0: 1, the local runtime's inline executor);
* intra-op threads I: `intra_op` (0: the cores this process may run on, divided by E,
  at least 1, and no more than the BLAS threads the process had limited itself to),
  so that E x I <= cores unless the user asks for more;
* BLAS threads per call: always 1.  Intra-op parallelism is flowlab's own: large GEMMs
  are cut into row blocks that the I threads take from one queue
  (flowlab.kernels.intra_op.sharded_matmul), as TensorFlow's Eigen pool shares out
  its blocks, so a thread that loses its core delays one block, not the product.

State: the scopes of all tasks in the process share one depth counter.  The first
scope to open saves the BLAS libraries' thread counts and sets them to the policy's,
and sets the intra-op thread count; the last to close restores the BLAS counts, so
NumPy code of the user between steps keeps its own setting (the intra-op pool is
flowlab's and used inside steps only: it stays, its threads idle).  Concurrent steps
of tasks with different policies run under the first one's (process-wide settings: one
BLAS thread count, one intra-op pool, as TensorFlow's intra-op pool is one per
process).  `enter(policy)` and `leave()` are the scope without a context manager, for
the hot path of a step.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from flowlab.kernels.intra_op import set_intra_op_threads

__all__ = ["ThreadPolicy", "available_cores", "choose", "current_blas_threads", "enter",
           "from_config", "leave"]


def available_cores() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class ThreadPolicy:
    """Threads of a task's steps (see the module docstring).

    >>> choose(intra_op=0, inter_op=0, cores=2)
    ThreadPolicy(executor_threads=1, intra_op_threads=2, blas_threads=1)
    """

    executor_threads: int
    intra_op_threads: int
    blas_threads: int

    @contextmanager
    def scope(self) -> Iterator[None]:
        """Apply the policy while the body runs (a step), restoring the BLAS
        libraries' own thread counts when the last open scope of the process closes."""
        enter(self)
        try:
            yield
        finally:
            leave()

    def limit_process(self) -> Any:
        """Apply the policy until `restore_original_limits()` is called on the
        returned threadpoolctl limits object: for a process that serves steps (a Dask
        task server), where per-step scopes would cost a call each for nothing."""
        from threadpoolctl import threadpool_limits

        set_intra_op_threads(self.intra_op_threads)
        return threadpool_limits(self.blas_threads, user_api="blas")


def choose(intra_op: int = 0, inter_op: int = 0, cores: int | None = None,
           blas_limit: int | None = None) -> ThreadPolicy:
    """The policy for ConfigProto's `intra_op_parallelism_threads` and
    `inter_op_parallelism_threads` (0: choose) on `cores` cores (None: this
    process's).  A chosen intra-op count is at most `blas_limit`: the BLAS threads a
    process had limited itself to (`current_blas_threads`) -- a Dask worker's task
    server, or a user's `threadpool_limits(1)` -- already say how many threads one
    kernel may use."""
    for name, v in (("intra_op_parallelism_threads", intra_op),
                    ("inter_op_parallelism_threads", inter_op)):
        if int(v) < 0:
            raise ValueError(f"ConfigProto.{name} must be >= 0 (0: let flowlab choose), got {v}.")
    cores = available_cores() if cores is None else max(1, int(cores))
    executor = int(inter_op) or 1
    intra = int(intra_op) or max(1, min(cores // executor, blas_limit or cores))
    return ThreadPolicy(executor, intra, 1)


def current_blas_threads() -> int | None:
    """The largest thread count of the process's loaded BLAS libraries (None: none is
    loaded).  Outside a policy's scope this is the process's own setting."""
    with _lock:
        if _depth:
            return max((n for _, n in _saved), default=None)
        libs = _blas_libraries()
        return max((lib.get_num_threads() for lib in libs), default=None)


def from_config(config: Any) -> ThreadPolicy:
    """`choose` from a ConfigProto (anything with its two thread fields; None: the
    defaults)."""
    if config is None:
        return choose()
    return choose(int(getattr(config, "intra_op_parallelism_threads", 0) or 0),
                  int(getattr(config, "inter_op_parallelism_threads", 0) or 0))


# --- the process-wide state of the scopes ---------------------------------------------
_lock = threading.Lock()
_depth = 0
_saved: list[tuple[Any, int]] = []  # (BLAS library, its thread count before the scope)
class _Blas:
    """One loaded BLAS library: its thread-count getter and setter.

    For OpenBLAS on pthreads these are its C functions, found through threadpoolctl's
    controller: its `set_num_threads` obeys only the first Python thread that used it
    (OpenBLAS's count is process-wide), and a step may run on any thread -- here the
    scopes' lock and depth counter keep the threads from fighting.  Other libraries
    use the controller's methods."""

    def __init__(self, lib: Any) -> None:
        self.get_num_threads, self.set_num_threads = lib.get_num_threads, lib.set_num_threads
        symbol = getattr(lib, "_get_symbol", None)
        if (getattr(lib, "internal_api", "") == "openblas" and symbol is not None
                and getattr(lib, "threading_layer", "") != "openmp"):
            get, set_ = symbol("openblas_get_num_threads"), symbol("openblas_set_num_threads")
            if get is not None and set_ is not None:
                self.get_num_threads, self.set_num_threads = get, set_


_blas: list[_Blas] = []  # the loaded BLAS libraries
_blas_seen = -1  # len(sys.modules) when they were looked up


def _blas_libraries() -> list[_Blas]:
    """The loaded BLAS libraries (NumPy's, SciPy's, ...), looked up again after an
    import: finding them walks the process's shared objects (~0.1 ms), and a library
    arrives with the module that loads it."""
    global _blas, _blas_seen
    if len(sys.modules) != _blas_seen:
        from threadpoolctl import ThreadpoolController

        _blas_seen = len(sys.modules)
        _blas = [_Blas(lib) for lib in ThreadpoolController().select(user_api="blas").lib_controllers]
    return _blas


def enter(policy: ThreadPolicy) -> None:
    """Open a scope of `policy` (see the module docstring); `leave()` closes it."""
    global _depth, _saved
    with _lock:
        _depth += 1
        if _depth > 1:
            return
        saved = []
        for lib in _blas_libraries():
            n = lib.get_num_threads()
            if n != policy.blas_threads:
                lib.set_num_threads(policy.blas_threads)
            saved.append((lib, n))
        _saved = saved
        set_intra_op_threads(policy.intra_op_threads)


def leave() -> None:
    """Close the scope opened last by `enter`."""
    global _depth, _saved
    with _lock:
        _depth -= 1
        if _depth > 0:
            return
        for lib, n in _saved:
            if n != lib.get_num_threads():
                lib.set_num_threads(n)
        _saved = []
