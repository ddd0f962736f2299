"""Which answers the extractive reader's answer step is taught: only those its final memory supports."""

from __future__ import annotations

import doctest

from training import answer_rows
from training.answer_rows import supported
from training.tasks import ABSENT, Task


def test_doctests():
    assert doctest.testmod(answer_rows).failed == 0


def test_a_yes_needs_a_line_of_its_clause_and_a_question_with_nothing_to_find_is_always_taught():
    clause = "Neither party may assign this Agreement without the prior written consent of the other party."
    yes = Task("y", "", "Is assignment restricted?", ("Yes",), (clause,), "clause:Anti-Assignment")
    assert supported(yes, "Neither party may assign this Agreement without the prior written consent of the other")
    assert not supported(yes, "This Agreement is governed by the laws of Ohio.")  # the clause never kept: no row
    no = Task("n", "", "Is there a non-compete?", ("No",), (), ABSENT)
    assert supported(no, "The Distributor shall not sell competing products in Ohio.")  # a look-alike, answered No
    parties = Task("p", "", "Who are the parties?", ("Acme Corp", "Acme Corp (Acme)"), (), "contract:Parties")
    assert supported(parties, "This Agreement is between ACME CORP and Beta LLC.") and not supported(parties, "Beta.")
