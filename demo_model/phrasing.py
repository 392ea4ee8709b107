"""How people actually type questions: small typos in the words of finance ("revnue"),
greetings and thanks, and questions the demo cannot answer, each with the reason it
gives. Rules over a short vocabulary, so nothing is guessed beyond a letter or two."""

from __future__ import annotations

import re

from demo_model.companies import loose_name, typo_distance
from demo_model.vocab import STOPWORDS

__all__ = ["ADVICE_REASON", "DECLINED", "GREETING", "THANKS", "correct", "unsupported_reason"]

# The words of finance questions a typo is corrected to (lowercase, whole words).
_WORDS = frozenset(
    """revenue revenues income profit profits margin margins dividend dividends outstanding
    earnings operating liabilities assets equity balance quarter quarterly filings filing
    shares expenses expense research development depreciation repurchases buybacks capital
    expenditures financing investing annual report reports executive executives cash flow
    gross debt latest recent compare history growth statement sheet""".split()  # noqa: SIM905
)
_WORD = re.compile(r"\b[a-z]{5,}\b")

GREETING = re.compile(
    r"^\W*(?:hi|hello|hey|hiya|howdy|greetings|good (?:morning|afternoon|evening)|yo)"
    r"(?: there)?[\s!.,]*(?:demo|bot|model)?\W*$",
    re.I,
)
_THANKS = (
    r"(?:thanks?|thank you|thx|ty|cheers|much appreciated|great|perfect|ok(?:ay)?|cool|"
    r"got it|that'?s all|that is all|bye|goodbye|good ?bye|see you|see ya|later|ciao|"
    r"have a (?:good|nice) (?:one|day))"
)
_AFTER = r"(?: (?:so much|a lot|very much|for (?:the|your) help|for now|for today))*"
THANKS = re.compile(rf"^\W*{_THANKS}{_AFTER}(?:\W+{_THANKS}{_AFTER})*\W*$", re.I)
ADVICE_REASON = "I give no investment advice"
CONSENSUS_REASON = "consensus and analysts' estimates are forecasts"
DECLINED = (ADVICE_REASON, CONSENSUS_REASON)
"""Reasons that hold whoever the question is about: declined even without a company."""

# Questions with no answer in reported SEC data (or none this demo can read), and why.
# The first rules hold even when the question names a figure ("revenue guidance", "same-store
# sales"); the rest only when it does not.
_STRONG = 10
_UNSUPPORTED: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"\bsame[- ]stores?(?: sales)?\b|\bcomparable[- ](?:store )?sales\b|"
                   r"\bcomp(?:arable)? sales\b|\blike[- ]for[- ]like\b", re.I),
        "same-store sales are a retailer's measure of stores open a year or more, which this "
        "company does not report in its XBRL figures; its total revenue is another figure, "
        "so I don't give it in their place",
    ),
    (
        re.compile(r"\bunits? (?:sold|shipped|sales)\b|\bhow many (?!shares)[\w-]+(?: \w+)? "
                   r"(?:did|does|do|has|have) .{1,40}\b(?:sell|sold|ship|deliver)\w*|"
                   r"\b(?:vehicle |car )?deliveries\b|\bshipments\b|\bvolumes? sold\b", re.I),
        "units sold (how many products a company sold or delivered) are not among the XBRL "
        "figures companies report, and I don't give revenue in their place",
    ),
    (
        re.compile(r"\bprice targets?\b|\btarget price\b", re.I),
        "a price target is an analyst's forecast of the share price, not a reported figure, "
        "and I give no investment advice",
    ),
    (
        re.compile(r"\btrading (?:today|now|right now|at)\b|\bhow (?:is|are) .{1,40} trading\b|"
                   r"\btoday['’]?s (?:trading|price|stock|share|move)|\b(?:stock|shares?) "
                   r"(?:price )?today\b|\btrading volume\b|\bintraday\b", re.I),
        "today's trading (the share price and volume) is market data, which SEC filings do "
        "not hold",
    ),
    (
        re.compile(r"\b(?:good|bad|smart) (?:buy|investment|stock)\b|\bbuy or sell\b|"
                   r"\bshould (?:i|we|you)\b|\b(?:worth|time to) (?:buy|sell|short)|"
                   r"\b(?:over|under)valued\b|\bprice targets?\b|\brecommend|"
                   r"\bgo long\b|\bshort(?:ing)? (?:the )?(?:stock|shares)\b|\binvest in\b", re.I),
        f"{ADVICE_REASON}: whether to buy, sell or short is a judgement, not a reported "
        "figure, and I answer only from what companies have filed with the SEC",
    ),
    (
        re.compile(r"\bconsensus\b|\bthe street\b|\bstreet (?:estimates?|expects?)|"
                   r"\banalysts?['’]? (?:estimates?|expectations?|forecasts?|targets?|ratings?|"
                   r"expect\w*|think|predict\w*|project\w*)|"
                   r"\bwall street\b", re.I),
        f"{CONSENSUS_REASON} by people outside the company, not "
        "reported figures, and I answer only from what companies have filed with the SEC",
    ),
    (
        re.compile(r"\bebitda\b|\bnon-?gaap\b|\badjusted (?:eps|earnings|income)\b", re.I),
        "EBITDA and other non-GAAP measures are not reported in XBRL, and I don't compute "
        "them; I can give operating income, net income or depreciation and amortization",
    ),
    (
        re.compile(r"\bp/?e\b(?: ratio)?|\bpe ratio\b|\bev/|\bprice[- ]to[- ]|\broe\b|"
                   r"\broic\b|\breturn on (?:equity|assets|invested capital)\b", re.I),
        "valuation and return ratios are not reported figures (a valuation needs market "
        "prices, which SEC filings don't have); I can give the reported figures and margins",
    ),
    (
        re.compile(r"\bguidance\b|\bforecast|\boutlook\b|\bprojections?\b|\bestimates?\b|"
                   r"\bnext (?:quarter|year)\b|\bexpect(?:ed|s)? to\b", re.I),
        "forecasts and guidance are not reported figures, and I answer only from what "
        "companies have reported",
    ),
    (
        re.compile(r"\baudit(?:or|ors|ed|ing)?\b|accounting firm", re.I),
        "who audits a company is stated in the auditor's report inside its 10-K, which I "
        "don't extract",
    ),
    (
        re.compile(r"\bwho (?:sits|is|are) (?:on|in) .{0,30}\bboard\b|\bboard members\b|"
                   r"\bwho (?:is|are|runs) (?:the )?(?:ceo|cfo|chair\w*|directors?|"
                   r"executives?|officers?|management)\b", re.I),
        "who holds a post today is listed in the proxy statement (DEF 14A), which I can't "
        "read here; I can find the executive and board changes reported in 8-Ks (ask \"Any "
        "executive changes at ...?\")",
    ),
    (
        re.compile(r"\b(?:paid|pay|salary|salaries|compensation|bonus(?:es)?)\b", re.I),
        "executive pay is reported in the proxy statement (DEF 14A), which I can't read here",
    ),
    (
        re.compile(r"\bemployees?\b|\bheadcount\b|\bworkforce\b|\bstaff\b", re.I),
        "headcount is not among the XBRL figures I read",
    ),
    (
        re.compile(r"\bmarket share\b|\bcompetitors?\b|\bcustomers?\b|\bsuppliers?\b", re.I),
        "market share, customers and competitors are not reported figures I can read",
    ),
)  # fmt: skip


def correct(text: str) -> str:
    """The question with lowercase words one letter off a finance word put right
    ("whats nvidias revnue" -> "whats nvidias revenue")."""
    return _WORD.sub(lambda m: _corrected(m.group()), text)


def _corrected(word: str) -> str:
    if word in _WORDS or word in STOPWORDS or loose_name(word) is not None:
        return word
    allowed = 1 if len(word) < 9 else 2
    for known in sorted(_WORDS):
        if known[0] == word[0] and typo_distance(word, known) <= allowed:
            return known
    return word


def unsupported_reason(text: str, names_a_figure: bool) -> str | None:
    """Why a question is outside what the demo can answer, when a rule says so."""
    for n, (pattern, why) in enumerate(_UNSUPPORTED):
        applies = n < _STRONG or not names_a_figure
        if applies and pattern.search(text):
            return why
    return None
