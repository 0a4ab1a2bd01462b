"""A fake accelerator for testing the GPU path without a GPU (a testing utility).

`FakeGpuArray` is an `np.ndarray` subclass standing for "an array in device memory";
`FAKE_XP` is a NumPy-backed stand-in for `cupy`: its functions compute with NumPy and
return `FakeGpuArray`s.  A `GpuDevice` over it (`fake_gpu_device()`) has type "GPU",
`to_host` giving a plain ndarray and `from_host` a `FakeGpuArray`, with the transfers
counted.

It is strict where CuPy is: an `xp` function or an operator given a plain (host)
ndarray raises TypeError, as CuPy does ("Unsupported type <class 'numpy.ndarray'>"),
so a kernel that mixes host arrays into device arithmetic fails here as it would on a
GPU; and 0-d results stay 0-d device arrays (CuPy has no device scalars).  A kernel
that built its output with `np.*` on the host returns a plain ndarray, which the tests
catch by type.  CuPy's ufuncs have no `at`: the fake's raise AttributeError, and a
`FakeXpx` (cupyx's `scatter_add`/`scatter_max`/`scatter_min`, dtypes limited as
CuPy documents them) is the device's `xpx`.  What it cannot catch: a NumPy function CuPy lacks, a CuPy function
whose semantics differ, and performance (implicit synchronizations).
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np

from flowlab.graph.device_spec import DeviceSpec
from flowlab.runtime.task.gpu import GpuDevice

_ALLOW_HOST = frozenset({"asarray", "array", "asanyarray", "ascontiguousarray"})
# The ufuncs whose `at` CuPy has (13 and later: its ufuncs with a scatter_op);
# `FakeXp(ufunc_at=False)` models an older CuPy, with none.
_UFUNC_AT = frozenset({"add", "subtract", "maximum", "minimum", "bitwise_and", "bitwise_or", "bitwise_xor"})


class FakeGpuArray(np.ndarray):
    """An array in (fake) device memory."""

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        _reject_host(ufunc.__name__, inputs)
        args = [_plain(x) for x in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(_plain(o) for o in kwargs["out"])
        return _device(getattr(ufunc, method)(*args, **kwargs))

    def get(self) -> np.ndarray:
        """A host copy, as `cupy.ndarray.get()`."""
        return to_host(self)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """Present, as on a cupy array: the runtime recognizes device arrays by it."""
        return {"shape": self.shape, "typestr": self.dtype.str, "version": 3}

    def __repr__(self) -> str:
        return "FakeGpuArray(" + repr(np.asarray(self)) + ")"


def _plain(x: Any) -> Any:
    if isinstance(x, FakeGpuArray):
        return x.view(np.ndarray)
    if isinstance(x, (list, tuple)):
        return type(x)(_plain(v) for v in x)
    return x


def _device(x: Any) -> Any:
    """Results of a computation on the device: arrays (and scalars: CuPy gives 0-d
    arrays) become FakeGpuArray."""
    if isinstance(x, np.ndarray):
        return x if isinstance(x, FakeGpuArray) else x.view(FakeGpuArray)
    if isinstance(x, np.generic):
        return np.asarray(x).view(FakeGpuArray)
    if isinstance(x, tuple):
        return tuple(_device(v) for v in x)
    if isinstance(x, list):
        return [_device(v) for v in x]
    return x


def _reject_host(what: str, args: Any) -> None:
    for a in args:
        if type(a) is np.ndarray:
            raise TypeError(f"Unsupported type <class 'numpy.ndarray'> (a host array given to {what} on the fake GPU)")
        if isinstance(a, (list, tuple)):
            _reject_host(what, a)


class _Fn:
    """An xp function (or ufunc): NumPy's, on FakeGpuArray."""

    def __init__(self, fn: Any, name: str, owner: FakeXp) -> None:
        self._fn, self._name, self._owner = fn, name, owner

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._name not in _ALLOW_HOST:
            _reject_host(self._name, args)
            _reject_host(self._name, kwargs.values())
        if self._name.endswith(".at"):
            self._owner.at_calls.append(self._name)
        return _device(self._fn(*_plain(list(args)), **{k: _plain(v) for k, v in kwargs.items()}))

    def __getattr__(self, name: str) -> Any:  # ufunc.reduce, .outer, ...
        if name == "at" and (not self._owner.ufunc_at or self._name not in _UFUNC_AT):
            raise AttributeError(f"'cupy.ufunc' has no 'at' for {self._name} (CuPy 13 has it for "
                                 f"{sorted(_UFUNC_AT)} only; cupyx.scatter_* before)")
        attr = getattr(self._fn, name)
        return _Fn(attr, f"{self._name}.{name}", self._owner) if callable(attr) else attr


class FakeXp(types.SimpleNamespace):
    """A module-like stand-in for cupy over NumPy (`ufunc_at=False`: a CuPy before 13,
    whose ufuncs have no `at`).  `at_calls` records the `ufunc.at` calls made."""

    def __init__(self, module: Any = np, prefix: str = "", ufunc_at: bool = True,
                 at_calls: list[str] | None = None) -> None:
        super().__init__()
        self._module, self._prefix = module, prefix
        self.ufunc_at = ufunc_at
        self.at_calls: list[str] = [] if at_calls is None else at_calls

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name == "ndarray":
            return FakeGpuArray
        if name == "asnumpy":
            return to_host
        attr = getattr(self._module, name)
        if isinstance(attr, types.ModuleType):
            return FakeXp(attr, f"{self._prefix}{name}.", self.ufunc_at, self.at_calls)
        if isinstance(attr, type) or not callable(attr):
            return attr  # dtypes, constants
        return _Fn(attr, self._prefix + name, self)


FAKE_XP = FakeXp()


class FakeXpx:
    """A stand-in for `cupyx`: `scatter_add` / `scatter_max` / `scatter_min` in place on
    a device array, for the dtypes CuPy's atomics cover (TypeError otherwise), counting
    the calls in `calls`."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def _scatter(self, name: str, ufunc: Any, a: Any, slices: Any, value: Any) -> None:
        from flowlab.kernels.state_kernels import XPX_AT_DTYPES  # the dtypes documented by CuPy

        _reject_host(f"cupyx.{name}", (a, value, *(slices if isinstance(slices, tuple) else (slices,))))
        if not isinstance(a, FakeGpuArray):
            raise TypeError(f"cupyx.{name} needs a device array")
        if a.dtype not in XPX_AT_DTYPES:
            raise TypeError(f"cupyx.{name} does not support {a.dtype} on the fake GPU")
        self.calls.append(name)
        ufunc.at(a.view(np.ndarray), _plain(slices), _plain(value))

    def scatter_add(self, a: Any, slices: Any, value: Any) -> None:
        self._scatter("scatter_add", np.add, a, slices, value)

    def scatter_max(self, a: Any, slices: Any, value: Any) -> None:
        self._scatter("scatter_max", np.maximum, a, slices, value)

    def scatter_min(self, a: Any, slices: Any, value: Any) -> None:
        self._scatter("scatter_min", np.minimum, a, slices, value)


def to_host(x: Any) -> np.ndarray:
    return np.array(x.view(np.ndarray)) if isinstance(x, FakeGpuArray) else np.asarray(x)


def from_host(x: Any) -> FakeGpuArray:
    return np.array(x).view(FakeGpuArray)


def fake_gpu_device(index: int = 0, job: str = "localhost", task: int = 0,
                    old_cupy: bool = False) -> GpuDevice:
    """A GPU device over the fake xp (`old_cupy`: a fresh xp whose ufuncs have no `at`)."""
    spec = DeviceSpec(job=job, replica=0, task=task, device_type="GPU", device_index=index)
    xp = FakeXp(ufunc_at=False) if old_cupy else FAKE_XP
    return GpuDevice(spec, xp, to_host, from_host, memory_limit=1 << 30, xpx=FakeXpx())
