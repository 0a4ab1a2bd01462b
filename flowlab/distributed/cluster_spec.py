"""`tf.train.ClusterSpec`: job names to task addresses, as TensorFlow 1.x defines it.

A ClusterSpec is plain data: {"ps": ["host:2222"], "worker": {0: "a:2222", 2: "b:2222"}}.
On Dask a task's "address" is its Dask worker's address (`tcp://127.0.0.1:40123`);
`flowlab.distributed.Cluster.cluster_spec` builds one from the workers it found.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["ClusterSpec"]


class ClusterSpec:
    """A cluster as a set of jobs, each a set of tasks (index -> address)."""

    def __init__(self, cluster: Any) -> None:
        if isinstance(cluster, ClusterSpec):
            self._jobs: dict[str, dict[int, str]] = {j: dict(t) for j, t in cluster._jobs.items()}
            return
        if not isinstance(cluster, Mapping):
            raise TypeError("`cluster` must be a dictionary mapping one or more job names to (i) a "
                            "list of task addresses, or (ii) a dictionary mapping task indices to addresses.")
        self._jobs = {}
        for job, tasks in cluster.items():
            if not isinstance(job, str):
                raise TypeError(f"Job names must be strings, got {job!r}.")
            if isinstance(tasks, Mapping):
                entries = {}
                for i, addr in tasks.items():
                    if not isinstance(i, int) or isinstance(i, bool):
                        raise TypeError(f"Task indices must be integers, got {i!r} in job {job!r}.")
                    entries[i] = str(addr)
            elif isinstance(tasks, (list, tuple)):
                entries = {i: str(a) for i, a in enumerate(tasks)}
            else:
                raise TypeError(f"The tasks of job {job!r} must be a list or a dict, got {type(tasks).__name__}.")
            self._jobs[job] = entries

    def __bool__(self) -> bool:
        return bool(self._jobs)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClusterSpec) and self._jobs == other._jobs

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(tuple(sorted((j, tuple(sorted(t.items()))) for j, t in self._jobs.items())))

    def __str__(self) -> str:
        return "ClusterSpec(" + repr(self.as_dict()) + ")"

    __repr__ = __str__

    @property
    def jobs(self) -> list[str]:
        return sorted(self._jobs)

    def as_dict(self) -> dict[str, Any]:
        """Job -> a list of addresses when its indices are 0..n-1, else index -> address."""
        out: dict[str, Any] = {}
        for job, tasks in self._jobs.items():
            idx = sorted(tasks)
            out[job] = [tasks[i] for i in idx] if idx == list(range(len(idx))) else dict(sorted(tasks.items()))
        return out

    def _job(self, job_name: str) -> dict[int, str]:
        try:
            return self._jobs[job_name]
        except KeyError:
            raise ValueError(f"No such job in cluster: {job_name!r}") from None

    def num_tasks(self, job_name: str) -> int:
        return len(self._job(job_name))

    def task_indices(self, job_name: str) -> list[int]:
        return sorted(self._job(job_name))

    def task_address(self, job_name: str, task_index: int) -> str:
        tasks = self._job(job_name)
        try:
            return tasks[task_index]
        except KeyError:
            raise ValueError(f"No task with index {task_index!r} in job {job_name!r}") from None

    def job_tasks(self, job_name: str) -> list[str | None]:
        """The addresses of `job_name` by index, None where an index is missing."""
        tasks = self._job(job_name)
        if not tasks:
            return []
        return [tasks.get(i) for i in range(max(tasks) + 1)]
