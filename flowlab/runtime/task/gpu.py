"""GPU devices through CuPy: created only where CuPy imports and sees a CUDA device.

A `GpuDevice` is a `Device` whose array module is `cupy`: kernels registered for
"GPU" are the same functions as the CPU ones, written over `ctx.xp`, so on this
device they compute with CuPy arrays in device memory.  The host boundary is explicit:
`to_host` is `cupy.asnumpy` (a device-to-host copy, counted), `from_host` is
`cupy.asarray` (a host-to-device copy, counted).  `_Send`/`_Recv` between a CPU and a
GPU device transfer through these two; `_HostSend`/`_HostRecv` carry tensors that stay
in host memory on the GPU (shapes, indices: see flowlab.runtime.task.memory_types) and copy
nothing.

CuPy is optional (the `gpu` extra in pyproject) and imported lazily: importing
flowlab never imports cupy, and `gpu_devices()` returns [] when cupy is missing, fails
to load its CUDA libraries, or finds no device.  `ConfigProto(device_count={"GPU": 0})`
hides the GPUs (as in TensorFlow).

Memory accounting: `bytes_in_use` counts the variables the device holds (as for a
CPU); `memory_stats()` adds the CuPy memory pool's own figures (`pool_used_bytes`,
`pool_total_bytes`) and the host transfer counters (`bytes_to_host`,
`bytes_from_host`).  `bytes_limit` is the device's total memory.

The class takes the array module as an argument so that a test can build a GPU
device over a NumPy-backed stand-in (tests/runtime/fake_gpu.py); nothing here needs
a real GPU except `gpu_devices()`.
"""

from __future__ import annotations

import threading
from typing import Any

from flowlab.graph.device_spec import DeviceSpec
from flowlab.kernels.registry import DEAD, GPU, kernel
from flowlab.kernels.sendrecv_kernels import _key, _send, step_rendezvous
from flowlab.runtime.task.device import Device

_cupy: Any = None
_probe_lock = threading.Lock()
_probed = False


def load_cupy() -> Any:
    """The `cupy` module when it imports and sees at least one CUDA device, else None
    (probed once per process)."""
    global _cupy, _probed
    with _probe_lock:
        if not _probed:
            _probed = True
            try:
                import cupy  # noqa: PLC0415 -- optional, lazily imported

                if cupy.cuda.runtime.getDeviceCount() > 0:
                    _cupy = cupy
            except Exception:  # ImportError, CUDARuntimeError, missing CUDA libraries
                _cupy = None
    return _cupy


def gpu_count() -> int:
    """How many CUDA devices CuPy sees (0 without cupy or a GPU)."""
    cp = load_cupy()
    return 0 if cp is None else int(cp.cuda.runtime.getDeviceCount())


class GpuDevice(Device):
    """A device of type GPU whose arrays live in accelerator memory (`xp`)."""

    def __init__(self, spec: DeviceSpec, xp: Any, to_host: Any = None, from_host: Any = None,
                 memory_limit: int = 0, pool: Any = None, incarnation: int | None = None,
                 xpx: Any = None) -> None:
        super().__init__(spec, xp=xp, incarnation=incarnation)
        # The module of xp's extras (`cupyx`: scatter_add/max/min stand in for NumPy's
        # ufunc.at, which CuPy lacks); None: kernels use only `xp`.
        self.xpx = xpx
        self._to_host = to_host if to_host is not None else xp.asnumpy
        self._from_host = from_host if from_host is not None else xp.asarray
        self.memory_limit_bytes = int(memory_limit)
        self._pool = pool
        self.bytes_to_host = 0
        self.bytes_from_host = 0

    def is_device_array(self, value: Any) -> bool:
        """Whether `value` is an array in this device's memory (an `xp.ndarray`)."""
        return isinstance(value, self.xp.ndarray) and not type(value).__module__.startswith("numpy")

    def to_host(self, value: Any) -> Any:
        """`value` copied to a NumPy array in host memory; host values pass through."""
        if not self.is_device_array(value):
            return value
        out = self._to_host(value)
        with self._mem_lock:
            self.bytes_to_host += int(out.nbytes)
        return out[()] if out.ndim == 0 else out

    def from_host(self, value: Any) -> Any:
        """A host value (NumPy array or scalar) copied into this device's memory."""
        if value is None or self.is_device_array(value):
            return value
        out = self._from_host(value)
        with self._mem_lock:
            self.bytes_from_host += int(out.nbytes)
        return out

    def memory_stats(self) -> dict[str, int]:
        stats = super().memory_stats()
        with self._mem_lock:
            stats["bytes_to_host"] = self.bytes_to_host
            stats["bytes_from_host"] = self.bytes_from_host
        if self._pool is not None:
            stats["pool_used_bytes"] = int(self._pool.used_bytes())
            stats["pool_total_bytes"] = int(self._pool.total_bytes())
        return stats


def _cupyx() -> Any:
    try:
        import cupyx  # noqa: PLC0415 -- installed with cupy

        return cupyx
    except Exception:  # an old CuPy without cupyx: kernels fall back to xp only
        return None


def gpu_devices(count: int | None = None, job: str = "localhost", task: int = 0) -> list[GpuDevice]:
    """GPU devices for the CUDA devices CuPy sees, at most `count` (None: all)."""
    cp = load_cupy()
    if cp is None:
        return []
    n = gpu_count() if count is None else min(int(count), gpu_count())
    out = []
    for i in range(n):
        with cp.cuda.Device(i):
            _, total = cp.cuda.runtime.memGetInfo()
        spec = DeviceSpec(job=job, replica=0, task=task, device_type="GPU", device_index=i)
        out.append(GpuDevice(spec, cp, cp.asnumpy, cp.asarray, total, cp.get_default_memory_pool(),
                             xpx=_cupyx()))
    return out


# --- Send/Recv on a GPU ------------------------------------------------------------------
# A value leaving a GPU for a CPU is copied to the host by the sender (`to_host`); a
# host value arriving on a GPU is copied in by the receiver (`from_host`), which counts
# the bytes as copied.  Between two GPUs of a process the device array itself moves.
def _gpu_send(ctx: Any, step: Any, value: Any) -> tuple[()]:
    if "GPU" not in ctx.attrs["recv_device"].upper():
        value = ctx.device.to_host(value)
    return _send(ctx, step, value)


def _gpu_recv(ctx: Any, step: Any, done: Any) -> None:
    device = ctx.device

    def arrived(value: Any, error: BaseException | None) -> None:
        if error is not None:
            done(error=error)
            return
        if value is DEAD:
            done(value)
            return
        copied = 0
        if not device.is_device_array(value):
            try:
                value = device.from_host(value)
            except Exception as e:  # noqa: BLE001 -- reported as the kernel's error
                done(error=e)
                return
            copied = int(getattr(value, "nbytes", 0))
        device.note_transfer(int(getattr(value, "nbytes", 0)), copied)
        done(value)

    step_rendezvous(step).recv(_key(ctx.attrs, step), arrived)


def _gpu_host_recv(ctx: Any, step: Any, done: Any) -> None:
    """`_HostRecv` on a GPU: the tensor stays in host memory (a shape, an index), so
    nothing is copied in; a device array that arrives is moved to the host."""
    device = ctx.device

    def arrived(value: Any, error: BaseException | None) -> None:
        if error is not None:
            done(error=error)
            return
        if value is not DEAD:
            value = device.to_host(value)
            device.note_transfer(int(getattr(value, "nbytes", 0)), 0)
        done(value)

    step_rendezvous(step).recv(_key(ctx.attrs, step), arrived)


kernel("_Send", devices=GPU, step=True)(_gpu_send)
kernel("_Recv", devices=GPU, asynchronous=True)(_gpu_recv)
# The host-memory pair: the runtime hands `_HostSend` a host value (its input is
# declared host memory) and `_HostRecv`'s output stays on the host.
kernel("_HostSend", devices=GPU, step=True, host_memory=("tensor",))(_send)
kernel("_HostRecv", devices=GPU, asynchronous=True, host_memory=("tensor",))(_gpu_host_recv)
