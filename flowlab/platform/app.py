"""`tf.app`: `run(main, argv)` and `flags`, on absl-py's `app.run`.

`run` parses the command line into `tf.flags.FLAGS` -- flags nobody defined are left
in argv instead of failing (TensorFlow's `known_only=True` parser) -- then calls
`main(argv)` and exits with its return value, as absl does (`--help` prints the
flags and exits 0; a bad flag value prints the error and exits 1).  `main` defaults
to the `main` of the `__main__` module.

    def main(argv):
        print(FLAGS.learning_rate)
    if __name__ == "__main__":
        tf.app.run()
"""

from __future__ import annotations

import sys as _sys
from collections.abc import Callable
from typing import Any

from absl.app import run as _absl_run

from flowlab.platform import flags

__all__ = ["run", "flags"]


def _parse_flags_tolerate_undef(argv: list[str]) -> Any:
    return flags.FLAGS(_sys.argv if argv is None else argv, known_only=True)


def run(main: Callable[..., Any] | None = None, argv: list[str] | None = None) -> None:
    """Parse flags, run `main(argv)` and `sys.exit` with its result."""
    main = main or _sys.modules["__main__"].main
    _absl_run(main=main, argv=argv, flags_parser=_parse_flags_tolerate_undef)
