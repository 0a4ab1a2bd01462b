"""`tf.logging`: TensorFlow 1.x's logging functions on Python's `logging`.

Messages go to the logger named "tensorflow" (what programs written for TensorFlow
configure), at the standard levels (`DEBUG` 10 ... `FATAL` 50).  As TensorFlow's
`get_logger()` does, the first use attaches a stderr handler with
`logging.BASIC_FORMAT` ("INFO:tensorflow:step 10") when the root logger has no
handler -- unless the logger already has one (TensorFlow itself, imported in the
same process, may have attached it) -- and in an interactive interpreter sets INFO
and writes to stdout.

    tf.logging.set_verbosity(tf.logging.INFO)
    tf.logging.info("step %d: loss %.3f", 10, 0.25)
"""

from __future__ import annotations

import logging as _logging
import sys
import threading
from logging import DEBUG, ERROR, FATAL, INFO, WARN
from typing import Any

__all__ = [
    "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "get_logger", "log", "debug", "info", "warn",
    "warning", "error", "fatal", "vlog", "log_if", "log_every_n", "log_first_n", "flush",
    "get_verbosity", "set_verbosity", "TaskLevelStatusMessage",
]

_logger: _logging.Logger | None = None
_lock = threading.Lock()
_counts: dict[Any, int] = {}


def get_logger() -> _logging.Logger:
    """The "tensorflow" logger, with its handler attached on first use."""
    global _logger
    if _logger is not None:
        return _logger
    with _lock:
        if _logger is None:
            logger = _logging.getLogger("tensorflow")
            if not _logging.getLogger().handlers and not logger.handlers:
                interactive = hasattr(sys, "ps1") or bool(sys.flags.interactive)
                if interactive:
                    logger.setLevel(INFO)
                handler = _logging.StreamHandler(sys.stdout if interactive else sys.stderr)
                handler.setFormatter(_logging.Formatter(_logging.BASIC_FORMAT, None))
                logger.addHandler(handler)
            _logger = logger
    return _logger


# stacklevel=2: the record names the caller of tf.logging.info, not this module.
def log(level: int, msg: Any, *args: Any, **kwargs: Any) -> None:
    get_logger().log(level, msg, *args, stacklevel=2, **kwargs)


def debug(msg: Any, *args: Any, **kwargs: Any) -> None:
    get_logger().debug(msg, *args, stacklevel=2, **kwargs)


def info(msg: Any, *args: Any, **kwargs: Any) -> None:
    get_logger().info(msg, *args, stacklevel=2, **kwargs)


def warn(msg: Any, *args: Any, **kwargs: Any) -> None:
    get_logger().warning(msg, *args, stacklevel=2, **kwargs)


def warning(msg: Any, *args: Any, **kwargs: Any) -> None:
    get_logger().warning(msg, *args, stacklevel=2, **kwargs)


def error(msg: Any, *args: Any, **kwargs: Any) -> None:
    get_logger().error(msg, *args, stacklevel=2, **kwargs)


def fatal(msg: Any, *args: Any, **kwargs: Any) -> None:
    """Log at FATAL (CRITICAL); like TensorFlow's, it does not exit."""
    get_logger().critical(msg, *args, stacklevel=2, **kwargs)


def vlog(level: int, msg: Any, *args: Any, **kwargs: Any) -> None:
    get_logger().log(level, msg, *args, stacklevel=2, **kwargs)


def log_if(level: int, msg: Any, condition: Any, *args: Any) -> None:
    if condition:
        get_logger().log(level, msg, *args, stacklevel=3)


def _count_for_caller() -> int:
    frame = sys._getframe(2)
    key = (frame.f_code.co_filename, frame.f_lineno)
    _counts[key] = _counts.get(key, -1) + 1
    return _counts[key]


def log_every_n(level: int, msg: Any, n: int, *args: Any) -> None:
    """Log the 1st, (n+1)th, (2n+1)th ... call from the same line."""
    if _count_for_caller() % n == 0:
        get_logger().log(level, msg, *args, stacklevel=2)


def log_first_n(level: int, msg: Any, n: int, *args: Any) -> None:
    """Log only the first `n` calls from the same line."""
    if _count_for_caller() < n:
        get_logger().log(level, msg, *args, stacklevel=2)


def flush() -> None:
    """NotImplementedError, as TensorFlow's."""
    raise NotImplementedError()


def get_verbosity() -> int:
    return get_logger().getEffectiveLevel()


def set_verbosity(v: int) -> None:
    get_logger().setLevel(v)


def TaskLevelStatusMessage(msg: Any) -> None:  # noqa: N802 - TensorFlow's name
    error(msg)
