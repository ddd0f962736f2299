"""What a contract review asks and how an answer is read: CUAD v1's 41 categories with their questions, and
`normalize` and `first_yes_no`, the reading of an answer that the review's table and filters (app/), the training
reward and the evaluation (training/verifier.py) share, so that the product and the scores read an answer alike.
Here in `inference`, which imports nothing of ours, because both the app and training import it. (Dates are read
by meaning in inference/dates.py, which the agent shares with the verifier; the review reads none.)

The 8 value questions are those of ../shared/data/contracts/cases.json (the held-out suite's wording); the 33 clause
questions are those of ../shared/data/contracts-train/cases.jsonl, which carry CUAD's own category descriptions, less
the empty "()" of the 14 categories that have none. Kept here, not read from the data at run time: a deployment has
no shared data folder. tests/unit/test_review.py checks them against the data files.
"""

from __future__ import annotations

import re
import string
import unicodedata
from typing import Literal

Kind = Literal["extract", "yes-no"]
EXTRACT: Kind = "extract"
YES_NO: Kind = "yes-no"

#: (category, kind, question), the 8 value categories first, then the 33 clause categories in CUAD's order
REVIEW_QUESTIONS: tuple[tuple[str, Kind, str], ...] = (
    ("Document Name", EXTRACT, "What is the title of this agreement?"),
    ("Parties", EXTRACT, "Who are the parties to this agreement?"),
    ("Agreement Date", EXTRACT, "On what date was this agreement made?"),
    ("Effective Date", EXTRACT, "On what date does this agreement take effect?"),
    ("Expiration Date", EXTRACT, "On what date does the initial term of this agreement expire?"),
    ("Renewal Term", EXTRACT, "For how long does the agreement renew after its initial term?"),
    (
        "Notice Period To Terminate Renewal",
        EXTRACT,
        "How much notice must a party give to stop the agreement from renewing?",
    ),
    ("Governing Law", EXTRACT, "Which state's or country's law governs this agreement?"),
    (
        "Most Favored Nation",
        YES_NO,
        "Does this agreement contain a clause on most favored nation (Is there a clause that if a third "
        "party gets better terms on the licensing or sale of technology/goods/services described in the "
        "contract, the buyer of such technology/goods/services under the contract shall be entitled to "
        "those better terms?)? Answer yes or no.",
    ),
    (
        "Competitive Restriction Exception",
        YES_NO,
        "Does this agreement contain a clause on competitive restriction exception (This category "
        "includes the exceptions or carveouts to Non-Compete, Exclusivity and No-Solicit of Customers "
        "above)? Answer yes or no.",
    ),
    (
        "Non-Compete",
        YES_NO,
        "Does this agreement contain a clause on non-compete (Is there a restriction on the ability of a "
        "party to compete with the counterparty or operate in a certain geography or business or "
        "technology sector?)? Answer yes or no.",
    ),
    (
        "Exclusivity",
        YES_NO,
        "Does this agreement contain a clause on exclusivity (Is there an exclusive dealing  commitment "
        "with the counterparty? This includes a commitment to procure all “requirements” from one party "
        "of certain technology, goods, or services or a prohibition on licensing or selling technology, "
        "goods or services to third parties, or a prohibition on  collaborating or working with other "
        "parties), whether during the contract or  after the contract ends (or both))? Answer yes or no.",
    ),
    (
        "No-Solicit Of Customers",
        YES_NO,
        "Does this agreement contain a clause on no-solicit of customers? Answer yes or no.",
    ),
    (
        "No-Solicit Of Employees",
        YES_NO,
        "Does this agreement contain a clause on no-solicit of employees? Answer yes or no.",
    ),
    (
        "Non-Disparagement",
        YES_NO,
        "Does this agreement contain a clause on non-disparagement (Is there a requirement on a party "
        "not to disparage the counterparty?)? Answer yes or no.",
    ),
    (
        "Termination For Convenience",
        YES_NO,
        "Does this agreement contain a clause on termination for convenience? Answer yes or no.",
    ),
    ("Rofr/Rofo/Rofn", YES_NO, "Does this agreement contain a clause on rofr/rofo/rofn? Answer yes or no."),
    ("Change Of Control", YES_NO, "Does this agreement contain a clause on change of control? Answer yes or no."),
    (
        "Anti-Assignment",
        YES_NO,
        "Does this agreement contain a clause on anti-assignment (Is consent or notice required of a "
        "party if the contract is assigned to a third party?)? Answer yes or no.",
    ),
    (
        "Revenue/Profit Sharing",
        YES_NO,
        "Does this agreement contain a clause on revenue/profit sharing (Is one party required to share "
        "revenue or profit with the counterparty for any technology, goods, or services?)? Answer yes or "
        "no.",
    ),
    ("Price Restrictions", YES_NO, "Does this agreement contain a clause on price restrictions? Answer yes or no."),
    (
        "Minimum Commitment",
        YES_NO,
        "Does this agreement contain a clause on minimum commitment (Is there a minimum order size or "
        "minimum amount or units per-time period that one party must buy from the counterparty under the "
        "contract?)? Answer yes or no.",
    ),
    (
        "Volume Restriction",
        YES_NO,
        "Does this agreement contain a clause on volume restriction (Is there a fee increase or consent "
        "requirement, etc. if one party’s use of the product/services exceeds certain threshold?)? "
        "Answer yes or no.",
    ),
    (
        "Ip Ownership Assignment",
        YES_NO,
        "Does this agreement contain a clause on ip ownership assignment? Answer yes or no.",
    ),
    ("Joint Ip Ownership", YES_NO, "Does this agreement contain a clause on joint ip ownership? Answer yes or no."),
    (
        "License Grant",
        YES_NO,
        "Does this agreement contain a clause on license grant (Does the contract contain a license "
        "granted by one party to its counterparty?)? Answer yes or no.",
    ),
    (
        "Non-Transferable License",
        YES_NO,
        "Does this agreement contain a clause on non-transferable license (Does the contract limit the "
        "ability of a party to transfer the license being granted to a third party?)? Answer yes or no.",
    ),
    (
        "Affiliate License-Licensor",
        YES_NO,
        "Does this agreement contain a clause on affiliate license-licensor? Answer yes or no.",
    ),
    (
        "Affiliate License-Licensee",
        YES_NO,
        "Does this agreement contain a clause on affiliate license-licensee? Answer yes or no.",
    ),
    (
        "Unlimited/All-You-Can-Eat-License",
        YES_NO,
        "Does this agreement contain a clause on unlimited/all-you-can-eat-license? Answer yes or no.",
    ),
    (
        "Irrevocable Or Perpetual License",
        YES_NO,
        "Does this agreement contain a clause on irrevocable or perpetual license? Answer yes or no.",
    ),
    (
        "Source Code Escrow",
        YES_NO,
        "Does this agreement contain a clause on source code escrow (Is one party required to deposit "
        "its source code into escrow with a third party, which can be released to the counterparty upon "
        "the occurrence of certain events (bankruptcy,  insolvency, etc.)?)? Answer yes or no.",
    ),
    (
        "Post-Termination Services",
        YES_NO,
        "Does this agreement contain a clause on post-termination services (Is a party subject to "
        "obligations after the termination or expiration of a contract, including any post-termination "
        "transition, payment, transfer of IP, wind-down, last-buy, or similar commitments?)? Answer yes "
        "or no.",
    ),
    (
        "Audit Rights",
        YES_NO,
        "Does this agreement contain a clause on audit rights (Does a party have the right to  audit the "
        "books, records, or physical locations of the counterparty to ensure compliance with the "
        "contract?)? Answer yes or no.",
    ),
    (
        "Uncapped Liability",
        YES_NO,
        "Does this agreement contain a clause on uncapped liability (Is a party’s liability uncapped "
        "upon the breach of its obligation in the contract? This also includes uncap liability for a "
        "particular type of breach such as IP infringement or breach of confidentiality obligation)? "
        "Answer yes or no.",
    ),
    ("Cap On Liability", YES_NO, "Does this agreement contain a clause on cap on liability? Answer yes or no."),
    (
        "Liquidated Damages",
        YES_NO,
        "Does this agreement contain a clause on liquidated damages (Does the contract contain a clause "
        "that would award either party liquidated damages for breach or a fee upon the termination of a "
        "contract (termination fee)?)? Answer yes or no.",
    ),
    (
        "Warranty Duration",
        YES_NO,
        "Does this agreement contain a clause on warranty duration (What is the duration of any  "
        "warranty against defects or errors in technology, products, or services  provided under the "
        "contract?)? Answer yes or no.",
    ),
    (
        "Insurance",
        YES_NO,
        "Does this agreement contain a clause on insurance (Is there a requirement for insurance that "
        "must be maintained by one party for the benefit of the counterparty?)? Answer yes or no.",
    ),
    ("Covenant Not To Sue", YES_NO, "Does this agreement contain a clause on covenant not to sue? Answer yes or no."),
    (
        "Third Party Beneficiary",
        YES_NO,
        "Does this agreement contain a clause on third party beneficiary (Is there a non-contracting "
        "party who is a beneficiary to some or all of the clauses in the contract and therefore can "
        "enforce its rights against a contracting party?)? Answer yes or no.",
    ),
)


# --- reading an answer ------------------------------------------------------------------------------
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation + "“”‘’«»–—")
_MARKS = str.maketrans("", "", "™®©")  # before NFKC, which spells ™ as "TM"
_SEPARATORS = re.compile(r";|,(?!\d)")  # not the comma of 1,000


def normalize(text: str) -> str:
    """Lower case, NFKC, no accents, no punctuation, no articles, single spaces (SQuAD-style).

    >>> normalize("  The  State of New-York!  "), normalize("BioNutrients™ Ltd.;Onse"), normalize("Aéreas 1,000")
    ('state of newyork', 'bionutrients ltd onse', 'aereas 1000')
    """
    text = text.replace("\\boxed{", " ")  # an answer cut off before its closing brace: its words, not "boxedacme"
    text = unicodedata.normalize("NFKD", text.translate(_MARKS)).lower()
    text = unicodedata.normalize("NFKC", "".join(c for c in text if not unicodedata.combining(c)))
    text = _SEPARATORS.sub(" ", text).translate(_PUNCT)  # "Ltd.;Onse", "Columbia,Canada": two words
    return " ".join(_ARTICLES.sub(" ", text).split())


def first_yes_no(answer: str) -> str | None:
    """The first "yes" or "no" said: how a clause question's answer is read, by the review and the verifier.

    >>> first_yes_no("No. Yes, it is assignable"), first_yes_no("The document does not say.")
    ('no', None)
    """
    m = re.search(r"\b(yes|no)\b", normalize(answer))
    return m[1] if m else None
