"""`tf.flags` / `tf.app.flags`: absl-py's flags, as TensorFlow 1.x routes them.

Everything is `absl.flags` (DEFINE_string/integer/float/boolean/list/enum/multi_*,
FlagValues, validators); the definitions land in absl's global `FLAGS`, which
`tf.app.run` (and `absl.app.run`) parse.  Two TensorFlow behaviours on top:

- `DEFINE_string/boolean/bool/float/integer` also accept the old keyword names
  `flag_name`, `default_value`, `docstring` (with a deprecation warning);
- reading `FLAGS.x` before the flags were parsed parses `sys.argv` first (absl
  raises UnparsedFlagAccessError instead).

    tf.flags.DEFINE_integer("batch_size", 32, "Examples per step.")
    FLAGS = tf.flags.FLAGS
"""

from __future__ import annotations

import logging as _logging
import sys as _sys
from collections.abc import Callable
from typing import Any

from absl.flags import *  # noqa: F403 - the module re-exports absl.flags
from absl.flags import FLAGS as _ABSL_FLAGS
from absl.flags import DEFINE_boolean as _DEFINE_boolean
from absl.flags import DEFINE_float as _DEFINE_float
from absl.flags import DEFINE_integer as _DEFINE_integer
from absl.flags import DEFINE_string as _DEFINE_string
from absl.flags import disclaim_key_flags

disclaim_key_flags()

_RENAMED = {"flag_name": "name", "default_value": "default", "docstring": "help"}


def _accept_old_names(define: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        old = [k for k in _RENAMED if k in kwargs]
        for k in old:
            kwargs[_RENAMED[k]] = kwargs.pop(k)
        if old:
            _logging.warning("Use of the keyword argument names (flag_name, default_value, "
                             "docstring) is deprecated, please use (name, default, help) instead.")
        return define(*args, **kwargs)

    wrapper.__name__ = define.__name__
    wrapper.__doc__ = define.__doc__
    return wrapper


DEFINE_string = _accept_old_names(_DEFINE_string)
DEFINE_boolean = _accept_old_names(_DEFINE_boolean)
DEFINE_bool = DEFINE_boolean  # absl exports both names
DEFINE_float = _accept_old_names(_DEFINE_float)
DEFINE_integer = _accept_old_names(_DEFINE_integer)


class _ParseOnFirstRead:
    """absl's FLAGS, parsing `sys.argv` when a value is read before parsing."""

    def __init__(self, flag_values: Any) -> None:
        self.__dict__["_wrapped"] = flag_values

    def __getattr__(self, name: str) -> Any:
        wrapped = self.__dict__["_wrapped"]
        if not wrapped.is_parsed():
            wrapped(_sys.argv)
        return getattr(wrapped, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.__dict__["_wrapped"], name, value)

    def __delattr__(self, name: str) -> None:
        delattr(self.__dict__["_wrapped"], name)

    def __dir__(self) -> list[str]:
        return dir(self.__dict__["_wrapped"])

    def __getitem__(self, name: str) -> Any:
        return self.__dict__["_wrapped"][name]

    def __setitem__(self, name: str, flag: Any) -> None:
        self.__dict__["_wrapped"][name] = flag

    def __contains__(self, name: str) -> bool:
        return name in self.__dict__["_wrapped"]

    def __len__(self) -> int:
        return len(self.__dict__["_wrapped"])

    def __iter__(self) -> Any:
        return iter(self.__dict__["_wrapped"])

    def __str__(self) -> str:
        return str(self.__dict__["_wrapped"])

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__dict__["_wrapped"](*args, **kwargs)


FLAGS = _ParseOnFirstRead(_ABSL_FLAGS)
