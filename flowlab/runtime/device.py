"""Devices: where kernels run and where state lives.

A `Device` has a full name (`/job:localhost/replica:0/task:0/device:CPU:0`), a type,
an array module (`xp`: numpy for CPU), a resource manager, and memory accounting
(bytes in use and peak, as the allocator of TensorFlow reports them).  A session can
create several virtual CPU devices in one process (`device_count={"CPU": 4}`) so that
placement and partitioning can be shown on a laptop.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from flowlab.graph.device_spec import DeviceSpec
from flowlab.kernels.resources import ResourceManager


class Device:
    """One device of a task."""

    def __init__(self, spec: DeviceSpec, xp: Any = np) -> None:
        assert spec.device_type is not None and spec.device_index is not None
        self.spec = spec
        self.name = spec.to_string()
        self.device_type = spec.device_type
        self.index = spec.device_index
        self.xp = xp
        self.resources = ResourceManager(self.name)
        self._mem_lock = threading.Lock()
        self.bytes_in_use = 0
        self.peak_bytes_in_use = 0

    # --- memory accounting (allocator statistics) ----------------------------------
    def note_allocated(self, nbytes: int) -> None:
        with self._mem_lock:
            self.bytes_in_use += nbytes
            if self.bytes_in_use > self.peak_bytes_in_use:
                self.peak_bytes_in_use = self.bytes_in_use

    def note_freed(self, nbytes: int) -> None:
        with self._mem_lock:
            self.bytes_in_use -= nbytes

    # --- host transfers -----------------------------------------------------------
    def to_host(self, value: Any) -> Any:
        return value

    def from_host(self, value: Any) -> Any:
        return value

    def __repr__(self) -> str:
        return f"<Device {self.name}>"


def local_devices(device_count: dict[str, int] | None = None, job: str = "localhost", task: int = 0) -> list[Device]:
    """The devices of one in-process task: `device_count["CPU"]` virtual CPUs."""
    count = dict(device_count or {})
    n_cpu = max(1, int(count.get("CPU", 1)))
    return [
        Device(DeviceSpec(job=job, replica=0, task=task, device_type="CPU", device_index=i))
        for i in range(n_cpu)
    ]
