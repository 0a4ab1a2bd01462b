"""A real JupyterLab for browser tests and benchmarks: the server (tests/browser_support.py
starts it and stops it by its PID), the system Chromium, notebooks written through the
contents API and run through JupyterLab's own commands (`window.jupyterapp`, exposed
with `--LabApp.expose_app_in_browser`).  User settings live in a temporary folder: the
notebook saves its widgets' state and JupyterLab asks nothing about news."""

from __future__ import annotations

import json
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.browser_support import chromium, free_port, server

ARTIFACTS = Path(__file__).parent / "artifacts"
# The README's screenshots (committed): written by the tests that show what they show.
IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"


def _notebook(*sources: str) -> dict[str, Any]:
    return {
        "nbformat": 4, "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                    "language": "python"}},
        "cells": [{"cell_type": "code", "id": f"c{i}", "metadata": {}, "source": s,
                   "outputs": [], "execution_count": None} for i, s in enumerate(sources)],
    }


class Lab:
    """The running server, the browser context, and how to open a notebook in it."""

    def __init__(self, base: str, ctx: Any, root: Path) -> None:
        self.base = base
        self.ctx = ctx
        self.root = root

    def open(self, name: str, *sources: str) -> Any:
        """Open notebook `name` in a new page, first written with `sources` as its cells
        (none: open it as it is on disk)."""
        if sources:
            body = json.dumps({"type": "notebook", "format": "json", "content": _notebook(*sources)})
            req = urllib.request.Request(f"{self.base}/api/contents/{name}", data=body.encode(),
                                         method="PUT", headers={"Content-Type": "application/json"})
            urllib.request.urlopen(req, timeout=30).read()
        page = self.ctx.new_page()
        page.dialogs = []  # type: ignore[attr-defined]
        page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
        page.goto(f"{self.base}/lab/tree/{name}?reset", wait_until="domcontentloaded")
        page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
                               " && window.jupyterapp.shell.currentWidget.sessionContext"
                               " && window.jupyterapp.shell.currentWidget.sessionContext.session"
                               " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel",
                               timeout=60_000)
        page.wait_for_function("() => window.jupyterapp.shell.currentWidget.sessionContext"
                               ".session.kernel.status === 'idle'", timeout=90_000)
        return page

    @staticmethod
    def run_cell(page: Any, index: int) -> None:
        """Start running cell `index` alone; does not wait for it."""
        page.evaluate(f"""() => {{
            const nb = window.jupyterapp.shell.currentWidget;
            nb.content.activeCellIndex = {index};
            window.jupyterapp.commands.execute('notebook:run-cell');
        }}""")

    @staticmethod
    def run_all(page: Any) -> None:
        """Start running every cell; does not wait for them (the command resolves late)."""
        page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")


def save_image(locator: Any, name: str) -> Path:
    """A screenshot of one widget (not the page: smaller, and the same whatever the
    JupyterLab around it) as docs/images/`name`, and a copy in the test artifacts."""
    IMAGES.mkdir(parents=True, exist_ok=True)
    ARTIFACTS.mkdir(exist_ok=True)
    # No caret or animation in the picture: it changes only when the UI does.
    png = locator.screenshot(animations="disabled", caret="hide")
    (ARTIFACTS / name).write_bytes(png)
    path = IMAGES / name
    if not path.exists() or path.read_bytes() != png:
        path.write_bytes(png)
    return path


@contextmanager
def jupyter_lab(root: Path) -> Iterator[Lab]:
    """A `jupyter lab` server on 127.0.0.1 (free port, no token, stopped by its PID) and
    a headless system Chromium, for as long as the block runs; files under `root`."""
    settings = root / "settings"
    # The notebook saves its widgets' state (so a reopened one draws without a kernel),
    # and JupyterLab asks nothing about news (a pop-up over the view).
    for plugin, values in {"@jupyter-widgets/jupyterlab-manager/plugin": {"saveState": True},
                           "@jupyterlab/apputils-extension/notification": {"fetchNews": "false"}}.items():
        path = settings / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    port = free_port()
    env_cmd = [
        sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        "--ServerApp.token=", "--ServerApp.password=", "--ServerApp.disable_check_xsrf=True",
        f"--ServerApp.root_dir={root}", "--LabApp.expose_app_in_browser=True",
        f"--LabApp.user_settings_dir={settings}", f"--LabApp.workspaces_dir={root / 'workspaces'}",
    ]
    base = f"http://127.0.0.1:{port}"
    ARTIFACTS.mkdir(exist_ok=True)
    with server(env_cmd, root / "lab.log", f"{base}/api/status", b"started", timeout=120), \
            chromium(root / "profile") as ctx:
        ctx.set_default_timeout(60_000)
        yield Lab(base, ctx, root)


