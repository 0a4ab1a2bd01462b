"""flowlab.viz.plot_scalars: a logdir's scalars in matplotlib, updated live; and the
tailing event-file reader under it."""

from __future__ import annotations

import glob
import os

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

import flowlab as fl  # noqa: E402
from flowlab.summary.summary_iterator import EventFileReader  # noqa: E402


def _log(writer, tag, points):
    for step, value in points:
        writer.add_summary(fl.Summary(value=[fl.Summary.Value(tag=tag, simple_value=value)]), step)


def test_plot_reads_runs_and_tags_and_updates_live(tmp_path):
    train = fl.summary.FileWriter(str(tmp_path / "train"))
    evalw = fl.summary.FileWriter(str(tmp_path / "eval"))
    _log(train, "loss", [(0, 2.0), (1, 1.5)])
    _log(evalw, "loss", [(0, 2.5)])
    _log(train, "lr", [(0, 0.125)])
    train.flush()
    evalw.flush()
    plot = fl.viz.plot_scalars(str(tmp_path))
    assert plot.scalars == {"train": {"loss": [(0, 2.0), (1, 1.5)], "lr": [(0, 0.125)]},
                            "eval": {"loss": [(0, 2.5)]}}
    titles = [ax.get_title() for ax in plot.figure.axes]
    assert titles == ["loss", "lr"]
    loss_ax = plot.figure.axes[0]
    assert sorted(line.get_label() for line in loss_ax.lines) == ["eval", "train"]
    _log(train, "loss", [(2, 1.25)])
    plot.update(train)  # flushes the writer, reads only what is new
    assert plot.scalars["train"]["loss"] == [(0, 2.0), (1, 1.5), (2, 1.25)]
    (train_line,) = [ln for ln in plot.figure.axes[0].lines if ln.get_label() == "train"]
    assert list(train_line.get_ydata()) == [2.0, 1.5, 1.25]
    _log(train, "loss", [(1, 9.0)])  # a restarted run overwrites from step 1 on
    plot.update(train)
    assert plot.scalars["train"]["loss"] == [(0, 2.0), (1, 9.0)]
    assert plot._repr_png_().startswith(b"\x89PNG")
    train.close()
    evalw.close()


def test_plot_of_an_empty_logdir_says_so_and_filters_tags(tmp_path):
    plot = fl.viz.plot_scalars(str(tmp_path))
    assert plot.scalars == {} and "no scalars" in plot.figure.axes[0].texts[0].get_text()
    with fl.summary.FileWriter(str(tmp_path)) as w:
        _log(w, "a", [(0, 1.0)])
        _log(w, "b", [(0, 2.0)])
    plot = fl.viz.ScalarsPlot(str(tmp_path), tags=["b"])
    assert [ax.get_title() for ax in plot.figure.axes] == ["b"] and "." in plot.scalars


def test_plot_updates_one_notebook_figure_in_place(tmp_path, monkeypatch):
    import IPython.display

    calls = []

    class Handle:
        def update(self, obj):
            calls.append("update")

    def display(obj, display_id=False):
        calls.append("display")
        return Handle()

    monkeypatch.setattr(IPython.display, "display", display)
    with fl.summary.FileWriter(str(tmp_path)) as w:
        _log(w, "a", [(0, 1.0)])
        plot = fl.viz.ScalarsPlot(str(tmp_path), display=True)
        plot.update(w)
        plot.update(w)
    assert calls == ["display", "update", "update"]


def test_event_file_reader_waits_for_a_partial_record(tmp_path):
    with fl.summary.FileWriter(str(tmp_path)) as w:
        _log(w, "x", [(0, 1.0), (1, 2.0)])
    (path,) = glob.glob(os.path.join(str(tmp_path), "*tfevents*"))
    with open(path, "rb") as f:
        data = f.read()
    cut = len(data) - 5  # in the middle of the last record
    partial = str(tmp_path / "partial.tfevents")
    with open(partial, "wb") as f:
        f.write(data[:cut])
    r = EventFileReader(partial)
    assert [e.step for e in r.read_new()] == [0, 0]  # file_version, then step 0
    assert r.read_new() == []
    with open(partial, "ab") as f:
        f.write(data[cut:])
    assert [e.step for e in r.read_new()] == [1]
    with open(partial, "r+b") as f:
        f.seek(13)
        f.write(b"\x00")
    with pytest.raises(fl.errors.DataLossError, match="corrupted record"):
        EventFileReader(partial).read_new()
