"""flowlab on Dask: tasks are Dask workers.

A `Cluster` maps TensorFlow job/task names (`ps/0`, `worker/1`) to Dask workers by
their names; `LocalCluster` starts a loopback Dask LocalCluster whose workers carry
those names.  On each worker a task server (a WorkerPlugin) implements the runtime's
task interface over Dask comm handlers; the master runs in the client process.
"""
