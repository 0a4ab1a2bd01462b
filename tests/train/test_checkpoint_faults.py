"""Checkpoints survive faults: a training process killed mid-save (SIGKILL) leaves the
previous checkpoint usable; damaged files give DataLossError; a failed save or
restore changes nothing."""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import flowlab as fl
from flowlab import errors

ROOT = Path(__file__).resolve().parents[2]

# A training loop: `big` always equals `step` everywhere, so a restored checkpoint
# is consistent exactly when the two agree.
TRAINER = """
import os, sys
import flowlab as tf
d, mode = sys.argv[1], sys.argv[2]
big = tf.Variable(tf.zeros([1 << 18]), name="big")
step = tf.Variable(0, name="step")
train = tf.group(tf.assign_add(step, 1), tf.assign_add(big, tf.ones([1 << 18])))
saver = tf.train.Saver(max_to_keep=3)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(1, 100000):
        sess.run(train)
        if mode == "slow" and i == 3:
            # The test hook: sleep between writing a data shard and renaming it.
            os.environ["FLOWLAB_CHECKPOINT_WRITE_DELAY"] = "60"
        print("SAVING", i, flush=True)
        saver.save(sess, os.path.join(d, "model.ckpt"), global_step=i)
        print("SAVED", i, flush=True)
"""


def _start(tmp_path, mode):
    script = tmp_path / "trainer.py"
    script.write_text(TRAINER)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("FLOWLAB_CHECKPOINT_WRITE_DELAY", None)
    d = tmp_path / "ckpt"
    proc = subprocess.Popen([sys.executable, str(script), str(d), mode], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=str(tmp_path))
    return proc, str(d)


def _wait_for_line(proc, line, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = proc.stdout.readline()
        if not got:
            raise AssertionError(f"trainer exited: {proc.stderr.read()[-2000:]}")
        if got.strip() == line:
            return
    raise AssertionError(f"no {line!r} from the trainer in {timeout}s")


def _kill(proc):
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()
    proc.stderr.close()


def _restore_latest(d):
    """Restore the newest checkpoint in a fresh graph; (step, big)."""
    with fl.Graph().as_default():
        big = fl.Variable(fl.zeros([1 << 18]), name="big")
        step = fl.Variable(-1, name="step")
        saver = fl.train.Saver()
        with fl.Session() as sess:
            saver.restore(sess, fl.train.latest_checkpoint(d))
            return int(sess.run(step)), sess.run(big)


def test_killed_between_shard_write_and_rename(tmp_path):
    proc, d = _start(tmp_path, "slow")
    try:
        _wait_for_line(proc, "SAVING 3")
        # Wait until save 3 has written its whole data shard under the temporary name.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            tmps = glob.glob(os.path.join(d, "model.ckpt-3.data-*.tmp-*"))
            if tmps and os.path.getsize(tmps[0]) >= 4 << 18:
                break
            time.sleep(0.02)
        else:
            raise AssertionError("save 3 never wrote its data shard")
    finally:
        _kill(proc)
    assert proc.returncode == -signal.SIGKILL
    assert not os.path.exists(os.path.join(d, "model.ckpt-3.index"))
    assert fl.train.latest_checkpoint(d) == os.path.join(d, "model.ckpt-2")
    st = fl.train.get_checkpoint_state(d)
    assert st.all_model_checkpoint_paths == [os.path.join(d, f"model.ckpt-{i}") for i in (1, 2)]
    step, big = _restore_latest(d)
    assert step == 2
    np.testing.assert_array_equal(big, np.full(1 << 18, 2.0, np.float32))


@pytest.mark.parametrize("delay", [0.0, 0.013, 0.031, 0.057])
def test_killed_at_an_arbitrary_moment_of_a_save_loop(tmp_path, delay):
    proc, d = _start(tmp_path, "loop")
    try:
        _wait_for_line(proc, "SAVED 4")
        time.sleep(delay)
    finally:
        _kill(proc)
    step, big = _restore_latest(d)
    assert step >= 4
    np.testing.assert_array_equal(big, np.full(1 << 18, float(step), np.float32))
    # At most max_to_keep (+1 being written) checkpoints are on disk.
    assert len(glob.glob(os.path.join(d, "*.index"))) <= 4


# --- damage in the test process -----------------------------------------------------------
@pytest.fixture
def saved(tmp_path):
    """A checkpoint of v=[1..4], w=5 (one shard), and a session whose v, w hold other values."""
    g = fl.Graph()
    with g.as_default():
        v = fl.Variable(np.arange(1.0, 5.0, dtype=np.float32), name="v")
        w = fl.Variable(5, name="w")
        saver = fl.train.Saver()
        sess = fl.Session(graph=g)
        sess.run(fl.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=1)
        sess.run([v.assign([9.0, 9.0, 9.0, 9.0]), w.assign(0)])
    yield sess, saver, path, v, w
    sess.close()


def _unchanged(sess, v, w):
    np.testing.assert_array_equal(sess.run(v), [9.0] * 4)
    assert sess.run(w) == 0


def test_flipped_byte_in_data_shard(saved):
    sess, saver, path, v, w = saved
    data = Path(path + ".data-00000-of-00001")
    raw = bytearray(data.read_bytes())
    raw[2] ^= 0x01  # inside v's bytes (the first tensor, offset 0)
    data.write_bytes(bytes(raw))
    with pytest.raises(errors.DataLossError) as ei:
        saver.restore(sess, path)
    msg = str(ei.value)
    assert "model.ckpt-1.data-00000-of-00001" in msg and "tensor 'v'" in msg
    _unchanged(sess, v, w)


def test_truncated_data_shard(saved):
    sess, saver, path, v, w = saved
    data = Path(path + ".data-00000-of-00001")
    data.write_bytes(data.read_bytes()[:66])  # w: bytes 64..67
    with pytest.raises(errors.DataLossError, match=r"tensor 'w'.*truncated"):
        saver.restore(sess, path)
    _unchanged(sess, v, w)


def test_corrupted_index(saved):
    sess, saver, path, v, w = saved
    Path(path + ".index").write_text('{"format": "flowlab-checkpoint", "tens')
    with pytest.raises(errors.DataLossError, match=r"model.ckpt-1.index is corrupted"):
        saver.restore(sess, path)
    _unchanged(sess, v, w)


def test_failed_save_leaves_previous_checkpoint_and_state(saved, tmp_path):
    sess, saver, path, v, w = saved
    state = (tmp_path / "checkpoint").read_text()
    # The next save's data file name is taken by a directory: its rename fails.
    os.mkdir(tmp_path / "model.ckpt-2.data-00000-of-00001")
    with pytest.raises(errors.OpError):
        saver.save(sess, str(tmp_path / "model.ckpt"), global_step=2)
    assert (tmp_path / "checkpoint").read_text() == state
    assert fl.train.latest_checkpoint(str(tmp_path)) == path
    assert not glob.glob(str(tmp_path / "*.tmp-*"))
    assert not os.path.exists(tmp_path / "model.ckpt-2.index")
    saver.restore(sess, path)
    np.testing.assert_array_equal(sess.run(v), [1.0, 2.0, 3.0, 4.0])
    assert sess.run(w) == 5
