"""A plot of one or more runs of episodes as SVG: pass^k by k, and the latency percentiles.

Written by hand (no plotting library): two panels side by side. Left, pass^k against k, one
line per run; right, bars of the p50, p90 and p99 of "interrupt -> resume" and "resume ->
next event" in milliseconds, one colour per run. Each run is named by its ``name`` label
(else its human and URL).
"""

from __future__ import annotations

from collections.abc import Sequence
from xml.sax.saxutils import escape

from agui_core.episodes.report import PERCENTILES, EpisodesReport

__all__ = ["plot_svg"]

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
WIDTH, HEIGHT = 900, 380
PANEL_W, PANEL_H = 340, 250
LEFT_X, RIGHT_X, TOP = 70, 510, 50


def _name(report: EpisodesReport) -> str:
    labels = report.labels
    return labels.get("name") or f"{labels.get('human', '?')} @ {labels.get('url', '?')}"


def _text(x: float, y: float, content: str, *, anchor: str = "middle", size: int = 12, extra: str = "") -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" '
        f'font-family="sans-serif"{extra}>{escape(content)}</text>'
    )


def _axes(x: float, title: str, y_label: str) -> list[str]:
    return [
        f'<rect x="{x}" y="{TOP}" width="{PANEL_W}" height="{PANEL_H}" fill="none" stroke="#444"/>',
        _text(x + PANEL_W / 2, TOP - 12, title, size=14),
        _text(x - 45, TOP + PANEL_H / 2, y_label, extra=f' transform="rotate(-90 {x - 45} {TOP + PANEL_H / 2})"'),
    ]


def _pass_k_panel(reports: Sequence[EpisodesReport]) -> list[str]:
    parts = _axes(LEFT_X, "pass^k", "share of tasks right in all k trials")
    kmax = max((max(r.pass_k, default=1) for r in reports), default=1)
    for tick in range(0, 11, 2):
        y = TOP + PANEL_H - PANEL_H * tick / 10
        parts.append(f'<line x1="{LEFT_X - 4}" y1="{y:.1f}" x2="{LEFT_X}" y2="{y:.1f}" stroke="#444"/>')
        parts.append(_text(LEFT_X - 8, y + 4, f"{tick / 10:.1f}", anchor="end", size=10))

    def x_of(k: int) -> float:
        return LEFT_X + (PANEL_W * (k - 1) / (kmax - 1) if kmax > 1 else PANEL_W / 2)

    for k in range(1, kmax + 1):
        parts.append(_text(x_of(k), TOP + PANEL_H + 16, str(k), size=10))
    parts.append(_text(LEFT_X + PANEL_W / 2, TOP + PANEL_H + 34, "k (trials)"))
    for i, report in enumerate(reports):
        colour = COLOURS[i % len(COLOURS)]
        points = [(x_of(k), TOP + PANEL_H - PANEL_H * v) for k, v in sorted(report.pass_k.items())]
        if len(points) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        parts += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{colour}"/>' for x, y in points]
    return parts


def _latency_panel(reports: Sequence[EpisodesReport]) -> list[str]:
    parts = _axes(RIGHT_X, "latency percentiles", "milliseconds")
    groups = [("interrupt->resume", "to_resume"), ("resume->next event", "to_next_event")]
    values = [
        [(getattr(r, attribute).get(q) or 0.0) * 1000 for r in reports] for _, attribute in groups for q in PERCENTILES
    ]
    top = max((v for row in values for v in row), default=0.0) or 1.0
    for tick in range(5):
        y = TOP + PANEL_H - PANEL_H * tick / 4
        parts.append(f'<line x1="{RIGHT_X - 4}" y1="{y:.1f}" x2="{RIGHT_X}" y2="{y:.1f}" stroke="#444"/>')
        parts.append(_text(RIGHT_X - 8, y + 4, f"{top * tick / 4:.1f}", anchor="end", size=10))
    slot = PANEL_W / len(values)
    bar = (slot - 8) / max(1, len(reports))
    for j, row in enumerate(values):
        group, _ = groups[j // len(PERCENTILES)]
        x0 = RIGHT_X + slot * j + 4
        for i, value in enumerate(row):
            height = PANEL_H * value / top
            parts.append(
                f'<rect x="{x0 + bar * i:.1f}" y="{TOP + PANEL_H - height:.1f}" width="{bar:.1f}" '
                f'height="{height:.1f}" fill="{COLOURS[i % len(COLOURS)]}"><title>{escape(group)} '
                f"p{PERCENTILES[j % len(PERCENTILES)]}: {value:.2f} ms</title></rect>"
            )
        parts.append(_text(x0 + (slot - 8) / 2, TOP + PANEL_H + 16, f"p{PERCENTILES[j % len(PERCENTILES)]}", size=10))
    for g, (group, _) in enumerate(groups):
        middle = RIGHT_X + slot * len(PERCENTILES) * (g + 0.5)
        parts.append(_text(middle, TOP + PANEL_H + 34, group))
    return parts


def plot_svg(reports: Sequence[EpisodesReport]) -> str:
    """An SVG document plotting ``reports`` side by side (see the module docstring)."""
    if not reports:
        raise ValueError("nothing to plot: no report")
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        *_pass_k_panel(reports),
        *_latency_panel(reports),
    ]
    for i, report in enumerate(reports):
        y = HEIGHT - 30 + 14 * (i % 2)
        x = LEFT_X + (i // 2) * 280
        parts.append(f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{COLOURS[i % len(COLOURS)]}"/>')
        parts.append(_text(x + 14, y, _name(report), anchor="start", size=11))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
