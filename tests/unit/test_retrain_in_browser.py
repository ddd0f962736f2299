from benchmarks.retrain_in_browser import DOCS, HELD
from training.suites import SPLITS, split_ids
from training.tasks import contract_ids


def test_the_browser_retraining_benchmark_judges_training_contracts_only():
    """Its feedback is trained on: a dev or held-out contract among them would leak into the reader."""
    evaluated = {i for suite in ("contracts", "clauses") for split in SPLITS for i in split_ids(suite, split)}
    assert len(DOCS) == 7 and set(DOCS) <= set(contract_ids("train")), DOCS
    assert not set(DOCS) & evaluated, set(DOCS) & evaluated
    assert HELD in DOCS and all(path.is_file() and law for path, law in DOCS.values())
