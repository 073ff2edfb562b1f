"""Bar and line charts drawn on the server as inline SVG, so statistics pages need no JavaScript.

The page stylesheet decides colours and fonts through classes (`chart`, `bar`, `label`, `value`;
for line charts `series series-N`, `axis`, `tick`, `marker`, `legend`): the Content-Security-Policy
forbids inline `style` attributes, so none are emitted. Besides geometry, lines carry only
`fill="none"` and `stroke="currentColor"` presentation attributes, which any stylesheet rule overrides,
so that a line chart stays legible before the stylesheet has rules for it.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup

from web.i18n import plural_key, text

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
        return Markup('<p class="chart-empty">{}</p>').format(text("chart.empty", title=title))

    ranked = sorted(items, key=lambda item: (-item[1], item[0]))
    shown = ranked[:max_bars]
    largest = shown[0][1]
    chart_id = _chart_id(title)
    height = 2 * PADDING + len(shown) * (BAR_HEIGHT + BAR_GAP) - BAR_GAP

    # in the page's language, as the screen reader reads it out (web/locales: chart.*)
    description = text(plural_key("chart.bars", len(shown)), count=len(shown), label=shown[0][0], value=largest)
    if len(ranked) > len(shown):
        description += text("chart.more", count=len(ranked) - len(shown))

    parts = _opening("chart", chart_id, width, height, title, description)
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


def _opening(css_class: str, chart_id: str, width: int, height: int, title: str, description: str) -> list[Markup]:
    """The <svg> start tag with its accessible name and description, shared by every chart."""
    return [
        Markup(
            '<svg xmlns="http://www.w3.org/2000/svg" class="{3}" role="img" aria-labelledby="{0}-title {0}-desc"'
            ' width="{1}" height="{2}" viewBox="0 0 {1} {2}">'
        ).format(chart_id, width, height, css_class),
        Markup('<title id="{}-title">{}</title>').format(chart_id, title),
        Markup('<desc id="{}-desc">{}</desc>').format(chart_id, description),
    ]


def _number(value: float) -> str:
    """Coordinates with at most two decimals and no trailing zeros keep the markup short."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _chart_id(title: str) -> str:
    digest = hashlib.sha1(title.encode("utf-8"), usedforsecurity=False).hexdigest()[:8]
    return f"chart-{digest}-{next(_serial)}"


# Line chart layout: room on the left for y tick labels and the rotated y label, at the bottom for
# x tick labels and the x label, at the top for the legend.
LINE_LEFT = 64
LINE_RIGHT = 16
LINE_TOP = 28
LINE_BOTTOM = 44
TARGET_TICKS = 5
MIN_LINE_PLOT = 40

Point = tuple[float, float]


def line_chart(
    series: Sequence[tuple[str, Sequence[Point]]],
    *,
    title: str,
    x_label: str,
    y_label: str,
    marker: tuple[float, str] | None = None,
    width: int = 560,
    height: int = 280,
) -> Markup:
    """Draw named series of (x, y) points as polylines on shared axes, with an optional vertical marker.

    The axes span the smallest and largest x and y over all points (and the marker's x), so every
    point lies inside the plot box; points are joined in the order given. A marker such as
    `(0.63, "τ = 0.63")` draws a labelled vertical line at that x. Series without points are left out;
    when no series has points the result is a short paragraph saying there is no data.
    """
    if width - LINE_LEFT - LINE_RIGHT < MIN_LINE_PLOT or height - LINE_TOP - LINE_BOTTOM < MIN_LINE_PLOT:
        raise ValueError(
            f"a line chart of {width}×{height} pixels leaves no room to plot; give at least"
            f" {LINE_LEFT + LINE_RIGHT + MIN_LINE_PLOT}×{LINE_TOP + LINE_BOTTOM + MIN_LINE_PLOT}"
        )
    for name, points in series:
        for point in points:
            if not all(isinstance(c, int | float) and math.isfinite(c) for c in point):
                raise ValueError(f"the points of series {name!r} must be pairs of finite numbers, got {point!r}")
    if marker is not None and not math.isfinite(marker[0]):
        raise ValueError(f"the marker must be at a finite x, got {marker[0]!r}")
    drawn = [(index, name, points) for index, (name, points) in enumerate(series, start=1) if points]
    if not drawn:
        return Markup('<p class="chart-empty">{}</p>').format(text("chart.empty", title=title))

    xs = [x for _, _, points in drawn for x, _ in points] + ([marker[0]] if marker else [])
    ys = [y for _, _, points in drawn for _, y in points]
    box = _Box(LINE_LEFT, LINE_TOP, width - LINE_LEFT - LINE_RIGHT, height - LINE_TOP - LINE_BOTTOM)
    scale = _Scale(box, _span(min(xs), max(xs)), _span(min(ys), max(ys)))
    chart_id = _chart_id(title)

    # in the page's language, as the screen reader reads it out (web/locales: chart.*)
    described = "; ".join(
        text(plural_key("chart.points", len(points)), name=name, count=len(points)) for _, name, points in drawn
    )
    x_span = text("chart.axis", axis=x_label, low=_number(scale.x_range[0]), high=_number(scale.x_range[1]))
    y_span = text("chart.axis", axis=y_label, low=_number(scale.y_range[0]), high=_number(scale.y_range[1]))
    description = f"{x_span}; {y_span}; {described}"
    if marker is not None:
        description += text("chart.marked", label=marker[1], x=_number(marker[0]))

    parts = [*_opening("chart line-chart", chart_id, width, height, title, description), _axes(scale, x_label, y_label)]
    for index, name, points in drawn:
        coordinates = " ".join(f"{_number(scale.x(x))},{_number(scale.y(y))}" for x, y in points)
        parts.append(
            Markup(
                '<polyline class="series series-{}" fill="none" stroke="currentColor" points="{}"><title>{}</title>'
                "</polyline>"
            ).format(index, coordinates, name)
        )
    if marker is not None:
        parts.append(_marker(scale, *marker))
    parts.append(_legend(drawn))
    parts.append(Markup("</svg>"))
    return Markup("").join(parts)


@dataclass(frozen=True)
class _Box:
    left: float
    top: float
    width: float
    height: float


@dataclass(frozen=True)
class _Scale:
    """Maps data coordinates into the plot box; y grows upwards in the data and downwards in SVG."""

    box: _Box
    x_range: tuple[float, float]
    y_range: tuple[float, float]

    def x(self, value: float) -> float:
        low, high = self.x_range
        return self.box.left + (value - low) / (high - low) * self.box.width

    def y(self, value: float) -> float:
        low, high = self.y_range
        return self.box.top + self.box.height - (value - low) / (high - low) * self.box.height


def _span(low: float, high: float) -> tuple[float, float]:
    # A single value still needs a range to scale into; centre it.
    return (low - 0.5, high + 0.5) if low == high else (low, high)


def _ticks(low: float, high: float) -> list[float]:
    """Round tick values (steps of 1, 2 or 5 times a power of ten) inside [low, high], at most about five."""
    span = high - low
    magnitude = 10 ** math.floor(math.log10(span / TARGET_TICKS))
    step = next(m * magnitude for m in (1, 2, 5, 10) if span / (m * magnitude) <= TARGET_TICKS)
    first = math.ceil(low / step - 1e-9)
    last = math.floor(high / step + 1e-9)
    # Multiplying an integer by the step (not adding steps up) keeps 0.30000000000000004 out of labels.
    return [round(k * step, 12) for k in range(first, last + 1)]


def _tick_label(value: float) -> str:
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _axes(scale: _Scale, x_label: str, y_label: str) -> Markup:
    box = scale.box
    bottom, right = box.top + box.height, box.left + box.width
    parts = [
        Markup('<g class="axes" stroke="currentColor">'),
        Markup('<line class="axis x-axis" x1="{0}" y1="{1}" x2="{2}" y2="{1}"/>').format(box.left, bottom, right),
        Markup('<line class="axis y-axis" x1="{0}" y1="{1}" x2="{0}" y2="{2}"/>').format(box.left, box.top, bottom),
    ]
    for tick in _ticks(*scale.x_range):
        x = _number(scale.x(tick))
        parts.append(
            Markup(
                '<g class="tick x-tick"><line x1="{x}" y1="{y}" x2="{x}" y2="{y2}"/>'
                '<text class="tick-label" x="{x}" y="{y3}" text-anchor="middle" stroke="none">{label}</text></g>'
            ).format(x=x, y=bottom, y2=bottom + 4, y3=bottom + 16, label=_tick_label(tick))
        )
    for tick in _ticks(*scale.y_range):
        y = _number(scale.y(tick))
        parts.append(
            Markup(
                '<g class="tick y-tick"><line x1="{x2}" y1="{y}" x2="{x}" y2="{y}"/>'
                '<text class="tick-label" x="{x3}" y="{y}" dy="0.35em" text-anchor="end" stroke="none">{label}</text>'
                "</g>"
            ).format(x=box.left, x2=box.left - 4, x3=box.left - 6, y=y, label=_tick_label(tick))
        )
    low, high = scale.y_range
    if low < 0 < high:  # values such as V(τ) change sign; a zero line shows where gains turn into losses
        y = _number(scale.y(0))
        parts.append(Markup('<line class="zero" x1="{}" y1="{y}" x2="{}" y2="{y}"/>').format(box.left, right, y=y))
    middle_y = _number(box.top + box.height / 2)
    parts += [
        Markup('<text class="axis-label x-label" x="{}" y="{}" text-anchor="middle" stroke="none">{}</text>').format(
            _number(box.left + box.width / 2), bottom + 36, x_label
        ),
        Markup(
            '<text class="axis-label y-label" x="14" y="{0}" text-anchor="middle" transform="rotate(-90 14 {0})"'
            ' stroke="none">{1}</text>'
        ).format(middle_y, y_label),
        Markup("</g>"),
    ]
    return Markup("").join(parts)


def _marker(scale: _Scale, x: float, label: str) -> Markup:
    box = scale.box
    position = _number(scale.x(x))
    # Past the middle the label would run off the right edge, so it is written to the left of the line.
    anchor, shift = ("end", -4) if scale.x(x) > box.left + box.width / 2 else ("start", 4)
    return Markup(
        '<g class="marker"><line class="marker-line" stroke="currentColor" x1="{x}" y1="{top}" x2="{x}" y2="{bottom}"/>'
        '<text class="marker-label" x="{x}" dx="{shift}" y="{label_y}" text-anchor="{anchor}">{label}</text></g>'
    ).format(
        x=position,
        top=box.top,
        bottom=box.top + box.height,
        shift=shift,
        label_y=box.top + 12,
        anchor=anchor,
        label=label,
    )


def _legend(drawn: Sequence[tuple[int, str, Sequence[Point]]]) -> Markup:
    """One short line sample and name per series along the top, each about 150 pixels wide."""
    entries = [
        Markup(
            '<line class="series series-{0}" fill="none" stroke="currentColor" x1="{1}" y1="12" x2="{2}" y2="12"/>'
            '<text class="legend-label" x="{3}" y="12" dy="0.35em">{4}</text>'
        ).format(index, LINE_LEFT + slot * 150, LINE_LEFT + slot * 150 + 20, LINE_LEFT + slot * 150 + 26, name)
        for slot, (index, name, _) in enumerate(drawn)
    ]
    return Markup('<g class="legend">{}</g>').format(Markup("").join(entries))
