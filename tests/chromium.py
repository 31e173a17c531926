"""The one way tests and benches start Debian's Chromium: its path and its full flag list.

Every launch goes through :func:`launch_chromium` so no test forgets a flag (a missing
``--disable-component-update`` lets Chromium fetch components from the network mid-test; a missing
``--disable-sync`` lets it try to reach Google's sync). tests/test_chromium_flags.py holds every
launch in tests/ and bench/ to this helper.
"""

from __future__ import annotations

import shutil

from playwright.sync_api import Browser, Playwright

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Never ``playwright install``: Debian's chromium, headless, with nothing that reaches the network.
CHROMIUM_ARGS: tuple[str, ...] = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def launch_chromium(playwright: Playwright) -> Browser:
    """Debian's Chromium, headless, with the full flag list."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=list(CHROMIUM_ARGS), headless=True)
