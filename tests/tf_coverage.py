"""The coverage table: every public name of TensorFlow's `tf.compat.v1` (its main
modules) with flowlab's status, generated from the code.

    .venv/bin/python -m tests.tf_coverage          # rewrite docs/tf-coverage.{md,json}
    .venv/bin/python -m tests.tf_coverage --check  # exit 1 when a name lost its status

A name's status is one of

- ``tested``: flowlab has it (the same dotted path resolves on `flowlab`) and a
  differential test uses it: a test file that takes TensorFlow as the `tf1` or `tf_ref`
  fixture refers to it as ``tf.<module>.<name>`` (or through ``tf1.``/``fl.``/``flowlab.``
  or ``getattr(tf, "<name>")``), so the same code is run under both;
- ``present``: flowlab has it, no differential test was found for it;
- ``missing``: flowlab has no such name.

"Found" is a static reading of the test files (Python's `ast`), not of what ran: a
name used only through a helper in another file, or built from a string at run time,
counts as present, not tested.  The table is a lower bound in that sense.

TensorFlow's names are read from TensorFlow itself when it is installed (`--write`);
the committed JSON keeps them, so `--check` and `tests/test_tf_coverage.py` need no
TensorFlow: they recompute flowlab's side for the committed names and fail when a name
marked tested (or present) lost that status.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys
import types
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
TABLE_JSON = ROOT / "docs" / "tf-coverage.json"
TABLE_MD = ROOT / "docs" / "tf-coverage.md"

# `tf.compat.v1`'s main modules ("" is the top level).  Submodules are not names.
MODULES = ("", "nn", "train", "layers", "linalg", "math", "losses", "image", "metrics", "data",
           "summary", "sparse", "strings", "io", "random", "initializers", "errors", "logging",
           "gfile", "app", "flags", "test", "python_io")
_ROOTS = {"tf", "tf1", "fl", "flowlab", "tf_ref"}
_FIXTURES = {"tf1", "tf_ref"}
TESTED, PRESENT, MISSING = "tested", "present", "missing"


# --- TensorFlow's side ---------------------------------------------------------------
# TensorFlow 2.x builds `tf.compat.v1.layers` from the tf_keras package (without it the
# namespace holds only InputSpec); these are its names in TensorFlow 1.15, where TF1
# programs found them.
_TF1_LAYERS = sorted("""
    AveragePooling1D AveragePooling2D AveragePooling3D BatchNormalization Conv1D Conv2D
    Conv2DTranspose Conv3D Conv3DTranspose Dense Dropout Flatten InputSpec Layer
    MaxPooling1D MaxPooling2D MaxPooling3D SeparableConv1D SeparableConv2D
    average_pooling1d average_pooling2d average_pooling3d batch_normalization conv1d conv2d
    conv2d_transpose conv3d conv3d_transpose dense dropout flatten max_pooling1d
    max_pooling2d max_pooling3d separable_conv1d separable_conv2d""".split())


def tensorflow_names() -> dict[str, list[str]]:
    """{module: its public non-module names} of the installed TensorFlow's tf.compat.v1
    (`tf.layers`: TensorFlow 1.15's)."""
    os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf  # type: ignore[import-not-found]

    out = {}
    for module in MODULES:
        if module == "layers":
            out[module] = _TF1_LAYERS
            continue
        obj = tf.compat.v1 if not module else getattr(tf.compat.v1, module)
        out[module] = sorted(n for n in dir(obj) if not n.startswith("_")
                             and not isinstance(getattr(obj, n), types.ModuleType))
    return out


# --- flowlab's side ------------------------------------------------------------------
def flowlab_has(module: str, name: str) -> bool:
    import flowlab

    obj: Any = flowlab
    for part in ([module] if module else []) + [name]:
        try:
            obj = getattr(obj, part)
        except Exception:  # noqa: BLE001 - a lazy attribute that fails is missing too
            return False
    return True


def _chains(tree: ast.AST) -> Iterable[tuple[str, ...]]:
    """Attribute chains rooted at a TensorFlow-or-flowlab name: `tf.nn.relu` ->
    ("nn", "relu"); `getattr(tf.nn, "relu")` -> the same."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            parts = []
            cur: ast.AST = node
            while isinstance(cur, ast.Attribute):
                parts.append(cur.attr)
                cur = cur.value
            if isinstance(cur, ast.Name) and cur.id in _ROOTS:
                yield tuple(reversed(parts))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id == "getattr" and len(node.args) >= 2
              and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
            base = node.args[0]
            prefix: list[str] = []
            while isinstance(base, ast.Attribute):
                prefix.append(base.attr)
                base = base.value
            if isinstance(base, ast.Name) and base.id in _ROOTS:
                yield (*reversed(prefix), node.args[1].value)


def _is_differential(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.Lambda)):
            if any(a.arg in _FIXTURES for a in node.args.args):
                return True
    return False


def tested_names(tests: Path = TESTS) -> dict[tuple[str, str], str]:
    """{(module, name): a test file that uses it differentially}."""
    found: dict[tuple[str, str], str] = {}
    modules = set(MODULES)
    for path in sorted(tests.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if not _is_differential(tree):
            continue
        rel = path.relative_to(ROOT).as_posix()
        for chain in _chains(tree):
            if chain[0] in _ROOTS:
                continue
            found.setdefault(("", chain[0]), rel)
            if len(chain) >= 2 and chain[0] in modules:
                found.setdefault((chain[0], chain[1]), rel)
    return found


def statuses(tf_names: dict[str, list[str]]) -> dict[str, dict[str, dict[str, str]]]:
    """{module: {name: {"status": ..., "test": file (tested only)}}}."""
    tested = tested_names()
    table: dict[str, dict[str, dict[str, str]]] = {}
    for module, names in tf_names.items():
        rows = table[module] = {}
        for name in names:
            if not flowlab_has(module, name):
                rows[name] = {"status": MISSING}
            elif (module, name) in tested:
                rows[name] = {"status": TESTED, "test": tested[(module, name)]}
            else:
                rows[name] = {"status": PRESENT}
    return table


# --- the table -----------------------------------------------------------------------
def _label(module: str) -> str:
    return f"tf.{module}" if module else "tf"


def render_markdown(table: dict[str, dict[str, dict[str, str]]], tf_version: str) -> str:
    lines = [
        "# TensorFlow 1.x API coverage",
        "",
        f"Every public name of TensorFlow {tf_version}'s `tf.compat.v1` in its main modules, "
        "with flowlab's status. Generated by `.venv/bin/python -m tests.tf_coverage` "
        "(the rules are in that file's docstring): **tested** -- flowlab has it and a "
        "differential test runs it beside TensorFlow; **present** -- flowlab has it, no "
        "differential test was found; **missing** -- flowlab has no such name. "
        "`tests/test_tf_coverage.py` fails when a name loses its status.",
        "",
        "| module | names | tested | present | missing | covered |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    totals = {TESTED: 0, PRESENT: 0, MISSING: 0}
    for module, rows in table.items():
        counts = {s: sum(r["status"] == s for r in rows.values()) for s in totals}
        for s in totals:
            totals[s] += counts[s]
        n = len(rows)
        have = counts[TESTED] + counts[PRESENT]
        lines.append(f"| `{_label(module)}` | {n} | {counts[TESTED]} | {counts[PRESENT]} | "
                     f"{counts[MISSING]} | {100 * have / max(n, 1):.0f}% |")
    n = sum(totals.values())
    lines.append(f"| **all** | {n} | {totals[TESTED]} | {totals[PRESENT]} | {totals[MISSING]} | "
                 f"{100 * (totals[TESTED] + totals[PRESENT]) / max(n, 1):.0f}% |")
    for module, rows in table.items():
        lines += ["", f"## `{_label(module)}`", ""]
        for status in (TESTED, PRESENT, MISSING):
            names = [f"`{k}`" for k, r in rows.items() if r["status"] == status]
            if names:
                lines.append(f"**{status}** ({len(names)}): " + ", ".join(names))
                lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def write(tf_names: dict[str, list[str]] | None = None) -> dict[str, Any]:
    if tf_names is None:
        import tensorflow as tf  # type: ignore[import-not-found]

        tf_names, version = tensorflow_names(), tf.__version__
    else:
        version = json.loads(TABLE_JSON.read_text(encoding="utf-8"))["tensorflow"]
    table = statuses(tf_names)
    doc = {"tensorflow": version, "modules": table}
    TABLE_JSON.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    TABLE_MD.write_text(render_markdown(table, version), encoding="utf-8")
    return doc


def committed() -> dict[str, Any]:
    return json.loads(TABLE_JSON.read_text(encoding="utf-8"))


def regressions() -> list[str]:
    """Names whose status in the committed table is better than what the code gives now."""
    rank = {MISSING: 0, PRESENT: 1, TESTED: 2}
    doc = committed()
    names = {m: list(rows) for m, rows in doc["modules"].items()}
    now = statuses(names)
    out = []
    for module, rows in doc["modules"].items():
        for name, row in rows.items():
            was, is_ = row["status"], now[module][name]["status"]
            if rank[is_] < rank[was]:
                where = f" (was tested in {row['test']})" if was == TESTED else ""
                out.append(f"{_label(module)}.{name}: {was} -> {is_}{where}")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="only report names that lost their status")
    p.add_argument("--offline", action="store_true",
                   help="rewrite the table for the committed TensorFlow names (no TensorFlow needed)")
    args = p.parse_args(argv)
    if args.check:
        lost = regressions()
        print("\n".join(lost) or "no name lost its status")
        return 1 if lost else 0
    doc = write({m: list(rows) for m, rows in committed()["modules"].items()}
                if args.offline else None)
    n = sum(len(r) for r in doc["modules"].values())
    have = sum(r["status"] != MISSING for rows in doc["modules"].values() for r in rows.values())
    print(f"{TABLE_MD.relative_to(ROOT)}: {have} of {n} names ({100 * have / n:.0f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
