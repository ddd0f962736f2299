"""Training rows for the capture scorer (training/capture_rows.py): every sentence of a chunk labelled per question,
in the chunks the reader reads, and never from a dev or held-out contract."""

from __future__ import annotations

import doctest
import json

from training import capture_rows
from training.capture_rows import contract_rows, document_rows, labels
from training.tasks import CONTRACTS_DEV, Task


def test_doctests():
    assert doctest.testmod(capture_rows).failed == 0


def test_a_sentence_touching_a_passage_edge_is_a_negative():
    assert labels([(0, 100)], [(98, 140)]) == (0,)
    assert labels([(0, 100)], [(60, 140)]) == (1,)  # 40 characters: half of the shorter (80) is enough
    assert labels([(0, 10)], []) == (0,)


def _document() -> tuple[str, list[str]]:
    filler = [f"Filler sentence number {i} says nothing at all." for i in range(120)]
    filler[30] = "This Agreement shall be governed by the laws of the State of Ohio."
    filler[100] = "Any dispute is governed by the laws of the State of Ohio."
    return " ".join(filler), filler


def test_every_chunk_labels_every_sentence_for_every_question(tokenizer):
    text, parts = _document()
    questions = [("Which law governs?", ["governed by the laws of the State of Ohio"]), ("Is there a cap?", [])]
    rows = document_rows("doc", text, questions, tokenizer, chunk_tokens=256)
    assert len(rows) > 2 and [r.chunk for r in rows] == list(range(len(rows)))
    assert all(len(lab) == len(r.spans) for r in rows for lab in r.labels)
    kept = [s for r in rows for s, on in zip(r.sentences(text), r.labels[0]) if on]
    assert kept == [parts[30], parts[100]]  # both occurrences, nothing else
    assert not any(any(r.labels[1]) for r in rows)
    # the rows tile the document: every character but spaces in exactly one sentence of one row (a sentence
    # across a chunk's edge is two pieces)
    pieces = sorted(span for r in rows for span in r.spans)
    assert all(b <= c for (_, b), (c, _) in zip(pieces, pieces[1:]))
    assert sum(len(text[a:b].replace(" ", "")) for a, b in pieces) == len(text.replace(" ", ""))


def test_contract_rows_never_read_a_dev_or_held_out_contract(tmp_path, tokenizer):
    (tmp_path / "txt").mkdir()
    cases = []
    for cid in ("cuad-train-900", CONTRACTS_DEV[0]):
        (tmp_path / "txt" / f"{cid}.txt").write_text("Governed by Ohio law. Nothing else.", encoding="utf-8")
        cases.append(
            {
                "id": cid,
                "txt": f"txt/{cid}.txt",
                "qa": [
                    {
                        "category": "Governing Law",
                        "kind": "extract",
                        "question": "Which law?",
                        "answer": "Ohio",
                        "evidence": ["Governed by Ohio law."],
                    }
                ],
            }
        )
    (tmp_path / "cases.jsonl").write_text("\n".join(json.dumps(c) for c in cases), encoding="utf-8")
    rows = list(contract_rows(tokenizer, tmp_path, exclude=()))
    assert [r.source for _, r in rows] == ["cuad-train-900"]
    assert rows[0][1].labels == ((1, 0),)


def test_task_rows_share_a_documents_chunks_between_its_questions(tokenizer):
    text, parts = _document()
    tasks = [Task("a", text, "Which law?", ("Ohio",), (parts[30],)), Task("b", text, "Other?", ("x",), ())]
    rows = [r for _, r in capture_rows.task_rows(tasks, tokenizer, chunk_tokens=512)]
    assert all(r.questions == ("Which law?", "Other?") for r in rows)
    assert sum(sum(r.labels[0]) for r in rows) == 1
