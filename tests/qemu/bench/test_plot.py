"""The SVG writer: a valid SVG document that carries every point it was given."""

import pytest
import xml.etree.ElementTree as ET

from qemu.bench.plot import Panel, Point, line_chart, nice_max

NS = {"svg": "http://www.w3.org/2000/svg"}


def chart() -> str:
    lock = Panel("lock", "kthreads", "ops/s", {
        "mutex": [Point(1, 1000, 900, 1100), Point(2, 1500, 1400, 1600),
                  Point(8, 1200, 1000, 1300)],
        "arch_semaphore": [Point(1, 800, 700, 900), Point(8, 300, 250, 400)]})
    handoff = Panel("handoff <a&b>", "kthreads", "round trips/s", {
        "completion": [Point(2, 50, 40, 60), Point(4, 90, 80, 95)]})
    return line_chart([lock, handoff], "title", "TCG figures are relative")


def test_svg_parses_as_xml_with_the_svg_namespace():
    root = ET.fromstring(chart())
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert float(root.get("width")) > 0 and float(root.get("height")) > 0


def test_every_point_is_in_the_svg_with_its_figures():
    root = ET.fromstring(chart())
    points = {(c.get("data-series"), float(c.get("data-x"))): c
              for c in root.iterfind(".//svg:circle", NS)}
    assert len(points) == 7
    m8 = points[("mutex", 8.0)]
    assert (float(m8.get("data-y")), float(m8.get("data-min")),
            float(m8.get("data-max"))) == (1200, 1000, 1300)
    assert "median 1200" in m8.find("svg:title", NS).text


def test_one_line_per_series_and_points_inside_the_picture():
    root = ET.fromstring(chart())
    lines = root.findall(".//svg:polyline", NS)
    assert sorted(pl.get("data-series") for pl in lines) == [
        "arch_semaphore", "completion", "mutex"]
    width, height = float(root.get("width")), float(root.get("height"))
    for c in root.iterfind(".//svg:circle", NS):
        assert 0 <= float(c.get("cx")) <= width and 0 <= float(c.get("cy")) <= height


def test_higher_median_is_drawn_higher():
    root = ET.fromstring(chart())
    cy = {(c.get("data-series"), c.get("data-x")): float(c.get("cy"))
          for c in root.iterfind(".//svg:circle", NS)}
    assert cy[("mutex", "2")] < cy[("mutex", "1")]     # SVG y grows downwards


def test_text_is_escaped():
    assert "handoff &lt;a&amp;b&gt;" in chart()


@pytest.mark.parametrize("series,points", [
    ({}, 0),                                            # an empty panel: nothing drawn
    ({"mutex": [Point(1, 5, 4, 6)]}, 1),                # the look-alike: one point drawn
])
def test_a_chart_draws_exactly_the_points_it_is_given(series, points):
    root = ET.fromstring(line_chart([Panel("p", "x", "y", series)]))
    assert len(root.findall(".//svg:circle", NS)) == points
    assert len(root.findall(".//svg:polyline", NS)) == (1 if points else 0)


@pytest.mark.parametrize("value,top", [(0, 1.0), (7, 10), (1200, 2000), (2100, 2500),
                                       (1, 1), (0.3, 0.5)])
def test_nice_max(value, top):
    assert nice_max(value) == pytest.approx(top)
