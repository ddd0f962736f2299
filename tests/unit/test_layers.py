"""Imports point one way: `inference` imports nothing of ours, `training` only `inference`, and `app` neither
`benchmarks` nor `worker` (nor the tests), and `training` only for its training features; inside `app`, the UI
never imports the API, the API's schemas are pure data, and the services import neither entry point."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
APP = REPO / "app"
OURS = ("app", "benchmarks", "inference", "migrations", "tests", "training", "worker")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _modules(folder: Path) -> list[Path]:
    """The package's modules; training/results/ holds past runs' scripts, kept as they ran, not the package."""
    return [p for p in folder.rglob("*.py") if "results" not in p.relative_to(REPO).parts]


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        ("inference", set(OURS) - {"inference"}),
        ("training", set(OURS) - {"training", "inference"}),
        ("app", {"benchmarks", "worker", "tests"}),
    ],
)
def test_top_level_packages_import_one_way(package, forbidden):
    for path in _modules(REPO / package):
        bad = {m for m in _imports(path) if m.split(".")[0] in forbidden}
        assert not bad, f"{path.relative_to(REPO)} imports {bad}"


#: The app's training features: training runs, evaluation and the registry's metrics. Everything else of the
#: app (reading, review, documents...) must run without `training`: what the product asks and how it reads an
#: answer live in `inference` (inference/contract_review.py).
TRAINING_FEATURES = (
    "services/training_runs/",
    "services/train_runner.py",
    "services/train_job.py",
    "services/evaluation.py",
    "services/registry.py",
    "services/bundled_versions.py",
    "cli/training.py",
    "cli/evaluate.py",
    "ui/training_ui.py",
    "ui/training_form.py",
)


def test_only_the_training_features_of_the_app_import_training():
    assert all((APP / f).exists() for f in TRAINING_FEATURES)  # the list names what is there
    for path in APP.rglob("*.py"):
        rel = path.relative_to(APP).as_posix()
        bad = {m for m in _imports(path) if m.split(".")[0] == "training"}
        assert not bad or rel.startswith(TRAINING_FEATURES), f"app/{rel} imports {bad}, not being a training feature"


@pytest.mark.parametrize(("folder", "forbidden"), [("ui", "app.api"), ("services", "app.api"), ("services", "app.ui")])
def test_imports_point_one_way(folder, forbidden):
    for path in (APP / folder).rglob("*.py"):
        bad = {m for m in _imports(path) if m == forbidden or m.startswith(forbidden + ".")}
        assert not bad, f"{path.relative_to(APP.parent)} imports {bad}"


def test_api_schemas_compute_nothing():
    """No `of()` (or any other) method computes progress, ETAs or estimates in the schemas."""
    tree = ast.parse((APP / "api" / "schemas.py").read_text(encoding="utf-8"))
    methods = [
        f"{c.name}.{f.name}"
        for c in tree.body
        if isinstance(c, ast.ClassDef)
        for f in c.body
        if isinstance(f, ast.FunctionDef)
    ]
    assert methods == []
