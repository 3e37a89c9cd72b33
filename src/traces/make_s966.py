#!/usr/bin/env python3
"""Writes s966.jsonl: planner session s966 reconstructed from the figures published in the
analysis of session s966 in the defect report parkline was built from, NOT recorded. Deterministic; run from this directory:

    python3 make_s966.py > s966.jsonl

What the figures fix, and how this reconstruction meets them:
- one parent turn sj-18d3164fbb9ba765-7, 16:20 -> 03:59 (11.6 h), with 13 completion lines
  parked behind it;
- 19 children; 61 agent_read calls of children, 35 of them answered partial (the child had an
  in-flight turn), all with n:1 (today's default);
- named repeats: s980-1 collected 6 times at 2-3 k chars, s978-5 twice, s972-1 five times; more
  repeats of the same kind (s975-2, s983-1 three times; s986-1, s970-1, s976-3 twice) bring the
  repeated turn text to about 40 % of about 111 k chars of agent_read results.
Everything else (turn sizes other than the named ones, the in-flight sizes, the order of events
between the published timestamps, the text of the completion lines) is invented to fit.

Format parkline-workload/2 adds the figures the cost report needs, reconstructed as follows
(the header's `reconstructed` says the same):
- context_tokens: the analysis gives 9.9 M cache-read tokens over the 13 replays, so one replay
  wake-up read 9,900,000 / 13 = 761,538 tokens (one call per wake-up turn, see wake_up_calls);
  that is the parent's context at the long turn's end. It gives 35.8 k tokens of context per
  hire, and 19 children were hired by then: 19 x 35,800 = 680,200, so the context before the
  first hire was 761,538 - 680,200 = 81,338. Each turn ends at 81,338 + 35,800 x (children
  hired so far); the first turn starts at 81,338.
- wake_up_calls 1: with 2 calls per wake-up the context at the long turn's end would be
  9,900,000 / 26 = 380,769 tokens, less than the 680,200 the hires alone add.
- calls: the analysis gives 59 calls per hour; each turn_end's calls are 59 x the turn's minutes
  / 60, rounded half up (the 699-minute long turn: 687).
- card: one card per child (each of the 19 was hired for one task), named card-<child>.
"""
import json
from datetime import datetime, timedelta

PARENT = "sj-18d3164fbb9ba765"
out = []


def ev(**fields):
    out.append(fields)


# Per child: the sizes of its completed turns, and its reads as (after turn k, partial?).
# A read "after turn k" happens once turn k has completed; partial means turn k+1 is in flight.
CHILDREN = {
    # the named repeats
    "s980": ([2600, 1500], [(1, True)] * 6 + [(2, False)]),
    "s972": ([2900, 1800], [(1, True)] * 5 + [(2, False)]),
    "s978": ([900, 1100, 1300, 1000, 2400], [(1, True), (2, True), (3, True), (4, True), (5, True), (5, False)]),
    # repeats of the same kind
    "s975": ([1200, 2800], [(1, True), (2, True), (2, True), (2, False)]),
    "s983": ([2500], [(1, True), (1, True), (1, False)]),
    "s986": ([2200], [(1, True), (1, False)]),
    "s970": ([2100], [(1, True), (1, False)]),
    "s976": ([1000, 1100, 2000], [(1, True), (2, True), (3, True), (3, False)]),
    # read once per turn
    "s971": ([650, 800, 710], [(1, True), (2, False), (3, False)]),
    "s973": ([750, 610, 840], [(1, True), (2, False), (3, False)]),
    "s974": ([710, 750, 560], [(1, True), (2, False), (3, False)]),
    "s977": ([610, 880, 650], [(1, True), (2, False), (3, False)]),
    "s979": ([800, 560, 750], [(1, True), (2, False), (3, False)]),
    "s981": ([510, 710, 880], [(1, True), (2, False), (3, False)]),
    "s982": ([840, 650, 610], [(1, True), (2, False), (3, False)]),
    "s984": ([710, 800], [(1, True), (2, False)]),
    "s985": ([750, 650], [(1, True), (2, False)]),
    "s987": ([880], [(1, False)]),
    "s988": ([800], [(1, False)]),
}
# Children whose request completed before the long turn (their lines were delivered one by one
# at the short turns' ends, where one line is parked per boundary under both policies).
EARLY = ["s987", "s988", "s986", "s970", "s984", "s985"]
LATE = [c for c in CHILDREN if c not in EARLY]
assert len(CHILDREN) == 19 and len(LATE) == 13

reads = sum(len(r) for _, r in CHILDREN.values())
partial = sum(p for _, r in CHILDREN.values() for _, p in r)
assert (reads, partial) == (61, 35), (reads, partial)

request_of = {child: 2051 + i for i, child in enumerate(CHILDREN)}

CACHE_READ_13_REPLAYS = 9_900_000
REPLAYS = 13
CONTEXT_PER_HIRE = 35_800
CALLS_PER_HOUR = 59
CONTEXT_AT_LONG_END = (CACHE_READ_13_REPLAYS + REPLAYS // 2) // REPLAYS  # 761,538
CONTEXT_BEFORE_HIRES = CONTEXT_AT_LONG_END - len(CHILDREN) * CONTEXT_PER_HIRE  # 81,338
assert (CONTEXT_AT_LONG_END, CONTEXT_BEFORE_HIRES) == (761_538, 81_338)
hired = 0
turn_started = {}


def context():
    return CONTEXT_BEFORE_HIRES + CONTEXT_PER_HIRE * hired


def minutes(start, end):
    parse = lambda at: datetime.strptime(at, "%Y-%m-%dT%H:%M:%SZ")
    return (parse(end) - parse(start)).total_seconds() / 60


def turn_start(turn, at, **extra):
    turn_started[turn] = at
    ev(ev="turn_start", turn=turn, at=at, **extra)


def turn_end(turn, at):
    # Rounded half up in integers, so the figure does not depend on float rounding.
    calls = (2 * CALLS_PER_HOUR * int(minutes(turn_started[turn], at)) + 60) // 120
    ev(ev="turn_end", turn=turn, at=at, context_tokens=context(), calls=calls)


def progress_chars(child, k):
    # A deterministic, modest in-flight size (the published figures give none).
    return 100 + (sum(map(ord, child)) * 37 + k * 101) % 200


def run_child(child):
    """Events of one child's whole life: its turns, the reads of it, its completion line."""
    global hired
    hired += 1
    sizes, plan = CHILDREN[child]
    in_flight = 0
    for k, size in enumerate(sizes, start=1):
        ev(ev="child_turn", child=child, turn=f"{child}-{k}", chars=size)
        in_flight = 0
        for after, partial in plan:
            if after != k:
                continue
            want = progress_chars(child, k) if partial else 0
            if want != in_flight:
                ev(ev="child_progress", child=child, chars=want)
                in_flight = want
            ev(ev="read", child=child, n=1)
    if in_flight:
        ev(ev="child_progress", child=child, chars=0)
    last = f"{child}-{len(sizes)}"
    line = (
        f"[delegation {child} request r{request_of[child]} answered by turn {last}: outcome=completed] "
        f"card done, result in the task file; read it with agent_read{{sid:\"{child}\", turn:\"{last}\"}}"
    )
    ev(ev="completion", request=request_of[child], child=child, line=line, card=f"card-{child}")


turn_start(f"{PARENT}-1", "2026-09-07T15:26:00Z", context_tokens=context())
turn_end(f"{PARENT}-1", "2026-09-07T15:41:00Z")
# Short turns 2..6 before the long one: each sees one child finish and its line parked (turn 6
# sees two).
# Times by datetime arithmetic, so every `at` is a real time (15:45 + 6 i minutes, 4 minutes each).
for i in range(5):
    start = datetime(2026, 9, 7, 15, 45) + timedelta(minutes=6 * i)
    turn_start(f"{PARENT}-{2 + i}", f"{start:%Y-%m-%dT%H:%M:%SZ}")
    run_child(EARLY[i])
    if i == 4:
        run_child(EARLY[5])
    turn_end(f"{PARENT}-{2 + i}", f"{start + timedelta(minutes=4):%Y-%m-%dT%H:%M:%SZ}")
turn_start(f"{PARENT}-7", "2026-09-07T16:20:00Z")
for child in LATE:
    run_child(child)
assert context() == CONTEXT_AT_LONG_END
turn_end(f"{PARENT}-7", "2026-09-08T03:59:00Z")
turn_start(f"{PARENT}-8", "2026-09-08T04:10:00Z")
turn_end(f"{PARENT}-8", "2026-09-08T04:23:00Z")

header = {
    "trace": "parkline-workload/2",
    "session": "s966",
    "recorded": False,
    "source": "reconstructed from the published figures of the s966 analysis (the defect report on session s966: 13 lines "
    "parked behind one 11.6 h turn; 61 reads of children, 35 partial; s980-1 collected 6 times, "
    "s978-5 twice, s972-1 five times; about 111 k chars of agent_read results, about 40 % repeats; "
    "13 replays / 9.9 M cache-read tokens; context per hire 35.8 k; 59 calls per hour), "
    "not recorded; generated by src/traces/make_s966.py",
    "reconstructed": {
        "context_tokens": "from 9.9 M cache-read tokens over 13 replays and 35.8 k tokens of context per hire: "
        "9,900,000 / 13 = 761,538 tokens read by each replay wake-up, the context at the long turn's end; "
        "less 19 hires x 35,800 = 680,200 gives 81,338 before the first hire; each turn ends at "
        "81,338 + 35,800 x (children hired so far)",
        "wake_up_calls": "1, from the same figures: with 2 calls per wake-up the context at the long turn's end "
        "would be 9,900,000 / 26 = 380,769 tokens, less than the 680,200 the 19 hires alone add",
        "calls": "from 59 calls per hour: each turn's calls are 59 x its minutes / 60, rounded half up "
        "(the 699-minute long turn: 687)",
        "cards": "one card per child (19 children, each hired for one task), named card-<child>",
        "events": "the order of events between the published timestamps, the sizes other than the named "
        "ones, the in-flight sizes and the completion lines' text: invented to fit the figures above",
    },
    "budget": 16000,
    "max_chars": 24000,
    "chars_per_token": 4,
    "wake_up_calls": 1,
}
print(json.dumps(header, separators=(",", ":")))
for e in out:
    print(json.dumps(e, separators=(",", ":")))
