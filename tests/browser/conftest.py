"""One JupyterLab server and one Chromium for every browser test (tests/browser/lab.py):
starting them takes longer than most tests."""

from __future__ import annotations

import pytest

from tests.browser.lab import jupyter_lab


# Package scope: closed when tests/browser ends, since Playwright's sync API allows one
# running instance per thread and later browser tests (Netron's, TensorBoard's) start
# their own.
@pytest.fixture(scope="package")
def lab(tmp_path_factory):
    with jupyter_lab(tmp_path_factory.mktemp("lab")) as running:
        yield running
