"""The ``agui`` command."""

from __future__ import annotations

import argparse
import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Run the ``agui`` command line; returns the exit status."""
    parser = argparse.ArgumentParser(prog="agui", description="AG-UI interrupt-aware runs.")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="play the approval, form and parallel-approval scenarios")
    demo.add_argument("--auto", action="store_true", help="answer every interrupt without asking")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from agui_core.demo import run_demo

        return run_demo(auto=args.auto)
    parser.error(f"unknown command {args.command!r}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
