"""``agui conformance``: the table on standard output, the JSON report, the exit status."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from agui_core.app.cli import main
from agui_core.conformance import CATALOGUE
from tests.conformance import broken
from tests.conformance.agents import marking_tools
from tests.conformance.servers import served


def test_a_conforming_server_exits_0_with_a_table_and_a_json_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report.json"
    with served() as url:
        argv = ["conformance", url, "--approve", "--expiry-wait", "5", "--timeout", "10", "--json", str(report)]
        status = main(argv)
    out = capsys.readouterr().out
    assert status == 0, out
    assert f"{len(CATALOGUE)} passed, 0 failed, 0 not applicable" in out
    document = orjson.loads(report.read_bytes())
    assert document["ok"] is True and document["transport"] == "http"
    assert [c["id"] for c in document["checks"]] == [spec.id for spec in CATALOGUE]
    assert all(c["seed"] and c["words"] and c["rule"] for c in document["checks"])


def test_a_broken_server_exits_1_and_names_the_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with served(broken.AcceptsUnknownIds, "ws") as url:
        argv = ["conformance", url, "--approve", "--expiry-wait", "5", "--timeout", "10", "--header", "X-Test: 1"]
        status = main([*argv, "--profile", "seed"])
    out = capsys.readouterr().out
    assert status == 1
    assert "FAIL r2.unknown-id [R2]" in out and "1 failed" in out


def test_a_miss_of_the_seed_profile_alone_does_not_fail_the_spec_profile(capsys: pytest.CaptureFixture[str]) -> None:
    # The spec lets an unrecognised resume entry through (SHOULD proceed without it): refusing
    # it is the seed's stricter rule, so under the default profile the command exits 0.
    with served(broken.AcceptsUnknownIds, "ws") as url:
        status = main(["conformance", url, "--approve", "--expiry-wait", "5", "--timeout", "10"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "  breaks the spec (a MUST of AG-UI 1.1): 0" in out
    assert "  misses the seed's stricter profile (the spec allows it): 1 (r2.unknown-id)" in out
    assert "force: seed profile; source: seed R2; ag-ui docs/spec/1.1/basic/patterns/interrupt-resume.mdx" in out


def test_answers_and_inputs_come_from_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A form answer the server must refuse shows that the kit resumed with the file's payload.
    answers = tmp_path / "answers.json"
    answers.write_bytes(orjson.dumps({"input_required": {"quarter": "Q9", "year": 2031, "revenue": 7}}))
    run_input = tmp_path / "input.json"
    run_input.write_bytes(orjson.dumps({"messages": [{"id": "u1", "role": "user", "content": "go"}]}))
    report = tmp_path / "report.json"
    with served() as url:
        argv = ["conformance", url, "--input", str(run_input), "--answers", str(answers), "--json", str(report)]
        # --profile seed: a refused valid resume misses the seed's rule, the spec lets a run fail.
        status = main([*argv, "--expiry-wait", "0", "--profile", "seed"])
    assert status == 1, capsys.readouterr().out
    checks = {c["id"]: c for c in orjson.loads(report.read_bytes())["checks"]}
    accepted = checks["resume.accepted"]
    assert accepted["status"] == "fail" and "INVALID_PAYLOAD" in accepted["detail"]
    (resume,) = accepted["evidence"]
    assert resume["sent"]["messages"][0]["id"] == "u1"
    assert resume["sent"]["resume"][2]["payload"] == {"quarter": "Q9", "year": 2031, "revenue": 7}
    assert checks["r7.expired"]["status"] == "n/a" and "--expiry-wait" in checks["r7.expired"]["detail"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["conformance", "ftp://example.com"], "speaks http(s)://"),
        (["conformance", "http://127.0.0.1:9", "--header", "nocolon"], "is not NAME:VALUE"),
        (["conformance", "http://127.0.0.1:9", "--input", "/nonexistent.json"], "nonexistent"),
        (["conformance", "http://127.0.0.1:9", "--timeout", "5"], "cannot test http://127.0.0.1:9"),
    ],
)
def test_what_cannot_be_tested_exits_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_help_says_what_the_kit_sends(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["conformance", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "What the kit sends:" in text
    assert (
        'approvals with a denial ({"approved": false}, false) or a cancellation, never a yes unless --approve' in text
    )
    assert "a cancelled entry for every interrupt still open" in text
    assert "--approve let the kit approve tool calls and confirmations, so the server RUNS its gated tools" in text


def test_by_default_the_command_runs_no_gated_tool(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "report.json"
    marks = tmp_path / "marks"
    marks.mkdir()
    with served(tools=marking_tools(marks)) as url:
        status = main(["conformance", url, "--expiry-wait", "5", "--timeout", "10", "--json", str(report)])
    out = capsys.readouterr().out
    assert status == 0, out
    assert list(marks.iterdir()) == []
    assert "Skipped without --approve (they need a tool to run): resume.tool-results, r5.concurrent" in out
    document = orjson.loads(report.read_bytes())
    assert document["approve"] is False and document["leftOpen"] == {}
