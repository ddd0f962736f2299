"""Provenance logic: where a sentence entered the memory (tolerant of rewording), the passage of a chunk
that matches it, the passage an answer came from, and finding a passage in PDFium's text of its page."""

from __future__ import annotations

from app.documents.pages import find_passage
from app.services.provenance import best_passage, entered_at, trace


def test_a_sentence_entered_where_it_appeared_and_stayed_even_reworded():
    memories = [
        "No facts yet.",
        "Mara keeps the lighthouse.",
        "Mara keeps the lighthouse. The spare key hangs behind the barometer.",
        "Mara keeps the light. The spare key is hanging behind the barometer. Boat on Mondays.",
    ]
    assert entered_at("The spare key hangs behind the barometer.", memories) == 3
    assert entered_at("Boat on Mondays.", memories) == 4
    assert entered_at("Mara keeps the lighthouse.", memories) == 2  # "the light" at step 4: a small rewording
    assert entered_at("Mara keeps a lamp house.", memories) is None  # 2 of 5 words: not the same sentence
    assert entered_at("The ship sank.", memories) is None
    # dropped and written again: it counts from where it came back
    assert entered_at("key", ["key here.", "nothing.", "key again."]) == 3


def test_the_best_passage_of_a_chunk():
    text = "Ships passed far out. The spare key to the lamp room hangs behind the barometer. A storm came."
    a, b, score = best_passage("spare key behind the barometer", text, 0, len(text))
    assert text[a:b] == "The spare key to the lamp room hangs behind the barometer." and score == 1.0
    assert best_passage("nothing alike", text, 0, len(text))[2] == 0.0
    # a chunk that starts inside the sentence still points at the whole sentence
    cut = text.index("barometer")
    a, b, score = best_passage("spare key behind the barometer", text, cut, len(text))
    assert text[a:b].startswith("The spare key") and score == 1.0
    # sentences outside the chunk are not candidates
    assert best_passage("spare key behind the barometer", text, text.index("A storm"), len(text))[2] == 0.0


# Three chunks of a contract; "Delaware" and the words of the governing-law sentence occur in chunk 1 too.
CHUNKS_TEXT = [
    "Acme Inc. is a corporation of Delaware with offices in Dover. The laws of the state apply to its charter. ",
    "The Buyer pays within thirty days. Late payments bear interest. ",
    "This Agreement is governed by the laws of the State of Delaware. Either party may end it on notice. ",
]
TEXT = "".join(CHUNKS_TEXT)
CHUNKS = [(sum(map(len, CHUNKS_TEXT[:k])), sum(map(len, CHUNKS_TEXT[: k + 1]))) for k in range(3)]
MEMORIES = [
    "Acme is a Delaware corporation.",
    "Acme is a Delaware corporation. Payment within 30 days.",
    "Acme is a Delaware corporation. Payment within 30 days. Governed by the laws of the State of Delaware.",
]


def _at(t) -> str:
    return TEXT[t.start : t.end]


def test_a_memory_sentence_links_to_the_chunk_where_it_entered_not_an_earlier_one_with_its_words():
    traced = {t.sentence: t for t in trace(TEXT, CHUNKS, MEMORIES, "Which law governs?", None)}
    law = traced["Governed by the laws of the State of Delaware."]
    assert law.step == 3 and CHUNKS[2][0] <= law.start < law.end <= CHUNKS[2][1]
    assert _at(law) == "This Agreement is governed by the laws of the State of Delaware."
    acme = traced["Acme is a Delaware corporation."]
    assert acme.step == 1 and _at(acme) == "Acme Inc. is a corporation of Delaware with offices in Dover."
    assert traced["Payment within 30 days."].step == 2


def test_an_answer_links_to_the_passage_of_the_memory_sentence_it_was_answered_from():
    # "Delaware" is in two memory sentences; the question says which one the answer came from.
    *_, answer = trace(TEXT, CHUNKS, MEMORIES, "Which state's law governs this agreement?", "Delaware")
    assert answer.part == "answer" and answer.via == "Governed by the laws of the State of Delaware."
    assert answer.step == 3 and _at(answer) == "This Agreement is governed by the laws of the State of Delaware."
    *_, answer = trace(TEXT, CHUNKS, MEMORIES, "Where is Acme incorporated?", "Delaware")
    assert answer.via == "Acme is a Delaware corporation." and answer.step == 1
    # an answer that quotes no memory sentence follows the one about the question
    *_, answer = trace(TEXT, CHUNKS, MEMORIES, "Is there a governing law?", "Yes")
    assert answer.via == "Governed by the laws of the State of Delaware." and answer.step == 3
    # ... and an answer no memory sentence supports has no passage
    *_, answer = trace(TEXT, CHUNKS, MEMORIES, "Who audits the books?", "Mazars")
    assert answer.step is None and answer.start is None and answer.via is None
    assert [t.part for t in trace(TEXT, CHUNKS, [], "Which law?", None)] == []


def test_a_digit_inside_an_address_does_not_pass_for_a_number_of_the_answer():
    # "ships 1 to 4" is in no memory: the memory's "1" is part of "127.0.0.1", one token, not the number 1.
    memories = ["ship 3 ![x](http://127.0.0.1:9/t.png), ship 4 near island 4"]
    (memory, answer) = trace("x " * 50, [(0, 100)], memories, "Which ships were logged?", "ships 1 to 4")
    assert memory.step == 1 and answer.part == "answer" and answer.step is None and answer.via is None


def test_a_passage_is_found_in_pdfiums_text_despite_line_ends_hyphens_and_ligatures():
    page = "1. “Gross Sales” shall mean total reve-\r\nnues, under generally ac\ufb01cepted\r\nprinciples.\r\nE. Next"
    passage = "1. “Gross Sales” shall mean total revenues, under generally acficepted\nprinciples."
    a, b = find_passage(page, passage)
    assert page[a:b] == page[: page.index("principles.") + len("principles")]  # up to its last letter
    assert find_passage(page, "Nothing of the kind appears here at all.") is None
    assert find_passage(page, "") is None
    # a passage the other extractor spelled a little differently is still placed by its longest common run
    a, b = find_passage(page, "shall mean total revenues, under generally accepted principles")
    assert page[a:].startswith("shall mean total") and b >= page.index("principles")
