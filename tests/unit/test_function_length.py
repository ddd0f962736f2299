"""No function in app/ is longer than 80 lines (issue 53: the UI's builders were 185-407 lines each, and the
500-line module cap did not limit a function). ruff's C901 (pyproject.toml) bounds their complexity."""

from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app"
MAX_LINES = 80


def _long_functions(source: str, name: str) -> list[str]:
    return [
        f"{name}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno - node.lineno + 1 > MAX_LINES
    ]


def test_no_function_in_app_is_over_80_lines() -> None:
    found = [f for p in sorted(APP.rglob("*.py")) for f in _long_functions(p.read_text(encoding="utf-8"), str(p))]
    assert not found, found


def test_the_check_sees_a_long_function() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    assert _long_functions(f"def f():\n{body}\n", "m.py") == [f"m.py:1 f ({MAX_LINES + 1} lines)"]
    assert _long_functions("def g():\n    return 1\n", "m.py") == []
