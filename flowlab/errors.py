"""Runtime errors, with TensorFlow 1.x's classes, codes and constructor.

Every error raised while running a step derives from `OpError` and carries the op
that failed (`error.op`, `error.node_def`) and a message that names the op, its type,
its device and where it was defined, e.g.::

    InvalidArgumentError: MatMul 'dense/MatMul' on /job:localhost/replica:0/task:0/device:CPU:0:
    Matrix size-incompatible: In[0]: [2,3], In[1]: [4,5]
    (defined at train.py:12)
"""

from __future__ import annotations

from typing import Any

OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16


class OpError(Exception):
    """Base class of every error a step can raise (`tf.errors.OpError`)."""

    error_code_default = UNKNOWN

    def __init__(
        self, node_def: Any, op: Any, message: str, error_code: int | None = None, *args: Any
    ) -> None:
        super().__init__(message)
        self._node_def = node_def
        self._op = op
        self._message = message
        self._error_code = self.error_code_default if error_code is None else error_code

    @property
    def message(self) -> str:
        return self._message

    @property
    def op(self) -> Any:
        return self._op

    @property
    def node_def(self) -> Any:
        return self._node_def

    @property
    def error_code(self) -> int:
        return self._error_code

    @property
    def experimental_payloads(self) -> dict[str, bytes]:
        return {}

    def __str__(self) -> str:
        return self._message

    def __reduce__(self) -> Any:
        # Errors cross process boundaries (Dask) as class, message and code only: the
        # op and node_def belong to the sender's graph.
        return type(self), (None, None, self._message, self._error_code)


def _error_class(name: str, code: int, doc: str) -> type[OpError]:
    def __init__(self: OpError, node_def: Any, op: Any, message: str, *args: Any) -> None:
        OpError.__init__(self, node_def, op, message, code)

    return type(name, (OpError,), {"__init__": __init__, "__doc__": doc, "error_code_default": code})


CancelledError = _error_class("CancelledError", CANCELLED, "The step was cancelled.")
UnknownError = _error_class("UnknownError", UNKNOWN, "An unknown error (e.g. an exception in a kernel).")
InvalidArgumentError = _error_class(
    "InvalidArgumentError", INVALID_ARGUMENT, "An op received an invalid argument."
)
DeadlineExceededError = _error_class(
    "DeadlineExceededError", DEADLINE_EXCEEDED, "The step ran past its deadline."
)
NotFoundError = _error_class("NotFoundError", NOT_FOUND, "A requested entity was not found.")
AlreadyExistsError = _error_class("AlreadyExistsError", ALREADY_EXISTS, "The entity already exists.")
PermissionDeniedError = _error_class(
    "PermissionDeniedError", PERMISSION_DENIED, "The caller may not run the operation."
)
UnauthenticatedError = _error_class(
    "UnauthenticatedError", UNAUTHENTICATED, "The request has no valid credentials."
)
ResourceExhaustedError = _error_class(
    "ResourceExhaustedError", RESOURCE_EXHAUSTED, "Some resource (memory, ...) is exhausted."
)
FailedPreconditionError = _error_class(
    "FailedPreconditionError",
    FAILED_PRECONDITION,
    "The system is not in a state to run the op (e.g. an uninitialized variable).",
)
AbortedError = _error_class("AbortedError", ABORTED, "The operation was aborted.")
OutOfRangeError = _error_class(
    "OutOfRangeError", OUT_OF_RANGE, "Iteration past the end (e.g. a closed, empty queue)."
)
UnimplementedError = _error_class(
    "UnimplementedError", UNIMPLEMENTED, "The operation is not implemented or supported."
)
InternalError = _error_class("InternalError", INTERNAL, "An internal invariant broke.")
UnavailableError = _error_class("UnavailableError", UNAVAILABLE, "A task or service is unavailable.")
DataLossError = _error_class("DataLossError", DATA_LOSS, "Unrecoverable data loss or corruption.")

_CODE_TO_CLASS = {
    cls.error_code_default: cls
    for cls in (
        CancelledError, UnknownError, InvalidArgumentError, DeadlineExceededError,
        NotFoundError, AlreadyExistsError, PermissionDeniedError, UnauthenticatedError,
        ResourceExhaustedError, FailedPreconditionError, AbortedError, OutOfRangeError,
        UnimplementedError, InternalError, UnavailableError, DataLossError,
    )
}


def exception_type_from_error_code(code: int) -> type[OpError]:
    """The OpError subclass for a canonical code (KeyError for OK or unknown codes)."""
    return _CODE_TO_CLASS[code]


def error_code_from_exception_type(cls: type) -> int:
    """The canonical code of an OpError subclass; UNKNOWN for any other class."""
    if isinstance(cls, type) and issubclass(cls, OpError) and cls is not OpError:
        return cls.error_code_default
    return UNKNOWN


class OperatorNotAllowedInGraphError(TypeError):
    """A Python operation a symbolic graph Tensor cannot support (`bool(t)`, `iter(t)`).

    A TypeError, as TensorFlow's class of the same name (which tf.errors does not
    export either).
    """


__all__ = [
    "OpError", "CancelledError", "UnknownError", "InvalidArgumentError",
    "DeadlineExceededError", "NotFoundError", "AlreadyExistsError", "PermissionDeniedError",
    "UnauthenticatedError", "ResourceExhaustedError", "FailedPreconditionError",
    "AbortedError", "OutOfRangeError", "UnimplementedError", "InternalError",
    "UnavailableError", "DataLossError", "exception_type_from_error_code",
    "error_code_from_exception_type", "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
    "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
]
