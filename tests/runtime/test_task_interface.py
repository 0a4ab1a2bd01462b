"""The task interface: every message is plain data, a task runs what it is sent by
itself (a fresh LocalTask, no client graph), the six calls do what the interface
says, and the suite's partitioned programs give the same values when every message
crosses Dask's serialization."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import flowlab as fl
from flowlab import errors
from flowlab.runtime.interface import check_plain, error_from_message, error_to_message
from flowlab.runtime.task.task import LocalTask
from tests.runtime.serializing_task import round_trip

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _two_device_step():
    x = fl.placeholder(fl.float32, [None, 3], name="x")
    with fl.device("/cpu:0"):
        w = fl.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="w")
    with fl.device("/cpu:1"):
        y = fl.matmul(x, w, name="y")
        z = fl.reduce_sum(y, name="z")
    return x, w, y, z


def test_registrations_are_plain_data_and_name_only_their_own_nodes():
    x, w, y, z = _two_device_step()
    with fl.Session(config=fl.ConfigProto(device_count={"CPU": 2})) as s:
        s.run(w.initializer)
        sp = s._master.plan_for([x], [z, y], [])
        assert sp.messages and sp.multi_device
        for m in sp.messages:
            check_plain(m)
            round_trip(m, "register_partitions")
            for unit in m["units"]:
                names = {n["name"] for n in unit["graph_def"]["node"]}
                for n in unit["graph_def"]["node"]:
                    for inp in n["input"]:
                        assert inp.lstrip("^").split(":")[0] in names, (n["name"], inp)
        # The task's partitions are its own graphs, not the client's.
        plan = s._plan_for([x], [z, y], [])
        assert all(p.plan.nodes[0].op.graph is not s.graph for p in plan.partitions)


def test_check_plain_names_the_first_object_that_is_not_data():
    check_plain({"a": [1, 2.5, "s", None, True, np.zeros(3), {"b": b"x"}]})
    with pytest.raises(TypeError, match=r"message\.units\[1\]: Operation is not plain data"):
        check_plain({"units": [1, fl.constant(1.0).op]})
    with pytest.raises(TypeError, match="key 3 is not a string"):
        check_plain({3: 1})


def test_a_fresh_task_runs_a_registration_it_is_sent():
    """The master's messages, taken to a task that shares nothing with the client
    (its own devices), run there and give the client's values."""
    x, w, y, z = _two_device_step()
    xv = np.ones((2, 3), np.float32)
    with fl.Session(config=fl.ConfigProto(device_count={"CPU": 2})) as s:
        s.run(w.initializer)
        want = s.run([z, y], {x: xv})
        sp = s._master.plan_for([x], [z, y], [])
        messages = [round_trip(m, "register") for m in sp.messages]
    task = LocalTask(device_count={"CPU": 2})
    try:
        for m in messages:
            reply = task.register_partitions(m)
            assert reply["handle"] == m["handle"] and reply["task"] == "/job:localhost/replica:0/task:0"
        # Its own state: the variable is not initialized there.
        with pytest.raises(errors.FailedPreconditionError, match="w"):
            task.run_step({"handle": sp.handle, "step_id": 1, "feeds": [xv]})
        # Initialize it through the task's own registration of the initializer.
        with fl.Session(config=fl.ConfigProto(device_count={"CPU": 2})) as s2:
            sp_init = s2._master.plan_for([], [], [w.initializer])
            for m in sp_init.messages:
                task.register_partitions(round_trip(m, "register"))
        task.run_step({"handle": sp_init.handle, "step_id": 2, "feeds": []})
        got = task.run_step({"handle": sp.handle, "step_id": 3, "feeds": [xv]})["values"]
        assert got[0] == want[0] and np.array_equal(got[1], want[1])
        st = task.status({})
        assert st["handles"] == 2 and st["running_steps"] == 0
        assert [d["name"][-5:] for d in st["devices"]] == ["CPU:0", "CPU:1"]
        assert task.deregister_partitions({"handle": sp.handle}) == {"deregistered": True}
        assert task.deregister_partitions({"handle": sp.handle}) == {"deregistered": False}
        with pytest.raises(errors.NotFoundError, match="not registered"):
            task.run_step({"handle": sp.handle, "step_id": 4, "feeds": [xv]})
    finally:
        task.close()


def test_abort_step_cancels_a_waiting_step_and_rolls_back_its_writes():
    v = fl.Variable(10.0, name="v")
    q = fl.FIFOQueue(1, [fl.float32], name="q")
    bump = fl.assign_add(v, 5.0)
    with fl.control_dependencies([bump]):
        out = q.dequeue() + 1.0
    with fl.Session() as s:
        s.run(v.initializer)
        sp = s._master.plan_for([], [out], [])
        task = s._task
        caught = []

        def run():
            try:
                task.run(sp.handle, 77, [])
            except Exception as e:  # noqa: BLE001 - checked below
                caught.append(e)

        th = threading.Thread(target=run)
        th.start()
        deadline = time.monotonic() + 30
        while not task.status()["running_steps"] and time.monotonic() < deadline:
            time.sleep(0.005)
        assert task.abort_step({"step_id": 77, "reason": "the master gave up"}) == {"aborted": True}
        th.join(30)
        assert not th.is_alive()
        assert len(caught) == 1 and isinstance(caught[0], errors.OpError)
        assert s.run(v) == 10.0  # the step's AssignAdd was undone
        assert task.abort_step({"step_id": 77}) == {"aborted": False}


def test_recv_tensor_pulls_a_sent_value_and_times_out_naming_the_key():
    task = LocalTask()
    try:
        key = "/job:localhost/replica:0/task:0/device:CPU:0;1;/job:w/replica:0/task:1/device:CPU:0;edge_1_a;0:0"
        table = task.rendezvous.find_or_create(5)
        got = {}
        th = threading.Thread(target=lambda: got.update(task.recv_tensor({"step_id": 5, "key": key, "timeout_ms": 20000})))
        th.start()
        table.send(key, np.array([1.5, 2.5], np.float32))
        th.join(30)
        assert np.array_equal(got["value"], [1.5, 2.5]) and got["is_dead"] is False
        with pytest.raises(errors.DeadlineExceededError, match="edge_2_b"):
            task.recv_tensor({"step_id": 5, "key": key.replace("edge_1_a", "edge_2_b"), "timeout_ms": 50})
    finally:
        task.close()


def test_errors_cross_as_their_tensorflow_class_and_message():
    e = errors.InvalidArgumentError(None, None, "bad shape [2] for 'r'")
    back = error_from_message(round_trip(error_to_message(e), "error"))
    assert type(back) is errors.InvalidArgumentError and back.message == "bad shape [2] for 'r'"
    assert type(error_from_message(error_to_message(KeyError("k")))) is errors.UnknownError


def test_the_partitioned_programs_give_the_same_values_through_dask_serialization():
    """The suite's partitioned programs, rerun with every task message and reply
    serialized by distributed.protocol ('dask' and 'msgpack' serializers only)."""
    modules = [
        "tests/runtime/master/test_partition.py", "tests/runtime/master/test_partition_loops.py",
        "tests/runtime/master/test_partition_client.py", "tests/runtime/master/test_partition_constants.py",
        "tests/runtime/master/test_multi_device_property.py", "tests/programs/test_device_programs.py",
        "tests/programs/test_device_ref_reads.py", "tests/runtime/test_local_tasks.py",
    ]
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--serialize-task-messages", *modules],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500,
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("task messages serialized:"))
    assert int(line.split(":")[1]) > 1000, line
