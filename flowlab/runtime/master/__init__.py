"""The master: prune, optimize, place, partition, and the plan cache per step signature (flowlab.runtime.master.master)."""
