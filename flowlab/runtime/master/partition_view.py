"""`Partitions`: what `Session.partitions(fetches, feed_dict)` shows of a step split
across devices -- device name -> GraphDef (the JSON schema of
`flowlab.graph.graph_def`, each node with its assigned device), the Send/Recv pairs
(`flowlab.runtime.master.partition.SendRecvPair`) and the placement they came from.  A
read-only view built from a `PartitionedPlan` (`PartitionedPlan.view`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flowlab.runtime.master.partition import SendRecvPair

__all__ = ["Partitions"]


class Partitions(Mapping[str, dict[str, Any]]):
    """What `Session.partitions(fetches, feed_dict)` returns: device name -> GraphDef.

    >>> parts = sess.partitions(y)                   # doctest: +SKIP
    >>> list(parts)                                  # the devices with ops
    >>> parts["/job:localhost/replica:0/task:0/device:CPU:1"]["node"]
    >>> parts.pairs                                  # [SendRecvPair(key=..., ...)]

    Attributes:
      pairs: the `SendRecvPair`s, one per (tensor, destination device) and per
        cross-device control edge.
      placement: the `Placement` the partitions were made from.
      client_pairs: the pairs TensorFlow's call frame has for feeds and fetches off the
        client device (CPU:0); shown in the GraphDefs, not run (`partition_client`).
    """

    def __init__(
        self, graph_defs: dict[str, dict[str, Any]], pairs: list[SendRecvPair], placement: Any,
        client_pairs: list[SendRecvPair] | None = None,
    ) -> None:
        self._defs = graph_defs
        self.pairs = list(pairs)
        self.client_pairs = list(client_pairs or [])
        self.placement = placement

    def __getitem__(self, device: str) -> dict[str, Any]:
        return self._defs[device]

    def __iter__(self) -> Iterator[str]:
        return iter(self._defs)

    def __len__(self) -> int:
        return len(self._defs)

    def __repr__(self) -> str:
        sizes = ", ".join(f"{d}: {len(g['node'])} nodes" for d, g in self._defs.items())
        shown = f" (+{len(self.client_pairs)} via the client device, shown only)" if self.client_pairs else ""
        return f"<Partitions {{{sizes}}}, {len(self.pairs)} Send/Recv pairs{shown}>"

    # Notebook display: its picture (drawn by flowlab.viz, see graph/display.py).
    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        from flowlab.graph.display import mimebundle

        return mimebundle(self, include, exclude)
