"""``python -m benchmarks``: run the scenarios, print a table, write the results as JSON.

A missed speed target is printed as ``MISSED (target ...)`` and does not change the exit
status; only a broken benchmark (contenders that disagree, a failing import) does.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import orjson

from benchmarks.harness import Settings, format_report, load_average, run_scenarios, to_json
from benchmarks.scenarios import SCENARIOS

__all__ = ["DEFAULT_OUT", "main"]

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "latest.json"


def _parser() -> argparse.ArgumentParser:
    names = [scenario.name for scenario in SCENARIOS]
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Time agui-core against the reference AG-UI Python SDK, side by side.",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a run of a few seconds (for CI); ratios are indicative only",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help=f"where to write the JSON results (default: {DEFAULT_OUT})",
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=names,
        metavar="NAME",
        help=f"run only this scenario (repeatable): {', '.join(names)}",
    )
    parser.add_argument("--repeats", type=int, help="timed batches per contender (default: 11, quick: 3)")
    parser.add_argument(
        "--note",
        help="a remark kept with the results (say, what else ran on the machine)",
    )
    parser.add_argument(
        "--iterations",
        type=int,
        help="operations per batch instead of calibrating (for smoke tests)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(args_list)
    settings = Settings.quick() if args.quick else Settings.full()
    if args.repeats is not None or args.iterations is not None:
        settings = Settings(
            mode=settings.mode,
            repeats=max(1, args.repeats if args.repeats is not None else settings.repeats),
            batch_seconds=settings.batch_seconds,
            iterations=max(1, args.iterations) if args.iterations is not None else None,
        )
    scenarios = [s for s in SCENARIOS if args.only is None or s.name in args.only]
    started = datetime.now(UTC).isoformat(timespec="seconds")
    load_at_start = load_average()
    try:
        results = run_scenarios(scenarios, settings, progress=sys.stderr)
    except AssertionError as exc:
        print(f"benchmark is invalid, the contenders do not do the same work: {exc}", file=sys.stderr)
        return 1
    print(format_report(results, settings))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(
        orjson.dumps(
            to_json(results, settings, args_list, started=started, load_at_start=load_at_start, note=args.note),
            option=orjson.OPT_INDENT_2,
        )
        + b"\n"
    )
    print(f"\nresults written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
