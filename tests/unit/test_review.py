"""The contract review's questions, checklist table (from fake readings' checkpoints) and exports."""

from __future__ import annotations

import csv
import html
import io
import json
import re
from types import SimpleNamespace

import pytest

from app.services.provenance import trace
from app.services.review import (
    EXPORT_COLUMNS,
    ReviewError,
    ReviewProgress,
    ReviewView,
    filtered,
    find_evidence,
    page_link,
    pages_text,
    review_row,
    to_csv,
    to_markdown,
)
from app.ui.read_views import page_image_html
from inference.contract_review import EXTRACT, REVIEW_QUESTIONS, YES_NO
from training.tasks import DATA_DIR

# Three pages: the governing-law clause on page 2, the insurance clause on page 3.
PAGES = [
    "MASTER SUPPLY AGREEMENT. This Agreement is made between Acme Corp and Beta LLC. ",
    "Payment is due in thirty days. This Agreement shall be governed by the laws of the State of Ohio. ",
    "Supplier shall maintain general liability insurance of two million dollars. Notices go by mail. ",
]
TEXT = "".join(PAGES)
STARTS = [sum(len(p) for p in PAGES[:i]) for i in range(len(PAGES))]


def step(memory: str, page: int) -> SimpleNamespace:
    return SimpleNamespace(memory=memory, start_char=STARTS[page - 1], end_char=STARTS[page - 1] + len(PAGES[page - 1]))


STEPS = [
    step("No relevant information yet.", 1),
    step("Governed by the laws of the State of Ohio.", 2),
    step("Governed by the laws of the State of Ohio. Supplier must maintain general liability insurance.", 3),
]


QUESTIONS = {category: question for category, _, question in REVIEW_QUESTIONS}


def reading(
    answer: str | None, status: str = "done", reading_id: int = 1, steps=STEPS, category: str = "Governing Law"
) -> SimpleNamespace:
    return SimpleNamespace(
        id=reading_id, status=status, question=QUESTIONS[category], answer=answer, timeline=lambda: list(steps)
    )


def view(rows: list, unit: str = "page", labels: list[str] | None = None) -> ReviewView:
    progress = ReviewProgress(3, 3, len(rows), len(rows), None)
    return ReviewView(7, 3, "Supply | Agreement", unit, None, True, rows, progress, labels or [])


def test_the_41_questions_are_the_data_files_questions():
    assert len(REVIEW_QUESTIONS) == 41 and len({c for c, _, _ in REVIEW_QUESTIONS}) == 41
    assert sum(k == EXTRACT for _, k, _ in REVIEW_QUESTIONS) == 8
    held_out = {
        q["category"]: q["question"]
        for c in json.loads((DATA_DIR / "contracts" / "cases.json").read_text(encoding="utf-8"))
        for q in c["qa"]
    }
    with (DATA_DIR / "contracts-train" / "cases.jsonl").open(encoding="utf-8") as f:
        train = {q["category"]: q for q in json.loads(f.readline())["qa"]}
    for category, kind, question in REVIEW_QUESTIONS:
        if kind == EXTRACT:
            assert question == held_out[category]
        else:
            assert train[category]["kind"] == "yes-no"
            assert question == train[category]["question"].replace(" ()", "")
            assert "()" not in question
    assert {c for c, k, _ in REVIEW_QUESTIONS if k == YES_NO} == {c for c, q in train.items() if q["kind"] == "yes-no"}


def test_an_extracted_answer_points_to_the_step_and_page_where_it_entered_the_memory():
    row = review_row("Governing Law", EXTRACT, reading("The laws of the State of Ohio."), TEXT, STARTS)
    assert row.step == 2 and (row.first_page, row.last_page) == (2, 2)
    assert row.passage == "This Agreement shall be governed by the laws of the State of Ohio."
    assert TEXT[row.passage_start : row.passage_end] == row.passage
    span = f"?start={row.passage_start}&end={row.passage_end}"  # the passage highlighted, as the panel shows it
    assert pages_text(row) == "page 2" and page_link(3, row) == "/api/documents/3/pages/2.png" + span
    assert f'src="{html.escape(page_link(3, row))}"' in page_image_html(3, 2, row.passage_start, row.passage_end)
    assert page_link(3, row, "section") == "" and pages_text(row, "section") == "section 2"


def test_a_yes_points_to_the_memory_sentence_on_its_category_and_a_no_to_nothing():
    yes = review_row("Insurance", YES_NO, reading("Yes.", category="Insurance"), TEXT, STARTS)
    assert yes.step == 3 and yes.first_page == 3 and "liability insurance" in yes.passage
    no = review_row("Insurance", YES_NO, reading("No, there is none.", category="Insurance"), TEXT, STARTS)
    assert no.step is None and no.passage is None and pages_text(no) == "" and page_link(3, no) == ""


def test_an_answer_no_memory_held_and_an_unfinished_reading_have_no_evidence():
    assert find_evidence(EXTRACT, QUESTIONS["Parties"], "Gamma Inc and Delta plc", STEPS, TEXT) is None
    assert find_evidence(EXTRACT, QUESTIONS["Parties"], "Acme", [], TEXT) is None
    running = review_row("Governing Law", EXTRACT, reading(None, status="running"), TEXT, STARTS)
    assert running.status == "running" and running.step is None and running.answer is None


def test_a_rows_evidence_is_the_passage_provenance_shows_for_its_answer():
    # "Delaware" is in an address (step 1) and in the governing-law clause (step 3): both views say step 3.
    chunks = [
        "Acme Inc. is a corporation of Delaware with offices in Dover. The laws of the state apply to it. ",
        "The Buyer pays within thirty days. Late payments bear interest. ",
        "This Agreement is governed by the laws of the State of Delaware. Either party may end it. ",
    ]
    text, starts = "".join(chunks), [sum(map(len, chunks[:k])) for k in range(3)]
    memories = [
        "Acme is a Delaware corporation.",
        "Acme is a Delaware corporation. Payment within 30 days.",
        "Acme is a Delaware corporation. Payment within 30 days. Governed by the laws of the State of Delaware.",
    ]
    steps = [SimpleNamespace(memory=m, start_char=a, end_char=a + len(c)) for m, a, c in zip(memories, starts, chunks)]
    row = review_row("Governing Law", EXTRACT, reading("Delaware", steps=steps), text, starts)
    *_, traced = trace(
        text, [(c.start_char, c.end_char) for c in steps], memories, QUESTIONS["Governing Law"], "Delaware"
    )
    assert (
        (row.step, row.passage_start, row.passage_end)
        == (traced.step, traced.start, traced.end)
        == (3, text.index("This Agreement"), text.index(" Either"))
    )
    assert row.first_page == 3


def rows() -> list:
    return [
        review_row("Governing Law", EXTRACT, reading("Ohio law.", reading_id=1), TEXT, STARTS),
        review_row("Insurance", YES_NO, reading("Yes, it does.", reading_id=2, category="Insurance"), TEXT, STARTS),
        review_row("Audit Rights", YES_NO, reading("No.", reading_id=3, category="Audit Rights"), TEXT, STARTS),
        review_row(
            "Cap On Liability", YES_NO, reading(None, "queued", reading_id=4, category="Cap On Liability"), TEXT, STARTS
        ),
    ]


def test_filters_keep_the_rows_they_name():
    r = view(rows())
    assert [x.category for x in filtered(r, "Yes").rows] == ["Insurance"]
    assert [x.category for x in filtered(r, "No").rows] == ["Audit Rights"]
    assert [x.category for x in filtered(r, "Found").rows] == ["Governing Law", "Insurance"]
    assert [x.category for x in filtered(r, "Not found").rows] == ["Audit Rights", "Cap On Liability"]
    assert filtered(r) == r
    with pytest.raises(ReviewError, match="choose one of"):
        filtered(r, "Maybe")


def test_csv_export_has_a_header_and_a_line_a_row():
    got = list(csv.reader(io.StringIO(to_csv(view(rows())))))
    assert tuple(got[0]) == EXPORT_COLUMNS
    assert got[1] == [
        "Governing Law",
        "extract",
        "Ohio law.",
        "page 2",
        "This Agreement shall be governed by the laws of the State of Ohio.",
        page_link(3, rows()[0]),
        "1",
    ]
    assert got[1][5].startswith("/api/documents/3/pages/2.png?start=")
    assert got[3][2:4] == ["No.", ""] and got[4][2] == "(queued)"
    only_yes = list(csv.reader(io.StringIO(to_csv(filtered(view(rows()), "Yes")))))
    assert [line[0] for line in only_yes[1:]] == ["Insurance"]


def test_the_pages_column_names_a_pdfs_pages_by_their_printed_numbers():
    """A PDF whose pages print other numbers than their places (front matter): the export says both (issue 54)."""
    got = list(csv.reader(io.StringIO(to_csv(view(rows(), labels=["i", "1", "2"])))))
    assert got[1][3] == "page 1 (page 2 of the PDF)", got[1]
    assert got[1][5].startswith("/api/documents/3/pages/2.png?start=")  # the image is still the file's page
    sections = list(csv.reader(io.StringIO(to_csv(view(rows(), "section", ["Start", "2. GOVERNING LAW", "3"])))))
    assert sections[1][3] == "section 2: 2. GOVERNING LAW", sections[1]


def test_markdown_export_is_a_pipe_table_with_cells_escaped():
    md = to_markdown(view(rows()))
    lines = md.splitlines()
    assert lines[0] == "# Contract review #7: Supply \\| Agreement"
    assert lines[2] == "| " + " | ".join(EXPORT_COLUMNS) + " |" and lines[3].count("---") == len(EXPORT_COLUMNS)
    assert len(lines) == 4 + 4 and lines[4].startswith("| Governing Law | extract | Ohio law. | page 2 |")
    assert all(len(re.findall(r"(?<!\\)\|", line)) == len(EXPORT_COLUMNS) + 1 for line in lines[2:])
