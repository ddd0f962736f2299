import json

import pytest

from benchmarks.heldout import main, pooled, table


def _eval_folder(path, cases):
    path.mkdir()
    (path / "results.json").write_text(
        json.dumps({"cases": [{"group": group, "kind": kind, "sub_em": right} for group, kind, right in cases]})
    )
    return path


def test_seeds_add_up_per_group_and_mixed_kinds_count_once(tmp_path):
    s0 = _eval_folder(
        tmp_path / "s0",
        [
            ("2K", "single-needle", True),
            ("2K", "multi-needle", False),
            ("Governing Law", "contract:Governing Law", True),
        ],
    )
    s1 = _eval_folder(tmp_path / "s1", [("2K", "single-needle", True), ("32K", "single-needle", False)])
    scores = pooled([s0, s1])
    assert scores == {"2K": (2, 3), "Governing Law": (1, 1), "32K": (0, 1)}
    # lengths in order, categories after; a model without a group gets a dash
    assert table({"a": scores, "b": {"2K": (1, 4)}}).splitlines() == [
        "| model | 2K | 32K | Governing Law |",
        "|---|---|---|---|",
        "| a | 66.7% (2/3) | 0.0% (0/1) | 100.0% (1/1) |",
        "| b | 25.0% (1/4) | – | – |",
    ]
    assert table({"c": {"Parties": (1, 1), "book": (0, 1), "16K": (1, 2), "2K": (1, 1)}}).splitlines()[0] == (
        "| model | 2K | 16K | book | Parties |"
    )


def test_main_writes_the_plot_and_refuses_a_glob_that_matches_nothing(tmp_path, capsys):
    _eval_folder(tmp_path / "eval-x", [("8K", "single-needle", True)])
    main(["--model", f"x={tmp_path}/eval-*", "--out", str(tmp_path / "p.png")])
    assert (tmp_path / "p.png").stat().st_size > 1000
    assert "| x | 100.0% (1/1) |" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="NAME=GLOB"):
        main(["--model", f"y={tmp_path}/none-*", "--out", str(tmp_path / "q.png")])
