"""`%load_ext tensorboard` / `%tensorboard --logdir` in IPython serve a flowlab logdir
(the server it launches binds 127.0.0.1 on a free port and is stopped by its PID)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sys
import time
import urllib.request

import pytest

import flowlab as fl

pytestmark = pytest.mark.slow


def test_tensorboard_magic_serves_flowlab_logs(tmp_path, monkeypatch, capsys):
    pytest.importorskip("IPython")
    from IPython.testing.globalipapp import start_ipython
    from tensorboard import manager

    with fl.Graph().as_default(), fl.summary.FileWriter(str(tmp_path / "logs")) as w:
        for step in range(3):
            w.add_summary(fl.Summary(value=[fl.Summary.Value(tag="acc", simple_value=step / 4)]), step)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    exe = os.path.join(os.path.dirname(sys.executable), "tensorboard")
    if os.path.exists(exe):
        monkeypatch.setenv("TENSORBOARD_BINARY", exe)
    shell = start_ipython()
    shell.run_line_magic("load_ext", "tensorboard")
    shell.run_line_magic("tensorboard", f"--logdir {tmp_path / 'logs'} --host 127.0.0.1 --port {port}")
    infos = [i for i in manager.get_all() if i.port == port]
    if not infos:  # the launcher gave up waiting: stop the server it started, by its PID
        out = capsys.readouterr().out
        found = re.search(r"running as pid (\d+)", out)
        if found:
            os.kill(int(found.group(1)), signal.SIGTERM)
        pytest.fail(f"%tensorboard did not start a server: {out}")
    pid = infos[0].pid
    try:
        deadline = time.monotonic() + 60
        tags: dict = {}
        while time.monotonic() < deadline and "acc" not in tags.get(".", {}):
            time.sleep(0.5)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/data/plugin/scalars/tags", timeout=10) as r:
                tags = json.loads(r.read())
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/data/plugin/scalars/scalars?tag=acc&run=.",
                                    timeout=10) as r:
            rows = json.loads(r.read())
        assert [(step, value) for _, step, value in rows] == [(0, 0.0), (1, 0.25), (2, 0.5)]
    finally:
        os.kill(pid, signal.SIGTERM)
        # The launcher's child: reap it here (subprocess may already have: then it is gone).
        # tensorboard's launcher drops its Popen object at once, hence a ResourceWarning
        # "subprocess ... is still running" that is tensorboard's, not a leak.
        deadline = time.monotonic() + 20
        try:
            while time.monotonic() < deadline and os.waitpid(pid, os.WNOHANG)[0] != pid:
                time.sleep(0.1)
            if time.monotonic() >= deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
        except ChildProcessError:
            pass
