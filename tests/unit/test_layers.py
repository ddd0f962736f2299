"""Imports point one way (docs/DESIGN): the UI never imports the API, the API's schemas are pure data,
and the services import neither entry point."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "app"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize(("folder", "forbidden"), [("ui", "app.api"), ("services", "app.api"), ("services", "app.ui")])
def test_imports_point_one_way(folder, forbidden):
    for path in (APP / folder).rglob("*.py"):
        bad = {m for m in _imports(path) if m == forbidden or m.startswith(forbidden + ".")}
        assert not bad, f"{path.relative_to(APP.parent)} imports {bad}"


def test_api_schemas_compute_nothing():
    """No `of()` (or any other) method computes progress, ETAs or estimates in the schemas."""
    tree = ast.parse((APP / "api" / "schemas.py").read_text(encoding="utf-8"))
    methods = [f"{c.name}.{f.name}" for c in tree.body if isinstance(c, ast.ClassDef)
               for f in c.body if isinstance(f, ast.FunctionDef)]  # fmt: skip
    assert methods == []
