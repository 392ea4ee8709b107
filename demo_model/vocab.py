"""What the demo knows of the domain: metrics and their XBRL concepts, filing sections,
form types, and the everyday words that are never company names."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "ACRONYMS",
    "ALIASES",
    "BRAND_WORDS",
    "FORMS",
    "LOWER_TICKERS",
    "METRICS",
    "STOPWORDS",
    "TOPICS",
    "Metric",
    "Topic",
]


@dataclass(frozen=True)
class Metric:
    """A financial figure, as XBRL concepts in the order companies commonly use them."""

    key: str
    label: str
    facts_key: str
    """The key metric name get_sec_company_facts takes (it picks the company's concept)."""
    concepts: tuple[str, ...]
    unit: str
    instant: bool
    """A balance-sheet figure (at a date), not a flow over a period."""
    pattern: re.Pattern[str]
    ratio: tuple[str, str] | None = None
    """A derived figure: the two metric keys it is computed from, period by period."""
    difference: bool = False
    """Computed as the first less the second (free cash flow), not the first over it."""


def _metric(
    key: str, label: str, facts: str, concepts: str, unit: str, instant: bool, words: str
) -> Metric:
    return Metric(
        key, label, facts, tuple(concepts.split()), unit, instant, re.compile(words, re.I)
    )


def _margin(key: str, label: str, numerator: str, words: str) -> Metric:
    return Metric(key, label, key, (), "%", False, re.compile(words, re.I), (numerator, "revenue"))


PRETAX = (
    "IncomeLossFromContinuingOperationsBeforeIncomeTaxesExtraordinaryItemsNoncontrollingInterest"
)

# Order matters: the first pattern to match a stretch of text claims it ("earnings per
# share" is EPS, not earnings; "operating income" is not net income).
METRICS: tuple[Metric, ...] = (
    Metric("free_cash_flow", "free cash flow", "free_cash_flow", (), "USD", False,
           re.compile(r"free cash ?flows?|\bfcf\b|operating cash flows? (?:minus|less) "
                      r"(?:capex|capital expenditures?)", re.I), ("operating_cash_flow", "capex"),
           difference=True),
    Metric("effective_tax_rate", "effective tax rate", "effective_tax_rate", (), "%", False,
           re.compile(r"(?:effective )?(?:income )?tax rate|\betr\b", re.I),
           ("income_tax", "pretax_income")),
    _margin("gross_margin", "gross margin", "gross_profit", r"gross margins?"),
    _margin("operating_margin", "operating margin", "operating_income",
            r"op(?:erating|\.)? margins?|ebit margins?"),
    _margin("net_margin", "net margin", "net_income",
            r"net (?:profit |income )?margins?|profit margins?"),
    _metric("dividends_per_share", "dividends per share", "CommonStockDividendsPerShareDeclared",
            "CommonStockDividendsPerShareDeclared", "USD/shares", False,
            r"dividends? (?:per|a) share|per[- ]share dividends?|\bdps\b"),
    _metric("eps", "diluted EPS", "eps_diluted",
            "EarningsPerShareDiluted EarningsPerShareBasic", "USD/shares", False,
            r"\beps\b|(?:earnings|loss|lose|losses|income) per (?:diluted )?share|"
            r"per[- ]share (?:earnings|loss)"),
    _metric("shares_outstanding", "shares outstanding", "shares_outstanding",
            "EntityCommonStockSharesOutstanding", "shares", True,
            r"shares? outstanding|outstanding shares|share count|(?:number of|how many) shares"),
    _metric("buybacks", "share buybacks", "PaymentsForRepurchaseOfCommonStock",
            "PaymentsForRepurchaseOfCommonStock", "USD", False,
            r"buy ?backs?|repurchas"),
    _metric("dividends_paid", "dividends paid", "PaymentsOfDividends",
            "PaymentsOfDividends", "USD", False, r"\bdividends?\b"),
    _metric("capex", "capital expenditures", "capital_expenditures",
            "PaymentsToAcquirePropertyPlantAndEquipment", "USD", False,
            r"capital expenditures?|\bcapex\b|capital spending"),
    _metric("investing_cash_flow", "investing cash flow",
            "NetCashProvidedByUsedInInvestingActivities",
            "NetCashProvidedByUsedInInvestingActivities", "USD", False,
            r"investing (?:activities|cash flows?)|cash (?:flows? )?(?:from|used in) investing"),
    _metric("financing_cash_flow", "financing cash flow",
            "NetCashProvidedByUsedInFinancingActivities",
            "NetCashProvidedByUsedInFinancingActivities", "USD", False,
            r"financing (?:activities|cash flows?)|cash (?:flows? )?(?:from|used in) financing"),
    _metric("depreciation", "depreciation and amortization",
            "DepreciationDepletionAndAmortization", "DepreciationDepletionAndAmortization",
            "USD", False, r"depreciation|\bd&a\b"),
    _metric("stock_comp", "stock-based compensation", "ShareBasedCompensation",
            "ShareBasedCompensation", "USD", False,
            r"(?:stock|share)[- ]based comp\w*|\bsbc\b"),
    _metric("operating_cash_flow", "operating cash flow", "operating_cash_flow",
            "NetCashProvidedByUsedInOperatingActivities", "USD", False,
            r"operating cash flows?|cash flows? from operations|\bcash\b(?: \w+){0,3} from "
            r"operations|cash (?:generated|provided) by operations"),
    _metric("pretax_income", "pretax income", PRETAX, PRETAX, "USD", False,
            r"pre-?tax (?:income|profits?|earnings)|(?:income|earnings|profits?) before "
            r"(?:income )?tax(?:es|ation)?|\bebt\b"),
    _metric("income_tax", "income tax expense", "IncomeTaxExpenseBenefit",
            "IncomeTaxExpenseBenefit", "USD", False,
            r"(?:income )?tax (?:expense|provision|bill|charge)s?|provision for (?:income )?tax"
            r"(?:es)?|income tax(?:es)?|\btaxes\b(?: paid)?"),
    _metric("cost_of_revenue", "cost of revenue", "cost_of_revenue",
            "CostOfRevenue CostOfGoodsAndServicesSold", "USD", False,
            r"cost of (?:revenues?|sales|goods(?: and services)? sold)|\bcogs\b"),
    _metric("operating_income", "operating income", "operating_income",
            "OperatingIncomeLoss", "USD", False,
            r"\bop(?:erating|\.)? (?:income|profit|loss)|\bop inc\b|income from operations"),
    _metric("opex", "operating expenses", "OperatingExpenses", "OperatingExpenses", "USD", False,
            r"\bopex\b|operating expenses?|operating costs?|total (?:operating )?expenses"),
    _metric("sga", "SG&A expense", "SellingGeneralAndAdministrativeExpense",
            "SellingGeneralAndAdministrativeExpense", "USD", False,
            r"\bsg ?& ?a\b|\bsga\b|selling,? general and admin\w*"),
    _metric("gross_profit", "gross profit", "gross_profit",
            "GrossProfit", "USD", False, r"gross profit"),
    _metric("net_income", "net income", "net_income", "NetIncomeLoss", "USD", False,
            r"net (?:income|profit|loss|earnings)|\bni\b|\bprofit(?:s|able|ability)?\b|"
            r"\bearnings\b|"
            r"bottom line|\b(?:make|made|making|lose|lost|losing) (?:any )?money\b|"
            r"in the (?:black|red)"),
    _metric("revenue", "revenue", "revenue",
            "Revenues RevenueFromContractWithCustomerExcludingAssessedTax", "USD", False,
            r"\brevenues?\b|\brevs?\b|\bsales\b|top[- ]line|turnover"),
    _metric("rnd", "R&D expense", "research_and_development",
            "ResearchAndDevelopmentExpense", "USD", False,
            r"r ?& ?d\b|research and development|\brnd\b"),
    _metric("liabilities", "total liabilities", "total_liabilities",
            "Liabilities", "USD", True, r"liabilit"),
    _metric("equity", "stockholders' equity", "stockholders_equity",
            "StockholdersEquity", "USD", True,
            r"(?:stock|share)holders['’]? equity|\bequity\b|book value"),
    _metric("assets", "total assets", "total_assets", "Assets", "USD", True,
            r"\b(?:total )?assets\b"),
    _metric("cash", "cash and cash equivalents", "cash_and_equivalents",
            "CashAndCashEquivalentsAtCarryingValue", "USD", True,
            r"\bcash\b(?! flow)|cash (?:and|&) (?:cash )?equivalents|cash pile"),
    _metric("debt", "long-term debt", "long_term_debt",
            "LongTermDebtNoncurrent", "USD", True, r"\bdebt\b|borrowings"),
)  # fmt: skip
METRIC_BY_KEY = {m.key: m for m in METRICS}

SHARE_OF_REVENUE = re.compile(
    r"(?:share|percent(?:age)?|%|proportion|fraction|ratio) (?:of|to) "
    r"(?:total )?(?:revenues?|sales)\b|\bto[- ](?:revenue|sales) ratio\b|/ ?(?:revenue|sales)\b|"
    r"\brelative to (?:revenues?|sales)\b|\bintensity\b|\bof (?:revenues?|sales) (?:spent|went)",
    re.I,
)


def share_of_revenue(metrics: tuple[Metric, ...], text: str) -> tuple[Metric, ...]:
    """ "R&D as a share of revenue": one figure over revenue, as a percentage."""
    costs = [m for m in metrics if m.key != "revenue" and not m.ratio and m.unit == "USD"]
    if not costs or costs[0].instant or not SHARE_OF_REVENUE.search(text):
        return metrics
    cost = costs[0]
    label = f"{cost.label} as a share of revenue"
    share = Metric(f"{cost.key}_share", label, f"{cost.key}_share", (), "%", False,
                   cost.pattern, (cost.key, "revenue"))  # fmt: skip
    return (share,)


@dataclass(frozen=True)
class Topic:
    """A part of a filing a question can be about."""

    key: str
    label: str
    form: str
    section: str
    pattern: re.Pattern[str]


def _item(number: str) -> re.Pattern[str]:
    return re.compile(rf"\bitem\s*{number}(?![0-9a-z])", re.I)


# 10-K items by number come first: "item 7a" is market risk, not the MD&A of "item 7".
TOPICS: tuple[Topic, ...] = (
    Topic("market_risk", "market risk disclosures", "10-K", "Item 7A", re.compile(
        r"\bitem\s*7a\b|market risk|quantitative and qualitative disclosures?", re.I)),
    Topic("risk_item", "risk factors", "10-K", "Item 1A", _item("1a")),
    Topic("cyber_item", "cybersecurity", "10-K", "Item 1C", _item("1c")),
    Topic("legal_item", "legal proceedings", "10-K", "Item 3", _item("3")),
    Topic("mdna_item", "MD&A (management's discussion and analysis)", "10-K", "Item 7",
          _item("7")),
    Topic("statements", "financial statements", "10-K", "Item 8", re.compile(
        r"\bitem\s*8(?![0-9a-z.])|financial statements and supplementary", re.I)),
    Topic("business_item", "business overview", "10-K", "Item 1", _item("1")),
    Topic("exec", "executive and director changes", "8-K", "Item 5.02", re.compile(
        r"\bexecutives?\b|\bceo\b|\bcfo\b|\bofficers?\b|\bdirectors?\b|\bboard\b|"
        r"\bresign|\bappoint|departure|leadership|management changes?|5\.02", re.I)),
    Topic("risk", "risk factors", "10-K", "Item 1A", re.compile(r"\brisks?\b", re.I)),
    Topic("mdna", "MD&A (management's discussion and analysis)", "10-K", "Item 7",
          re.compile(r"md&a|management['’]?s? discussion|discussion and analysis|"
                     r"results of operations", re.I)),
    Topic("legal", "legal proceedings", "10-K", "Item 3",
          re.compile(r"legal proceedings|lawsuits?|litigation", re.I)),
    Topic("cyber", "cybersecurity", "10-K", "Item 1C", re.compile(r"cyber", re.I)),
    Topic("business", "business overview", "10-K", "Item 1", re.compile(
        r"what does \S+(?: \S+)? do\b|\bbusiness (?:overview|description|model)|"
        r"describe (?:the|its) business|line of business|(?:['’]s|\bits) business\b", re.I)),
)  # fmt: skip

# Form types by how people name them; the first match wins.
FORMS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("10-K", re.compile(r"\b10[- ]?Ks?\b|annual reports?", re.I)),
    ("10-Q", re.compile(r"\b10[- ]?Qs?\b|quarterly reports?", re.I)),
    ("8-K", re.compile(r"\b8[- ]?Ks?\b|current reports?", re.I)),
    ("DEF 14A", re.compile(r"\bdef ?14a\b|\bproxy\b", re.I)),
    ("S-1", re.compile(r"\bS-1\b|registration statements?", re.I)),
    ("20-F", re.compile(r"\b20-?F\b", re.I)),
    ("6-K", re.compile(r"\b6-K\b", re.I)),
    ("4", re.compile(r"\bform 4s?\b|insider (?:trades|trading|transactions)", re.I)),
    ("SC 13G", re.compile(r"\b13G\b", re.I)),
    ("13F-HR", re.compile(r"\b13F\b", re.I)),
)

ALIASES: dict[str, str] = {
    "google": "alphabet", "facebook": "meta platforms", "meta": "meta platforms",
    "jp morgan": "jpmorgan chase", "jpmorgan": "jpmorgan chase", "chase": "jpmorgan chase",
    "marvell": "marvell technology", "amazon": "amazon com", "berkshire": "berkshire hathaway",
    "disney": "walt disney", "exxon": "exxon mobil", "goldman": "goldman sachs group",
    "goldman sachs": "goldman sachs group", "coca cola": "coca cola", "coke": "coca cola",
    "nvidia": "nvidia", "tesla": "tesla", "apple": "apple", "microsoft": "microsoft",
    "alphabet": "alphabet", "snowflake": "snowflake", "adobe": "adobe",
    "amd": "advanced micro devices", "intel": "intel", "netflix": "netflix",
}  # fmt: skip

# Tickers of well-known companies, as people type them in lowercase ("nvda revenue").
LOWER_TICKERS: dict[str, str] = {
    "aapl": "apple", "nvda": "nvidia", "tsla": "tesla", "msft": "microsoft", "googl": "alphabet",
    "goog": "alphabet", "mrvl": "marvell", "amzn": "amazon", "jpm": "jpmorgan", "adbe": "adobe",
}  # fmt: skip

# Companies named by an everyday word: they count only when capitalised mid-sentence.
BRAND_WORDS = frozenset("target block visa snap match booking progressive".split())  # noqa: SIM905

# Upper-case words of research questions that are not tickers.
ACRONYMS = frozenset(
    """CIK SEC EPS CEO CFO COO CTO MD MDA US USA AI GAAP XBRL FY CY IPO ETF EDGAR API TTM YOY
    EBITDA NYSE OTC NASDAQ ESG LLM FAQ ID PDF HTML JSON URL OK Q1 Q2 Q3 Q4 YTD QOQ R&D IT
    HR PR ROE ROI ROA AND OR THE FOR OF IN ON TO DEI ITEM USD FCF NI SG&A SGA OPEX CAPEX EBIT
    LTM H1 H2 YR PE ROIC DPS SBC EV BS IS CF PNL P&L Y/Y ETR COGS EBT LT""".split()  # noqa: SIM905
)

STOPWORDS = frozenset(
    """a an the and or of in on at to for from by with about as is are was were be been be do
 does did has have had what which who whom whose how when where why can could would
 should will shall may might must me my i we our you your it its their they them this
 that these those there here all any each every some most more less least many much few
 top best largest biggest highest lowest smallest first last latest recent recently
 newest current next previous prior past since until between during over under after
 before than then also only just please tell show find give list get fetch look search
 summarize summarise summary describe explain compare comparison versus vs rank ranking
 trend trends growth grow grown grew change changes changed history historical overview
 report reports reported reporting filing filings filed file form forms annual
 quarterly company companies firm firms business businesses corporation stock stocks
 share shares price prices market markets revenue revenues sales income net profit
 profits loss losses earnings margin assets asset liabilities liability equity debt
 cash flow flows operating operations expenses expense dividend dividends risk risks
 factor factors section item items mention mentions mentioned mentioning news article
 articles web internet online press release releases executive executives officer
 officers director directors board management discussion analysis results quarter
 quarters year years fiscal calendar month months week weeks day days today yesterday
 new old big small high low good bad up down ago supply chain climate change ai data
 cloud chip chips energy oil gas health bank banks financial capital global general
 american united national international public digital first news
 air waste realty southern research development legal
 proceedings lawsuit litigation cybersecurity sheet balance number numbers figure
 figures value values total overall key main other same different per basic diluted q1
 q2 q3 q4 fy cy info information details detail anything something hello hi hey thanks
 thank weather joke recipe poem sec edgar ticker symbol cik lookup name names called
 paid pay spend spending spent""".split()  # noqa: SIM905
)
