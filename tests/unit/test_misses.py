"""Where a miss happened (training/misses.py), on hand-made memory sequences, and its rates in the results."""

from __future__ import annotations

import pytest

from inference.templates import NO_EVIDENCE_MEMORY, NOT_IN_DOCUMENT
from training import misses
from training.evaluate import case_result, suite_summary, suites_table
from training.tasks import Task

LAW = "This Agreement shall be governed by the laws of the State of Nevada."


@pytest.mark.parametrize(
    ("memories", "correct", "expected"),
    [
        ([NO_EVIDENCE_MEMORY, "Governed by Nevada law.", "Governed by Nevada law."], True, "correct"),
        ([NO_EVIDENCE_MEMORY, NO_EVIDENCE_MEMORY, "Section 14 defines Affiliate."], False, "never-entered"),
        (["Affiliate means any entity.", "Governed by the laws of Nevada.", "Section 14."], False, "overwritten"),
        (
            [NO_EVIDENCE_MEMORY, "Governed by the laws of Nevada.", "Governed by the laws of Nevada."],
            False,
            "answer-missed",
        ),
        ([], False, "never-entered"),
    ],
)
def test_each_miss_is_placed_by_the_memories(memories, correct, expected):
    assert misses.where(memories, ["Nevada"], [LAW], correct) == expected


def test_a_gold_that_is_part_of_a_longer_word_is_not_held():
    assert misses.where(["Governed by the laws of Nevadaland."], ["Nevada"], [], False) == "never-entered"


def test_a_date_is_held_in_any_form():
    memories = ["The agreement was made on the 30th day of October, 2017.", "Fees are due monthly."]
    assert misses.where(memories, ["10/30/17"], [], False) == "overwritten"


def test_parties_are_held_only_when_every_party_is():
    gold = 'Acme Corp. ("Acme"); Beta LLC ("Beta")'
    assert misses.holds("Between Acme Corp. and Beta LLC.", [gold])
    assert not misses.holds("Between Acme Corp. and its affiliates.", [gold])


def test_a_yes_no_question_is_held_by_its_clause_not_by_the_word_yes():
    clause = "Licensee shall not sell competing products in the Territory during the Term."
    assert misses.where(["Yes, yes."], ["Yes"], [clause], False) == "never-entered"
    assert (
        misses.where(
            ["Licensee may not sell competing products in the Territory.", "Notices go to Ohio."],
            ["Yes"],
            [clause],
            False,
        )
        == "overwritten"
    )


def test_questions_the_document_does_not_answer():
    assert misses.where(["The vault code of Bo Tam is 4411."], [NOT_IN_DOCUMENT], [], False) == "kept-something"
    assert misses.where([NO_EVIDENCE_MEMORY], [NOT_IN_DOCUMENT], [], False) == "answer-missed"
    assert misses.where(["Payment within 30 days."], ["No"], [], False) == "kept-something"  # absent clause
    assert misses.where([NO_EVIDENCE_MEMORY], ["No"], [], True) == "correct"
    # the empty memory in other capitals keeps nothing, as the agent judges it (inference.agent.holds_nothing)
    assert misses.where(["No Relevant Information Yet"], ["No"], [], False) == "answer-missed"


def _case(kind: str, answers: tuple[str, ...], memories: list[str], answer: str, evidence: tuple[str, ...] = ()):
    task = Task(f"t{len(memories)}{answer}", "doc", "q?", answers, evidence, kind, 100)
    return case_result(task, "contracts", kind, answer, memories)


def test_rates_per_suite_in_the_summary_and_table():
    cases = [
        _case("law", ("Nevada",), ["Nevada law."], "Nevada"),  # correct, final memory held it
        # answer-missed; the memory keeps the evidence's sentence whole
        _case(
            "law",
            ("Nevada",),
            ["Nevada law governs this contract."],
            "Section 14",
            ("Recitals. Nevada law governs this contract.",),
        ),
        _case("law", ("Nevada",), ["Nevada law.", "Affiliates."], "Affiliate"),  # overwritten
        _case("law", ("Nevada",), ["Affiliates."], "Affiliate"),  # never entered
        _case("absent", (NOT_IN_DOCUMENT,), ["The code is 7."], "7"),  # kept something
        _case("absent", (NOT_IN_DOCUMENT,), [NO_EVIDENCE_MEMORY], NOT_IN_DOCUMENT),  # correct, kept nothing
    ]
    assert [c.where for c in cases] == [
        "correct",
        "answer-missed",
        "overwritten",
        "never-entered",
        "kept-something",
        "correct",
    ]
    s = suite_summary(cases)["contracts"]
    assert s["n"] == 6 and s["answerable"] == 4 and s["unanswerable"] == 2
    assert (s["never-entered"], s["overwritten"], s["answer-missed"]) == (0.25, 0.25, 0.25)
    assert s["final_held"] == 2 and s["answered_when_held"] == 0.5 and s["kept_something"] == 0.5
    assert s["sub_em"] == pytest.approx(2 / 6) and s["interval"][0] < 2 / 6 < s["interval"][1]
    assert cases[1].memories == ("Nevada law governs this contract.",)
    assert (s["with_evidence"], s["evidence_kept"]) == (1, 1.0)
    row = suites_table({"contracts": s}).splitlines()[-1]
    assert row.startswith("| contracts | 6 | 33.3% (")
    assert row.endswith("| 25.0% | 25.0% | 25.0% | 50.0% (of 2) | 100.0% (of 1) | 50.0% (of 2) |")


def test_evidence_kept_counts_every_short_span_or_a_clause_restated_or_its_key_sentence_kept_whole():
    parties = ["Acme Corp.", "Beta LLC"]  # CUAD marks a title, each party, a date as short spans
    assert misses.evidence_kept("Between ACME CORP. and Beta, LLC.", parties)
    assert not misses.evidence_kept("Between Acme Corp. and its affiliates.", parties)  # every one of them
    clause = "This Agreement shall commence on the Effective Date. It shall remain in force for five (5) years."
    assert misses.evidence_kept("It shall remain in force for five (5) years.", [clause])  # one sentence, verbatim
    assert misses.evidence_kept("Commences on the Effective Date, remains in force five years, agreement.", [clause])
    assert not misses.evidence_kept("It shall remain in force.", [clause])  # too little of either
    assert not misses.evidence_kept("Anything at all.", [])


def test_balanced_accuracy_of_yes_no_questions():
    always_no = [
        _case("c", ("Yes",), ["x"], "No"),
        _case("c", ("No",), ["x"], "No"),
        _case("c", ("No",), ["y"], "No"),
        _case("c", ("No",), ["z"], "No"),
    ]
    assert suite_summary(always_no)["contracts"]["balanced_accuracy"] == 0.5


def test_balanced_accuracy_reads_golds_as_the_verifier_does():
    cases = [_case("c", ("Yes.",), ["x"], "Yes"), _case("c", ("no",), ["y"], "No")]  # "Yes." is a Yes gold
    assert suite_summary(cases)["contracts"]["balanced_accuracy"] == 1.0
