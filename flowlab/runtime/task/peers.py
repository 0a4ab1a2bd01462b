"""The in-process transport between tasks: live LocalTasks by name and incarnation.

A Recv whose Send is on another task pulls the value with that task's
`recv_tensor` call (flowlab.runtime.interface).  Between tasks of one process the
call is a method call on the peer, found here by the (name, incarnation) the master
put in the registration; the Dask runtime makes the same call over Dask comm.  An
incarnation names one life of a task, so a restarted task is never mistaken for the
one a registration was made for.

Invariant: entries are weak; a task is findable exactly while it is alive.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from flowlab import errors

_lock = threading.Lock()
_tasks: weakref.WeakValueDictionary[tuple[str, int], Any] = weakref.WeakValueDictionary()


def register(task: Any) -> None:
    with _lock:
        _tasks[(task.name, task.incarnation)] = task


def find(name: str, incarnation: int) -> Any:
    """The live task `name` of that incarnation; UnavailableError naming it otherwise."""
    task = _tasks.get((name, int(incarnation)))
    if task is None or task.closed:
        raise errors.UnavailableError(
            None, None,
            f"Task {name} (incarnation {incarnation}) is not running: it was closed or restarted; "
            "the step cannot receive its tensors. Register the partitions again.",
        )
    return task
