"""The server-side SVG bar and line charts: well-formed, ordered, proportional, escaped, accessible."""

from __future__ import annotations

import itertools
import math
import re
import xml.etree.ElementTree as ET

import pytest
from markupsafe import Markup

from web.charts import (
    BAR_HEIGHT,
    LABEL_WIDTH,
    LINE_BOTTOM,
    LINE_LEFT,
    LINE_RIGHT,
    LINE_TOP,
    MAX_LABEL_CHARS,
    VALUE_WIDTH,
    bar_chart,
    line_chart,
)

SVG = "{http://www.w3.org/2000/svg}"


def parse(markup: Markup) -> ET.Element:
    return ET.fromstring(str(markup))


def bars(svg: ET.Element) -> list[ET.Element]:
    return svg.findall(f"{SVG}g")


def row(group: ET.Element) -> tuple[str, str, float, str]:
    """(tooltip, visible label, bar width, visible count) of one bar group."""
    tooltip = group.findtext(f"{SVG}title")
    label = group.find(f"{SVG}text[@class='label']")
    value = group.find(f"{SVG}text[@class='value']")
    rect = group.find(f"{SVG}rect[@class='bar']")
    assert tooltip is not None and label is not None and value is not None and rect is not None
    return tooltip, label.text or "", float(rect.attrib["width"]), value.text or ""


def test_chart_is_well_formed_svg_with_accessible_name_and_description() -> None:
    svg = parse(bar_chart([("race", 12), ("religion", 3), ("gender", 7)], title="Hits per category"))
    assert svg.tag == f"{SVG}svg"
    assert svg.attrib["role"] == "img"
    assert svg.attrib["class"] == "chart"
    title = svg.find(f"{SVG}title")
    desc = svg.find(f"{SVG}desc")
    assert title is not None and desc is not None
    assert title.text == "Hits per category"
    assert desc.text == "3 bars; largest: race (12)"
    assert svg.attrib["aria-labelledby"].split() == [title.attrib["id"], desc.attrib["id"]]


def test_one_group_per_bar_sorted_by_count_then_label() -> None:
    items = [("b", 2), ("a", 2), ("z", 9), ("c", 0), ("m", 5)]
    rows = [row(g) for g in bars(parse(bar_chart(items, title="t")))]
    assert [label for _, label, _, _ in rows] == ["z", "m", "a", "b", "c"]
    assert [value for _, _, _, value in rows] == ["9", "5", "2", "2", "0"]
    assert [tooltip for tooltip, _, _, _ in rows] == ["z: 9", "m: 5", "a: 2", "b: 2", "c: 0"]


def test_bar_widths_are_proportional_and_the_largest_fills_the_plot() -> None:
    width = 600
    plot = width - LABEL_WIDTH - VALUE_WIDTH
    rows = [row(g) for g in bars(parse(bar_chart([("x", 40), ("y", 10), ("w", 30), ("v", 0)], title="t", width=width)))]
    widths = [bar_width for _, _, bar_width, _ in rows]
    assert widths[0] == pytest.approx(plot)
    assert widths[1:] == pytest.approx([plot * 30 / 40, plot * 10 / 40, 0.0], abs=0.01)


def test_bars_start_at_the_plot_edge_and_do_not_overlap() -> None:
    svg = parse(bar_chart([(f"label {i}", i + 1) for i in range(6)], title="t"))
    rects = [g.find(f"{SVG}rect") for g in bars(svg)]
    assert all(r is not None and float(r.attrib["x"]) == LABEL_WIDTH for r in rects)
    tops = [float(r.attrib["y"]) for r in rects if r is not None]
    assert all(later - earlier >= BAR_HEIGHT for earlier, later in itertools.pairwise(tops))
    assert tops[-1] + BAR_HEIGHT <= float(svg.attrib["height"])


def test_height_grows_with_the_number_of_bars() -> None:
    heights = [float(parse(bar_chart([(str(i), i) for i in range(n)], title="t")).attrib["height"]) for n in (1, 2, 5)]
    assert heights[0] < heights[1] < heights[2]


def test_labels_and_title_are_escaped() -> None:
    hostile = "<script>alert(1)</script>"
    markup = bar_chart([(hostile, 3), ('&"', 2)], title=f'{hostile} & "quotes"')
    assert "<script>" not in markup
    svg = parse(markup)  # raw & or " inside attributes or text would make this fail
    assert svg.findtext(f"{SVG}title") == f'{hostile} & "quotes"'
    rows = [row(g) for g in bars(svg)]
    assert rows[0][0] == f"{hostile}: 3"
    assert rows[1][:2] == ('&": 2', '&"')
    assert svg.findtext(f"{SVG}desc") == f"2 bars; largest: {hostile} (3)"


def test_long_labels_are_shortened_with_the_full_label_in_the_tooltip() -> None:
    long_label = "a label much longer than the room that the chart keeps for it"
    tooltip, label, _, _ = row(bars(parse(bar_chart([(long_label, 1)], title="t")))[0])
    assert tooltip == f"{long_label}: 1"
    assert label.endswith("…") and len(label) <= MAX_LABEL_CHARS
    assert long_label.startswith(label[:-1])
    exact = "x" * MAX_LABEL_CHARS
    assert row(bars(parse(bar_chart([(exact, 1)], title="t")))[0])[1] == exact


def test_max_bars_keeps_the_largest_and_says_how_many_were_left_out() -> None:
    items = [(f"item {i:02d}", i) for i in range(20)]
    svg = parse(bar_chart(items, title="t", max_bars=4))
    assert [row(g)[1] for g in bars(svg)] == ["item 19", "item 18", "item 17", "item 16"]
    assert svg.findtext(f"{SVG}desc") == "4 bars; largest: item 19 (19); 16 more not shown"
    assert len(bars(parse(bar_chart(items, title="t")))) == 15


def test_no_items_says_there_is_no_data() -> None:
    markup = bar_chart([], title="Hits <per> language")
    element = parse(markup)
    assert element.tag == "p"
    assert "No data" in (element.text or "")
    assert "Hits <per> language" in (element.text or "")


def test_all_zero_counts_draw_empty_bars() -> None:
    rows = [row(g) for g in bars(parse(bar_chart([("a", 0), ("b", 0)], title="t")))]
    assert [bar_width for _, _, bar_width, _ in rows] == [0.0, 0.0]


def test_several_charts_on_one_page_have_distinct_ids() -> None:
    first, second = (parse(bar_chart([("a", 1)], title="Same title")) for _ in range(2))
    ids = [e.attrib["id"] for svg in (first, second) for e in svg.iter() if "id" in e.attrib]
    assert len(ids) == 4 and len(set(ids)) == 4


def test_no_inline_styles_only_classes() -> None:
    svg = parse(bar_chart([("a", 3), ("b", 1)], title="t"))
    assert all("style" not in e.attrib for e in svg.iter())
    assert {e.attrib.get("class") for e in svg.iter(f"{SVG}text")} == {"label", "value"}


@pytest.mark.parametrize(
    ("items", "kwargs", "message"),
    [
        ([("a", 1)], {"max_bars": 0}, "max_bars must be at least 1, got 0"),
        ([("a", 1)], {"width": 100}, "width 100 leaves no room for bars"),
        ([("a", -1)], {}, "the count of 'a' must be a non-negative integer, got -1"),
        ([("a", 1.5)], {}, "the count of 'a' must be a non-negative integer, got 1.5"),
    ],
)
def test_bad_arguments_are_rejected_with_the_bad_value(
    items: list[tuple[str, int]], kwargs: dict[str, int], message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        bar_chart(items, title="t", **kwargs)


# --- line charts ---------------------------------------------------------------------------------

CURVE = [(0.0, -0.5), (0.5, 0.25), (0.61, 2.0), (1.0, 0.5)]


def polyline_points(element: ET.Element) -> list[tuple[float, float]]:
    return [(float(x), float(y)) for x, y in (pair.split(",") for pair in element.attrib["points"].split())]


def test_line_chart_is_accessible_svg_with_one_polyline_per_series() -> None:
    svg = parse(
        line_chart(
            [("V(τ)", CURVE), ("calibration", [(0.1, 0.2), (0.9, 0.8)])], title="Value", x_label="τ", y_label="V"
        )
    )
    assert svg.tag == f"{SVG}svg" and svg.attrib["role"] == "img"
    title, desc = svg.find(f"{SVG}title"), svg.find(f"{SVG}desc")
    assert title is not None and desc is not None and title.text == "Value"
    assert svg.attrib["aria-labelledby"].split() == [title.attrib["id"], desc.attrib["id"]]
    assert desc.text == "τ from 0 to 1; V from -0.5 to 2; V(τ) (4 points); calibration (2 points)"
    lines = svg.findall(f"{SVG}polyline")
    assert [line.attrib["class"] for line in lines] == ["series series-1", "series series-2"]
    assert [line.findtext(f"{SVG}title") for line in lines] == ["V(τ)", "calibration"]
    assert all("style" not in e.attrib for e in svg.iter())


def test_line_chart_scales_points_into_the_plot_box() -> None:
    width, height = 500, 300
    svg = parse(line_chart([("v", CURVE)], title="t", x_label="x", y_label="y", width=width, height=height))
    points = polyline_points(svg.findall(f"{SVG}polyline")[0])
    left, right, top, bottom = LINE_LEFT, width - LINE_RIGHT, LINE_TOP, height - LINE_BOTTOM
    # The smallest x and y sit on the axes, the largest on the far edges, the rest in proportion.
    assert points[0] == (left, bottom)
    assert points[2][1] == top and points[3][0] == right
    assert points[1] == pytest.approx((left + 0.5 * (right - left), bottom - 0.75 / 2.5 * (bottom - top)), abs=0.01)
    assert all(left <= x <= right and top <= y <= bottom for x, y in points)
    x_axis = svg.find(f".//{SVG}line[@class='axis x-axis']")
    assert x_axis is not None and float(x_axis.attrib["y1"]) == bottom


def test_line_chart_ticks_are_round_numbers_inside_the_range() -> None:
    svg = parse(line_chart([("v", CURVE)], title="t", x_label="x", y_label="y"))
    x_ticks = [g.findtext(f"{SVG}text") for g in svg.iter(f"{SVG}g") if g.attrib.get("class") == "tick x-tick"]
    y_ticks = [g.findtext(f"{SVG}text") for g in svg.iter(f"{SVG}g") if g.attrib.get("class") == "tick y-tick"]
    assert x_ticks == ["0", "0.2", "0.4", "0.6", "0.8", "1"]
    assert y_ticks == ["-0.5", "0", "0.5", "1", "1.5", "2"]
    assert svg.find(f".//{SVG}line[@class='zero']") is not None  # the values change sign


def test_line_chart_marker_draws_a_labelled_vertical_line_at_x() -> None:
    width = 560
    svg = parse(line_chart([("v", CURVE)], title="t", x_label="x", y_label="y", marker=(0.25, "τ = 0.25")))
    line = svg.find(f".//{SVG}line[@class='marker-line']")
    label = svg.find(f".//{SVG}text[@class='marker-label']")
    assert line is not None and label is not None and label.text == "τ = 0.25"
    expected_x = LINE_LEFT + 0.25 * (width - LINE_LEFT - LINE_RIGHT)
    assert float(line.attrib["x1"]) == float(line.attrib["x2"]) == pytest.approx(expected_x)
    assert float(line.attrib["y1"]) == LINE_TOP and float(line.attrib["y2"]) == 280 - LINE_BOTTOM
    assert (svg.findtext(f"{SVG}desc") or "").endswith("; marked: τ = 0.25 at 0.25")
    unmarked = parse(line_chart([("v", CURVE)], title="t", x_label="x", y_label="y"))
    assert unmarked.find(f".//{SVG}g[@class='marker']") is None


def test_line_chart_marker_outside_the_data_widens_the_x_range() -> None:
    svg = parse(line_chart([("v", [(0.2, 1.0), (0.4, 2.0)])], title="t", x_label="x", y_label="y", marker=(1.0, "m")))
    line = svg.find(f".//{SVG}line[@class='marker-line']")
    assert line is not None and float(line.attrib["x1"]) == 560 - LINE_RIGHT


def test_line_chart_escapes_every_text() -> None:
    hostile = "<script>alert(1)</script>"
    markup = line_chart(
        [(hostile, CURVE)], title=f"{hostile} & co", x_label='"x"', y_label="a<b", marker=(0.5, hostile)
    )
    assert "<script>" not in markup
    svg = parse(markup)
    assert svg.findtext(f"{SVG}title") == f"{hostile} & co"
    assert svg.findall(f"{SVG}polyline")[0].findtext(f"{SVG}title") == hostile
    texts = {e.text for e in svg.iter(f"{SVG}text")}
    assert {'"x"', "a<b", hostile} <= texts


def test_line_chart_without_points_says_there_is_no_data() -> None:
    for series in ([], [("v", [])]):
        element = parse(line_chart(series, title="V <τ>", x_label="x", y_label="y"))
        assert element.tag == "p" and element.attrib["class"] == "chart-empty"
        assert element.text == "No data for V <τ>."


def test_line_chart_leaves_out_empty_series_but_keeps_numbering() -> None:
    svg = parse(line_chart([("a", []), ("b", [(0, 0), (1, 1)])], title="t", x_label="x", y_label="y"))
    assert [p.attrib["class"] for p in svg.findall(f"{SVG}polyline")] == ["series series-2"]


def test_line_chart_single_value_ranges_are_centred() -> None:
    svg = parse(line_chart([("flat", [(0.5, 3.0), (0.5, 3.0)])], title="t", x_label="x", y_label="y"))
    (x, y), _ = polyline_points(svg.findall(f"{SVG}polyline")[0])
    assert x == pytest.approx(LINE_LEFT + (560 - LINE_LEFT - LINE_RIGHT) / 2)
    assert y == pytest.approx(LINE_TOP + (280 - LINE_TOP - LINE_BOTTOM) / 2)


def test_several_line_charts_have_distinct_ids() -> None:
    charts = [parse(line_chart([("v", CURVE)], title="Same", x_label="x", y_label="y")) for _ in range(2)]
    ids = [e.attrib["id"] for svg in charts for e in svg.iter() if "id" in e.attrib]
    assert len(ids) == 4 and len(set(ids)) == 4


@pytest.mark.parametrize(
    ("series", "kwargs", "message"),
    [
        ([("v", CURVE)], {"width": 100}, "a line chart of 100×280 pixels leaves no room to plot"),
        ([("v", [(0.0, math.nan)])], {}, "the points of series 'v' must be pairs of finite numbers, got (0.0, nan)"),
        ([("v", CURVE)], {"marker": (math.inf, "m")}, "the marker must be at a finite x, got inf"),
    ],
)
def test_line_chart_rejects_bad_arguments(series: list, kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        line_chart(series, title="t", x_label="x", y_label="y", **kwargs)
