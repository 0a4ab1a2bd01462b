"""The binder/ files alone build an environment in which the whole course runs, within
Binder's memory.

What mybinder.org's repo2docker does with this repository, minus the container: a
fresh virtual environment of the Python that `binder/runtime.txt` names (no `.venv`,
no test tools), `pip install -r binder/requirements.txt`, then `binder/postBuild` run
from the root of the committed tree (`git archive HEAD`: Binder builds a commit, and
the build must not touch the working tree's extension/ or flowlab/labextension).
Then JupyterLab is started from that environment on 127.0.0.1, the flowlab-widgets
extension must be in the page it serves, and every notebook runs there, through the
server's kernels (`run_in_lab.py`), with the exercises' solutions filled in: each
check must say "right".  The resident memory of the server's process tree (server,
kernel, the kernel's Dask workers) is sampled while each notebook runs: the heaviest
must stay under 1.5 GB (Binder gives 2 GB).

`graphviz` (binder/apt.txt) and node (repo2docker's base environment has it; it builds
the extension into the wheel) come from the machine.  The test takes minutes (pip
installs from its cache, jlpm builds the extension, eleven notebooks run), so it runs
in the main pass of `./scripts/test` only, not in the portability pass.
"""

from __future__ import annotations

import json
import os
import pathlib
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BINDER = ROOT / "binder"
PEAK_RSS_LIMIT = 1.5 * 2**30

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(bool(os.environ.get("NPY_DISABLE_CPU_FEATURES")),
                       reason="main pass only: the portability pass reruns the Python tests"),
]


def _python_of_runtime_txt() -> str:
    version = (BINDER / "runtime.txt").read_text().strip().removeprefix("python-")
    found = shutil.which(f"python{version}")
    if found is None:
        pytest.skip(f"binder/runtime.txt asks for Python {version}, which is not on PATH")
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(cmd: list[str], log: pathlib.Path, **kw) -> None:
    with log.open("a") as out:
        out.write(f"\n$ {' '.join(cmd)}\n")
        out.flush()
        done = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=1200, **kw)
    if done.returncode != 0:
        tail = "\n".join(log.read_text().splitlines()[-40:])
        pytest.fail(f"{' '.join(cmd)} exited with {done.returncode}:\n{tail}")


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read().decode()


def test_binder_files_alone_build_an_environment_that_runs_every_notebook(tmp_path):
    python = _python_of_runtime_txt()
    if shutil.which("node") is None:
        pytest.skip("node is not installed: it builds the JupyterLab extension into the wheel")
    if shutil.which("dot") is None:
        pytest.skip("graphviz (binder/apt.txt) is not installed")
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: Binder builds a commit")

    src, venv, log = tmp_path / "src", tmp_path / "venv", tmp_path / "build.log"
    src.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "HEAD"], capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    _run([python, "-m", "venv", str(venv)], log, env=env)
    _run([str(venv / "bin" / "pip"), "install", "-r", str(src / "binder" / "requirements.txt")],
         log, env=env)
    _run(["bash", str(src / "binder" / "postBuild")], log, env=env, cwd=src)

    py = str(venv / "bin" / "python")
    # Only what a learner needs: none of the test tools came along.
    absent = subprocess.run(
        [py, "-c", "import importlib.util as u; print([m for m in "
         "('pytest', 'ruff', 'mypy', 'tensorflow', 'nbmake') if u.find_spec(m)])"],
        capture_output=True, text=True, env=env, check=True).stdout.strip()
    assert absent == "[]", f"the Binder environment has test tools: {absent}"

    port, token = _free_port(), secrets.token_hex(16)
    url = f"http://127.0.0.1:{port}"
    server_log = (tmp_path / "lab.log").open("w")
    lab = subprocess.Popen(
        [str(venv / "bin" / "jupyter"), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={src}",
         # As ./scripts/lab does: containers and CI machines often run as root.
         *(["--allow-root"] if os.geteuid() == 0 else [])],
        stdout=server_log, stderr=subprocess.STDOUT, env=env, cwd=src)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                _get(f"{url}/api/status?token={token}")
                break
            except OSError:
                if lab.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not start:\n{(tmp_path / 'lab.log').read_text()[-3000:]}")
                time.sleep(0.5)
        page = _get(f"{url}/lab?token={token}")
        assert "flowlab-widgets" in page, "JupyterLab's page does not load the flowlab-widgets extension"

        notebooks = sorted(str(p) for p in (src / "notebooks").glob("*.ipynb"))
        out = tmp_path / "notebooks.json"
        done = subprocess.run(
            [py, str(ROOT / "tests" / "binder" / "run_in_lab.py"), url, token, str(lab.pid),
             str(out), *notebooks],
            capture_output=True, text=True, env=env, timeout=1500)
        assert done.returncode == 0, done.stderr[-3000:]
        results = json.loads(out.read_text())
    finally:
        lab.terminate()  # by its PID: only the server this test started
        try:
            lab.wait(timeout=30)
        except subprocess.TimeoutExpired:
            lab.kill()
            lab.wait()
        server_log.close()

    summary = {name: {"seconds": r["seconds"], "peak_rss_MiB": round(r["peak_rss_bytes"] / 2**20)}
               for name, r in results.items()}
    print(json.dumps(summary, indent=1), file=sys.stderr)
    assert sorted(results) == sorted(pathlib.Path(p).name for p in notebooks)
    failed = {name: r["error"] for name, r in results.items() if r["error"]}
    assert not failed, f"notebooks failed in JupyterLab: {json.dumps(failed, indent=1)}"
    wrong = {name: said for name, r in results.items() for said in r["checks"]
             if not said.startswith("right")}
    assert not wrong, f"checks that do not say 'right' with the solutions: {wrong}"
    heaviest = max(results, key=lambda n: results[n]["peak_rss_bytes"])
    peak = results[heaviest]["peak_rss_bytes"]
    assert peak < PEAK_RSS_LIMIT, (
        f"{heaviest} peaked at {peak / 2**30:.2f} GB with JupyterLab and its Dask cluster: "
        f"over the 1.5 GB budget (Binder's limit is 2 GB)")
