"""A copy of the product in a temporary directory, its signed release, and `flushtable run` started from
the copy in a child process (PYTHONPATH puts the copy before the checkout's editable install, so the
daemon verifies and runs the copy's files; the checkout is never modified)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from controller import software
from controller.config import DEFAULT_CONFIG_TOML

CHECKOUT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 300.0  # a generous bound for a loaded 2-core machine; a start takes about a second


@dataclass
class Release:
    site: Path  # the directory holding the copied packages (first on the child's import path)
    key: Path
    public_key: str
    manifest: Path  # the signed manifest
    config: Path
    journal: Path

    @property
    def search_path(self) -> list[str]:
        return [str(self.site), *sys.path]

    def sign(
        self, *, key: Path | None = None, development: bool = False, edit: dict[str, object] | None = None
    ) -> None:
        manifest = software.build_manifest(
            self.site, release="0.1.0", development=development, search_path=self.search_path
        )
        manifest.update(edit or {})
        signed = software.sign_manifest(manifest, software.load_private_key(key or self.key))
        self.manifest.write_text(json.dumps(signed), encoding="utf-8")

    def start(self, *extra: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PYTHONPATH": str(self.site)}
        code = "import sys; from controller.cli import main; sys.exit(main())"
        command: Sequence[str] = [
            sys.executable, "-c", code, "run", "--config", str(self.config), "--journal", str(self.journal),
            "--new-journal", "--rounds", "1", "--no-panel", "--time-scale", "50", "--seed", "7", *extra,
        ]  # fmt: skip
        return subprocess.run(
            command,
            check=False,
            cwd=self.site.parent,
            env=env,
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT_S,
        )


def copy_product(site: Path) -> None:
    for package in software.PRODUCT_PACKAGES:
        shutil.copytree(CHECKOUT / package, site / package, ignore=shutil.ignore_patterns("__pycache__"))


@pytest.fixture
def release(tmp_path: Path) -> Release:
    site = tmp_path / "site"
    copy_product(site)
    key = tmp_path / "maker.key"
    public = software.generate_key(key)
    config = tmp_path / "table.toml"
    made = Release(site, key, public, tmp_path / "release.json", config, tmp_path / "journal.sqlite")
    config.write_text(
        DEFAULT_CONFIG_TOML + f'\n[software]\nmanifest = "release.json"\npublic_key = "{public}"\n',
        encoding="utf-8",
    )
    made.sign()
    return made
