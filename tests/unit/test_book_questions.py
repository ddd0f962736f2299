"""Real questions about the shared novels: every hand-written question's evidence is the book's own text and
holds its answer; the questions made from dialogue tags point at a line said once, by the speaker they name."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from training.book_questions import KINDS, QUESTIONS_DIR, SPEECH_VERBS, contains, load_questions, speaker_questions
from training.tasks import BOOKS_DIR  # ../shared/data/books beside the checkout, or LONGREAD_SHARED_DATA

FILES = sorted(QUESTIONS_DIR.glob("*.jsonl"))
VERBS = "|".join(SPEECH_VERBS)


def _squash(text: str) -> str:
    return " ".join(text.split())


def _body(book: str) -> str:
    """The book between its Gutenberg markers, decoded as shipped (cp1252), whitespace collapsed."""
    text = (BOOKS_DIR / book).read_bytes().decode("cp1252")
    return _squash(text[text.index("*** START") : text.index("*** END")])


def _plain(text: str) -> str:
    """Straight quotes, lower case."""
    return text.translate(str.maketrans("\u201c\u201d\u2018\u2019", "\"\"''")).lower()


def test_there_are_question_files_for_at_least_two_books():
    assert {f.stem for f in FILES} >= {"pg84", "pg64317"}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_a_question_file_is_one_book_with_unique_ids_and_known_kinds(path):
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    questions = load_questions(path)
    assert len(questions) == len(rows) >= 40
    assert {q.book for q in questions} == {f"{path.stem}.txt"}
    assert all(re.fullmatch(rf"{path.stem}-\d{{3}}", q.id) for q in questions)
    assert [i for i, n in Counter(q.id for q in questions).items() if n > 1] == []
    assert {q.kind for q in questions} <= set(KINDS)
    assert len({q.question for q in questions}) == len(questions)


def test_ids_are_unique_across_all_files():
    ids = [q.id for q in load_questions(QUESTIONS_DIR)]
    assert len(ids) == len(set(ids)) > 0


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_evidence_is_verbatim_in_its_book_and_holds_an_answer(path):
    questions = load_questions(path)
    body = _body(questions[0].book)
    not_in_book = [q.id for q in questions if _squash(q.evidence) not in body]
    no_answer = [q.id for q in questions if not any(contains(q.evidence, a) for a in q.answers)]
    assert not_in_book == []
    assert no_answer == []


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_questions_cover_the_opening_middle_and_end_of_the_book(path):
    questions = load_questions(path)
    body = _body(questions[0].book)
    where = sorted(body.index(_squash(q.evidence)) / len(body) for q in questions)
    assert where[0] < 0.15 and where[-1] > 0.85
    assert any(0.4 < w < 0.6 for w in where)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_the_books_title_answers_no_question(path):
    raw = (BOOKS_DIR / f"{path.stem}.txt").read_bytes().decode("cp1252")
    title = re.search(r"^Title: ([^;:\r\n]+)", raw, re.MULTILINE)[1].strip()
    assert [q.id for q in load_questions(path) if any(contains(title, a) for a in q.answers)] == []


@pytest.mark.parametrize("book", sorted(p.name for p in BOOKS_DIR.glob("*.txt")))
def test_rule_made_lines_are_in_the_book_once_with_the_named_speaker_in_the_tag(book):
    questions = speaker_questions(book, BOOKS_DIR)
    body = _plain(_body(book))
    wrong = []
    for q in questions:
        line = _plain(re.fullmatch(r'Who says "(.+)"\?', q.question, re.DOTALL)[1])
        name = re.escape(_plain(q.answers[0]))
        at = body.find(line)
        after = body[at + len(line) : at + len(line) + 80]  # the line's closing mark, then its tag
        before = body[max(at - 80, 0) : at]  # or the tag, then `, "` reopening the speech
        tagged = re.match(rf',?"\s*(?:(?:{VERBS}) {name}|{name} (?:{VERBS}))\b', after) or re.search(
            rf'(?:(?:{VERBS}) {name}|{name} (?:{VERBS})), "$', before
        )
        if body.count(line) != 1 or not tagged or not contains(q.evidence, q.answers[0]):
            wrong.append(q.id)
    assert wrong == []
    assert len({q.id for q in questions}) == len(questions)


@pytest.mark.parametrize("book", ["pg64317.txt", "pg2641.txt", "pg37106.txt"])
def test_novels_with_named_dialogue_tags_yield_many_speaker_questions(book):
    questions = speaker_questions(book, BOOKS_DIR)
    assert len(questions) >= 30
    assert len({q.answers[0] for q in questions}) >= 5


def _book(tmp_path: Path, title: str, body: str) -> Path:
    text = f"Title: {title}\n\n*** START OF THE BOOK ***\n{body}\n*** END OF THE BOOK ***\n"
    (tmp_path / "b.txt").write_bytes(text.replace("\n", "\r\n").encode("cp1252"))  # as Gutenberg ships it
    return tmp_path


def _said(tmp_path: Path, title: str, body: str) -> dict[str, tuple[str, ...]]:
    return {q.question: q.answers for q in speaker_questions("b.txt", _book(tmp_path, title, body))}


def test_speaker_rule_takes_named_tags_in_either_order_and_reopened_lines(tmp_path):
    body = (
        '"I shall go to the harbour in the morning," said Meg.\n\n'
        "\u201cThe boats will not wait for anyone at all,\u201d Jo said, \u201cnot even for you, my dear.\u201d\n\n"
        '"Will you bring back a basket of fish?" asked Mrs. March, and laughed.\n\n'
        "Mrs. March smiled at Meg and Jo."
    )
    assert _said(tmp_path, "A Story", body) == {
        'Who says "I shall go to the harbour in the morning"?': ("Meg",),
        'Who says "The boats will not wait for anyone at all"?': ("Jo",),
        'Who says "not even for you, my dear."?': ("Jo",),
        'Who says "Will you bring back a basket of fish?"?': ("Mrs. March", "March"),
    }


def test_speaker_rule_skips_pronouns_common_words_pairs_possessives_title_names_and_repeats(tmp_path):
    body = (
        '"I shall go to the harbour in the morning," she said.\n\n'
        '"The boats will not wait for anyone at all," Then Jo said.\n\n'
        "then it rained.\n\n"
        '"We are all of us going down to the sea," said Meg and Jo.\n\n'
        '"Here is the little old dog from the farm," Meg\'s sister said.\n\n'
        '"I have never seen such a grey stormy sky," said Gatsby.\n\n'
        '"It is far too short," said Meg.\n\n'
        '"Take your coat with you when you go," said Meg. "Take your coat with you when you go," said Jo.'
    )
    assert _said(tmp_path, "The Great Gatsby", body) == {}


def test_surname_alone_is_an_answer_only_when_one_title_goes_with_it(tmp_path):
    body = '"The boats will not wait for anyone at all," said Mrs. March.\n\nMr. March came home. Aunt March did not.'
    assert _said(tmp_path, "A Story", body) == {
        'Who says "The boats will not wait for anyone at all"?': ("Mrs. March",)
    }


def test_contains_matches_whole_words_ignoring_case_quotes_and_italics():
    assert contains("Good night sweet _Safie._", "safie")
    assert contains("the World\u2019s Series", "World's Series")
    assert contains("a  New\nHaven man", "New Haven")
    assert not contains("Joe came", "Jo")
    assert not contains("Milanese", "Milan")


def test_load_questions_rejects_an_unknown_kind_and_missing_fields(tmp_path):
    row = {"id": "x-001", "book": "x.txt", "question": "Q?", "answers": ["A"], "evidence": "A.", "kind": "plot"}
    (tmp_path / "x.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="kind"):
        load_questions(tmp_path)
    del row["kind"]
    (tmp_path / "x.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="fields"):
        load_questions(tmp_path / "x.jsonl")
