"""The status page in a real headless Chromium: the queue rows, a pending reason, the
overused mark, a parent queue's rolled-up usage, the queue page's derivation; a screenshot
is kept in the test's directory."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from app.cli.main import build_parser
from app.cli.serve import backend_from_args
from app.serving.server import create_app
from tests.app.live import serve

#: Set to a path to refresh the README's screenshot (docs/status-page.png).
SCREENSHOT_ENV = "STATUS_PAGE_SCREENSHOT"


def test_status_page_shows_queues_and_pending_reasons(chromium: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    engine = backend_from_args(build_parser().parse_args(["serve", "--demo"])).backend
    with serve(create_app(engine)) as url:
        chromium.get(url + "/")
        rows = chromium.find_elements(By.CSS_SELECTOR, "#queues tr.queue")
        names = [row.get_attribute("data-queue") for row in rows]
        assert {"production", "analytics", "research", "research-nlp"} <= set(names)
        # research-nlp sits under research in the tree
        assert names.index("research-nlp") == names.index("research") + 1
        overused = [
            r.get_attribute("data-queue") for r in rows if "overused" in r.get_attribute("class")
        ]
        assert "analytics" in overused
        production = next(r for r in rows if r.get_attribute("data-queue") == "production")
        assert "passes the queue and gang checks" in production.text
        archive = next(r for r in rows if r.get_attribute("data-queue") == "archive")
        assert "queue archive is Closed" in archive.text
        research = next(r for r in rows if r.get_attribute("data-queue") == "research")
        assert "held with its children" in research.text  # its children's usage, rolled up
        assert chromium.find_element(By.ID, "auto").is_selected()
        shot = tmp_path / "status-page.png"
        chromium.save_screenshot(str(shot))
        assert shot.stat().st_size > 10_000
        if os.environ.get(SCREENSHOT_ENV):
            chromium.save_screenshot(os.environ[SCREENSHOT_ENV])

        chromium.find_element(By.LINK_TEXT, "production").click()
        assert chromium.current_url == url + "/queues/production"  # a relative link, resolved
        assert chromium.find_element(By.ID, "derivation").text.count("pass 1") == 1
        assert "billing-reconcile" in chromium.find_element(By.ID, "pending").text
        chromium.save_screenshot(str(tmp_path / "queue-page.png"))
