"""``agui check``'s report: the findings of a recorded stream as text, JSON, SARIF 2.1.0 or JUnit XML.

Every format goes to standard output, a clean stream included (its report says so), so
``agui check x > report.txt`` keeps the verdict. Each finding carries its rule id, severity,
force (spec MUST, spec SHOULD, seed profile) and source, and the line of the recording where
its event starts.

- ``text``: one line per finding, ``FILE:LINE: MESSAGE (SEVERITY, FORCE) [RULE]``, then how each
  run ended, then a summary line;
- ``json``: ``{"file", "profile", "framing", "frames", "findings": [...], "runs": [...],
  "summary": {"error", "warning", "info"}}``;
- ``sarif``: a SARIF 2.1.0 log (one run, the rules that fired described under the driver,
  one result per finding, its level ``error``/``warning``/``note``), for code scanning;
- ``junit``: one test suite, one test case per rule of the rulebook; a rule with an error
  finding fails, its warnings and notes are written to the case's ``system-out``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeAlias
from xml.etree import ElementTree

import attrs
import orjson

from agui_core.machine.rulebook import RULES, Profile, Severity, severity
from agui_core.machine.stream_lint import Finding

__all__ = ["FORMATS", "CheckReport", "Format", "LocatedFinding", "render"]

Format: TypeAlias = Literal["text", "json", "sarif", "junit"]
FORMATS: tuple[Format, ...] = ("text", "json", "sarif", "junit")

_SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


@attrs.frozen(kw_only=True)
class LocatedFinding:
    """A finding with the recording's ``line`` where its event (or its frame) starts."""

    finding: Finding
    line: int


@attrs.frozen(kw_only=True)
class CheckReport:
    """What ``agui check`` found in one recording."""

    file: str
    profile: Profile
    framing: str
    frames: int
    findings: Sequence[LocatedFinding]
    runs: Sequence[str]

    def count(self, level: Severity) -> int:
        return sum(1 for f in self.findings if f.finding.severity is level)


def render(report: CheckReport, fmt: Format) -> str:
    """``report`` in the format ``fmt``."""
    if fmt == "text":
        return _text(report)
    if fmt == "json":
        return _json(report)
    if fmt == "sarif":
        return _sarif(report)
    if fmt == "junit":
        return _junit(report)
    raise ValueError(f"format {fmt!r} is not one of {', '.join(FORMATS)}")


def _plural(count: int, word: str) -> str:
    return f"{count or 'no'} {word}{'' if count == 1 else 's'}"


def _text(report: CheckReport) -> str:
    out = [
        f"{report.file}:{f.line}: {f.finding.message} ({f.finding.severity}, {f.finding.force}) [{f.finding.rule}]"
        for f in report.findings
    ]
    out.extend(report.runs)
    errors, warnings, infos = (report.count(s) for s in (Severity.ERROR, Severity.WARNING, Severity.INFO))
    out.append(
        f"{report.frames} frames ({report.framing}), {_plural(errors, 'violation')}, {_plural(warnings, 'warning')}, "
        f"{_plural(infos, 'note')} (profile {report.profile})"
    )
    return "\n".join(out) + "\n"


def _finding_dict(located: LocatedFinding) -> dict[str, object]:
    f = located.finding
    return {
        "rule": f.rule,
        "severity": str(f.severity),
        "force": str(f.force),
        "source": f.source,
        "line": located.line,
        "index": f.index,
        "message": f.message,
    }


def _json(report: CheckReport) -> str:
    document = {
        "file": report.file,
        "profile": report.profile,
        "framing": report.framing,
        "frames": report.frames,
        "findings": [_finding_dict(f) for f in report.findings],
        "runs": list(report.runs),
        "summary": {str(s): report.count(s) for s in Severity},
    }
    return orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n"


def _sarif(report: CheckReport) -> str:
    fired = sorted({f.finding.rule for f in report.findings})
    rule_index = {rule_id: position for position, rule_id in enumerate(fired)}
    rules = [
        {
            "id": rule_id,
            "shortDescription": {"text": RULES[rule_id].summary},
            "defaultConfiguration": {"level": _SARIF_LEVEL[severity(rule_id, report.profile)]},
            "properties": {"force": str(RULES[rule_id].force), "source": RULES[rule_id].source},
        }
        for rule_id in fired
    ]
    results = [
        {
            "ruleId": f.finding.rule,
            "ruleIndex": rule_index[f.finding.rule],
            "level": _SARIF_LEVEL[f.finding.severity],
            "message": {"text": f.finding.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": report.file},
                        "region": {"startLine": max(f.line, 1)},
                    }
                }
            ],
            "properties": {"force": str(f.finding.force), "source": f.finding.source, "eventIndex": f.finding.index},
        }
        for f in report.findings
    ]
    log = {
        "$schema": _SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "agui check",
                        "informationUri": "https://github.com/ag-ui-protocol/ag-ui",
                        "rules": rules,
                    }
                },
                "results": results,
                "properties": {"profile": report.profile, "framing": report.framing, "frames": report.frames},
            }
        ],
    }
    return orjson.dumps(log, option=orjson.OPT_INDENT_2).decode() + "\n"


def _junit(report: CheckReport) -> str:
    by_rule: dict[str, list[LocatedFinding]] = {}
    for located in report.findings:
        by_rule.setdefault(located.finding.rule, []).append(located)
    suite = ElementTree.Element(
        "testsuite",
        name=f"agui check {report.file}",
        tests=str(len(RULES)),
        failures="0",
        errors="0",
        skipped="0",
    )
    failures = 0
    for rule_id, rule in RULES.items():
        case = ElementTree.SubElement(
            suite, "testcase", classname=f"agui.check.{report.profile}", name=f"{rule_id} ({rule.force})"
        )
        found = by_rule.get(rule_id, [])
        errors = [f for f in found if f.finding.severity is Severity.ERROR]
        if errors:
            failures += 1
            failure = ElementTree.SubElement(
                case, "failure", message=errors[0].finding.message, type=f"{rule_id}: {rule.force}"
            )
            failure.text = "\n".join(f"{report.file}:{f.line}: {f.finding.message}" for f in errors)
        others = [f for f in found if f.finding.severity is not Severity.ERROR]
        if others:
            out = ElementTree.SubElement(case, "system-out")
            out.text = "\n".join(f"{report.file}:{f.line}: {f.finding.severity}: {f.finding.message}" for f in others)
    suite.set("failures", str(failures))
    return ElementTree.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
