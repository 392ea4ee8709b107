"""The journals kept in this process (`batches.journal`): `MemoryJournal` keeps nothing,
`KeptJournal` keeps what a shared store would, and stops writing when its process "dies"."""

from __future__ import annotations

import dataclasses

from gateway import events, sse
from gateway.batches.calls import RoundRecord
from gateway.batches.journal import Journal, KeptJournal, MemoryJournal, Record
from gateway.runs import durable
from tests.test_batch_record import a_batch, a_round


async def test_a_memory_journal_keeps_nothing_but_hears_of_rounds() -> None:
    journal = MemoryJournal()
    batch = a_batch(1)
    heard: list[RoundRecord] = []
    assert not journal.durable and Journal is MemoryJournal
    await journal.begin(Record.new(batch, []))
    await journal.round_writer(batch.id, heard.append)(a_round(1))
    assert heard == [a_round(1)]
    journal.checkpoint(batch.id, batch.questions[0])
    await journal.question_done(batch.id, batch.questions[0])
    await journal.end(batch)
    await journal.release(batch.id)


async def test_a_kept_journal_keeps_the_first_record_of_a_batch() -> None:
    journal = KeptJournal()
    batch = a_batch(2)
    record = Record.new(batch, [])
    assert journal.durable and journal.records == {} and journal.ended == set()
    await journal.begin(record)
    await journal.begin(dataclasses.replace(record, owner="bob"))  # taken over: kept already
    assert journal.records == {"batch_1": record} and journal.records["batch_1"] is record


async def test_a_kept_round_is_a_copy_in_order_each_number_once() -> None:
    journal = KeptJournal()
    batch = a_batch(2)
    await journal.begin(Record.new(batch, []))
    heard: list[RoundRecord] = []
    write = journal.round_writer(batch.id, heard.append)
    second, first = a_round(2, "submitting"), a_round(1, "submitted")
    await write(second)
    await write(first)
    second.state, second.results = "ended", {"succeeded": 2}
    assert [r.number for r in journal.records[batch.id].rounds()] == [1, 2]
    assert journal.records[batch.id].rounds()[1] == a_round(2, "submitting")  # as written
    await write(second)  # the same round again: it replaces the first entry
    assert journal.records[batch.id].rounds() == [a_round(1, "submitted"), second]
    assert journal.records[batch.id].rounds()[1] is not second
    assert heard == [second, first, second]


async def test_a_kept_journal_writes_nothing_for_a_batch_it_does_not_have() -> None:
    journal = KeptJournal()
    batch = a_batch(1)
    heard: list[RoundRecord] = []
    await journal.round_writer(batch.id, heard.append)(a_round(1))
    journal.checkpoint(batch.id, batch.questions[0])
    await journal.question_done(batch.id, batch.questions[0])
    assert heard == [a_round(1)] and journal.records == {}


async def test_a_kept_checkpoint_holds_the_state_and_events_so_far() -> None:
    journal = KeptJournal()
    batch = a_batch(2)
    await journal.begin(Record.new(batch, []))
    question = batch.questions[1]
    question.state.turns, question.state.tool_calls = 1, 3
    question.run.log.append(events.warning("w", "first", 1))
    question.run.log.append(events.warning("w", "second", 1))
    journal.checkpoint(batch.id, question)
    kept = journal.records[batch.id]
    checkpoint = durable.decode(kept.checkpoints[1])
    assert checkpoint.request == question.request and checkpoint.endpoint == "batch"
    assert checkpoint.seq == 2 and checkpoint.state.tool_calls == 3
    assert kept.kept_events(1) == sse.parse_frames(question.run.log.read(0))
    assert [e["message"] for e in kept.kept_events(1)] == ["first", "second"]
    assert list(kept.checkpoints) == [1] and kept.done == {}


async def test_a_kept_question_done_holds_all_its_events_and_its_outcome() -> None:
    journal = KeptJournal()
    batch = a_batch(2)
    await journal.begin(Record.new(batch, []))
    first, second = batch.questions
    first.run.log.append(events.warning("w", "only", 1))
    second.outcome = "max_turns"
    await journal.question_done(batch.id, first)
    await journal.question_done(batch.id, second)
    kept = journal.records[batch.id]
    assert kept.done == {0: "completed", 1: "max_turns"}
    assert [e["message"] for e in kept.kept_events(0)] == ["only"]
    assert kept.kept_events(1) == [] and 1 in kept.events and kept.checkpoints == {}


async def test_a_stopped_kept_journal_writes_nothing_more() -> None:
    journal = KeptJournal()
    batch, other = a_batch(1), a_batch(1, "batch_2")
    await journal.begin(Record.new(batch, []))
    journal.stop()
    assert journal.stopped
    heard: list[RoundRecord] = []
    await journal.begin(Record.new(other, []))
    await journal.round_writer(batch.id, heard.append)(a_round(1))
    journal.checkpoint(batch.id, batch.questions[0])
    await journal.question_done(batch.id, batch.questions[0])
    await journal.end(batch)
    kept = journal.records[batch.id]
    assert heard == [a_round(1)]  # the rounds still hear of it
    assert list(journal.records) == ["batch_1"] and journal.ended == set()
    assert kept.rounds() == [] and kept.checkpoints == {} and kept.done == {}
    assert kept.events == {}


async def test_a_kept_journal_notes_a_batchs_end() -> None:
    journal = KeptJournal()
    batch = a_batch(1)
    await journal.begin(Record.new(batch, []))
    await journal.end(batch)
    assert journal.ended == {"batch_1"}
