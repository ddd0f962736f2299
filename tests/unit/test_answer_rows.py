"""Which answers the extractive reader's answer step is taught: only those its final memory supports."""

from __future__ import annotations

import doctest

from training import answer_rows
from training.answer_rows import supported
from training.tasks import ABSENT, Task


def test_doctests():
    assert doctest.testmod(answer_rows).failed == 0


def test_a_value_needs_its_answer_in_the_memory_and_a_clause_question_is_always_taught():
    clause = "Neither party may assign this Agreement without the prior written consent of the other party."
    yes = Task("y", "", "Is assignment restricted?", ("Yes",), (clause,), "clause:Anti-Assignment")
    assert supported(yes, "This Agreement is governed by the laws of Ohio.")  # gating a Yes taught "No" to all
    no = Task("n", "", "Is there a non-compete?", ("No",), (), ABSENT)
    assert supported(no, "The Distributor shall not sell competing products in Ohio.")  # a look-alike, answered No
    parties = Task("p", "", "Who are the parties?", ("Acme Corp", "Acme Corp (Acme)"), (), "contract:Parties")
    assert supported(parties, "This Agreement is between ACME  CORP and Beta LLC.") and not supported(parties, "Beta.")
