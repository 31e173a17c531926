"""The panel shows the release the start verified and its digest, a development release marked as such,
and a table started without [software] as not verified (issue 26 item 1), in real headless Chromium."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.panel.conftest import PanelRig
from tests.panel.test_panel_browser import browser, log_in, page, pytestmark

__all__ = ["browser", "page", "pytestmark"]  # the browser tests' fixtures and skip, reused

OPENED = {"game": "high-card-flush", "banking_mode": "house", "config_digest": "ab" * 32, "by": "daemon"}


def verified(development: bool) -> dict[str, object]:
    return {
        "release": "0.1.0",
        "release_digest": "4619dfafd9aca0a6" + "0" * 48,
        "development": development,
        "key_id": "b5aa513c1342c9bf",
        "files": 212,
        "dependencies": 33,
    }


def test_a_development_release_is_shown_with_its_digest_and_marked(page: Page, live: PanelRig) -> None:
    live.journal.append("software_verified", verified(True), round_id=None, source="engine")
    live.journal.append("table_opened", OPENED, round_id=None, source="engine")
    log_in(page, "sam")
    software = page.locator("#software")
    expect(software).to_contain_text("0.1.0")
    expect(software).to_contain_text("4619dfafd9aca0a6")
    expect(page.locator("#software-development")).to_contain_text("DEVELOPMENT")


def test_a_signed_release_is_shown_verified(page: Page, live: PanelRig) -> None:
    live.journal.append("software_verified", verified(False), round_id=None, source="engine")
    live.journal.append("table_opened", OPENED, round_id=None, source="engine")
    log_in(page, "sam")
    expect(page.locator("#software")).to_contain_text("verified")
    expect(page.locator("#software-development")).to_have_count(0)


def test_a_table_started_without_software_is_shown_not_verified(page: Page, live: PanelRig) -> None:
    live.journal.append("table_opened", OPENED, round_id=None, source="engine")
    log_in(page, "sam")
    expect(page.locator("#software-unverified")).to_contain_text("not verified")
