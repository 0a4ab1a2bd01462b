"""The IR: Graph, Operation, Tensor, dtypes, shapes, device specs, GraphDef."""

from flowlab.graph.device_spec import DeviceSpec
from flowlab.graph.graph import Graph, GraphKeys, get_default_graph, reset_default_graph
from flowlab.graph.tensor import Operation, Tensor
from flowlab.graph.tensor_shape import Dimension, TensorShape

__all__ = [
    "DeviceSpec", "Graph", "GraphKeys", "get_default_graph", "reset_default_graph",
    "Operation", "Tensor", "Dimension", "TensorShape",
]
