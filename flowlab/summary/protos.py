"""flowlab's run metadata and meta graphs as TensorFlow's protos, for event files.

`FileWriter.add_run_metadata` and `add_meta_graph` write TensorFlow's `RunMetadata`
and `MetaGraphDef` messages (tensorboard.compat.proto's `config_pb2`,
`meta_graph_pb2`): TensorBoard's graph dashboard reads per-node compute times and
output sizes from the first, and the op list and collections from the second.

- `run_metadata_proto(md)`: flowlab's `RunMetadata` (or a proto, passed through)
  -> `config_pb2.RunMetadata`: `step_stats` per device with every node's start and
  end times (µs), thread (numbered 0, 1, ... per device: the proto's ids are 32-bit,
  Python's are not), timeline label and outputs (dtype, shape, bytes), and the
  `partition_graphs` as GraphDef protos.  flowlab's own fields (`op_type`,
  `inputs`, `dead`, ...) have no place in the proto and are left out.
- `meta_graph_proto(meta)`: a Graph, a GraphDef dict, flowlab's meta-graph dict
  (`tf.train.export_meta_graph`) or a MetaGraphDef proto -> `meta_graph_pb2
  .MetaGraphDef`: the graph, `meta_info_def.stripped_op_list` (the declarations of
  the op types the graph uses, from flowlab's op registry), the collections
  (node lists, bytes, ints, floats; variables as serialized `VariableDef`s, as
  TensorFlow stores them) and the `saver_def`.

Pure functions: the inputs are not modified.
"""

from __future__ import annotations

from typing import Any

from tensorboard.compat.proto import (
    config_pb2,
    graph_pb2,
    meta_graph_pb2,
    op_def_pb2,
    saver_pb2,
    variable_pb2,
)

from flowlab.graph import dtypes
from flowlab.graph.graph import Graph
from flowlab.graph.graph_def import attr_to_json
from flowlab.graph.graph_def_pb import _attr_pb, to_proto

__all__ = ["run_metadata_proto", "meta_graph_proto", "op_list_proto"]


def _enum(dt: Any) -> int:
    try:
        return dtypes.as_dtype(dt).as_datatype_enum
    except (TypeError, ValueError):
        return 0


def run_metadata_proto(run_metadata: Any) -> Any:
    """`config_pb2.RunMetadata` of flowlab's `RunMetadata` (see the module docstring)."""
    if isinstance(run_metadata, config_pb2.RunMetadata):
        return run_metadata
    pb = config_pb2.RunMetadata()
    stats = getattr(run_metadata, "step_stats", None)
    for dev in getattr(stats, "dev_stats", None) or []:
        dpb = pb.step_stats.dev_stats.add(device=dev.device)
        # Python thread idents do not fit the proto's uint32: number them 0, 1, ...
        threads: dict[int, int] = {}
        for tid, tname in (getattr(dev, "thread_names", None) or {}).items():
            dpb.thread_names[threads.setdefault(tid, len(threads))] = str(tname)
        for ns in dev.node_stats:
            npb = dpb.node_stats.add(
                node_name=ns.node_name, all_start_micros=ns.all_start_micros,
                op_start_rel_micros=ns.op_start_rel_micros, op_end_rel_micros=ns.op_end_rel_micros,
                all_end_rel_micros=ns.all_end_rel_micros, scheduled_micros=ns.scheduled_micros,
                all_start_nanos=ns.all_start_nanos, op_start_rel_nanos=ns.op_start_rel_nanos,
                op_end_rel_nanos=ns.op_end_rel_nanos, all_end_rel_nanos=ns.all_end_rel_nanos,
                timeline_label=ns.timeline_label, thread_id=threads.setdefault(ns.thread_id, len(threads)),
            )
            for out in ns.output:
                opb = npb.output.add(slot=out.slot)
                td = out.tensor_description
                opb.tensor_description.dtype = _enum(td.dtype) if td.dtype is not None else 0
                for d in td.shape.dim:
                    opb.tensor_description.shape.dim.add(size=d.size)
                ad = td.allocation_description
                opb.tensor_description.allocation_description.requested_bytes = ad.requested_bytes
                opb.tensor_description.allocation_description.allocated_bytes = ad.allocated_bytes
                opb.tensor_description.allocation_description.allocator_name = ad.allocator_name
    for g in getattr(run_metadata, "partition_graphs", None) or []:
        pb.partition_graphs.add().CopyFrom(to_proto(dict(g)))
    return pb


def _op_def_proto(od: Any) -> Any:
    pb = op_def_pb2.OpDef(name=od.name, is_stateful=bool(od.is_stateful))
    for args, field in ((od.inputs, pb.input_arg), (od.outputs, pb.output_arg)):
        for a in args:
            apb = field.add(name=a.name, is_ref=a.is_ref)
            if a.fixed_type is not None:
                apb.type = a.fixed_type.as_datatype_enum
            if a.type_attr:
                apb.type_attr = a.type_attr
            if a.number_attr:
                apb.number_attr = a.number_attr
            if a.type_list_attr:
                apb.type_list_attr = a.type_list_attr
    for ad in od.attrs.values():
        apb = pb.attr.add(name=ad.name, type=ad.kind)
        if ad.minimum is not None:
            apb.has_minimum = True
            apb.minimum = ad.minimum
        if ad.allowed is not None:
            apb.allowed_values.list.type.extend(t.as_datatype_enum for t in ad.allowed)
        if ad.has_default and ad.default is not None:
            try:
                _attr_pb(attr_to_json(ad.default, ad.kind), apb.default_value)
            except (ValueError, TypeError, KeyError):
                apb.ClearField("default_value")  # a default the proto cannot hold
    return pb


def op_list_proto(op_types: Any) -> Any:
    """`op_def_pb2.OpList` of flowlab's declarations of `op_types` (sorted, unknown skipped)."""
    from flowlab.ops.op_def import registered_ops

    registry = registered_ops()
    out = op_def_pb2.OpList()
    for name in sorted(set(op_types)):
        if name in registry:
            out.op.add().CopyFrom(_op_def_proto(registry[name]))
    return out


def _saver_def_proto(sd: Any, out: Any) -> None:
    """A Saver's SaverDef (the proto itself) or a meta graph's JSON one into `out`."""
    if isinstance(sd, saver_pb2.SaverDef):
        out.CopyFrom(sd)
        return
    for name in saver_pb2.SaverDef.DESCRIPTOR.fields_by_name:
        if name in sd:
            setattr(out, name, sd[name])


def _collection_proto(c: dict[str, Any], out: Any) -> None:
    kind, values = c["kind"], c["value"]
    if kind == "node_list":
        out.node_list.value.extend(values)
    elif kind == "bytes_list":
        out.bytes_list.value.extend(v.encode() if isinstance(v, str) else v for v in values)
    elif kind == "int64_list":
        out.int64_list.value.extend(values)
    elif kind == "float_list":
        out.float_list.value.extend(values)
    elif kind == "variables":
        for v in values:
            vd = variable_pb2.VariableDef(
                variable_name=v["variable_name"], initializer_name=v["initializer_name"],
                snapshot_name=v["snapshot_name"], initial_value_name=v.get("initial_value_name", ""),
                trainable=bool(v.get("trainable", True)),
            )
            out.bytes_list.value.append(vd.SerializeToString())


def meta_graph_proto(meta: Any) -> Any:
    """`meta_graph_pb2.MetaGraphDef` of a Graph, GraphDef dict, flowlab meta-graph dict
    or MetaGraphDef proto (passed through); see the module docstring."""
    if isinstance(meta, meta_graph_pb2.MetaGraphDef):
        return meta
    if isinstance(meta, Graph):
        meta = {"graph_def": meta.as_graph_def(add_shapes=True)}
    elif isinstance(meta, dict) and "node" in meta:
        meta = {"graph_def": meta}
    elif not (isinstance(meta, dict) and "graph_def" in meta):
        raise TypeError(f"meta_graph_def must be type MetaGraphDef, saw type: {type(meta)}")
    pb = meta_graph_pb2.MetaGraphDef()
    gd = meta["graph_def"]
    # a GraphDef dict (flowlab.graph.graph_def_proto reads like the proto, but is a dict)
    pb.graph_def.CopyFrom(gd if isinstance(gd, graph_pb2.GraphDef) else to_proto(gd))
    info = meta.get("meta_info_def") or {}
    pb.meta_info_def.tags.extend(info.get("tags", []))
    pb.meta_info_def.stripped_op_list.CopyFrom(op_list_proto(n.op for n in pb.graph_def.node))
    if meta.get("saver_def"):
        _saver_def_proto(meta["saver_def"], pb.saver_def)
    for key, c in sorted((meta.get("collection_def") or {}).items()):
        _collection_proto(c, pb.collection_def[key])
    return pb
