"""`tf.train.Example` and its parts as real protobuf messages.

The `tensorboard` package ships TensorFlow's protos without example.proto and
feature.proto, so this module declares those two schemas -- package `tensorflow`,
proto3, the field numbers of tensorflow/core/example/{feature,example}.proto -- as
`FileDescriptorProto`s and asks protobuf's runtime for the message classes.  The
classes therefore serialize with protobuf's own encoder and are wire-compatible
with TensorFlow's (tests/data/test_example_proto.py compares bytes).

    >>> ex = Example(features=Features(feature={"x": Feature(int64_list=Int64List(value=[1]))}))
    >>> Example.FromString(ex.SerializeToString()) == ex
    True
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

__all__ = ["BytesList", "FloatList", "Int64List", "Feature", "Features", "FeatureList",
           "FeatureLists", "Example", "SequenceExample"]

_F = descriptor_pb2.FieldDescriptorProto


def _field(msg: Any, name: str, number: int, ftype: int, label: int = _F.LABEL_OPTIONAL,
           type_name: str | None = None, oneof: int | None = None, packed: bool = False) -> None:
    f = msg.field.add(name=name, number=number, type=ftype, label=label)
    f.json_name = "".join(p.capitalize() if i else p for i, p in enumerate(name.split("_")))
    if type_name:
        f.type_name = type_name
    if oneof is not None:
        f.oneof_index = oneof
    if packed:
        f.options.packed = True


def _map(msg: Any, field: str, number: int, value_type: str) -> None:
    """A `map<string, value_type>` field: a nested map-entry message, as protoc makes."""
    entry = msg.nested_type.add(name="".join(p.capitalize() for p in field.split("_")) + "Entry")
    entry.options.map_entry = True
    _field(entry, "key", 1, _F.TYPE_STRING)
    _field(entry, "value", 2, _F.TYPE_MESSAGE, type_name=value_type)
    _field(msg, field, number, _F.TYPE_MESSAGE, _F.LABEL_REPEATED,
           f".tensorflow.{msg.name}.{entry.name}")


def _feature_file() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(name="tensorflow/core/example/feature.proto",
                                            package="tensorflow", syntax="proto3")
    rep = _F.LABEL_REPEATED
    _field(fd.message_type.add(name="BytesList"), "value", 1, _F.TYPE_BYTES, rep)
    _field(fd.message_type.add(name="FloatList"), "value", 1, _F.TYPE_FLOAT, rep, packed=True)
    _field(fd.message_type.add(name="Int64List"), "value", 1, _F.TYPE_INT64, rep, packed=True)
    feature = fd.message_type.add(name="Feature")
    feature.oneof_decl.add(name="kind")
    _field(feature, "bytes_list", 1, _F.TYPE_MESSAGE, type_name=".tensorflow.BytesList", oneof=0)
    _field(feature, "float_list", 2, _F.TYPE_MESSAGE, type_name=".tensorflow.FloatList", oneof=0)
    _field(feature, "int64_list", 3, _F.TYPE_MESSAGE, type_name=".tensorflow.Int64List", oneof=0)
    _map(fd.message_type.add(name="Features"), "feature", 1, ".tensorflow.Feature")
    _field(fd.message_type.add(name="FeatureList"), "feature", 1, _F.TYPE_MESSAGE, rep,
           ".tensorflow.Feature")
    _map(fd.message_type.add(name="FeatureLists"), "feature_list", 1, ".tensorflow.FeatureList")
    return fd


def _example_file() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(name="tensorflow/core/example/example.proto",
                                            package="tensorflow", syntax="proto3",
                                            dependency=["tensorflow/core/example/feature.proto"])
    _field(fd.message_type.add(name="Example"), "features", 1, _F.TYPE_MESSAGE,
           type_name=".tensorflow.Features")
    seq = fd.message_type.add(name="SequenceExample")
    _field(seq, "context", 1, _F.TYPE_MESSAGE, type_name=".tensorflow.Features")
    _field(seq, "feature_lists", 2, _F.TYPE_MESSAGE, type_name=".tensorflow.FeatureLists")
    return fd


# A pool of our own: the default pool may already hold TensorFlow's copy of these files
# (when tensorflow is imported in the same process), and the two must not clash.
_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_feature_file())
_POOL.Add(_example_file())


def _cls(name: str) -> Any:
    return message_factory.GetMessageClass(_POOL.FindMessageTypeByName(f"tensorflow.{name}"))


BytesList = _cls("BytesList")
FloatList = _cls("FloatList")
Int64List = _cls("Int64List")
Feature = _cls("Feature")
Features = _cls("Features")
FeatureList = _cls("FeatureList")
FeatureLists = _cls("FeatureLists")
Example = _cls("Example")
SequenceExample = _cls("SequenceExample")
