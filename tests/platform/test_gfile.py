"""tf.io.gfile / tf.gfile against TensorFlow: the same results and error classes and
messages for the same operations on two copies of one directory tree."""

from __future__ import annotations

import os

import pytest

import flowlab as fl


def _tree(root):
    os.makedirs(os.path.join(root, "d", "e"))
    with open(os.path.join(root, "a.txt"), "w") as f:
        f.write("l1\nl2\nl3")
    for name, text in (("d/x", "x"), ("d/e/y", "y"), ("d/b", "b")):
        with open(os.path.join(root, name), "w") as f:
            f.write(text)


def _outcome(fn):
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001 - compared by class name and message
        return ("error", type(e).__name__, str(e))


OPERATIONS = {
    "exists": lambda g: (g.exists("a.txt"), g.exists("nope"), g.exists("d")),
    "isdir": lambda g: (g.isdir("d"), g.isdir("a.txt"), g.isdir("nope")),
    "listdir": lambda g: sorted(g.listdir("d")),
    "listdir_missing": lambda g: g.listdir("nope"),
    "listdir_file": lambda g: g.listdir("a.txt"),
    "glob": lambda g: sorted(g.glob("d/*")),
    "glob_no_dir": lambda g: g.glob("*.txt"),
    "glob_none": lambda g: g.glob("zz*"),
    "glob_list": lambda g: sorted(g.glob(["d/*", "*.txt"])),
    "mkdir_existing": lambda g: g.mkdir("d"),
    "mkdir_no_parent": lambda g: g.mkdir("q/r"),
    "mkdir": lambda g: (g.mkdir("n"), os.path.isdir("n")),
    "makedirs": lambda g: (g.makedirs("m/n/o"), os.path.isdir("m/n/o")),
    "makedirs_existing": lambda g: g.makedirs("d/e"),
    "makedirs_over_file": lambda g: g.makedirs("a.txt"),
    "remove": lambda g: (g.remove("d/x"), os.path.exists("d/x")),
    "remove_missing": lambda g: g.remove("nope"),
    "remove_dir": lambda g: g.remove("d"),
    "copy": lambda g: (g.copy("a.txt", "c.txt"), open("c.txt").read()),
    "copy_existing": lambda g: g.copy("a.txt", "d/x"),
    "copy_overwrite": lambda g: (g.copy("a.txt", "d/x", overwrite=True), open("d/x").read()),
    "copy_missing": lambda g: g.copy("nope", "z"),
    "rename": lambda g: (g.rename("a.txt", "r.txt"), os.path.exists("a.txt"), open("r.txt").read()),
    "rename_existing": lambda g: g.rename("a.txt", "d/x"),
    "rename_overwrite": lambda g: (g.rename("a.txt", "d/b", overwrite=True), open("d/b").read()),
    "rename_missing": lambda g: g.rename("nope", "z"),
    "stat": lambda g: (lambda s: (type(s).__name__, s.length, s.is_directory,
                                  s.mtime_nsec == int(os.stat("a.txt").st_mtime) * 10**9))(g.stat("a.txt")),
    "stat_dir": lambda g: (lambda s: (s.length, s.is_directory))(g.stat("d")),
    "stat_missing": lambda g: g.stat("nope"),
    "walk": lambda g: [(p, sorted(ds), sorted(fs)) for p, ds, fs in g.walk("d")],
    "walk_bottom_up": lambda g: [(p, sorted(ds), sorted(fs)) for p, ds, fs in g.walk("d", topdown=False)],
    "walk_missing": lambda g: list(g.walk("nope")),
    "rmtree": lambda g: (g.rmtree("d"), os.path.exists("d")),
    "rmtree_missing": lambda g: g.rmtree("nope"),
    "join": lambda g: (g.join("a", "b"), g.join("a", "/c")),
    "gfile_missing_is_lazy": lambda g: type(g.GFile("nope")).__name__,
    "read_missing": lambda g: g.GFile("nope").read(),
    "read_dir": lambda g: g.GFile("d").read(),
    "read": lambda g: g.GFile("a.txt").read(),
    "read_binary": lambda g: g.GFile("a.txt", "rb").read(),
    "readlines": lambda g: g.GFile("a.txt").readlines(),
    "iterate": lambda g: list(g.GFile("a.txt")),
    "readline_tell_read_size": lambda g: (lambda f: (f.readline(), f.tell(), f.read(2), f.size()))(
        g.GFile("a.txt")),
    "seek": lambda g: (lambda f: (f.seek(3), f.read()))(g.GFile("a.txt")),
    "name_mode": lambda g: (g.GFile("a.txt").name, g.GFile("a.txt", "rb").mode),
    "write_text_and_bytes": lambda g: (_write(g, "w.txt", "w", ["hé", b"x"]), open("w.txt", "rb").read()),
    "write_binary_text": lambda g: (_write(g, "w.bin", "wb", ["hé"]), open("w.bin", "rb").read()),
    "append": lambda g: (_write(g, "a.txt", "a", ["z"]), open("a.txt", "rb").read()),
    "bad_mode": lambda g: g.GFile("a.txt", "x").read(),
    "write_read_only": lambda g: g.GFile("a.txt").write("x"),
    "read_write_only": lambda g: g.GFile("w.txt", "w").read(),
}


def _write(g, name, mode, parts):
    with g.GFile(name, mode) as f:
        for p in parts:
            f.write(p)


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_same_as_tensorflow(tf1, tmp_path, monkeypatch, name):
    results = []
    for mod in (tf1, fl):
        root = tmp_path / mod.__name__.replace(".", "_")
        _tree(str(root))
        monkeypatch.chdir(root)
        results.append(_outcome(lambda g=mod.io.gfile: OPERATIONS[name](g)))
    assert results[1] == results[0]


def test_v1_names(tf1, tmp_path, monkeypatch):
    _tree(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    names = sorted(n for n in dir(tf1.gfile) if not n.startswith("_"))
    assert sorted(n for n in vars(fl.gfile) if not n.startswith("_")) == names
    for mod in (tf1, fl):
        g = mod.gfile
        assert g.Exists("a.txt") and g.IsDirectory("d") and sorted(g.ListDirectory("d")) == ["b", "e", "x"]
        assert g.FastGFile("a.txt").read() == g.Open("a.txt").read() == "l1\nl2\nl3"
        g.MakeDirs(f"{mod.__name__}/n")
        assert g.Stat(f"{mod.__name__}/n").is_directory
        g.DeleteRecursively(mod.__name__)
        assert not g.Exists(mod.__name__)
    assert fl.gfile.GFile is fl.io.gfile.GFile and isinstance(fl.gfile.FastGFile("a.txt"), fl.gfile.GFile)
