"""When the report tests skip: only without playwright or Chromium, never on a failed launch."""

from __future__ import annotations

import pytest

from . import browser


class _Chromium:
    def __init__(self, error: Exception | None):
        self.error = error

    def launch(self, executable_path, args):
        if self.error is not None:
            raise self.error
        return ("browser", executable_path, tuple(args))


class _Playwright:
    def __init__(self, error: Exception | None = None):
        self.chromium = _Chromium(error)


def test_a_browser_that_does_not_start_is_a_failure(tmp_path, monkeypatch):
    chromium = tmp_path / "chromium"
    chromium.write_text("#!/bin/sh\nexit 1\n", encoding="utf-8")
    monkeypatch.setenv("FABRICSIM_CHROMIUM", str(chromium))
    with pytest.raises(pytest.fail.Exception) as info:
        browser.launch(_Playwright(RuntimeError("Target page, context or browser has been closed\nlog...")))
    assert "did not start: Target page, context or browser has been closed" in str(info.value)
    assert browser.launch(_Playwright())[1] == str(chromium)


def test_no_chromium_is_a_skip(tmp_path, monkeypatch):
    monkeypatch.setenv("FABRICSIM_CHROMIUM", str(tmp_path / "absent"))
    monkeypatch.setattr(browser.shutil, "which", lambda name: None)
    with pytest.raises(pytest.skip.Exception, match="Chromium not installed"):
        browser.launch(_Playwright())
