"""The session's rendezvous tables: one `LocalRendezvous` per running step.

As TensorFlow's worker-side rendezvous manager: a partitioned step asks for its
table by step id (`find_or_create`) before its partitions start, and drops it when
the step ends (`cleanup`), failing any receiver still waiting.  After every step,
successful or not, the manager holds nothing of it (`len(manager) == 0` when no step
runs), which the tests check over 10,000 steps.  The table itself and the key format
are in `flowlab.kernels.sendrecv_kernels`, next to the kernels that use them.
"""

from __future__ import annotations

import collections
import threading

from flowlab.kernels.sendrecv_kernels import LocalRendezvous

# How many ended steps a manager remembers, to refuse a peer's late pull (see `for_peer`).
_ENDED_KEPT = 4096


class RendezvousManager:
    """The rendezvous tables of a session's running steps, by step id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tables: dict[int, LocalRendezvous] = {}
        self._ended: collections.OrderedDict[int, None] = collections.OrderedDict()

    def find_or_create(self, step_id: int) -> LocalRendezvous:
        with self._lock:
            r = self._tables.get(step_id)
            if r is None:
                r = self._tables[step_id] = LocalRendezvous(step_id)
            return r

    def for_peer(self, step_id: int) -> LocalRendezvous | None:
        """The table a peer's RecvTensor waits on: the step's (made now if the step has
        not started here yet), or None when the step already ended here -- a late pull
        (a Recv inside a loop asking for its next iteration while the step fails) must
        not leave a table behind that nobody drops."""
        with self._lock:
            r = self._tables.get(step_id)
            if r is None:
                if step_id in self._ended:
                    return None
                r = self._tables[step_id] = LocalRendezvous(step_id)
            return r

    def cleanup(self, step_id: int, error: BaseException | None = None) -> None:
        """Drop the step's table; receivers still waiting (there are none after a step
        that succeeded) fail with `error`."""
        with self._lock:
            r = self._tables.pop(step_id, None)
            ended = self._ended
            ended[step_id] = None
            if len(ended) > _ENDED_KEPT:
                ended.popitem(last=False)
        if r is not None and len(r):
            r.abort(error)

    def __len__(self) -> int:
        """Steps with a table (0 when no step is running)."""
        return len(self._tables)

    def total_entries(self) -> int:
        with self._lock:
            return sum(len(r) for r in self._tables.values())
