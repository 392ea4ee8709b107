"""The offline demo model: a built-in upstream that speaks the Anthropic Messages API, so
the gateway's normal upstream path runs unchanged with no API key.

It is deterministic and rule-based, not a language model. It reads the conversation it is
sent (the question, and the tool results so far), plans tool calls across turns, and
writes its answer only from what the tools returned.

    server       HTTP: POST /v1/messages, streaming (real SSE sequence) or not;
                 GET /v1/models/demo
    batches      the Message Batches API over HTTP: create, list, retrieve, results,
                 cancel, delete (each request answered as /v1/messages would)
    batch_store  batches in memory, each processed by a background task
    card         the demo's Models API record (ModelInfo)
    wire         a reply as Messages API events, or as one Message
    conversation the request as the model sees it: question, tool steps, allowed tools
    companies    company names, tickers and CIKs from the tools' ticker map
    vocab        metrics, filing sections, form types, everyday words
    phrasing     typos in finance words, greetings and thanks, what it cannot answer
    spans        the period a question is about, and how many items it wants
    understand   question -> intent, companies, forms, dates, metrics, topic;
                 follow-ups that change only the year or the company
    planner      the next move: tool calls (with a line of reasoning) or the answer
    common       what every plan shares: the Next move, the company lookup step
    shapes_*     one plan per question shape (filings, documents, facts, search, and
                 chat: greetings, thanks, a plain "I can't answer that")
    reading      which filing document to read next, and falling back when unreadable
    facts_answers, compare_answers, margins   answers written from XBRL results
    results, digest, fmt   reading tool results, quoting filings, formatting figures
"""

from demo_model.card import DEMO_MODEL
from demo_model.server import create_demo_app

__all__ = ["DEMO_MODEL", "create_demo_app"]
