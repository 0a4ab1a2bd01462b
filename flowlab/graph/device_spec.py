"""Device names, full or partial: `/job:ps/replica:0/task:1/device:GPU:0`.

A `DeviceSpec` is a record of five optional fields (job, replica, task, device_type,
device_index).  Users write partial specs (`/job:ps`, `/gpu:0`, `/cpu:1`, `CPU:0`);
placement merges and completes them.  `to_string()` gives the canonical form, with
`/device:TYPE:N` (`*` for an unset index), exactly as TensorFlow's `DeviceSpec`.

Parsing follows TensorFlow 1.x / 2.x `DeviceSpec.from_string` rule for rule: parts
are split on "/" and ":"; `job:`, `replica:`, `task:`, `device:TYPE:N` and the short
forms `cpu:N` / `GPU` (any case, for the known device types) are accepted; anything
else is a ValueError naming the bad part.  Only "cpu" and "gpu" are upper-cased in
`/device:cpu:0` (TensorFlow's backwards-compatibility rule); other types keep their
spelling.

As in `tf.compat.v1.DeviceSpec`, fields may be assigned; the cached string follows.
"""

from __future__ import annotations

from typing import Any

# TensorFlow's `_VALID_DEVICE_TYPES` (plus nothing pluggable: flowlab has no plugins).
VALID_DEVICE_TYPES = frozenset({"CPU", "GPU", "TPU", "CUSTOM", "EPU"})

_FIELDS = ("job", "replica", "task", "device_type", "device_index")

# Parsed components by string: graph building parses the same few strings for every
# op.  Components, not DeviceSpecs, since a DeviceSpec's fields may be assigned.
_PARSED: dict[str, tuple[Any, ...]] = {}


def _str_or_none(v: Any) -> str | None:
    return None if v is None else str(v)


def _int_or_none(v: Any) -> int | None:
    return None if v is None else int(v)


def _device_type_or_none(t: Any) -> str | None:
    # TensorFlow upper-cases only the legacy lower-case spellings.
    if t in ("cpu", "gpu"):
        return t.upper()
    return _str_or_none(t)


class DeviceSpec:
    """A (possibly partial) device name; fields left as None match anything.

    >>> DeviceSpec.from_string("/job:ps/cpu:1").to_string()
    '/job:ps/device:CPU:1'
    """

    __slots__ = ("_job", "_replica", "_task", "_device_type", "_device_index", "_str")

    def __init__(
        self,
        job: str | None = None,
        replica: int | None = None,
        task: int | None = None,
        device_type: str | None = None,
        device_index: int | None = None,
    ) -> None:
        self._job = _str_or_none(job)
        self._replica = _int_or_none(replica)
        self._task = _int_or_none(task)
        self._device_type = _device_type_or_none(device_type)
        self._device_index = _int_or_none(device_index)
        self._str: str | None = None

    # --- fields (assignable, as tf.compat.v1.DeviceSpec) -----------------------------
    @property
    def job(self) -> str | None:
        return self._job

    @job.setter
    def job(self, value: Any) -> None:
        self._job = _str_or_none(value)
        self._str = None

    @property
    def replica(self) -> int | None:
        return self._replica

    @replica.setter
    def replica(self, value: Any) -> None:
        self._replica = _int_or_none(value)
        self._str = None

    @property
    def task(self) -> int | None:
        return self._task

    @task.setter
    def task(self, value: Any) -> None:
        self._task = _int_or_none(value)
        self._str = None

    @property
    def device_type(self) -> str | None:
        return self._device_type

    @device_type.setter
    def device_type(self, value: Any) -> None:
        self._device_type = _device_type_or_none(value)
        self._str = None

    @property
    def device_index(self) -> int | None:
        return self._device_index

    @device_index.setter
    def device_index(self, value: Any) -> None:
        self._device_index = _int_or_none(value)
        self._str = None

    # --- parsing ------------------------------------------------------------------
    @classmethod
    def from_string(cls, spec: str | DeviceSpec | None) -> DeviceSpec:
        """Parse a device string; ValueError naming the bad part when malformed.

        A DeviceSpec is returned as is; None and "" give the empty spec.
        """
        if isinstance(spec, DeviceSpec):
            return spec
        if spec is None:
            return cls()
        if isinstance(spec, bytes):
            spec = spec.decode()
        if not isinstance(spec, str):
            raise TypeError(
                f"A device must be a string, a DeviceSpec or a function, got {spec!r} "
                f"of type {type(spec).__name__}."
            )
        cached = _PARSED.get(spec)
        if cached is not None:
            return cls(*cached)
        job = replica = task = dtype = index = None
        for part in spec.split("/"):
            y = part.split(":")
            n = len(y)
            if n == 2 and y[0] == "job":
                job = y[1]
            elif n == 2 and y[0] == "replica":
                replica = _parse_int(y[1], spec, part)
            elif n == 2 and y[0] == "task":
                task = _parse_int(y[1], spec, part)
            elif (n in (1, 2) and y[0].upper() in VALID_DEVICE_TYPES) or (
                n == 3 and y[0] == "device"
            ):
                if dtype is not None:
                    raise ValueError(
                        "Multiple device types are not allowed while parsing the device "
                        f"spec: {spec}."
                    )
                dtype = y[0].upper() if n < 3 else y[1]
                if n > 1 and y[-1] != "*":
                    index = _parse_int(y[-1], spec, part)
            elif y[0] != "":
                raise ValueError(
                    f"Unknown attribute '{y[0]}' is encountered while parsing the device "
                    f"spec: '{spec}'."
                )
        if len(_PARSED) > 4096:
            _PARSED.clear()
        _PARSED[spec] = (job, replica, task, dtype, index)
        return cls(job, replica, task, dtype, index)

    parse_from_string = from_string

    # --- combination --------------------------------------------------------------
    def make_merged_spec(self, other: DeviceSpec | str | None) -> DeviceSpec:
        """A new spec with `other`'s set fields overriding this one's."""
        o = DeviceSpec.from_string(other)
        return DeviceSpec(
            *(
                getattr(o, f) if getattr(o, f) is not None else getattr(self, f)
                for f in _FIELDS
            )
        )

    def replace(self, **kwargs: Any) -> DeviceSpec:
        """A copy with the given fields replaced (`device_type=None` clears one)."""
        fields = {f: getattr(self, f) for f in _FIELDS}
        unknown = set(kwargs) - set(fields)
        if unknown:
            raise TypeError(f"DeviceSpec.replace() got unexpected fields {sorted(unknown)}")
        fields.update(kwargs)
        return DeviceSpec(**fields)

    def is_compatible_with(self, other: DeviceSpec | str) -> bool:
        """True when no field set in both specs differs."""
        o = DeviceSpec.from_string(other)
        for f in _FIELDS:
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
            if self._job is not None:
                parts.append(f"/job:{self._job}")
            if self._replica is not None:
                parts.append(f"/replica:{self._replica}")
            if self._task is not None:
                parts.append(f"/task:{self._task}")
            if self._device_type is not None:
                idx = "*" if self._device_index is None else str(self._device_index)
                parts.append(f"/device:{self._device_type}:{idx}")
            self._str = "".join(parts)
        return self._str

    def __str__(self) -> str:
        return self.to_string()

    def __repr__(self) -> str:
        return (
            f"<DeviceSpec(job={self._job}, replica={self._replica}, task={self._task}, "
            f"device_type={self._device_type}, device_index={self._device_index})>"
        )

    def __eq__(self, other: object) -> bool:
        # flowlab extension: a device string compares by its parsed meaning.
        if isinstance(other, str):
            try:
                other = DeviceSpec.from_string(other)
            except ValueError:
                return False
        return isinstance(other, DeviceSpec) and self.to_string() == other.to_string()

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(self.to_string())


def _parse_int(text: str, spec: str, part: str) -> int:
    try:
        return int(text)
    except ValueError:
        # TensorFlow's text (int() of the part) first, then what to write instead.
        raise ValueError(
            f"invalid literal for int() with base 10: '{text}': '{part}' needs an integer in the "
            f"device specification '{spec}'. Use e.g. '/job:worker/task:0/device:CPU:0', '/cpu:1' or '/gpu:0'."
        ) from None


def canonical_name(spec: str | DeviceSpec | None) -> str:
    """The canonical string of a (partial) device spec; '' for none."""
    if spec is None or spec == "":
        return ""
    return DeviceSpec.from_string(spec).to_string()
