"""A task: devices and their state, registered partitions compiled and run (flowlab.runtime.task.task)."""
