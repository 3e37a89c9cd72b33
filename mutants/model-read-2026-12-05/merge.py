#!/usr/bin/env python3
"""The read model's mutants, each at its last outcome, on the tree of the last run (aba2a9f).

Reads the runs in the order they ran: the three of `../model-read-2026-12-04-partial/` (3659b7a)
and the four here (1: bbe038c, 2-4: 666fecb and aba2a9f). Between bbe038c and 666fecb
`model.rs` was rewritten (its old outcomes are dropped: run 2 ran the file whole),
`reference.rs` gained three lines at 679 and `variants.rs` a variant, so the older runs' names
are moved to the new line numbers. Run 3 ran the changed lines of those two files.

    cd mutants/model-read-2026-12-05 && python3 merge.py [LISTING]

LISTING, if given, is the output of `cargo mutants --list --package parkline-model --file
'model/src/read/*.rs' --file model/src/search.rs` on that tree: the script then checks that
every listed mutant has an outcome and no outcome is of a mutant the tree does not have.
Prints caught / missed / unviable / timeout per file and every missed and timed-out mutant.
"""
import collections
import json
import re
import sys

PARTIAL = "../model-read-2026-12-04-partial/"
RUNS = [
    ("old", PARTIAL + "outcomes-first.json"),
    ("old", PARTIAL + "outcomes-iterate.json"),
    ("old", PARTIAL + "outcomes-iterate-2.json"),
    ("old", "1-rest-of-reference-and-variants/outcomes.json"),
    ("new", "2-model-rs-whole/outcomes.json"),
    ("new", "3-lines-changed-in-reference-and-variants/outcomes.json"),
    ("new", "4-missed-again/outcomes.json"),
]
NAME = re.compile(r"(model/src/read/(?:reference|variants)\.rs):(\d+):(\d+): (.*)")


def renumbered(name):
    m = NAME.match(name)
    if not m:
        return name
    path, line, col, rest = m.group(1), int(m.group(2)), m.group(3), m.group(4)
    if path.endswith("reference.rs") and line >= 679:
        line += 3
    elif path.endswith("variants.rs"):
        line += 6 if line >= 62 else 5
    return f"{path}:{line}:{col}: {rest}"


final = {}
for kind, path in RUNS:
    for outcome in json.load(open(path))["outcomes"]:
        scenario = outcome["scenario"]
        if not isinstance(scenario, dict):
            continue  # the unmutated baseline
        name = scenario["Mutant"]["name"]
        if kind == "old":
            if name.startswith("model/src/read/model.rs"):
                continue
            name = renumbered(name)
        final[name] = outcome["summary"]

if len(sys.argv) > 1:
    listed = [line for line in open(sys.argv[1]).read().split("\n") if line]
    missing = [n for n in listed if n not in final]
    extra = [n for n in final if n not in set(listed)]
    print(f"listed {len(listed)}, without an outcome {len(missing)}, outcomes of no listed mutant {len(extra)}")
    for n in missing + extra:
        print("  ", n)

per_file = collections.defaultdict(collections.Counter)
for name, summary in final.items():
    per_file[name.split(":")[0]][summary] += 1
total = collections.Counter()
print("| file | caught | missed | unviable | timeout |")
print("| --- | ---: | ---: | ---: | ---: |")
for path in sorted(per_file):
    c = per_file[path]
    total += c
    print(f"| `{path}` | {c['CaughtMutant']} | {c['MissedMutant']} | {c['Unviable']} | {c['Timeout']} |")
print(f"| **{sum(total.values())}** | **{total['CaughtMutant']}** | **{total['MissedMutant']}** "
      f"| **{total['Unviable']}** | **{total['Timeout']}** |")
for name in sorted(final):
    if final[name] in ("MissedMutant", "Timeout"):
        print(final[name], name)
