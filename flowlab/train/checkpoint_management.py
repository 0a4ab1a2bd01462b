"""The `checkpoint` state file and checkpoint look-ups (TensorFlow's checkpoint_management).

`<dir>/checkpoint` is TensorFlow's CheckpointState in protobuf text format::

    model_checkpoint_path: "model.ckpt-3"
    all_model_checkpoint_paths: "model.ckpt-2"
    all_model_checkpoint_paths: "model.ckpt-3"

The Saver rewrites it (a temporary file, then `os.replace`, under the directory's
save lock: flowlab.kernels.checkpoint_commit) only after a checkpoint is complete, so
it always names complete checkpoints.  Paths are kept as given,
except that relative paths become relative to a relative save directory (as
TensorFlow does); readers join relative paths to the directory.
"""

from __future__ import annotations

import glob
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

from flowlab.kernels import checkpoint_format as fmt
from flowlab.kernels.checkpoint_index import read_regular

__all__ = [
    "CheckpointState", "latest_checkpoint", "get_checkpoint_state", "checkpoint_exists",
    "update_checkpoint_state", "get_checkpoint_mtimes", "remove_checkpoint",
    "generate_checkpoint_state_proto", "meta_graph_filename", "NewCheckpointReader",
    "load_checkpoint", "list_variables", "load_variable",
]


# --- the `checkpoint` state file -----------------------------------------------------
@dataclass
class CheckpointState:
    """The `checkpoint` file's content (TensorFlow's CheckpointState proto)."""

    model_checkpoint_path: str = ""
    all_model_checkpoint_paths: list[str] = field(default_factory=list)
    all_model_checkpoint_timestamps: list[float] = field(default_factory=list)
    last_preserved_timestamp: float = 0.0

    def __str__(self) -> str:
        lines = [f"model_checkpoint_path: {_quote(self.model_checkpoint_path)}"]
        lines += [f"all_model_checkpoint_paths: {_quote(p)}" for p in self.all_model_checkpoint_paths]
        lines += [f"all_model_checkpoint_timestamps: {t!r}" for t in self.all_model_checkpoint_timestamps]
        if self.last_preserved_timestamp:
            lines.append(f"last_preserved_timestamp: {self.last_preserved_timestamp!r}")
        return "\n".join(lines) + "\n"


def _quote(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


_LINE = re.compile(r'^\s*(\w+)\s*:\s*(".*"|[-+0-9.eE]+)\s*$')


def _parse_state(text: str) -> CheckpointState:
    st = CheckpointState()
    for line in text.splitlines():
        if not line.strip():
            continue
        m = _LINE.match(line)
        if m is None:
            raise ValueError(f"bad line {line!r}")
        key, raw = m.groups()
        value: Any = json.loads(raw) if raw.startswith('"') else float(raw)
        if key in ("all_model_checkpoint_paths", "all_model_checkpoint_timestamps"):
            getattr(st, key).append(value)
        elif key in ("model_checkpoint_path", "last_preserved_timestamp"):
            setattr(st, key, value)
        else:
            raise ValueError(f"unknown field {key!r}")
    return st


def generate_checkpoint_state_proto(save_dir: str, model_checkpoint_path: str,
                                    all_model_checkpoint_paths: list[str] | None = None,
                                    all_model_checkpoint_timestamps: list[float] | None = None,
                                    last_preserved_timestamp: float | None = None) -> CheckpointState:
    """The state for `model_checkpoint_path` (appended to the list when not last);
    relative paths become relative to a relative `save_dir`, as TensorFlow does."""
    paths = list(all_model_checkpoint_paths or [])
    if not paths or paths[-1] != model_checkpoint_path:
        paths.append(model_checkpoint_path)
    if not os.path.isabs(save_dir):
        if not os.path.isabs(model_checkpoint_path):
            model_checkpoint_path = os.path.relpath(model_checkpoint_path, save_dir)
        paths = [p if os.path.isabs(p) else os.path.relpath(p, save_dir) for p in paths]
    return CheckpointState(model_checkpoint_path, paths, list(all_model_checkpoint_timestamps or []),
                           last_preserved_timestamp or 0.0)


def update_checkpoint_state(save_dir: str, model_checkpoint_path: str,
                            all_model_checkpoint_paths: list[str] | None = None,
                            latest_filename: str | None = None,
                            all_model_checkpoint_timestamps: list[float] | None = None,
                            last_preserved_timestamp: float | None = None,
                            save_relative_paths: bool = False) -> None:
    """Rewrite `save_dir/checkpoint` (atomically: a temporary file and a rename)."""
    state_file = os.path.join(save_dir, latest_filename or "checkpoint")
    paths = list(all_model_checkpoint_paths or [])
    if save_relative_paths:
        rel = (lambda p: os.path.relpath(p, save_dir) if os.path.isabs(p) else p)  # noqa: E731
        model_checkpoint_path, paths = rel(model_checkpoint_path), [rel(p) for p in paths]
    st = generate_checkpoint_state_proto(save_dir, model_checkpoint_path, paths,
                                         all_model_checkpoint_timestamps, last_preserved_timestamp)
    if state_file == st.model_checkpoint_path:
        raise RuntimeError(
            f"Save path '{model_checkpoint_path}' conflicts with path used for checkpoint "
            "state.  Please use a different save path."
        )
    if save_dir:
        os.makedirs(save_dir, exist_ok=True)
    fmt.atomic_write_text(state_file, str(st))


def get_checkpoint_state(checkpoint_dir: str, latest_filename: str | None = None) -> CheckpointState | None:
    """The parsed `checkpoint` file of `checkpoint_dir`, with relative paths joined
    to the directory; None when there is none or it cannot be parsed."""
    checkpoint_dir = os.fspath(checkpoint_dir)
    path = os.path.join(checkpoint_dir, latest_filename or "checkpoint")
    try:
        text = read_regular(path, 1 << 30).decode("utf-8")
    except (OSError, UnicodeDecodeError):  # missing, a directory, a FIFO, not text: as TF
        return None
    try:
        st = _parse_state(text)
    except ValueError:
        return None
    if not st.model_checkpoint_path:
        raise ValueError("Invalid checkpoint state loaded from " + checkpoint_dir)
    if not os.path.isabs(st.model_checkpoint_path):
        st.model_checkpoint_path = os.path.join(checkpoint_dir, st.model_checkpoint_path)
    st.all_model_checkpoint_paths = [
        p if os.path.isabs(p) else os.path.join(checkpoint_dir, p) for p in st.all_model_checkpoint_paths
    ]
    return st


def latest_checkpoint(checkpoint_dir: str, latest_filename: str | None = None) -> str | None:
    """The prefix of the newest complete checkpoint named by the state file, or None."""
    st = get_checkpoint_state(checkpoint_dir, latest_filename)
    if st is not None and st.model_checkpoint_path and checkpoint_exists(st.model_checkpoint_path):
        return st.model_checkpoint_path
    return None


def checkpoint_exists(checkpoint_prefix: str) -> bool:
    """Whether a checkpoint (its index) exists for this prefix (a glob pattern too)."""
    checkpoint_prefix = os.fspath(checkpoint_prefix)
    return bool(glob.glob(fmt.index_filename(checkpoint_prefix))) or bool(glob.glob(checkpoint_prefix)) \
        and not os.path.isdir(checkpoint_prefix)


def get_checkpoint_mtimes(checkpoint_prefixes: list[str]) -> list[float]:
    return [os.path.getmtime(fmt.index_filename(p)) for p in checkpoint_prefixes
            if os.path.exists(fmt.index_filename(p))]


def remove_checkpoint(checkpoint_prefix: str, checkpoint_format_version: int = 2,
                      meta_graph_suffix: str = "meta") -> None:
    """Delete a checkpoint's files and its meta graph."""
    fmt.remove_checkpoint(checkpoint_prefix)
    meta = meta_graph_filename(checkpoint_prefix, meta_graph_suffix)
    if os.path.exists(meta):
        os.remove(meta)


def meta_graph_filename(checkpoint_filename: str, meta_graph_suffix: str = "meta") -> str:
    """`model.ckpt-100` -> `model.ckpt-100.meta` (a sharded `-?????-of-?????` tail dropped)."""
    basename = re.sub(r"-[\d\?]+-of-\d+$", "", checkpoint_filename)
    return ".".join([basename, meta_graph_suffix])


# --- reading checkpoints directly (`tf.train.load_checkpoint`, ...) -------------------
def _prefix_of(ckpt_dir_or_file: str) -> str:
    ckpt_dir_or_file = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(ckpt_dir_or_file):
        latest = latest_checkpoint(ckpt_dir_or_file)
        if latest is None:
            raise ValueError(f"Couldn't find 'checkpoint' file or checkpoints in given directory "
                             f"{ckpt_dir_or_file}")
        return latest
    return ckpt_dir_or_file


def NewCheckpointReader(filepattern: str) -> fmt.CheckpointReader:  # noqa: N802 (TF's name)
    return fmt.CheckpointReader(os.fspath(filepattern))


def load_checkpoint(ckpt_dir_or_file: str) -> fmt.CheckpointReader:
    return fmt.CheckpointReader(_prefix_of(ckpt_dir_or_file))


def list_variables(ckpt_dir_or_file: str) -> list[tuple[str, list[int]]]:
    """(name, shape) of every tensor in a checkpoint, sorted by name."""
    shapes = load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map()
    return sorted(shapes.items())


def load_variable(ckpt_dir_or_file: str, name: str) -> Any:
    if name.endswith(":0"):
        name = name[:-2]
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)
