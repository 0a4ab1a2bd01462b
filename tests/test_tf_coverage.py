"""The coverage table of TensorFlow's tf.compat.v1 names (docs/tf-coverage.md) holds:
no name loses the status the committed table gives it, and the reading of the tests
that decides "tested" does what tests/tf_coverage.py says."""

from __future__ import annotations

import ast

from tests import tf_coverage as cov


def test_no_name_lost_its_status():
    lost = cov.regressions()
    assert not lost, ("names lost their status in docs/tf-coverage.json (restore them, or "
                      "rerun `.venv/bin/python -m tests.tf_coverage` if that is meant):\n"
                      + "\n".join(lost))


def test_markdown_is_rendered_from_the_json():
    doc = cov.committed()
    assert cov.TABLE_MD.read_text(encoding="utf-8") == cov.render_markdown(
        doc["modules"], doc["tensorflow"])


def test_the_reading_of_tests():
    differential = ast.parse(
        "def test_a(tf1):\n"
        "    assert_same(tf1, lambda tf: tf.nn.relu(tf.constant(1.0)))\n"
        "    getattr(tf1.math, 'log')\n"
        "    fl.image.resize_images\n")
    assert cov._is_differential(differential)
    assert sorted(cov._chains(differential)) == [
        ("constant",), ("image",), ("image", "resize_images"), ("math",), ("math", "log"),
        ("nn",),
        ("nn", "relu")]
    assert not cov._is_differential(ast.parse("def test_b(tmp_path):\n    fl.nn.relu\n"))


def test_statuses_from_flowlab():
    table = cov.statuses({"nn": ["relu", "no_such_op_anywhere"]})
    assert table["nn"]["no_such_op_anywhere"] == {"status": cov.MISSING}
    assert table["nn"]["relu"]["status"] == cov.TESTED
    assert table["nn"]["relu"]["test"].startswith("tests/")
