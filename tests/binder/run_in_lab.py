"""Run notebooks in a running JupyterLab, as a browser's notebook panel does, and
measure the memory they take.

Run by the Python of the environment under test (it needs only the standard library,
tornado and psutil, which JupyterLab and Dask bring):

    python run_in_lab.py URL TOKEN SERVER_PID OUT.json NOTEBOOK...

For each notebook: a session through the server's REST API (`POST /api/sessions`, a
fresh `python3` kernel), every code cell sent as an `execute_request` over the
kernel's websocket (`/api/kernels/<id>/channels`), the cell's stream output and any
error collected, the session deleted.  Cells whose metadata has `flowlab.solution`
run that solution instead of the learner's `answer = None`, so the exercises' checks
can be read.  While a notebook runs, the resident memory of the server's whole
process tree (server, kernel, the kernel's Dask workers) is sampled every 0.1 s; its
peak is that notebook's `peak_rss_bytes` -- what a Binder container's memory limit
counts.  OUT.json gets `{notebook: {"seconds", "peak_rss_bytes", "error",
"checks": [what each check cell printed]}}`.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import urllib.request
import uuid

import psutil
from tornado import ioloop, websocket

CELL_TIMEOUT_S = 240


def tree_rss(pid: int) -> int:
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


class Sampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self.running = pid, 0, True

    def run(self) -> None:
        while self.running:
            self.peak = max(self.peak, tree_rss(self.pid))
            time.sleep(0.1)


def api(url: str, token: str, method: str, path: str, body: dict | None = None) -> dict:
    req = urllib.request.Request(
        f"{url}{path}", method=method, data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        data = r.read()
    return json.loads(data) if data else {}


async def run_cells(ws_url: str, sources: list[tuple[str, bool]]) -> tuple[list[str], str | None]:
    """Execute the cells in order; (what each check cell printed, the first error)."""
    conn = await websocket.websocket_connect(ws_url, max_message_size=64 * 2**20)
    session = uuid.uuid4().hex
    checks: list[str] = []
    try:
        for source, is_check in sources:
            msg_id = uuid.uuid4().hex
            await conn.write_message(json.dumps({
                "header": {"msg_id": msg_id, "username": "test", "session": session,
                           "msg_type": "execute_request", "version": "5.3"},
                "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
                "content": {"code": source, "silent": False, "store_history": True,
                            "user_expressions": {}, "allow_stdin": False, "stop_on_error": True},
            }))
            out: list[str] = []
            idle = replied = False
            error = None
            deadline = time.monotonic() + CELL_TIMEOUT_S
            while not (idle and replied):
                if time.monotonic() > deadline:
                    return checks, f"cell timed out after {CELL_TIMEOUT_S} s:\n{source[:300]}"
                raw = await conn.read_message()
                if raw is None:
                    return checks, "the kernel's websocket closed"
                if isinstance(raw, bytes):  # binary frames carry widget buffers: not ours
                    continue
                msg = json.loads(raw)
                if msg.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                kind, content = msg["msg_type"], msg["content"]
                if kind == "stream" and content.get("name") == "stdout":
                    out.append(content["text"])
                elif kind == "error":
                    error = f"{content['ename']}: {content['evalue']}"
                elif kind == "status" and content.get("execution_state") == "idle":
                    idle = True
                elif kind == "execute_reply":
                    replied = True
                    if content.get("status") == "error" and error is None:
                        error = f"{content.get('ename')}: {content.get('evalue')}"
            if error is not None:
                return checks, f"{error}\nin the cell:\n{source[:500]}"
            if is_check:
                checks.append("".join(out))
    finally:
        conn.close()
    return checks, None


def run_notebook(url: str, token: str, server_pid: int, path: str) -> dict:
    nb = json.loads(open(path, encoding="utf-8").read())
    sources = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        meta = cell.get("metadata", {}).get("flowlab", {})
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        sources.append((meta.get("solution", source), "check" in meta))
    name = path.rsplit("/", 1)[-1]
    sess = api(url, token, "POST", "/api/sessions",
               {"path": f"notebooks/{name}", "name": name, "type": "notebook",
                "kernel": {"name": "python3"}})
    kernel = sess["kernel"]["id"]
    ws_url = url.replace("http://", "ws://") + f"/api/kernels/{kernel}/channels?token={token}"
    sampler = Sampler(server_pid)
    sampler.start()
    t0 = time.monotonic()
    try:
        checks, error = ioloop.IOLoop.current().run_sync(lambda: run_cells(ws_url, sources))
    finally:
        seconds = time.monotonic() - t0
        sampler.running = False
        sampler.join()
        api(url, token, "DELETE", f"/api/sessions/{sess['id']}")
    return {"seconds": round(seconds, 1), "peak_rss_bytes": sampler.peak, "error": error,
            "checks": checks}


def main(argv: list[str]) -> None:
    url, token, server_pid, out = argv[1], argv[2], int(argv[3]), argv[4]
    results = {}
    for path in argv[5:]:
        results[path.rsplit("/", 1)[-1]] = run_notebook(url, token, server_pid, path)
        with open(out, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main(sys.argv)
