"""The sentence splitter: prose, contracts as PDFs give them, and a model's memory."""

from __future__ import annotations

from inference.sentences import sentences


def _texts(text: str | None) -> list[str]:
    return [text[a:b] for a, b in sentences(text)]


def test_sentences_end_at_stops_blank_lines_and_bullets():
    assert _texts("The key hangs behind the barometer. The boat comes monthly!\n- flour; oil\n- salt\n\n") == [
        "The key hangs behind the barometer.",
        "The boat comes monthly!",
        "- flour; oil",
        "- salt",
    ]
    assert _texts("Who keeps it? Mara.\nThe boat comes on Mondays.") == [
        "Who keeps it?",
        "Mara.",
        "The boat comes on Mondays.",
    ]
    assert _texts("First paragraph without a stop\n\nSecond one") == ["First paragraph without a stop", "Second one"]
    assert _texts("") == [] and _texts("   ") == [] and _texts(None) == []
    assert _texts("no end") == ["no end"]


def test_a_line_break_inside_a_sentence_does_not_end_it():
    text = "Gross Sales shall mean total revenues, under generally accepted\naccounting principles. It excludes tax."
    assert _texts(text) == [
        "Gross Sales shall mean total revenues, under generally accepted\naccounting principles.",
        "It excludes tax.",
    ]


def test_numbers_and_labels_are_not_sentences_but_start_the_next():
    assert _texts("1. Definitions:\nThe Agreement means this document. 2. Term. It lasts five years.") == [
        "1. Definitions:\nThe Agreement means this document.",
        "2. Term. It lasts five years.",
    ]
    assert _texts('ARTICLE 1\n\n1.1 Definitions:\n\n"Agent" means a person who acts for another.') == [
        'ARTICLE 1\n\n1.1 Definitions:\n\n"Agent" means a person who acts for another.'
    ]
    assert _texts("(a) The Seller delivers. (b) The Buyer pays.") == ["(a) The Seller delivers.", "(b) The Buyer pays."]
    assert _texts("1. Acme sells widgets. 2. Beta buys them.") == ["1. Acme sells widgets.", "2. Beta buys them."]
    assert _texts("Notes:") == ["Notes:"]  # alone, a label is all there is


def test_abbreviations_and_initials_do_not_end_a_sentence():
    text = (
        'Acme, Inc. (the "Company") and the U.S. Government agree. It is governed by the laws of the U.S.A. '
        "See Sec. 4 and No. 5, e.g. the fees. Mr. J. Smith signs. The answer is no. Done."
    )
    assert _texts(text) == [
        'Acme, Inc. (the "Company") and the U.S. Government agree.',
        "It is governed by the laws of the U.S.A. See Sec. 4 and No. 5, e.g. the fees.",  # "U.S.A." then "See": kept
        "Mr. J. Smith signs.",
        "The answer is no.",
        "Done.",
    ]
    assert _texts("Food For Athletes, Inc.\n(the Company) is a corporation.") == [
        "Food For Athletes, Inc.\n(the Company) is a corporation."
    ]
    assert _texts("Its office is in Mount Laurel, NJ. 08054 and more. Next.") == [
        "Its office is in Mount Laurel, NJ. 08054 and more.",
        "Next.",
    ]
