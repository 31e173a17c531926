"""`flushtable verify-software --seed HEX` (issue 26 item 2, at the table): its answer recomputed here
independently (hmac over the copied files, in path order), per file and aggregated; one changed byte
changes that file's value and the aggregate and nothing else; the floor reads the same files from a
wheel as from a directory, and refuses an approved release whose files are not its manifest's."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from controller import software
from controller.errors import UserError
from tests.software.conftest import Release, copy_product

SEED = "00112233445566778899aabbccddeeff"


def independent(seed: bytes, site: Path) -> tuple[str, dict[str, str]]:
    files: dict[str, str] = {}
    for package in software.PRODUCT_PACKAGES:
        for path in (site / package).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                files[path.relative_to(site).as_posix()] = hmac.new(
                    seed, path.read_bytes(), "sha256"
                ).hexdigest()
    text = "".join(f"{name}\n{files[name]}\n" for name in sorted(files))
    return hmac.new(seed, text.encode(), hashlib.sha256).hexdigest(), files


def ask(site: Path, seed: str) -> dict[str, object]:
    code = "import sys; from controller.cli import main; sys.exit(main())"
    result = subprocess.run(
        [sys.executable, "-c", code, "verify-software", "--seed", seed, "--json", "--verbose"],
        cwd=site.parent,  # not the checkout: `python -c` puts the working directory first on the path
        env={**os.environ, "PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    answer: dict[str, object] = json.loads(result.stdout)
    return answer


def test_the_answer_is_the_independent_hmac_and_follows_a_changed_byte(tmp_path: Path) -> None:
    site = tmp_path / "site"
    copy_product(site)
    seed = bytes.fromhex(SEED)
    aggregate, per_file = independent(seed, site)
    answer = ask(site, SEED)
    assert answer["aggregate"] == aggregate
    assert answer["per_file"] == per_file
    target = site / "drivers" / "__init__.py"
    target.write_bytes(target.read_bytes() + b"#")
    changed = ask(site, SEED)
    assert changed["aggregate"] != aggregate
    assert isinstance(changed["per_file"], dict)
    differing = {name for name, value in changed["per_file"].items() if per_file.get(name) != value}
    assert differing == {"drivers/__init__.py"}
    # Another seed, another answer: a stored answer is no answer to a new seed.
    assert ask(site, "ff" * 16)["aggregate"] != changed["aggregate"]


def test_a_bad_seed_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="--seed"):
        software.parse_seed("abc")
    with pytest.raises(UserError, match="8 to 64 bytes"):
        software.parse_seed("00")


def test_the_floor_reads_a_wheel_as_a_directory_and_checks_it(release: Release, tmp_path: Path) -> None:
    wheel = tmp_path / "flushtable-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, path in software.product_files(release.site).items():
            archive.write(path, name)
        archive.writestr("flushtable-0.1.0.dist-info/RECORD", "")
    from_wheel = software.release_files_from(wheel)
    from_directory = software.release_files_from(release.site)
    assert from_wheel == from_directory
    manifest = software.read_signed(release.manifest)["manifest"]
    software.check_release_files(from_wheel, manifest, wheel)  # the approved release is the manifest's
    tampered = {**from_wheel, "controller/cli.py": from_wheel["controller/cli.py"] + b"#"}
    with pytest.raises(UserError, match=r"controller/cli.py differs"):
        software.check_release_files(tampered, manifest, wheel)
