"""Devices: where kernels run and where state lives.

A `Device` has a full name (`/job:localhost/replica:0/task:0/device:CPU:0`), a type,
an incarnation (a random signed 64-bit number, as TensorFlow's, part of every
rendezvous key from this device), an array module (`xp`: numpy for CPU), a resource manager,
host transfers, and memory accounting.  A session can create several virtual CPU
devices in one process (`device_count={"CPU": 4}`) so that placement and
partitioning can be shown and tested on a laptop; they share host memory, so a
tensor moves between them without a copy.

Memory accounting, and exactly what it counts (`memory_stats()`):

* ``bytes_in_use``: the bytes of the state the device holds now, between steps:
  the current arrays of the variables in its resource manager.  Computed when asked
  (a walk over its resources), so it costs nothing while steps run.
* ``peak_bytes_in_use``: the largest number of tensor bytes one step held on the
  device at once.  The executor keeps every value of a step until the step ends, so
  that figure is the bytes of the distinct arrays in the device's partition at the
  end of the step, plus the current values of the variables the partition used.
  It is measured for partitioned (multi-device) steps that run on the executor
  (watched or traced steps, steps with waiting kernels or control flow), and is never
  less than ``bytes_in_use``; kernel temporaries are not counted.  Steps on the
  generated straight-line paths (single-device, or a fused multi-device step) do
  not measure it: they would pay for it on every step.
* ``bytes_received`` / ``bytes_copied`` / ``transfers``: what `_Recv` kernels on the
  device took in.  Between CPU devices the array itself moves, so ``bytes_copied``
  stays 0.
"""

from __future__ import annotations

import secrets
import threading
from typing import Any

import numpy as np

from flowlab import errors
from flowlab.graph.device_spec import DeviceSpec
from flowlab.kernels import host_allocator
from flowlab.kernels.resources import ResourceManager, VariableState

# TensorFlow reports this memory limit for a CPU device in `Session.list_devices()`.
CPU_MEMORY_LIMIT_BYTES = 256 << 20


class Device:
    """One device of a task."""

    def __init__(self, spec: DeviceSpec, xp: Any = np, incarnation: int | None = None) -> None:
        assert spec.device_type is not None and spec.device_index is not None
        self.spec = spec
        self.name = spec.to_string()
        self.device_type = spec.device_type
        self.index = spec.device_index
        self.xp = xp
        # A new incarnation per created device, so that a restarted device's rendezvous
        # keys never match keys of its previous life; a signed int64, as TensorFlow
        # shows it (and as an int attr of _Send/_Recv holds it).
        if incarnation is None:
            incarnation = secrets.randbits(64) - (1 << 63)
        self.incarnation = incarnation
        self.memory_limit_bytes = CPU_MEMORY_LIMIT_BYTES if self.device_type == "CPU" else 0
        self.resources = ResourceManager(self.name)
        self._mem_lock = threading.Lock()
        self.peak_bytes_in_use = 0
        self.bytes_received = 0
        self.bytes_copied = 0
        self.transfers = 0

    # --- memory accounting --------------------------------------------------------
    @property
    def bytes_in_use(self) -> int:
        """Bytes of the variable arrays this device holds now (see the module docstring)."""
        seen: set[int] = set()
        total = 0
        for _, r in self.resources.items():
            if isinstance(r, VariableState) and r.value is not None and id(r.value) not in seen:
                seen.add(id(r.value))
                total += int(getattr(r.value, "nbytes", 0))
        return total

    def note_step_bytes(self, nbytes: int) -> None:
        """A step held `nbytes` of tensors on this device at its end (its peak)."""
        with self._mem_lock:
            if nbytes > self.peak_bytes_in_use:
                self.peak_bytes_in_use = nbytes

    def note_transfer(self, nbytes: int, copied: int) -> None:
        """A `_Recv` on this device took in `nbytes`, of which `copied` were copied."""
        with self._mem_lock:
            self.bytes_received += nbytes
            self.bytes_copied += copied
            self.transfers += 1

    def memory_stats(self) -> dict[str, int]:
        """Allocator-style figures: bytes_in_use, peak_bytes_in_use, bytes_limit, and
        the transfer counters (see the module docstring for what each counts)."""
        in_use = self.bytes_in_use
        with self._mem_lock:
            self.peak_bytes_in_use = max(self.peak_bytes_in_use, in_use)
            return {
                "bytes_in_use": in_use,
                "peak_bytes_in_use": self.peak_bytes_in_use,
                "bytes_limit": self.memory_limit_bytes,
                "bytes_received": self.bytes_received,
                "bytes_copied": self.bytes_copied,
                "transfers": self.transfers,
            }

    # --- host transfers -----------------------------------------------------------
    def to_host(self, value: Any) -> Any:
        """`value` in host memory (a CPU device's values already are)."""
        return value

    def from_host(self, value: Any) -> Any:
        """A host value in this device's memory (a CPU device uses host memory)."""
        return value

    def __repr__(self) -> str:
        return f"<Device {self.name}>"


def local_devices(device_count: dict[str, int] | None = None, job: str = "localhost", task: int = 0) -> list[Device]:
    """The devices of one in-process task: `device_count["CPU"]` virtual CPUs, then
    the GPUs CuPy finds (at most `device_count["GPU"]`; 0 hides them)."""
    count = dict(device_count or {})
    n_cpu = int(count.get("CPU", 1))
    if n_cpu < 1:
        # TensorFlow's session creation fails the same way (its CPU device is never optional).
        raise errors.NotFoundError(None, None, "No CPU devices are available in this process")
    # The CPU kernels' step temporaries are reused from the heap instead of being
    # page-faulted in on every step (see host_allocator); once per process.
    host_allocator.tune()
    devices: list[Device] = [
        Device(DeviceSpec(job=job, replica=0, task=task, device_type="CPU", device_index=i))
        for i in range(n_cpu)
    ]
    if count.get("GPU", 1) != 0:
        from flowlab.runtime.task.gpu import gpu_devices  # cupy is optional: imported lazily

        devices.extend(gpu_devices(count.get("GPU"), job=job, task=task))
    return devices


def value_bytes(values: Any) -> int:
    """Bytes of the distinct arrays among `values` (a step's slots): variables count
    with their current array; `None`, DEAD and non-array values count 0."""
    seen: set[int] = set()
    total = 0
    for v in values:
        if type(v) is VariableState:
            v = v.value
        nb = getattr(v, "nbytes", None)
        if nb is not None and id(v) not in seen:
            seen.add(id(v))
            total += int(nb)
    return total
