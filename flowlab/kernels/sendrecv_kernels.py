"""Local rendezvous: where a `_Send` leaves a tensor and its `_Recv` picks it up
(paper section 3.3, white paper section 3.2.2).

A rendezvous key names one transfer of one step:
``"src_device;incarnation;dst_device;tensor_name;frame_id:iter_id"`` (TensorFlow's
format; the incarnation is 16 hex digits).  Keys are step-scoped: every step has its
own `LocalRendezvous` table, so two concurrent steps of the same partitioned plan
never see each other's tensors.

State of a table: key -> either a sent value (possibly `DEAD`) or one waiting
receiver callback.  Invariants:

* `send` never blocks: it stores the value, or hands it to the waiting receiver.
* A receiver callback runs exactly once: with the value, or with the error that
  aborted the step (`abort`, wired to the step's cancellation manager).
* A key is sent at most once and received at most once per step (per frame and
  iteration); a second send or receive of a key is an internal error.
* A key whose prefix (all but ``frame_id:iter_id``) another task sends is pulled
  on demand (`pull_on_demand`): the first receive of a key not yet here starts its
  pull, so a loop across tasks pulls each iteration's key when its Recv runs.
* Values are never copied here: between CPU devices of one process the receiver gets
  the very array that was sent (same host memory), or the very `VariableState` when
  partitioning shares a variable's read (`flowlab.runtime.master.partition_refs`).

The table is state the kernels use, so it lives in the kernels layer (as variable
storage does); the session keeps one table per running step in a
`flowlab.runtime.task.rendezvous.RendezvousManager` and gives it to the step
(`step.rendezvous`).  The kernels below also count each device's transfers
(`Device.note_transfer`): bytes received and bytes copied, which is 0 between CPU
devices of one process.
"""

from __future__ import annotations

import functools
import threading
import zlib
from collections.abc import Callable
from typing import Any, NamedTuple

from flowlab import errors
from flowlab.kernels.registry import CPU, DEAD, kernel
from flowlab.kernels.resources import VariableState

Callback = Callable[[Any, "BaseException | None"], None]

_U64 = (1 << 64) - 1


class ParsedKey(NamedTuple):
    src_device: str
    src_incarnation: int
    dst_device: str
    tensor_name: str
    frame_id: int
    iter_id: int


def make_key(
    src_device: str, incarnation: int, dst_device: str, tensor_name: str,
    frame_id: int = 0, iter_id: int = 0,
) -> str:
    """The rendezvous key of one transfer, as TensorFlow writes it.

    >>> make_key("/job:localhost/replica:0/task:0/device:CPU:0", 1,
    ...          "/job:localhost/replica:0/task:0/device:CPU:1", "edge_3_a")
    '/job:localhost/replica:0/task:0/device:CPU:0;0000000000000001;/job:localhost/replica:0/task:0/device:CPU:1;edge_3_a;0:0'
    """
    return f"{src_device};{incarnation & _U64:016x};{dst_device};{tensor_name};{frame_id}:{iter_id}"


def key_prefix(key: str) -> str:
    """A key without its ``frame_id:iter_id``: the same for every iteration of one
    transfer inside a loop.

    >>> key_prefix("/job:ps/replica:0/task:0/device:CPU:0;0000000000000001;/job:w/replica:0/task:0/device:CPU:0;edge_3_a;77:2")
    '/job:ps/replica:0/task:0/device:CPU:0;0000000000000001;/job:w/replica:0/task:0/device:CPU:0;edge_3_a'
    """
    return key.rpartition(";")[0]


def parse_key(key: str) -> ParsedKey:
    """Split a key made by `make_key` (the incarnation as a signed int64); ValueError
    naming the key if it is malformed."""
    parts = key.split(";")
    if len(parts) != 5 or ":" not in parts[4]:
        raise ValueError(f"Invalid rendezvous key: {key!r}")
    try:
        frame, it = parts[4].split(":")
        inc = int(parts[1], 16)
        if len(parts[1]) != 16:
            raise ValueError
        # Back to the signed int64 a device and a _Send attr hold.
        inc = inc - (1 << 64) if inc >= 1 << 63 else inc
        return ParsedKey(parts[0], inc, parts[2], parts[3], int(frame), int(it))
    except ValueError:
        raise ValueError(f"Invalid rendezvous key: {key!r}") from None


class _Waiter:
    """A receiver waiting for its key (distinguishes a waiter from a sent value)."""

    __slots__ = ("callback",)

    def __init__(self, callback: Callback) -> None:
        self.callback = callback


class LocalRendezvous:
    """The table of one step: sent values and waiting receivers, by key."""

    __slots__ = ("step_id", "_lock", "_table", "_aborted", "_remote", "_start_pull")

    def __init__(self, step_id: int = 0) -> None:
        self.step_id = step_id
        self._lock = threading.Lock()
        self._table: dict[str, Any] = {}
        self._aborted: BaseException | None = None
        # key prefix -> what `_start_pull(what, key)` needs to pull a key of it.
        self._remote: dict[str, Any] | None = None
        self._start_pull: Callable[[Any, str], None] | None = None

    def pull_on_demand(self, remote: dict[str, Any], start: Callable[[Any, str], None]) -> None:
        """Keys whose prefix (`key_prefix`) is in `remote` come from another task: the
        first `recv` of such a key that is not here calls `start(remote[prefix], key)`,
        which must pull it and `send` it here (or fail the step).  Per-iteration keys of
        a loop cannot be pulled at step start: nobody knows yet how many there are."""
        with self._lock:
            self._remote, self._start_pull = remote, start

    def send(self, key: str, value: Any) -> None:
        """Deliver `value` (an array, a NumPy scalar or `DEAD`) for `key`.  Never blocks."""
        with self._lock:
            if self._aborted is not None:
                raise self._aborted
            item = self._table.pop(key, None)
            if item is None:
                self._table[key] = (value,)
                return
            if not isinstance(item, _Waiter):
                self._table[key] = item
                raise errors.InternalError(
                    None, None, f"Send of an already sent rendezvous key in step {self.step_id}: {key}"
                )
        item.callback(value, None)

    def recv(self, key: str, callback: Callback) -> None:
        """Call `callback(value, None)` when `key` has been sent (at once if it has), or
        `callback(None, error)` if the step is aborted first.  A key another task sends
        (`pull_on_demand`) that is not here yet starts its pull."""
        with self._lock:
            err = self._aborted
            if err is None:
                item = self._table.pop(key, None)
                if item is None:
                    self._table[key] = _Waiter(callback)
                    remote = self._remote
                    if remote is None:
                        return
                    what = remote.get(key.rpartition(";")[0])
                    start = self._start_pull
                    if what is None or start is None:
                        return
                elif isinstance(item, _Waiter):
                    self._table[key] = item
                    err = errors.InternalError(
                        None, None, f"Two receivers for rendezvous key in step {self.step_id}: {key}"
                    )
        if err is not None:
            callback(None, err)
        elif item is None:
            start(what, key)  # outside the lock: the pull may deliver at once
        else:
            callback(item[0], None)

    def abort(self, error: BaseException | None = None) -> None:
        """Fail every waiting receiver with `error` (a CancelledError by default) and
        refuse later sends and receives; sent values nobody took are dropped."""
        if error is None:
            error = errors.CancelledError(None, None, "The step's rendezvous was aborted.")
        with self._lock:
            if self._aborted is None:
                self._aborted = error
            waiters = [v for v in self._table.values() if isinstance(v, _Waiter)]
            self._table.clear()
        for w in waiters:
            w.callback(None, error)

    def __len__(self) -> int:
        """Entries in the table: values not yet received plus receivers still waiting."""
        return len(self._table)

    def holds(self, key: str) -> bool:
        """Whether a value sent for `key` waits here for its receiver."""
        with self._lock:
            item = self._table.get(key)
        return item is not None and not isinstance(item, _Waiter)

    def held(self, prefixes: frozenset[str] | set[str]) -> dict[str, Any]:
        """The sent values waiting here whose key's prefix is in `prefixes`, by key."""
        with self._lock:
            return {k: v[0] for k, v in self._table.items()
                    if not isinstance(v, _Waiter) and k.rpartition(";")[0] in prefixes}

    def pending_keys(self) -> list[str]:
        with self._lock:
            return list(self._table)


_attach_lock = threading.Lock()


def step_rendezvous(step: Any) -> LocalRendezvous:
    """The step's rendezvous table.  A session's partitioned step brings one; a step
    that meets a `_Send`/`_Recv` without one (both ends in one partition, built by
    hand) gets a table of its own, aborted when the step is cancelled."""
    r = step.rendezvous
    if r is not None:
        return r
    with _attach_lock:
        r = step.rendezvous
        if r is None:
            r = LocalRendezvous(step.step_id)
            cm = step.get_cancellation()
            if cm.register(lambda: r.abort(_reason(cm))) is None:
                r.abort(_reason(cm))
            # Inside a loop the kernel gets a per-iteration view of the step; the
            # table belongs to the step itself.
            getattr(step, "_step", step).rendezvous = r
    return r


def _reason(cm: Any) -> BaseException:
    reason = cm.reason
    if isinstance(reason, errors.OpError):
        return errors.CancelledError(None, None, f"The step was cancelled: {reason.message}")
    return errors.CancelledError(None, None, "The step was cancelled.")


# --- kernels ---------------------------------------------------------------------------
@functools.lru_cache(maxsize=4096)
def _frame_number(frame_id: str) -> int:
    # Every Send/Recv of a loop iteration asks for the same frame instance's number.
    return zlib.crc32(frame_id.encode())


def _key(attrs: dict[str, Any], step: Any) -> str:
    # Inside a loop (the executor's frame path hands kernels a step carrying
    # `frame_id` and `iteration`) each iteration's transfer has its own key; TensorFlow's
    # frame id is a number, so the frame instance's name is hashed to one.
    frame = getattr(step, "frame_id", "")
    it = getattr(step, "iteration", 0)
    where = f"{_frame_number(frame)}:{it}" if frame or it else "0:0"
    return (
        f"{attrs['send_device']};{attrs['send_device_incarnation'] & _U64:016x};"
        f"{attrs['recv_device']};{attrs['tensor_name']};{where}"
    )


def _send(ctx: Any, step: Any, value: Any) -> tuple[()]:
    step_rendezvous(step).send(_key(ctx.attrs, step), value)
    return ()  # no outputs (every executor path accepts an empty tuple)


def _recv(ctx: Any, step: Any, done: Any) -> None:
    device = ctx.device
    note = getattr(device, "note_transfer", None)

    def arrived(value: Any, error: BaseException | None) -> None:
        if error is not None:
            done(error=error)
            return
        if note is not None and value is not DEAD:
            # Same host memory: the array itself moves, nothing is copied.  A variable
            # (a shared read, see runtime/partition_refs) counts its current array: the
            # bytes this device now reads, as a sent value of it would.
            arr = value.value if type(value) is VariableState else value
            note(getattr(arr, "nbytes", 0), 0)
        done(value)

    step_rendezvous(step).recv(_key(ctx.attrs, step), arrived)


# Only CPU devices exist so far; an accelerator registers its own pair, which moves
# the value through host memory (`Device.to_host` / `from_host`).
for _op in ("_Send", "_HostSend"):
    kernel(_op, devices=CPU, step=True)(_send)
for _op in ("_Recv", "_HostRecv"):
    kernel(_op, devices=CPU, asynchronous=True)(_recv)
