"""`tf.train`: optimizers, savers, input pipelines (filled by later work)."""

from flowlab.graph.graph_def import write_graph

__all__ = ["write_graph"]
