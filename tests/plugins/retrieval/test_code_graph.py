"""The graph tools over code references: callees and callers from ``neighbors``, file -> class -> method from
``path_to_root``, and ``compose`` keeping the helpers a function calls, on real files in a real store."""

from __future__ import annotations

from pathlib import Path

import pytest

from memtree_plugins.retrieval.compose import compose
from memtree_plugins.retrieval.graph import neighbors, path_to_root
from memtree_plugins.walkers.repo_index import index_directory

HELPERS = '''"""Pricing helpers."""


def zone_rate(zone):
    """The base rate of a shipping zone."""
    table = {"eu": 4.5, "us": 9.0, "asia": 11.0, "africa": 13.0, "oceania": 14.5}
    return table.get(zone, 12.0)


def weight_factor(grams):
    """How many 500 g steps a parcel weighs."""
    return max(1, grams // 500)
'''

# A class long enough to be split into one chunk per method (more than 80 lines).
FILLER = "".join(f"        note_{i} = {i}  # padding so the class is split into methods\n" for i in range(80))
MAIN = f'''from helpers import zone_rate, weight_factor


class Parcel:
    """A parcel on its way."""

    def cost(self, zone, grams):
        return zone_rate(zone) * weight_factor(grams)

    def describe(self):
{FILLER}        return "parcel"


def unrelated_one():
    """{"lorem ipsum dolor sit amet " * 30}"""
    return 1


def unrelated_two():
    """{"consectetur adipiscing elit " * 30}"""
    return 2


def quote(zone):
    return Parcel().cost(zone, 1000)
'''


@pytest.fixture
def indexed(app, project: Path) -> dict[str, str]:
    (project / "helpers.py").write_text(HELPERS)
    (project / "main.py").write_text(MAIN)
    index_directory(app, project)
    rows = app.store.query("SELECT json_extract(metadata, '$.symbol'), id FROM nodes WHERE kind = 'file_chunk' "
                           "AND status = 'live' AND json_extract(metadata, '$.symbol') IS NOT NULL")
    return dict(rows)


def test_neighbors_out_lists_callees_and_in_lists_callers(app, indexed) -> None:
    out = neighbors(app, indexed["Parcel.cost"], direction="out")
    got = {n.id: n.rels for n in out.neighbors}
    assert got == {indexed["zone_rate"]: ["calls"], indexed["weight_factor"]: ["calls"]}
    assert all(n.relation == "references ->" for n in out.neighbors)
    callers = neighbors(app, indexed["zone_rate"], direction="in")
    by_rel = {tuple(n.rels): n for n in callers.neighbors}
    assert set(by_rel) == {("calls",), ("imports",)}  # Parcel.cost calls it; main.py's header imports it
    assert by_rel[("calls",)].id == indexed["Parcel.cost"] and by_rel[("calls",)].relation == "<- references"
    both = neighbors(app, indexed["Parcel.cost"])  # today's default: the file too, and edges both ways
    assert {n.kind for n in both.neighbors} >= {"file", "file_chunk"}
    two = neighbors(app, indexed["quote"], depth=2, direction="out")
    assert {indexed["Parcel.cost"], indexed["zone_rate"]} <= {n.id for n in two.neighbors}
    assert "calls" in two.render()


def test_neighbors_direction_is_checked(app, indexed) -> None:
    with pytest.raises(ValueError, match="direction must be one of both, out, in"):
        neighbors(app, indexed["quote"], direction="down")


def test_path_to_root_of_a_method_goes_through_its_class(app, indexed) -> None:
    path = path_to_root(app, indexed["Parcel.cost"])
    assert [n.kind for n in path.path] == ["file", "file_chunk", "file_chunk"]
    assert path.path[1].id == indexed["Parcel"] and path.path[2].id == indexed["Parcel.cost"]
    plain = path_to_root(app, indexed["quote"])
    assert [n.kind for n in plain.path] == ["file", "file_chunk"]


def test_compose_keeps_the_called_helpers_before_the_files_other_chunks(app, indexed) -> None:
    seed = indexed["Parcel.cost"]
    full = compose(app, [seed], 5000, depth=2)
    sizes = {e.node_id: e.tokens for e in full.manifest.included}
    # a budget for the seed and its two helpers, not for the file's other chunks as well
    budget = sizes[seed] + sizes[indexed["zone_rate"]] + sizes[indexed["weight_factor"]] + 40
    tight = compose(app, [seed], budget, depth=2)
    raw = {e.node_id for e in tight.manifest.included}
    assert {seed, indexed["zone_rate"], indexed["weight_factor"]} <= raw
    assert "def zone_rate" in tight.text and "def weight_factor" in tight.text
