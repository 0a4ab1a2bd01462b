"""Kernel of PrintV2 (flowlab.ops.print_v2): the string and `end` to a stream, the
"tensorflow" logger, or appended to a file."""

from __future__ import annotations

import logging
import sys
from typing import Any

import numpy as np

from flowlab.kernels.registry import CPU, kernel


@kernel("PrintV2", devices=CPU)
def print_v2(ctx: Any, input: Any) -> None:  # noqa: A002
    s = np.asarray(input, dtype=object).item()
    text = (s.decode("utf-8", "replace") if isinstance(s, bytes) else str(s))
    stream, end = ctx.attrs["output_stream"], ctx.attrs["end"]
    if stream in ("stderr", "stdout"):
        out = sys.stderr if stream == "stderr" else sys.stdout
        out.write(text + end)
        out.flush()
    elif stream.startswith("log("):
        # The "tensorflow" logger tf.logging writes to (the platform layer is above kernels).
        getattr(logging.getLogger("tensorflow"), stream[4:-1])(text)
    else:
        with open(stream[len("file://"):], "a", encoding="utf-8") as f:
            f.write(text + end)
