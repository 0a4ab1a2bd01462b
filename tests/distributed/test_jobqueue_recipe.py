"""docs/distributed.md's dask-jobqueue recipe, run with dask-jobqueue's own local job
runner (`dask_jobqueue.local.LocalCluster`: the same job scripts, run as
subprocesses instead of submitted to SLURM/PBS).

The recipe: one JobQueueCluster (one scheduler), one job per TF task, and each job's
key in the cluster's `worker_spec` is the task's name -- jobqueue passes that key to
`dask worker --name`, so the worker is named `ps/0` and the cluster still knows
which job it is.  `worker_extra_args=["--name", "ps/0"]` does not do that: the
worker takes the last `--name` but the cluster keys the job `LocalCluster-0`, a
second job of that cluster is refused ("name taken, ps/0"), scaling down retires
the running ps first as "not yet launched", and a cluster per task is a scheduler
per task."""

from __future__ import annotations

import copy
import time

import numpy as np
import pytest

import flowlab as fl
import flowlab.distributed as fd

dask_jobqueue_local = pytest.importorskip(
    "dask_jobqueue.local", reason="dask-jobqueue is not installed (it is in the `test` extra)")

pytestmark = pytest.mark.slow

TASKS = ["ps/0", "worker/0", "worker/1"]
X = np.array([[1.0, 2.0], [3.0, 4.0], [-1.0, 0.5], [0.0, -2.0]], np.float32)
Y = np.array([[1.0], [0.0], [2.0], [-1.0]], np.float32)
LR = 0.05


def start_tasks(jobs, names) -> None:
    """The recipe: a job per task, keyed by the task's name."""
    jobs.worker_spec.update({name: copy.deepcopy(jobs.new_spec) for name in names})
    jobs.scale(jobs=len(names))


def replica_step(target: str, index: int, *, init: bool):
    """A between-graph replica on worker/<index>: its own graph, the weights on ps/0."""
    g = fl.Graph()
    with g.as_default():
        with fl.device(fl.train.replica_device_setter(ps_tasks=1, worker_device=f"/job:worker/task:{index}")):
            w = fl.get_variable("jq_w", initializer=np.array([[0.5], [-0.25]], np.float32))
            b = fl.get_variable("jq_b", initializer=np.zeros([1], np.float32))
            x = fl.placeholder(fl.float32, [None, 2], name="x")
            y = fl.placeholder(fl.float32, [None, 1], name="y")
            loss = fl.reduce_mean(fl.square(fl.matmul(x, w) + b - y))
            train = fl.train.GradientDescentOptimizer(LR).minimize(loss)
        sess = fl.Session(f"{target}/job:worker/task:{index}", graph=g)
        if init:
            sess.run(fl.global_variables_initializer())
    return sess, (w, b, x, y, loss, train)


def numpy_sgd(steps: int):
    w, b = np.array([[0.5], [-0.25]], np.float32), np.zeros([1], np.float32)
    losses = []
    for _ in range(steps):
        r = X @ w + b - Y
        losses.append(np.mean(r ** 2))
        w, b = w - LR * (2.0 / len(X)) * X.T @ r, b - LR * 2.0 * r.mean(0)
    return losses, w, b


def alive(pids) -> list[int]:
    import psutil

    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            pass
    return out


def test_one_job_per_task_named_by_its_key_trains_as_numpy():
    import psutil

    jobs = dask_jobqueue_local.LocalCluster(
        cores=1, processes=1, memory="1GB", silence_logs="error",
        worker_extra_args=["--host", "127.0.0.1", "--no-dashboard"],
        scheduler_options={"host": "127.0.0.1", "dashboard_address": "127.0.0.1:0", "dashboard": False})
    pids: list[int] = []
    try:
        start_tasks(jobs, TASKS)
        with fd.Cluster(jobs.scheduler_address, timeout=60) as cluster:
            cluster.client.wait_for_workers(len(TASKS), timeout=60)
            cluster.refresh()
            scripts = {name: job.job_script() for name, job in jobs.workers.items()}
            assert sorted(scripts) == TASKS
            for name, script in scripts.items():
                assert script.count("--name") == 1 and f"--name {name} " in script, script
            assert sorted(cluster.cluster_spec.as_dict()) == ["ps", "worker"]
            assert len(cluster.cluster_spec.as_dict()["worker"]) == 2
            # The cluster still knows its jobs by the task names: the scheduler's
            # worker names are its worker_spec keys.
            names = sorted(w["name"] for w in cluster.client.scheduler_info()["workers"].values())
            assert names == sorted(jobs.worker_spec) == TASKS
            pids = [int(job.job_id) for job in jobs.workers.values()]
            pids += [c.pid for p in pids for c in psutil.Process(p).children(recursive=True)]

            # Steps alternate between the two replicas; the weights live on ps/0.
            target = cluster.target
            s0, (w, b, x, y, loss0, train0) = replica_step(target, 0, init=True)
            s1, (_, b1, x1, y1, loss1, train1) = replica_step(target, 1, init=False)
            losses = []
            for i in range(6):
                sess, xs, ys, loss, train = (s0, x, y, loss0, train0) if i % 2 == 0 else (s1, x1, y1, loss1, train1)
                losses.append(sess.run([loss, train], {xs: X, ys: Y})[0])
            expected_losses, expected_w, expected_b = numpy_sgd(6)
            np.testing.assert_allclose(losses, expected_losses, rtol=1e-5)
            np.testing.assert_allclose(s0.run(w), expected_w, rtol=1e-5)
            np.testing.assert_allclose(s0.run(b), expected_b, rtol=1e-5, atol=1e-7)
            np.testing.assert_array_equal(s1.run(b1), s0.run(b))  # one variable on ps/0, by name
            s0.close()
            s1.close()
            fl.Session.reset(target)
    finally:
        jobs.close()
    # jobqueue's local runner SIGKILLs each job's `dask worker` (its Nanny): nothing is left.
    deadline = time.monotonic() + 10
    while alive(pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pids and not alive(pids)


def test_a_name_in_worker_extra_args_renames_the_worker_but_not_its_job():
    """Why the recipe keys the jobs instead: with `--name ps/0` among the extra
    arguments the worker is `ps/0` but its cluster knows the job as `LocalCluster-0`,
    so scaling and retiring go by a name no worker has."""
    jobs = dask_jobqueue_local.LocalCluster(
        cores=1, processes=1, memory="1GB", silence_logs="error",
        worker_extra_args=["--name", "ps/0", "--host", "127.0.0.1", "--no-dashboard"],
        scheduler_options={"host": "127.0.0.1", "dashboard_address": "127.0.0.1:0", "dashboard": False})
    try:
        jobs.scale(jobs=1)
        from distributed import Client

        with Client(jobs, set_as_default=False) as client:
            client.wait_for_workers(1, timeout=60)
            assert [w["name"] for w in client.scheduler_info()["workers"].values()] == ["ps/0"]
        assert list(jobs.worker_spec) == ["LocalCluster-0"]
        assert jobs.job_script().count("--name") == 2  # jobqueue's own, then the extra one
    finally:
        jobs.close()
