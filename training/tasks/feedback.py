"""Tasks from users: a cases file (`longread eval --cases`) and exported feedback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from training.tasks.base import Task


# --- feedback and users' cases ------------------------------------------------------------------
def _read_document(path: Path) -> str:
    """Text of a user's file: .pdf through pypdf, anything else read as UTF-8 text."""
    if path.suffix.lower() == ".pdf":
        from pypdf import PdfReader

        return "\n\n".join(page.extract_text() or "" for page in PdfReader(path).pages)
    return path.read_text(encoding="utf-8", errors="replace")


def _jsonl(path: Path) -> list[dict]:
    rows = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{number}: not a JSON object ({e.msg})") from None
    return rows


def cases_tasks(path: Path) -> list[Task]:
    """A user's evaluation set: one `{"document": "path", "question": "...", "answers": ["..."]}` a
    line; relative document paths are relative to the JSONL file's folder. Questions on the same
    file share one document string."""
    documents: dict[Path, str] = {}
    tasks = []
    for i, doc, question, answers in case_rows(path):
        if doc not in documents:
            documents[doc] = _read_document(doc)
        tasks.append(Task(f"case-{i}", documents[doc], question, answers, kind="cases"))
    return tasks


def case_rows(path: Path) -> list[tuple[int, Path, str, tuple[str, ...]]]:
    """A cases file's lines, checked: (index, the document's path, question, gold answers); relative document
    paths are relative to the JSONL file's folder."""
    path = Path(path)
    rows = []
    for i, row in enumerate(_jsonl(path)):
        missing = [k for k in ("document", "question", "answers") if k not in row]
        if missing:
            raise ValueError(f"{path}:{i + 1}: missing {', '.join(missing)}")
        answers = [row["answers"]] if isinstance(row["answers"], str) else row["answers"]
        doc = Path(row["document"]).expanduser()
        doc = doc if doc.is_absolute() else path.parent / doc
        if not doc.is_file():
            raise ValueError(f"{path}:{i + 1}: no such document {doc}")
        rows.append((i, doc, row["question"], tuple(answers)))
    return rows


def case_documents(path: Path) -> list[str]:
    """The `document` field of each line of a cases file, as written (for reports)."""
    return [str(row["document"]) for row in _jsonl(Path(path))]


#: Verdicts that make a task, and where its answer comes from. Issue 10 exports `correct`/`incorrect`;
#: `right` and `wrong-with-correction` are accepted as synonyms.
_RIGHT = {"correct", "right"}
_WRONG = {"incorrect", "wrong", "wrong-with-correction"}


def feedback_answer(row: dict) -> str | None:
    """What a judged reading (a feedback export row) teaches: its own answer when judged right (or the
    correction given with it), the correction when judged wrong; None when it teaches nothing.

    >>> feedback_answer({"verdict": "correct", "answer": "42"}), feedback_answer({"verdict": "incorrect"})
    ('42', None)
    """
    verdict = str(row.get("verdict", "")).lower()
    corrected = (row.get("corrected_answer") or "").strip()
    if verdict in _RIGHT:
        return corrected or (row.get("answer") or row.get("model_answer") or "").strip() or None
    if verdict in _WRONG:
        return corrected or None
    return None


def feedback_tasks(path: Path, documents: Callable[[Any], str] | None = None) -> list[Task]:
    """Tasks from `longread feedback export` JSON Lines: a reading judged right teaches its own answer,
    one judged wrong teaches its corrected answer (and is skipped without one). The document comes
    from `document_text`, or `document_path` (relative to the file's folder), or `document_id`
    through `documents` (the app passes a lookup; training cannot read the database itself)."""
    path = Path(path)
    shared: dict[Any, str] = {}
    tasks = []
    for i, row in enumerate(_jsonl(path)):
        answer = feedback_answer(row)
        if not answer or not row.get("question"):
            continue
        if row.get("document_text"):
            key, load = ("text", i), lambda r=row: r["document_text"]
        elif row.get("document_path"):
            doc = Path(row["document_path"]).expanduser()
            doc = doc if doc.is_absolute() else path.parent / doc
            key, load = ("path", doc), lambda d=doc: _read_document(d)
        elif row.get("document_id") is not None and documents is not None:
            key, load = ("id", row["document_id"]), lambda r=row: documents(r["document_id"])
        else:
            raise ValueError(f"{path}:{i + 1}: no document_text or document_path, and no lookup for document_id")
        if key not in shared:
            shared[key] = load()
        rid = row.get("reading_id", i)
        tasks.append(Task(f"feedback-{rid}", shared[key], row["question"], (answer,), kind="feedback"))
    return tasks
