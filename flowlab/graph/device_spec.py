"""Device names, full or partial: `/job:ps/replica:0/task:1/device:GPU:0`.

A `DeviceSpec` is an immutable record of five optional fields (job, replica, task,
device_type, device_index).  Users write partial specs (`/job:ps`, `/gpu:0`,
`/cpu:1`, `CPU`); placement merges and completes them.  `to_string()` always gives
the canonical form, with `device:TYPE:N` and upper-case types.
"""

from __future__ import annotations

import re
from typing import Any

_LEGACY = re.compile(r"^(cpu|gpu|tpu)(?::(\d+|\*))?$", re.IGNORECASE)


class DeviceSpec:
    """A (possibly partial) device name; fields left as None match anything."""

    __slots__ = ("job", "replica", "task", "device_type", "device_index", "_str")

    def __init__(
        self,
        job: str | None = None,
        replica: int | None = None,
        task: int | None = None,
        device_type: str | None = None,
        device_index: int | None = None,
    ) -> None:
        self.job = job
        self.replica = None if replica is None else int(replica)
        self.task = None if task is None else int(task)
        self.device_type = None if device_type is None else _canonical_type(device_type)
        self.device_index = None if device_index is None else int(device_index)
        self._str: str | None = None

    # --- parsing ------------------------------------------------------------------
    @classmethod
    def from_string(cls, spec: str | DeviceSpec | None) -> DeviceSpec:
        """Parse a device string; ValueError naming the bad part when malformed."""
        if isinstance(spec, DeviceSpec):
            return spec
        if spec is None:
            return cls()
        if not isinstance(spec, str):
            raise TypeError(f"A device must be a string or DeviceSpec, got {spec!r}")
        job = replica = task = dtype = index = None
        for part in spec.split("/"):
            if not part:
                continue
            m = _LEGACY.match(part)
            if m:
                dtype = m.group(1)
                index = None if m.group(2) in (None, "*") else int(m.group(2))
                continue
            pieces = part.split(":")
            key = pieces[0].lower()
            try:
                if key == "job" and len(pieces) == 2:
                    job = pieces[1]
                elif key == "replica" and len(pieces) == 2:
                    replica = int(pieces[1])
                elif key == "task" and len(pieces) == 2:
                    task = int(pieces[1])
                elif key == "device" and len(pieces) in (2, 3):
                    dtype = pieces[1]
                    if len(pieces) == 3 and pieces[2] != "*":
                        index = int(pieces[2])
                elif len(pieces) == 1 and part.isalpha():
                    dtype = part  # bare "CPU" / "GPU"
                elif len(pieces) == 2 and pieces[0].isalpha() and pieces[0].upper() == pieces[0]:
                    dtype, index = pieces[0], int(pieces[1])  # "CPU:0"
                else:
                    raise ValueError
            except ValueError:
                raise ValueError(
                    f"Invalid device specification {spec!r}: cannot parse {part!r}. "
                    "Use e.g. '/job:worker/task:0/device:CPU:0', '/cpu:1' or '/gpu:0'."
                ) from None
        return cls(job, replica, task, dtype, index)

    # --- combination --------------------------------------------------------------
    def make_merged_spec(self, other: DeviceSpec | str | None) -> DeviceSpec:
        """A new spec with `other`'s set fields overriding this one's."""
        o = DeviceSpec.from_string(other)
        return DeviceSpec(
            o.job if o.job is not None else self.job,
            o.replica if o.replica is not None else self.replica,
            o.task if o.task is not None else self.task,
            o.device_type if o.device_type is not None else self.device_type,
            o.device_index if o.device_index is not None else self.device_index,
        )

    def replace(self, **kwargs: Any) -> DeviceSpec:
        fields = {f: getattr(self, f) for f in ("job", "replica", "task", "device_type", "device_index")}
        fields.update(kwargs)
        return DeviceSpec(**fields)

    def is_compatible_with(self, other: DeviceSpec | str) -> bool:
        """True when no field set in both specs differs."""
        o = DeviceSpec.from_string(other)
        for f in ("job", "replica", "task", "device_type", "device_index"):
            a, b = getattr(self, f), getattr(o, f)
            if a is not None and b is not None and a != b:
                return False
        return True

    def matches(self, full: DeviceSpec | str) -> bool:
        """Whether a full device name satisfies this partial spec."""
        return self.is_compatible_with(full)

    # --- output -------------------------------------------------------------------
    def to_string(self) -> str:
        if self._str is None:
            parts = []
            if self.job is not None:
                parts.append(f"/job:{self.job}")
            if self.replica is not None:
                parts.append(f"/replica:{self.replica}")
            if self.task is not None:
                parts.append(f"/task:{self.task}")
            if self.device_type is not None:
                idx = "*" if self.device_index is None else str(self.device_index)
                parts.append(f"/device:{self.device_type}:{idx}")
            self._str = "".join(parts)
        return self._str

    def __str__(self) -> str:
        return self.to_string()

    def __repr__(self) -> str:
        return f"DeviceSpec({self.to_string()!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                other = DeviceSpec.from_string(other)
            except ValueError:
                return False
        return isinstance(other, DeviceSpec) and self.to_string() == other.to_string()

    def __hash__(self) -> int:
        return hash(self.to_string())


def _canonical_type(t: str) -> str:
    return t.upper()


def canonical_name(spec: str | DeviceSpec | None) -> str:
    """The canonical string of a (partial) device spec; '' for none."""
    if spec is None or spec == "":
        return ""
    return DeviceSpec.from_string(spec).to_string()
