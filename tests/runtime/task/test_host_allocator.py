"""The host allocator tuning: once per process, on glibc, and never against the user's
own malloc settings."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

_PROBE = (
    "from flowlab.kernels import host_allocator as h; "
    "print(h.tune(), h.tune())"
)


def _probe(**env: str) -> str:
    full = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    full.pop("FLOWLAB_MALLOC_TUNE", None)
    full.update(env)
    out = subprocess.run([sys.executable, "-c", _PROBE], env=full, capture_output=True,
                         text=True, check=True)
    return out.stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt only")
def test_tunes_once_per_process() -> None:
    assert _probe() == "True False"


def test_leaves_the_users_settings_alone() -> None:
    assert _probe(FLOWLAB_MALLOC_TUNE="0") == "False False"
    assert _probe(MALLOC_MMAP_THRESHOLD_="131072") == "False False"


def test_a_session_tunes_it() -> None:
    code = ("import flowlab as fl; from flowlab.kernels import host_allocator as h; "
            "fl.Session(graph=fl.Graph()); print(h.tune())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"  # already done by the session's devices
