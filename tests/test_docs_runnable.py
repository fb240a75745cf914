"""Every code block of the README and of ``docs/`` marked runnable runs as it is written.

The blocks of each page run in order in a fresh folder (a block saved as a file, a server
started, then the commands and scripts that talk to it), with ``.venv/bin`` on the ``PATH``;
see :mod:`tests.docs_blocks` for the markers.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs_blocks import Player, runnable_blocks

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKED = [page for page in PAGES if runnable_blocks(page.read_text(encoding="utf-8"))]


@pytest.fixture
def player(tmp_path: Path) -> Iterator[Player]:
    played = Player(tmp_path, Path(sys.executable).parent)
    yield played
    played.close()


def test_the_readme_has_runnable_blocks_for_its_agent_its_server_its_curl_exchange_and_its_client() -> None:
    hows = [block.how for block in runnable_blocks((ROOT / "README.md").read_text(encoding="utf-8"))]
    assert hows[0] == "save as mymodule.py" and hows[1].startswith("server ")
    assert sum(how.startswith("expect ") for how in hows) == 2  # the curl run and its resume
    assert any(how.startswith("with server ") for how in hows)  # the Python client


@pytest.mark.parametrize("page", MARKED, ids=[str(page.relative_to(ROOT)) for page in MARKED])
def test_each_runnable_block_of_the_page_runs(page: Path, player: Player) -> None:
    outputs = [player.play(block) for block in runnable_blocks(page.read_text(encoding="utf-8"))]
    if page.name == "README.md":
        client = outputs[-1]  # the Python client's prints, as its comments say
        assert client.splitlines() == [
            'Run sendEmail on "bob@example.com"?',
            "Tell Ann it went out?",
            "{'email': 'executed'}",
        ], client
