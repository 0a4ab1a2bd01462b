"""`tf.errors`, `tf.flags`, `tf.logging`, `tf.gfile` and `tf.app` beside TensorFlow 1.x:
the same program runs against each module and what it observes (codes, classes,
messages, parsed values, log records, files) must be equal."""

from __future__ import annotations

import enum
import logging
import os
import sys
from pathlib import Path
from typing import Any

import pytest

import flowlab as fl
from tests.difftest import assert_same_error


# --- tf.errors -----------------------------------------------------------------------
def _codes(tf: Any) -> list[int]:
    return [
        tf.errors.OK,
        tf.errors.CANCELLED,
        tf.errors.UNKNOWN,
        tf.errors.INVALID_ARGUMENT,
        tf.errors.DEADLINE_EXCEEDED,
        tf.errors.NOT_FOUND,
        tf.errors.ALREADY_EXISTS,
        tf.errors.PERMISSION_DENIED,
        tf.errors.RESOURCE_EXHAUSTED,
        tf.errors.FAILED_PRECONDITION,
        tf.errors.ABORTED,
        tf.errors.OUT_OF_RANGE,
        tf.errors.UNIMPLEMENTED,
        tf.errors.INTERNAL,
        tf.errors.UNAVAILABLE,
        tf.errors.DATA_LOSS,
        tf.errors.UNAUTHENTICATED,
    ]


def _classes(tf: Any) -> list[Any]:
    return [
        tf.errors.AbortedError,
        tf.errors.AlreadyExistsError,
        tf.errors.InternalError,
        tf.errors.PermissionDeniedError,
        tf.errors.ResourceExhaustedError,
        tf.errors.UnauthenticatedError,
        tf.errors.UnavailableError,
        tf.errors.UnknownError,
        tf.errors.CancelledError,
        tf.errors.DataLossError,
        tf.errors.DeadlineExceededError,
        tf.errors.NotFoundError,
        tf.errors.FailedPreconditionError,
        tf.errors.OutOfRangeError,
        tf.errors.UnimplementedError,
        tf.errors.InvalidArgumentError,
    ]


def test_error_codes(tf1: Any) -> None:
    assert [int(c) for c in _codes(fl)] == [int(c) for c in _codes(tf1)]


def test_error_classes(tf1: Any) -> None:
    def observe(tf: Any) -> list[Any]:
        out = []
        for cls in _classes(tf):
            err = cls(None, None, "went wrong")
            out.append(
                (
                    cls.__name__,
                    int(err.error_code),
                    err.message,
                    str(err),
                    err.node_def,
                    err.op,
                    isinstance(err, tf.errors.OpError),
                )
            )
        for code in _codes(tf)[1:]:
            out.append(tf.errors.exception_type_from_error_code(code).__name__)
        return out

    assert observe(fl) == observe(tf1)


def test_error_raised_by_a_run(tf1: Any) -> None:
    def build(tf: Any) -> Any:
        q = tf.FIFOQueue(1, tf.float32)
        with tf.control_dependencies([q.close()]):
            return q.dequeue()

    e, a = assert_same_error(tf1, build)
    assert isinstance(a, fl.errors.OutOfRangeError) and isinstance(e, tf1.errors.OutOfRangeError)
    assert int(a.error_code) == int(e.error_code) == int(tf1.errors.OUT_OF_RANGE)


# --- tf.flags ------------------------------------------------------------------------
class Color(enum.Enum):
    RED = 1
    BLUE = 2


def _flags_program(tf: Any) -> list[Any]:
    """Define flags of every kind in a fresh FlagValues, parse a command line and report
    what absl-through-TensorFlow gives back."""
    fv = tf.flags.FlagValues()
    out: list[Any] = []
    tf.flags.DEFINE_string("name", "ann", "A string.", flag_values=fv)
    tf.flags.DEFINE_integer("steps", 10, "Steps.", lower_bound=0, flag_values=fv)
    tf.flags.DEFINE_float("lr", 0.5, "Rate.", flag_values=fv)
    tf.flags.DEFINE_bool("fast", False, "Fast.", flag_values=fv)
    tf.flags.DEFINE_boolean("slow", True, "Slow.", flag_values=fv)
    tf.flags.DEFINE_enum("mode", "train", ["train", "eval"], "Mode.", flag_values=fv)
    tf.flags.DEFINE_enum_class("color", Color.RED, Color, "Color.", flag_values=fv)
    tf.flags.DEFINE_list("layers", "1,2", "Layers.", flag_values=fv)
    tf.flags.DEFINE_spaceseplist("words", "a b", "Words.", flag_values=fv)
    tf.flags.DEFINE_multi_string("tag", ["x"], "Tags.", flag_values=fv)
    tf.flags.DEFINE_multi_integer("port", [1], "Ports.", flag_values=fv)
    tf.flags.DEFINE_multi_float("w", [0.5], "Weights.", flag_values=fv)
    tf.flags.DEFINE_multi_enum("fmt", ["png"], ["png", "jpg"], "Formats.", flag_values=fv)
    tf.flags.DEFINE_multi_enum_class("colors", [Color.BLUE], Color, "Colors.", flag_values=fv)
    tf.flags.DEFINE_multi(
        tf.flags.ArgumentParser(),
        tf.flags.ArgumentSerializer(),
        "tagged",
        ["a"],
        "Any.",
        flag_values=fv,
    )
    tf.flags.DEFINE(
        tf.flags.IntegerParser(),
        "sized",
        3,
        "Generic.",
        flag_values=fv,
        serializer=tf.flags.ArgumentSerializer(),
    )
    tf.flags.DEFINE_alias("n", "name", flag_values=fv)
    tf.flags.DEFINE_flag(
        tf.flags.Flag(
            tf.flags.FloatParser(), tf.flags.ArgumentSerializer(), "decay", 0.9, "Decay."
        ),
        flag_values=fv,
    )
    tf.flags.DEFINE_flag(tf.flags.BooleanFlag("verbose_x", False, "Verbose."), flag_values=fv)
    tf.flags.DEFINE_flag(tf.flags.EnumFlag("size", "s", "Size.", ["s", "m"]), flag_values=fv)
    tf.flags.DEFINE_flag(
        tf.flags.EnumClassFlag("shade", Color.RED, "Shade.", Color), flag_values=fv
    )
    tf.flags.DEFINE_flag(
        tf.flags.MultiFlag(
            tf.flags.IntegerParser(), tf.flags.ArgumentSerializer(), "ids", [7], "Ids."
        ),
        flag_values=fv,
    )
    tf.flags.DEFINE_flag(
        tf.flags.MultiEnumClassFlag("hues", [Color.RED], "Hues.", Color), flag_values=fv
    )
    holder = tf.flags.DEFINE_integer("held", 4, "Held.", flag_values=fv)
    out.append(isinstance(holder, tf.flags.FlagHolder))
    tf.flags.register_validator("steps", lambda v: v < 1000, "too many steps", flag_values=fv)
    tf.flags.DEFINE_integer("lo", 1, "Low.", flag_values=fv)
    tf.flags.DEFINE_integer("hi", 5, "High.", flag_values=fv)
    tf.flags.register_multi_flags_validator(
        ["lo", "hi"], lambda d: d["lo"] <= d["hi"], "lo > hi", flag_values=fv
    )

    @tf.flags.validator("lr", "lr must be positive", flag_values=fv)
    def _positive(v: float) -> bool:
        return v > 0

    @tf.flags.multi_flags_validator(["fast", "slow"], "not both", flag_values=fv)
    def _not_both(d: dict[str, bool]) -> bool:
        return not (d["fast"] and d["slow"])

    tf.flags.DEFINE_bool("a1", False, "A1.", flag_values=fv)
    tf.flags.DEFINE_bool("a2", False, "A2.", flag_values=fv)
    tf.flags.mark_bool_flags_as_mutual_exclusive(["a1", "a2"], flag_values=fv)
    tf.flags.DEFINE_string("o1", None, "O1.", flag_values=fv)
    tf.flags.DEFINE_string("o2", None, "O2.", flag_values=fv)
    tf.flags.mark_flags_as_mutual_exclusive(["o1", "o2"], flag_values=fv)
    tf.flags.DEFINE_string("req", None, "Required.", flag_values=fv)
    tf.flags.mark_flag_as_required("req", flag_values=fv)
    tf.flags.DEFINE_string("req2", None, "Required too.", flag_values=fv)
    tf.flags.mark_flags_as_required(["req2"], flag_values=fv)
    tf.flags.set_default(holder, 6)
    tf.flags.declare_key_flag("name", flag_values=fv)
    tf.flags.adopt_module_key_flags(sys.modules[__name__], flag_values=fv)

    try:
        _ = fv.name
    except tf.flags.UnparsedFlagAccessError as e:
        out.append(("unparsed", type(e).__name__))
    rest = fv(
        [
            "prog",
            "--name=carl",
            "--steps",
            "20",
            "--nofast",
            "--mode=eval",
            "--color=BLUE",
            "--layers=3,4,5",
            "--words=p q",
            "--tag=y",
            "--tag=z",
            "--port=8",
            "--w=1.5",
            "--fmt=jpg",
            "--colors=RED",
            "--tagged=b",
            "--sized=9",
            "--decay=0.1",
            "--verbose_x",
            "--size=m",
            "--shade=BLUE",
            "--ids=3",
            "--ids=4",
            "--hues=BLUE",
            "--held=5",
            "--req=r",
            "--req2=s",
            "--",
            "--extra",
        ]
    )
    out.append(rest)
    for name in (
        "name",
        "steps",
        "lr",
        "fast",
        "slow",
        "mode",
        "color",
        "layers",
        "words",
        "tag",
        "port",
        "w",
        "fmt",
        "colors",
        "tagged",
        "sized",
        "n",
        "decay",
        "verbose_x",
        "size",
        "shade",
        "ids",
        "hues",
        "held",
        "lo",
        "hi",
        "req",
        "o1",
    ):
        out.append((name, getattr(fv, name)))
    out.append(holder.value)
    out.append(sorted(k for k in fv.flag_values_dict()))
    tf.flags.override_value(holder, 11)
    out.append((holder.value, fv.held))
    fv.unparse_flags()
    out.append(
        sorted(tf.flags.flag_dict_to_args({"a": 1, "b": True, "c": False, "d": [1, 2], "e": None}))
    )
    out.append(tf.flags.doc_to_help("  Some doc.\n\n  More."))
    out.append(tf.flags.text_wrap("word " * 12, length=30, indent="  "))
    out.append(isinstance(tf.flags.get_help_width(), int))
    return out


def test_flags_program(tf1: Any) -> None:
    assert _flags_program(fl) == _flags_program(tf1)


def _flag_errors(tf: Any) -> list[Any]:
    out = []
    fv = tf.flags.FlagValues()
    tf.flags.DEFINE_integer("steps", 10, "Steps.", lower_bound=0, flag_values=fv)
    tf.flags.DEFINE_integer("lo", 1, "Low.", flag_values=fv)
    tf.flags.register_validator("lo", lambda v: v < 100, "lo too big", flag_values=fv)
    cases = [
        lambda: tf.flags.DEFINE_integer("steps", 1, "Again.", flag_values=fv),
        lambda: fv(["prog", "--steps=-3"]),
        lambda: fv(["prog", "--nosuch=1"]),
        lambda: fv(["prog", "--lo=500"]),
        lambda: fv(["prog", "--flagfile=/nonexistent/flags.txt"]),
        lambda: tf.flags.DEFINE_string("flag_values_dict", "x", "Clash.", flag_values=fv),
    ]
    for case in cases:
        try:
            case()
        except tf.flags.Error as e:
            out.append(
                (type(e).__name__, isinstance(e, tf.flags.Error), str(e).splitlines()[0][:60])
            )
        else:
            out.append("no error")
    for cls in (
        tf.flags.CantOpenFlagFileError,
        tf.flags.DuplicateFlagError,
        tf.flags.FlagNameConflictsWithMethodError,
        tf.flags.IllegalFlagValueError,
        tf.flags.UnrecognizedFlagError,
        tf.flags.ValidationError,
        tf.flags.UnparsedFlagAccessError,
    ):
        out.append((cls.__name__, issubclass(cls, tf.flags.Error)))
    return out


def test_flag_errors(tf1: Any) -> None:
    assert _flag_errors(fl) == _flag_errors(tf1)


def _parsers(tf: Any) -> list[Any]:
    out = []
    out.append(tf.flags.BooleanParser().parse("true"))
    out.append(tf.flags.IntegerParser(lower_bound=0).parse("0x10"))
    out.append(tf.flags.FloatParser().parse("2.5e1"))
    out.append(tf.flags.EnumParser(["a", "b"]).parse("b"))
    out.append(tf.flags.EnumClassParser(Color).parse("BLUE"))
    out.append(tf.flags.EnumClassParser(Color, case_sensitive=False).parse("red"))
    out.append(tf.flags.ListParser().parse("a,b, c"))
    out.append(tf.flags.WhitespaceSeparatedListParser().parse("a  b\tc"))
    out.append(tf.flags.ArgumentParser().parse("raw"))
    out.append(isinstance(tf.flags.ListParser(), tf.flags.BaseListParser))
    out.append(tf.flags.ListSerializer(";").serialize(["a", "b"]))
    out.append(tf.flags.CsvListSerializer(",").serialize(["a", "b c"]))
    out.append(tf.flags.EnumClassSerializer(lowercase=True).serialize(Color.BLUE))
    out.append(
        tf.flags.EnumClassListSerializer(",", lowercase=False).serialize([Color.RED, Color.BLUE])
    )
    out.append(tf.flags.ArgumentSerializer().serialize(3))
    for bad in (
        lambda: tf.flags.IntegerParser(lower_bound=0).parse("-1"),
        lambda: tf.flags.EnumParser(["a"]).parse("z"),
        lambda: tf.flags.BooleanParser().parse("maybe"),
    ):
        try:
            bad()
        except ValueError as e:
            out.append(str(e))
    return out


def test_parsers_and_serializers(tf1: Any) -> None:
    assert _parsers(fl) == _parsers(tf1)


def test_global_flags_object(tf1: Any) -> None:
    name = "flowlab_test_diff_platform_flag"
    fl.flags.DEFINE_string(name, "d", "A test flag.")
    try:
        assert tf1.flags.FLAGS[name].default == "d"  # both are absl's one FLAGS
        assert fl.flags.FLAGS[name].default == "d"
    finally:
        delattr(fl.flags.FLAGS, name)


# --- tf.logging ----------------------------------------------------------------------
class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=1)
        self.records: list[tuple[int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append((record.levelno, record.getMessage()))


def _log_program(tf: Any) -> list[tuple[int, str]]:
    logger = logging.getLogger("tensorflow")
    handler = _Records()
    logger.addHandler(handler)
    old = logger.level
    try:
        tf.logging.set_verbosity(1)
        tf.logging.debug("debug %d", 1)
        tf.logging.info("info %s", "x")
        tf.logging.warn("warn")
        tf.logging.warning("warning %.1f", 2.5)
        tf.logging.error("error")
        tf.logging.fatal("fatal")
        tf.logging.log(tf.logging.ERROR, "log at %s", "ERROR")
        tf.logging.log(tf.logging.WARN, "log at WARN")
        tf.logging.vlog(tf.logging.FATAL, "vlog")
        tf.logging.TaskLevelStatusMessage("status")
        return handler.records + [
            (tf.logging.ERROR, str(tf.logging.FATAL)),
            (tf.logging.WARN, "WARN"),
        ]
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)


def test_logging(tf1: Any) -> None:
    assert _log_program(fl) == _log_program(tf1)


# --- tf.gfile ------------------------------------------------------------------------
def _gfile_program(tf: Any, root: Path) -> list[Any]:
    out: list[Any] = []
    base = str(root / "g")
    tf.gfile.MakeDirs(os.path.join(base, "a", "b"))
    tf.gfile.MkDir(os.path.join(base, "c"))
    with tf.gfile.Open(os.path.join(base, "a", "f.txt"), "w") as fh:
        fh.write("hello\nworld\n")
    with tf.gfile.Open(os.path.join(base, "a", "f.txt")) as fh:
        out.append(fh.read())
    tf.gfile.Copy(os.path.join(base, "a", "f.txt"), os.path.join(base, "c", "f2.txt"))
    try:
        tf.gfile.Copy(os.path.join(base, "a", "f.txt"), os.path.join(base, "c", "f2.txt"))
    except tf.errors.OpError as e:
        out.append(type(e).__name__)
    tf.gfile.Copy(
        os.path.join(base, "a", "f.txt"), os.path.join(base, "c", "f2.txt"), overwrite=True
    )
    tf.gfile.Rename(os.path.join(base, "c", "f2.txt"), os.path.join(base, "c", "f3.txt"))
    out.append(tf.gfile.Exists(os.path.join(base, "c", "f2.txt")))
    out.append(tf.gfile.Exists(os.path.join(base, "c", "f3.txt")))
    out.append(tf.gfile.IsDirectory(os.path.join(base, "a")))
    out.append(tf.gfile.IsDirectory(os.path.join(base, "a", "f.txt")))
    out.append(sorted(tf.gfile.ListDirectory(base)))
    out.append(
        sorted(os.path.relpath(p, base) for p in tf.gfile.Glob(os.path.join(base, "*", "*.txt")))
    )
    out.append(tf.gfile.Stat(os.path.join(base, "a", "f.txt")).length)
    out.append(tf.gfile.Stat(os.path.join(base, "a")).is_directory)
    out.append(
        [
            (os.path.relpath(d, base), sorted(ds), sorted(fs))
            for d, ds, fs in sorted(tf.gfile.Walk(base))
        ]
    )
    tf.gfile.Remove(os.path.join(base, "c", "f3.txt"))
    out.append(sorted(tf.gfile.ListDirectory(os.path.join(base, "c"))))
    for bad in (
        lambda: tf.gfile.Remove(os.path.join(base, "nope")),
        lambda: tf.gfile.Stat(os.path.join(base, "nope")),
        lambda: tf.gfile.ListDirectory(os.path.join(base, "nope")),
    ):
        try:
            bad()
        except tf.errors.OpError as e:
            out.append(type(e).__name__)
    tf.gfile.DeleteRecursively(base)
    out.append(tf.gfile.Exists(base))
    return out


def test_gfile(tf1: Any, tmp_path: Path) -> None:
    (tmp_path / "tf").mkdir()
    (tmp_path / "fl").mkdir()
    assert _gfile_program(fl, tmp_path / "fl") == _gfile_program(tf1, tmp_path / "tf")


# --- tf.app --------------------------------------------------------------------------
def _app_program(tf: Any) -> list[Any]:
    seen: list[Any] = []

    def main(argv: list[str]) -> None:
        seen.append(list(argv))

    try:
        tf.app.run(main=main, argv=["prog", "--", "rest"])
    except SystemExit as e:
        seen.append(("exit", e.code))
    return seen


def test_app_run(tf1: Any) -> None:
    assert _app_program(fl) == _app_program(tf1)


@pytest.mark.parametrize("code", [1, 2, 3, 5, 9, 11, 13])
def test_exception_type_from_error_code(tf1: Any, code: int) -> None:
    a = fl.errors.exception_type_from_error_code(code)
    e = tf1.errors.exception_type_from_error_code(code)
    assert a.__name__ == e.__name__
    assert issubclass(a, fl.errors.OpError)
