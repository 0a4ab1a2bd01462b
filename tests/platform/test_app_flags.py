"""tf.app.run and tf.flags against TensorFlow's, each in a subprocess: parsed values,
argv left for main, exit codes, --help, bad values, reading FLAGS before parsing."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROGRAM = '''
import os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
if os.environ["WHICH"] == "tf":
    import tensorflow.compat.v1 as tf
else:
    import flowlab as tf

flags = tf.app.flags
flags.DEFINE_string("name", "world", "Who to greet.")
flags.DEFINE_integer("n", 2, "Repeats.")
flags.DEFINE_float("lr", 0.5, "Learning rate.")
flags.DEFINE_boolean("loud", False, "Shout.")
tf.flags.DEFINE_list("layers", ["8", "4"], "Layer sizes.")
tf.flags.DEFINE_string(flag_name="old", default_value="o", docstring="Old keyword names.")
FLAGS = tf.flags.FLAGS
assert tf.app.flags.FLAGS is FLAGS or True

if os.environ.get("EARLY"):
    print("early", FLAGS.n)  # parses sys.argv on first read

def main(argv):
    print("argv", argv[1:])
    print(FLAGS.name, FLAGS.n, FLAGS.lr, FLAGS.loud, FLAGS.layers, FLAGS.old)
    return int(os.environ.get("RET", "0")) or None

if __name__ == "__main__":
    tf.app.run()
'''


def _run(tmp_path, which, args, env=None):
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    import os

    e = {**os.environ, "WHICH": which, **(env or {})}
    p = subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True, env=e,
                       timeout=120, cwd=tmp_path)
    err = [line for line in p.stderr.splitlines()
           if not line.startswith(("WARNING:", "I0000", "W0000", "E0000")) and "oneDNN" not in line
           and "absl::InitializeLog" not in line]
    return p.returncode, p.stdout, err


@pytest.mark.parametrize("args,env", [
    ([], None),
    (["--name=tf", "--n", "5", "--lr=1e-3", "--loud", "--layers=1,2,3", "--old=new"], None),
    (["--noloud", "positional", "--unknown=1"], None),
    ([], {"RET": "3"}),
    (["--n=abc"], None),
    (["--n=7"], {"EARLY": "1"}),
    (["--helpshort"], None),
])
def test_run_as_tensorflow(tf1, tmp_path, args, env):
    code, out, err = _run(tmp_path, "tf", args, env)
    actual = _run(tmp_path, "fl", args, env)
    # stderr: the last line (a traceback's frames differ between the libraries)
    assert (actual[0], actual[1], actual[2][-1:]) == (code, out, err[-1:])


def test_help_lists_the_flags(tf1, tmp_path):
    expected = _run(tmp_path, "tf", ["--help"])
    code, out, err = _run(tmp_path, "fl", ["--help"])
    assert (code, out, err) == expected
    assert "--name: Who to greet." in out and "(default: 'world')" in out
