"""A headless Chromium driven by Selenium, installed by the test setup when missing.

Debian's ``chromium`` and ``chromium-driver`` come from apt (as root, ``apt-get install``);
``selenium`` is a dev dependency. When they cannot be installed the page tests are skipped
with one line saying why, unless ``REQUIRE_E2E=1`` (CI), where that is a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

PACKAGES = ("chromium", "chromium-driver")


def _binaries() -> tuple[str | None, str | None]:
    return shutil.which("chromium"), shutil.which("chromedriver")


def _install() -> str:
    """Install the browser with apt; returns why it could not ("" when it did)."""
    if shutil.which("apt-get") is None:
        return "apt-get is not available to install chromium"
    if os.geteuid() != 0:
        return "chromium is missing and installing it needs root (apt-get install chromium)"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", *PACKAGES],
    ):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            return f"{' '.join(command)} failed: {done.stderr.strip()[-300:]}"
    return ""


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    browser, driver = _binaries()
    problem = ""
    if browser is None or driver is None:
        problem = _install()
        browser, driver = _binaries()
    if browser is None or driver is None:
        message = problem or "chromium or chromedriver is missing after installing them"
        if os.environ.get("REQUIRE_E2E") == "1":
            pytest.fail(f"REQUIRE_E2E=1 but {message}", pytrace=False)
        pytest.skip(message)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(flag)
    options.add_argument("--window-size=1500,1000")
    session = webdriver.Chrome(service=Service(executable_path=driver), options=options)
    try:
        yield session
    finally:
        session.quit()
