"""The data a run trains on: what there is to choose from (feedback, QA files, contracts, synthetic
kinds), checking a selection, and previewing the samples it makes."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.db import session_scope
from app.models import Document, Feedback, Reading, User
from app.services.feedback import export_rows
from app.services.llm import tokenizer_for
from app.services.training_runs.shared import (
    DataOverview,
    DataSelection,
    FeedbackRow,
    RunError,
    SamplePreview,
    admin,
    held_out,
)
from app.services.users import UserView
from app.settings import Settings
from inference.contract_review import EXTRACT
from training.tasks import (
    CONTRACTS_TRAIN_DIR,
    NOT_FOR_TRAINING,
    SYNTHETIC_KINDS,
    cases_tasks,
    contract_cases,
    contract_ids,
    contract_tasks,
    count_tokens,
    feedback_answer,
    synthetic_tasks,
    trainable_contract,
)

#: documents of the synthetic tasks are at least this long: room for the planted facts and their distractors
MIN_LENGTH, MAX_LENGTH = 256, 1_048_576
KIND_HELP = {
    "single-needle": "one invented fact planted in a novel, with a look-alike about someone else; asks for it",
    "multi-needle": "two or three values of one key planted apart; asks for all of them",
    "multi-hop": "two facts to chain (whose object is in which box, which box is in which town)",
    "variable-tracking": "a chain of assignments (VAR B = VAR A) to follow to a number",
    "absent": "only look-alikes planted; asks about someone never mentioned (answer: the document does not say)",
}


def data_overview(settings: Settings, user: UserView | None = None) -> DataOverview:
    with session_scope(settings.resolved_database_url) as s:
        admin(s, settings, user)
        feedback = _feedback_rows(s)
    return DataOverview(
        feedback=feedback, qa_files=_qa_files(settings), synthetic_kinds=list(KIND_HELP.items()), contracts=_contracts()
    )


def _feedback_rows(s: Session) -> list[FeedbackRow]:
    """Each judged reading with its latest verdict (as the export has them), newest first."""
    latest = select(func.max(Feedback.id)).group_by(Feedback.reading_id).scalar_subquery()
    rows = s.execute(
        select(
            Feedback.id,
            Feedback.verdict,
            Feedback.corrected_answer,
            Feedback.created_at,
            Reading.id,
            Reading.question,
            Reading.answer,
            Document.id,
            Document.title,
            User.username,
        )
        .join(Reading, Reading.id == Feedback.reading_id)
        .join(Document, Document.id == Reading.document_id)
        .join(User, User.id == Document.owner_id)
        .where(Feedback.id.in_(latest))
        .order_by(Feedback.id.desc())
    )
    return [
        FeedbackRow(
            id=fid,
            reading_id=rid,
            document_id=did,
            document_title=title,
            username=username,
            verdict=verdict.value,
            question=question,
            answer=answer,
            corrected_answer=corrected,
            created_at=created,
            held_out=held_out(did),
        )
        for fid, verdict, corrected, created, rid, question, answer, did, title, username in rows
    ]


def _qa_files(settings: Settings) -> list[tuple[str, int]]:
    """The JSON Lines files in TRAINING_DIR/qa (an operator puts them there) and their question counts."""
    folder = settings.training_dir / "qa"
    files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
    return [
        (str(f.resolve()), sum(1 for line in f.read_text(encoding="utf-8").splitlines() if line.strip())) for f in files
    ]


def _contracts() -> tuple[int, int, int]:
    """(training contracts, their questions, contracts held out for evaluation: every suite's dev and held-out
    contracts, which training never reads); zeros where the shared data is missing."""
    try:
        cases = contract_cases(CONTRACTS_TRAIN_DIR)
    except OSError:
        return 0, 0, 0
    train = [c for c in cases if trainable_contract(c["id"])]
    return len(train), sum(qa["kind"] == EXTRACT for c in train for qa in c["qa"]), len(NOT_FOR_TRAINING)


def selected_feedback(settings: Settings, selection: DataSelection, actor: UserView) -> list[dict]:
    """The export rows (with the documents' text) that the selection includes, both parts of the split."""
    if not selection.include_feedback:
        return []
    rows = export_rows(settings, with_text=True, user=actor)
    if selection.feedback_since is not None:
        rows = [r for r in rows if datetime.fromisoformat(r["created_at"]).date() >= selection.feedback_since]
    if selection.feedback_ids is not None:
        with session_scope(settings.resolved_database_url) as s:
            wanted = set(s.scalars(select(Feedback.reading_id).where(Feedback.id.in_(list(selection.feedback_ids)))))
        rows = [r for r in rows if r["reading_id"] in wanted]
    return rows


def check_selection(settings: Settings, selection: DataSelection) -> None:
    """RunError naming the choice to change."""
    if not selection.lengths:
        raise RunError("lengths: give at least one document length in tokens, e.g. 1024")
    for n in selection.lengths:
        if isinstance(n, bool) or not isinstance(n, int) or not MIN_LENGTH <= n <= MAX_LENGTH:
            raise RunError(f"lengths: {n!r} is not a document length from {MIN_LENGTH} to {MAX_LENGTH:,} tokens")
    unknown = [k for k in selection.synthetic_kinds if k not in SYNTHETIC_KINDS]
    if unknown:
        raise RunError(
            f"synthetic_kinds: unknown {', '.join(map(repr, unknown))}; choose from {', '.join(SYNTHETIC_KINDS)}"
        )
    offered = {path for path, _ in _qa_files(settings)}
    for path in selection.qa_files:
        if str(path) not in offered:
            raise RunError(
                f"qa_files: {path} is not one of the server's QA files (JSON Lines files in "
                f"{settings.training_dir / 'qa'}): {', '.join(sorted(offered)) or 'there are none'}"
            )
    if selection.contracts and _contracts()[0] == 0:
        raise RunError("contracts: the shared contracts are not on this server (training/tasks: CONTRACTS_TRAIN_DIR)")
    if not (selection.include_feedback or selection.contracts or selection.qa_files or selection.synthetic_kinds):
        raise RunError("the selection is empty: include feedback, contracts, QA files or synthetic tasks")


def preview_samples(
    settings: Settings, selection: DataSelection, n: int = 5, user: UserView | None = None
) -> list[SamplePreview]:
    """Up to `n` training samples the selection makes, taken in turn from each source it includes."""
    with session_scope(settings.resolved_database_url) as s:
        actor = admin(s, settings, user)
    check_selection(settings, selection)
    tokenizer = tokenizer_for(settings)
    sources: list[tuple[str, list[tuple[str, tuple[str, ...], str]]]] = []
    if selection.include_feedback:
        rows = [r for r in selected_feedback(settings, selection, actor) if not held_out(r["document_id"])]
        sources.append(
            ("feedback", [(r["question"], (a,), r["document_text"]) for r in rows if (a := feedback_answer(r))][:n])
        )
    if selection.contracts:
        tasks = contract_tasks("train", ids=contract_ids("train")[:n])[:n]  # a few contracts' texts, not all
        sources.append(("contracts", [(t.question, t.answers, t.document) for t in tasks]))
    for path in selection.qa_files:
        sources.append(("qa", [(t.question, t.answers, t.document) for t in cases_tasks(Path(path))[:n]]))
    if selection.synthetic_kinds:
        tasks = synthetic_tasks(tokenizer, "train", min(selection.lengths), n, kinds=selection.synthetic_kinds)
        sources.append(("synthetic", [(t.question, t.answers, t.document) for t in tasks]))
    out: list[SamplePreview] = []
    for i in range(n):
        for source, items in sources:
            if i < len(items) and len(out) < n:
                question, answers, document = items[i]
                out.append(
                    SamplePreview(source, question, tuple(answers), count_tokens(tokenizer, document), document[:300])
                )
    return out
