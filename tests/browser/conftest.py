"""One JupyterLab server and one Chromium for every browser test (tests/browser/lab.py):
starting them takes longer than most tests."""

from __future__ import annotations

import pytest

from tests.browser.lab import jupyter_lab


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    with jupyter_lab(tmp_path_factory.mktemp("lab")) as running:
        yield running
