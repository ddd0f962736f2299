"""The reading page's branch tree: the open reading's whole family from its original down, each branch
under the reading it was made from, by id, the open one marked."""

from __future__ import annotations

from types import SimpleNamespace

from app.ui.read_views import branch_tree


def _r(id: int, parent: int | None = None, step: int | None = None, question: str = "Who?") -> SimpleNamespace:
    return SimpleNamespace(
        id=id, parent_reading_id=parent, branched_at_step=step, question=question, status="done", answer=f"answer {id}"
    )


def _labels(rows: list[list[object]]) -> list[str]:
    return [str(row[1]).replace("\u00a0", " ") for row in rows]


def test_a_branch_of_a_branch_is_indented_under_it_and_the_tree_starts_at_the_original():
    family = [_r(1), _r(2, 1, 3), _r(3, 2, 4), _r(4, 1, 2), _r(5, question="another question"), _r(6, 2, 5)]
    rows = branch_tree(family, 3)
    assert [row[0] for row in rows] == [1, 2, 3, 6, 4]  # the other question's reading is not in the family
    assert _labels(rows) == [
        "#1 original: Who?",
        "├─ #2 branch at step 3",
        "│   ├─ #3 branch at step 4 ◀ open",
        "│   └─ #6 branch at step 5",
        "└─ #4 branch at step 2",
    ]
    assert _labels(branch_tree(family, 1))[0] == "#1 original: Who? ◀ open"
    assert branch_tree([_r(5)], 5) == [[5, "#5 original: Who? ◀ open", "done", "answer 5"]]
    assert branch_tree(family, 99) == [] and branch_tree(family, None) == []


def test_a_missing_parent_makes_the_oldest_known_reading_the_root_and_a_cycle_never_loops():
    orphans = branch_tree([_r(7, 3, 2), _r(8, 7, 4)], 8)
    assert _labels(orphans) == ["#7 branch at step 2", "└─ #8 branch at step 4 ◀ open"]
    assert len(branch_tree([_r(1, 2, 1), _r(2, 1, 1)], 1)) == 2
