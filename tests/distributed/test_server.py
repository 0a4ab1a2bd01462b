"""tf.train.Server in this process: a one-task local server, its target and errors."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as fl


def test_a_local_server_runs_sessions_on_its_target():
    server = fl.train.Server.create_local_server()
    try:
        assert server.target.startswith("tcp://127.0.0.1:") and server.target.endswith("/job:localhost/task:0")
        g = fl.Graph()
        with g.as_default():
            v = fl.Variable(np.float32(2.0), name="on_the_server")
            doubled = v * 2.0
            with fl.Session(server.target, graph=g) as sess:
                sess.run(v.initializer)
                assert sess.run(doubled) == 4.0
                assert sess.list_devices()[0].name == "/job:localhost/replica:0/task:0/device:CPU:0"
            with fl.Session(server.target, graph=g) as again:  # the state outlives the session
                assert again.run(doubled) == 4.0
    finally:
        server.stop()


def test_server_arguments_name_a_task_of_the_cluster():
    spec = {"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2", "127.0.0.1:3"]}
    for kwargs in ({"job_name": "chief", "task_index": 0}, {"job_name": "worker", "task_index": 5}):
        with pytest.raises(ValueError):
            fl.train.Server(spec, start=False, **kwargs)
    with pytest.raises(ValueError, match="job_name"):
        fl.train.Server(spec, start=False)
    s = fl.train.Server(spec, job_name="worker", task_index=1, start=False)
    assert s.server_def["job_name"] == "worker" and s.server_def["task_index"] == 1
