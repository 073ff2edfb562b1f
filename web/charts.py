"""Horizontal bar charts drawn on the server as inline SVG, so statistics pages need no JavaScript.

The page stylesheet decides colours and fonts through the classes `chart`, `bar`, `label` and
`value`: the Content-Security-Policy forbids inline `style` attributes, so none are emitted and
only geometry travels as attributes.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Sequence

from markupsafe import Markup

LABEL_WIDTH = 200  # room for about 28 characters at the page's small font size
VALUE_WIDTH = 56  # room for a count with up to seven digits after the longest bar
BAR_HEIGHT = 20
BAR_GAP = 8
PADDING = 4
MAX_LABEL_CHARS = 28
MIN_PLOT_WIDTH = 40

# Several charts on one page (or two with the same title) need distinct ids for aria-labelledby;
# a process-wide serial number is enough because ids only have to differ within one document.
_serial = itertools.count(1)


def bar_chart(items: Sequence[tuple[str, int]], *, title: str, max_bars: int = 15, width: int = 560) -> Markup:
    """Draw `(label, count)` pairs as a horizontal bar chart, largest first.

    Bars are sorted by count (descending), then label; only the first `max_bars` are drawn and the
    description says how many were left out. The longest bar spans the whole plot area and the
    others are scaled to it. Without items the result is a short paragraph saying there is no data.
    """
    if max_bars < 1:
        raise ValueError(f"max_bars must be at least 1, got {max_bars}")
    plot_width = width - LABEL_WIDTH - VALUE_WIDTH
    if plot_width < MIN_PLOT_WIDTH:
        raise ValueError(
            f"width {width} leaves no room for bars; give at least {LABEL_WIDTH + VALUE_WIDTH + MIN_PLOT_WIDTH} pixels"
        )
    for label, count in items:
        if not isinstance(count, int) or count < 0:
            raise ValueError(f"the count of {label!r} must be a non-negative integer, got {count!r}")
    if not items:
        return Markup('<p class="chart-empty">No data for {}.</p>').format(title)

    ranked = sorted(items, key=lambda item: (-item[1], item[0]))
    shown = ranked[:max_bars]
    largest = shown[0][1]
    chart_id = _chart_id(title)
    height = 2 * PADDING + len(shown) * (BAR_HEIGHT + BAR_GAP) - BAR_GAP

    description = f"{len(shown)} bar{'s' if len(shown) != 1 else ''}; largest: {shown[0][0]} ({largest})"
    if len(ranked) > len(shown):
        description += f"; {len(ranked) - len(shown)} more not shown"

    parts = [
        Markup(
            '<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" aria-labelledby="{0}-title {0}-desc"'
            ' width="{1}" height="{2}" viewBox="0 0 {1} {2}">'
        ).format(chart_id, width, height),
        Markup('<title id="{}-title">{}</title>').format(chart_id, title),
        Markup('<desc id="{}-desc">{}</desc>').format(chart_id, description),
    ]
    for row, (label, count) in enumerate(shown):
        top = PADDING + row * (BAR_HEIGHT + BAR_GAP)
        bar_width = plot_width * count / largest if largest else 0.0
        parts.append(_bar(label, count, top, bar_width))
    parts.append(Markup("</svg>"))
    return Markup("").join(parts)


def _bar(label: str, count: int, top: int, bar_width: float) -> Markup:
    """One row: a tooltip with the full label, the (possibly shortened) label, the bar and its count."""
    middle = top + BAR_HEIGHT / 2
    return Markup(
        '<g class="row"><title>{label}: {count}</title>'
        '<text class="label" x="{label_x}" y="{middle}" dy="0.35em" text-anchor="end">{short}</text>'
        '<rect class="bar" x="{bar_x}" y="{top}" width="{bar_width}" height="{height}"/>'
        '<text class="value" x="{value_x}" y="{middle}" dy="0.35em">{count}</text></g>'
    ).format(
        label=label,
        count=count,
        short=_shorten(label),
        label_x=LABEL_WIDTH - 8,
        middle=_number(middle),
        bar_x=LABEL_WIDTH,
        top=top,
        bar_width=_number(bar_width),
        height=BAR_HEIGHT,
        value_x=_number(LABEL_WIDTH + bar_width + 6),
    )


def _shorten(label: str) -> str:
    return label if len(label) <= MAX_LABEL_CHARS else label[: MAX_LABEL_CHARS - 1].rstrip() + "…"


def _number(value: float) -> str:
    """Coordinates with at most two decimals and no trailing zeros keep the markup short."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _chart_id(title: str) -> str:
    digest = hashlib.sha1(title.encode("utf-8"), usedforsecurity=False).hexdigest()[:8]
    return f"chart-{digest}-{next(_serial)}"
