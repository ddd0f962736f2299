"""`python -m training.compare BEFORE AFTER` on small made-up results."""

from __future__ import annotations

import json

import pytest

from training import compare


def _results(suite_cases: dict[str, list[tuple[str, bool, str]]]) -> dict:
    return {
        "cases": [
            {"task_id": i, "suite": suite, "sub_em": ok, "exact_match": ok, "answer": answer}
            for suite, cases in suite_cases.items()
            for i, ok, answer in cases
        ]
    }


def _write(tmp_path, name, results):
    path = tmp_path / name
    path.mkdir()
    (path / "results.json").write_text(json.dumps(results), encoding="utf-8")
    return path


def test_scores_difference_gains_losses_and_same_answers():
    before = _results({"contracts": [("a", True, "Nevada"), ("b", False, "Ohio"), ("c", True, "X"), ("d", False, "Y")]})
    after = _results(
        {
            "contracts": [
                ("a", True, "the Nevada"),
                ("b", True, "Texas"),
                ("c", False, "Z"),
                ("d", False, "Y"),
                ("e", True, "new"),
            ]
        }
    )
    r = compare.compare(before, after)["contracts"]
    assert (r["n"], r["only_before"], r["only_after"]) == (4, 0, 1)
    assert (r["before"], r["after"], r["difference"]) == (0.5, 0.5, 0.0)
    assert (r["gained"], r["lost"]) == (1, 1)
    assert r["same_answer"] == 0.5  # "Nevada" and "the Nevada" are the same answer once normalised
    lo, hi = r["interval"]
    assert lo < 0 < hi and not r["dropped"]


def test_interval_is_paired():
    # After answers exactly the questions before did, plus one: unpaired intervals would straddle zero,
    # the paired difference is never negative.
    before = _results({"s": [(str(i), i % 2 == 0, "") for i in range(40)]})
    after = _results({"s": [(str(i), i % 2 == 0 or i == 1, "") for i in range(40)]})
    r = compare.compare(before, after)["s"]
    assert r["interval"][0] >= 0 and r["interval"][1] > 0 and r["difference"] == pytest.approx(1 / 40)


def test_exit_code_1_only_when_a_suite_drops_beyond_its_interval(tmp_path, capsys):
    same = _results({"books": [(str(i), i < 10, "") for i in range(20)]})
    worse = _results({"books": [(str(i), i < 2, "") for i in range(20)]})
    slightly = _results({"books": [(str(i), i < 9, "") for i in range(20)]})
    b, w, s = _write(tmp_path, "b", same), _write(tmp_path, "w", worse), _write(tmp_path, "s", slightly)
    assert compare.main([str(b), str(w)]) == 1
    out = capsys.readouterr()
    assert "| books | 20 | 50.0% | 10.0% | -40.0% (" in out.out and "DROPPED" in out.out and "books" in out.err
    assert compare.main([str(b), str(s / "results.json")]) == 0  # one question lost: within the interval
    assert compare.main([str(w), str(b), "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["books"]["gained"] == 8


def test_a_suite_in_one_file_only_is_listed_not_compared():
    rows = compare.compare(_results({"a": [("1", True, "")]}), _results({"b": [("1", True, "")]}))
    assert rows["b"] == {"n": 0, "only_before": 0, "only_after": 1} and rows["a"]["only_before"] == 1
    assert "not comparable" in compare.table(rows, "sub_em")
