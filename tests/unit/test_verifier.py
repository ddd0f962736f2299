"""The strict verifier (training/verifier.py): one test per rule, and every shared gold answer right by itself."""

from __future__ import annotations

import json

import pytest

from inference.contract_review import normalize
from training.tasks import DATA_DIR
from training.verifier import answer_kind, exact_match, party_recall, reward, sub_em


def test_normalize_and_the_two_rules() -> None:
    assert normalize("The  Laws of the State of NEVADA.") == "laws of state of nevada"
    assert sub_em("laws of the State of Nevada", ["Nevada"]) and not exact_match("laws of Nevada", ["Nevada"])


def test_the_gold_must_appear_at_word_boundaries() -> None:
    assert sub_em("governed by the laws of the State of Ohio", ["Ohio"])
    assert not sub_em("the Ohioan courts", ["Ohio"])
    assert not sub_em("State", ["State of Nevada"])  # a piece of the gold is not the gold
    assert not sub_em("9484490", ["1635316, 9484490"])
    assert sub_em("Perpetual, unless terminated", ["perpetual"])


def test_the_three_number_answer_from_the_training_logs_scores_zero() -> None:
    # training/results/rl-single/samples.jsonl, step 18: this answer earned reward 1.0 under the old verifier
    assert reward(r"\boxed{9571278, 3799942, 11411111}", ["3799942"], "sub_em") == 0.0
    assert reward(r"\boxed{3799942}", ["3799942"], "sub_em") == 1.0
    assert reward(r"\boxed{The vault code is 3799942.}", ["3799942"], "sub_em") == 1.0


def test_several_numbers_of_the_golds_unit_score_zero_other_units_do_not() -> None:
    assert not sub_em("30 days or 60 days", ["30 days"])
    assert sub_em("thirty (30) days before the end of each 1 year term", ["30 days"])
    # a gold that lists several numbers is answered by all of them, and by nothing more
    assert sub_em("1635316, 9484490", ["1635316, 9484490", "1635316 and 9484490"])
    assert not sub_em("1635316, 9484490, 5550101", ["1635316, 9484490"])


def test_several_dates_score_zero() -> None:
    assert sub_em("The agreement was made on October 30, 2017.", ["10/30/17"])
    assert not sub_em("October 30, 2017 or November 1, 2017", ["10/30/17"])
    assert sub_em("10/30/17, that is October 30th, 2017", ["10/30/17"])  # the same date twice is one candidate


def test_several_states_or_countries_score_zero() -> None:
    assert sub_em("The laws of the State of New York", ["New York"])  # words of other kinds are fine
    assert not sub_em("New York or Delaware", ["New York"])
    assert not sub_em("the laws of Virginia and West Virginia", ["Virginia"])
    assert sub_em("New York, United States of America", ["New York"])  # the state's own country is no rival
    assert sub_em("Texas, Singapore and Belgium", ["Texas; Singapore; Belgium"])  # a listed gold needs each item
    assert not sub_em("Texas and Singapore", ["Texas; Singapore; Belgium"])


def test_several_names_score_zero() -> None:
    assert not sub_em("Jo March and Laurie", ["Jo March"])
    assert not sub_em("Laurie, Jo March", ["Jo March"])
    assert sub_em("Jo March, who married Professor Bhaer", ["Jo March"])  # not a list of candidates
    assert sub_em("Orlan Veskit, with Brisk fever", ["Brisk"])  # another name beside it, but not as a rival
    assert sub_em("Oslo, Norway", ["Oslo"])  # a place beside the name is another kind
    assert sub_em("Food For Athletes, Inc.", ["Food For Athletes, Inc."])  # a comma inside the gold


def test_yes_no_is_the_first_yes_or_no() -> None:
    assert sub_em("Yes. The licence may not be assigned without consent.", ["Yes"])
    assert not sub_em("No, yes", ["Yes"])
    assert sub_em("No; the agreement says nothing about it", ["No"])
    assert not sub_em("The document does not say.", ["No"]) and not sub_em("NOT_IN_DOCUMENT", ["No"])
    assert not sub_em("Nobody knows", ["No"])  # a word that starts with "no" is no answer


def test_dates_compare_by_meaning() -> None:
    for written in ("April 14th, 2020", "4/14/2020", "14 April 2020", "the 14th day of April, 2020", "Apr. 14, 2020"):
        assert sub_em(f"made on {written}", ["4/14/20"]), written
        assert exact_match(written, ["4/14/20"]), written
    assert exact_match("Nov. 19th, 1999", ["11/19/99"]) and not exact_match("made on 11/19/1999", ["11/19/99"])
    assert not sub_em("11/16/2020", ["1/1/16"])  # as text without punctuation, 1116 is inside 11162020
    assert not sub_em("19/12/18", ["12/19/18"])  # day first is no US date
    # CUAD's blanks: a part it leaves blank is not asked, a part it gives must agree
    assert sub_em("made in 2009", ["[]/[]/2009"]) and sub_em("March 2009", ["[]/[]/2009"])
    assert not sub_em("December 19, 2018", ["[]/[]/2009"]) and not sub_em("2009 or 2010", ["[]/[]/2009"])
    assert sub_em("April 2005", ["04/[]/2005"]) and not sub_em("2005", ["04/[]/2005"])


def test_parties_one_party_at_a_time() -> None:
    gold = (
        'Allscripts Healthcare, LLC ("Allscripts"); Phreesia, Inc. ("Company", "Phreesia"); (Allscripts and the '
        "Company are sometimes referred to herein as a “Party” and collectively as the “Parties”)"
    )
    assert answer_kind(gold) == "parties"
    assert party_recall("Allscripts Healthcare and Phreesia Inc", gold) == 1.0
    assert sub_em("Allscripts Healthcare and Phreesia Inc", [gold])
    assert sub_em("ALLSCRIPTS HEALTHCARE LLC; PHREESIA, INC.", [gold])  # case, legal form, punctuation
    assert party_recall("Allscripts and the Company", gold) == 0.5  # a role is no party's name
    assert not sub_em("Allscripts and the Company", [gold])
    gold = 'National Football League Alumni, Inc ("NFLA"); Food For Athletes, Inc./Gridiron BioNutrients™'
    assert sub_em("NFLA and Gridiron BioNutrients", [gold])  # an acronym alias; either name of a party
    assert party_recall("Food For Athletes", gold) == 0.5


@pytest.mark.parametrize("rule", ["sub_em", "exact_match"])
def test_reward_reads_the_last_boxed_answer(rule) -> None:
    assert reward(r"\boxed{Nevada} no, \boxed{Texas}", ["Nevada"], rule) == 0.0
    assert reward(r"memory says \boxed{Nevada}", ["nevada"], rule) == 1.0
    with pytest.raises(ValueError, match="unknown rule"):
        reward("x", ["x"], "fuzzy")  # type: ignore[arg-type]


def _shared_golds() -> list[tuple[str, str, str]]:
    rows = [
        (c["id"], q["category"], q["answer"])
        for c in json.loads((DATA_DIR / "contracts" / "cases.json").read_text(encoding="utf-8"))
        for q in c["qa"]
    ]
    for line in (DATA_DIR / "contracts-train" / "cases.jsonl").read_text(encoding="utf-8").splitlines():
        c = json.loads(line)
        rows += [(c["id"], q["category"], q["answer"]) for q in c["qa"]]
    return rows


def test_every_shared_gold_answer_is_right_by_itself() -> None:
    rows = _shared_golds()
    assert len(rows) > 14_599  # contracts-train's questions and the 60 contracts'
    assert {a for _, c, a in rows if c == "Anti-Assignment"} == {"Yes", "No"}  # the yes/no categories store Yes/No
    wrong = [(i, c, a) for i, c, a in rows if not sub_em(a, [a])]
    assert not wrong, wrong[:5]
    assert all(party_recall(a, a) == 1.0 for _, c, a in rows if c == "Parties")
