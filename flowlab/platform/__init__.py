"""The program's surroundings, as TensorFlow 1.x's `tensorflow/python/platform`:
`app` (run), `flags` (absl-py's), `tf_logging` (`tf.logging`) and `gfile` (local
files with TensorFlow's semantics and error classes)."""

from __future__ import annotations

import types as _types

from flowlab.platform import app, flags, gfile, tf_logging

__all__ = ["app", "flags", "gfile", "tf_logging", "gfile_v1"]

# `tf.gfile`: TensorFlow 1.x's CamelCase names for the same functions.
gfile_v1 = _types.SimpleNamespace(
    Copy=gfile.copy, DeleteRecursively=gfile.rmtree, Exists=gfile.exists, FastGFile=gfile.FastGFile,
    GFile=gfile.GFile, Glob=gfile.glob, IsDirectory=gfile.isdir, ListDirectory=gfile.listdir,
    MakeDirs=gfile.makedirs, MkDir=gfile.mkdir, Open=gfile.GFile, Remove=gfile.remove,
    Rename=gfile.rename, Stat=gfile.stat, Walk=gfile.walk,
)
gfile_v1.__name__ = "flowlab.gfile"  # type: ignore[attr-defined]
