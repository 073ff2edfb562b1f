"""The server-side SVG bar charts: well-formed, ordered, proportional, escaped, accessible."""

from __future__ import annotations

import itertools
import re
import xml.etree.ElementTree as ET

import pytest
from markupsafe import Markup

from web.charts import BAR_HEIGHT, LABEL_WIDTH, MAX_LABEL_CHARS, VALUE_WIDTH, bar_chart

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
