"""Memory poisoning in text: instructions planted in memory to be obeyed later (issue 37).

Pure: text in, findings out, no Django models, no I/O. A finding carries its family, where it
is, the rule that fired, the signals that made it fire, and a masked excerpt; never the raw
text it matched (an e-mail, a token or a hidden payload stays out of the database).

Precision first, as in scanning.py. Procedural memory is full of imperatives ("Always run the
tests before you commit", "Never reveal the API key", a runbook quoting `curl ... | sh`), so
mood proves nothing. A line is judged by
- what it asks for: to drop earlier instructions, to send data out, to call a tool on a
  trigger, to copy itself into other files, to drop the agent's policy, to hide itself or lie;
- where it points: an address outside (an e-mail, a URL, an IBAN, a wallet), a URL that
  carries data, a shell piped from the network;
- whom it addresses: the AI ("note to the assistant") rather than people;
- its shape: a standing trigger ("when anyone asks ..., first ...", "from now on").
Each rule has a weight: 2 decides alone ("ignore all previous instructions"), 1 is a signal
that needs another one in the same line (a send verb with an outside address needs bulk data,
a trigger, secrecy or a free-mail address beside it). A family's signals in a line add up,
and a line whose family reaches 2 is a finding; its reason names the strongest rule and its
signals name all the others.

Text is matched as it reads, not as it is spelled: English rules run on the look-alike fold of
lookalikes.py (zero-width characters gone, Cyrillic `о` read as Latin `o`), Russian rules on a
view where Latin look-alikes inside Cyrillic words read as Cyrillic. A match whose original
spelling needed that folding is a hidden carrier. So are Unicode tag characters, bidi
controls, runs of zero-width characters, HTML comments, link titles, code fences and long
padding that carry an instruction, and encoded blobs (base64, hex, URL encoding, rot13):
they are decoded and the decoded text is scanned like any other.

Use: scan(text, kind=KIND_WORKSPACE | KIND_PROFILE | KIND_AGENT, trusted_domains=(...)) ->
[PoisonFinding], each with as_dict() for storage; families(findings) lists the families once,
for a hook's answer; LABELS and CARRIERS give their names in the reader's language. A second
opinion from a guard model and who decided: classifier.check(), same arguments.

Every regular expression is linear: bounded windows within one line, no nested quantifiers,
and each rule runs only when one of its anchor words occurs in the text (bench/poison.py
measures a 64 KB scan).
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
import unicodedata
from bisect import bisect_right
from dataclasses import asdict, dataclass, field
from urllib.parse import unquote

from django.utils.translation import gettext_lazy as _

from projects.memory import lookalikes
from projects.memory.poisoning_rules import (
    ADDRESS_AI_RE,
    CLASSIFIER,
    CONCEALMENT,
    DESTRUCTIVE_RE,
    DISCUSSION_RE,
    EXFILTRATION,
    HIDDEN,
    IBAN,
    LEAD_IN_RE,
    LOCAL_HOST_RE,
    NEGATION_EN,
    NEGATION_RU,
    OUTSIDE_RE,
    OVERRIDE,
    PERSISTENCE,
    PERSONA,
    QUOTES,
    REPORTED_RE,
    RULES,
    SECRECY_RE,
    SENSITIVE_RE,
    SUSPICIOUS_RE,
    TOOL_HIJACK,
    TRIGGER_RE,
    Rule,
)

FAMILIES = (OVERRIDE, EXFILTRATION, TOOL_HIJACK, PERSISTENCE, PERSONA, CONCEALMENT, HIDDEN)
LABELS = {
    OVERRIDE: _("instruction override"),
    EXFILTRATION: _("exfiltration"),
    TOOL_HIJACK: _("tool hijack"),
    PERSISTENCE: _("persistence and self-replication"),
    PERSONA: _("persona or policy hijack"),
    CONCEALMENT: _("concealment or deception of people"),
    HIDDEN: _("hidden carrier"),
    CLASSIFIER: _("flagged by the guard model"),
}

# What the memory is, for the weights: an agent's own rules (written by its operator, full of
# "you must ..."), a person's profile, or workspace notes the agents write themselves.
KIND_AGENT = "agent"
KIND_PROFILE = "profile"
KIND_WORKSPACE = "workspace"
KINDS = (KIND_AGENT, KIND_PROFILE, KIND_WORKSPACE)

# Carriers: where an instruction hides. A finding inside one is a hidden carrier.
CARRIERS = {
    "html_comment": _("in an HTML comment"),
    "link_title": _("in a link title or image text"),
    "code_fence": _("in a code block"),
    "padding": _("after long padding"),
    "lookalikes": _("spelled with look-alike characters"),
    "invisible": _("with invisible characters inside"),
    "tag_characters": _("in Unicode tag characters"),
    "bidi": _("behind bidirectional controls"),
    "zero_width": _("in a run of zero-width characters"),
    "base64": _("encoded in base64"),
    "hex": _("encoded in hex"),
    "url_encoding": _("URL-encoded"),
    "rot13": _("encoded in rot13"),
    "morse": _("in Morse code"),
}

MAX_DEPTH = 2  # decoded text is scanned again, but a blob inside a blob inside a blob is not


@dataclass(frozen=True)
class PoisonFinding:
    family: str
    reason: str  # the rule that decided, "<family>.<rule>"; see REASONS
    start: int  # offsets in the scanned text (a decoded blob's finding points at the blob)
    end: int
    line: int
    column: int
    excerpt: str  # masked: no address, token or payload is stored as written
    signals: tuple[str, ...] = field(default=())  # every rule and booster that counted
    carrier: str = ""  # CARRIERS key when the instruction was hidden

    @property
    def label(self) -> str:
        return str(LABELS.get(self.family, self.family))

    def as_dict(self) -> dict:
        data = asdict(self)
        data["signals"] = list(self.signals)
        return data


# ---------------------------------------------------------------------------------------------
# Views: the text as it reads.


class _View:
    """A normalised copy of the text, in its case and in lower case (what rules match), and the
    way back to the original's offsets: the places where a character became more or fewer
    than one (kept only where that happened)."""

    __slots__ = ("text", "low", "_view_marks", "_original_marks")

    def __init__(self, text: str, marks: tuple[list[int], list[int]] | None = None):
        self.text = text
        self.low = _lower(text)
        self._view_marks, self._original_marks = marks or ([], [])

    def _back(self, position: int) -> int:
        index = bisect_right(self._view_marks, position) - 1
        if index < 0:
            return position
        return self._original_marks[index] + (position - self._view_marks[index])

    def original(self, start: int, end: int) -> tuple[int, int]:
        if not self._view_marks:
            return start, end
        return self._back(start), self._back(max(end - 1, start)) + 1


def _lower(text: str) -> str:
    """Lower case, one character for one (the few that lower to two, like "İ", stay)."""
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in text)


def _english_view(text: str) -> _View:
    if text.isascii():
        return _View(text)
    return _mapped(text, {c: lookalikes.fold_char(c) for c in set(text) if not c.isascii()})


def _mapped(text: str, table: dict[str, str]) -> _View:
    """`text` with each character replaced by its piece in `table` (others kept), in one
    str.translate; the way back is recorded only after pieces that are not one character."""
    view = text.translate({ord(c): piece for c, piece in table.items()})
    odd = "".join(c for c, piece in table.items() if len(piece) != 1)
    if not odd:
        return _View(view)
    view_marks, original_marks, shift = [], [], 0
    for match in re.finditer("[" + re.escape(odd) + "]", text):
        shift += len(table[match.group()]) - 1
        view_marks.append(match.end() + shift)
        original_marks.append(match.end())
    return _View(view, (view_marks, original_marks))


_LATIN_TO_CYRILLIC = str.maketrans(
    {
        "a": "а", "e": "е", "o": "о", "p": "р", "c": "с", "x": "х", "y": "у", "k": "к", "m": "м", "t": "т",
        "h": "н", "b": "в", "u": "и", "n": "п", "r": "г",
    }
)  # fmt: skip
# Where a Latin and a Cyrillic letter touch: the only places a mixed-script word can be.
_SCRIPT_SEAM_RE = re.compile(r"[a-z][а-я]|[а-я][a-z]")
_HAS_CYRILLIC_RE = re.compile(r"[а-яёА-ЯЁ]")
# A short word of Latin look-alike letters between Russian words ("He" for "Не"): read it as
# Russian. Only between two Cyrillic words, so an English term in a Russian line stays itself.
_LATIN_WORD_IN_RUSSIAN_RE = re.compile(
    r"(?<=[а-я] )[aeopcxykmthbunr]{1,6}(?= [а-я])|^[aeopcxykmthbunr]{1,6}(?= [а-я]{2})", re.MULTILINE
)


def _russian_view(text: str) -> _View:
    """Lower case, ё read as е, invisible characters gone, Latin look-alikes inside Cyrillic
    words read as Cyrillic ("игнорируй" spelled with a Latin "o" reads as written)."""
    if not _SUSPECT_RE.search(text) and len(text.casefold()) == len(text):
        mapped = _View(text.casefold())
    else:
        table = {
            c: "" if lookalikes.is_ignorable(c) else unicodedata.normalize("NFKC", c).casefold()
            for c in set(text)
        }
        mapped = _mapped(text, table)
    view = mapped.text.replace("ё", "е")
    if _SCRIPT_SEAM_RE.search(view):
        chars = list(view)
        for seam in _SCRIPT_SEAM_RE.finditer(view):
            left = seam.start()
            while left > 0 and chars[left - 1].isalpha():
                left -= 1
            right = seam.end()
            while right < len(chars) and chars[right].isalpha():
                right += 1
            chars[left:right] = "".join(chars[left:right]).translate(_LATIN_TO_CYRILLIC)
        view = "".join(chars)
    if _LATIN_WORD_IN_RUSSIAN_RE.search(view):
        view = _LATIN_WORD_IN_RUSSIAN_RE.sub(lambda m: m.group().translate(_LATIN_TO_CYRILLIC), view)
    mapped.text = view  # one character for one: the way back is unchanged
    mapped.low = view  # already lower case
    return mapped


_SUSPECT_RE = re.compile(
    r"[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u316"
    r"4\ufe00-\ufe0f\ufeff\uffa0\U000e0000-\U000e0fff\u0300-\u036f]"
)


def _suspect_chars(text: str) -> list[str]:
    return _SUSPECT_RE.findall(text)


# ---------------------------------------------------------------------------------------------
# Carriers found on the raw text.

_ZERO_WIDTH = "\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u180e"
_ZW_ANY_RE = re.compile("[" + _ZERO_WIDTH + "\u00ad]")
_ZW_RUN_RE = re.compile("[" + _ZERO_WIDTH + "]{3,}")
_ZW_IN_WORD_RE = re.compile(r"(?<=[A-Za-zА-Яа-яЁё0-9])[" + _ZERO_WIDTH + r"\u00ad]+(?=[A-Za-zА-Яа-яЁё0-9])")
_TAGS_RE = re.compile("[\U000e0000-\U000e007f]{2,}")
_BIDI_RE = re.compile("[\u202a-\u202e\u2066-\u2069]")
_RTL_RE = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]")
_FENCE_RE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})[ \t]*([^\n`]*)$", re.MULTILINE)
_PROMPTY_FENCE = re.compile(
    r"^(?:system|prompt|instructions?|assistant|ai|llm|hidden|secret)\b", re.IGNORECASE
)
_LINK_TITLE_RE = re.compile(
    r"!?\[(?P<alt>[^\]\n]{0,500})\]\(\s*<?[^\s)>]{0,2000}>?\s+(?:\"(?P<t1>[^\"\n]{1,1000})\"|"
    r"'(?P<t2>[^'\n]{1,1000})'|\((?P<t3>[^)\n]{1,1000})\))\s*\)|"
    r"^[ \t]{0,3}\[[^\]\n]{1,200}\]:\s*\S{1,2000}\s+(?:\"(?P<t4>[^\"\n]{1,1000})\"|"
    r"'(?P<t5>[^'\n]{1,1000})')",
    re.MULTILINE,
)
_HTML_TITLE_RE = re.compile(
    r"\b(?:title|alt|aria-label|data-[\w-]+)\s*=\s*(?:\"(?P<a>[^\"\n]{1,1000})\"|'(?P<b>[^'\n]{1,1000})')",
    re.IGNORECASE,
)
# Padding: a long run of blank lines or spaces, or of one repeated character. The whitespace
# expression runs only where a cheap look for a long run of blanks finds one.
_BLANK_PADDING_RE = re.compile(r"(?:[ \t\u00a0\u3000]*\n){60,}|[ \t\u00a0\u3000\n]{1000,}")
_BLANK_HINTS = (" " * 100, "\n" * 30, "\t" * 50, "\u00a0" * 50, "\u3000" * 50, "\n \n \n \n \n \n")
_REPEAT_PADDING_RE = re.compile(r"(\S)\1{499,}")
_FILLERS = ".-_=*#~+^xXoO0•·\u2800"  # what a run of padding is made of, found by substring search
_PADDING_ALONE = 5000  # characters of padding that make a finding whatever follows


def _paddings(text: str) -> list[re.Match]:
    found = []
    if len(text) >= 500 and any(char * 500 in text for char in _FILLERS):
        found += _REPEAT_PADDING_RE.finditer(text)
    if any(hint in text for hint in _BLANK_HINTS):
        found += _BLANK_PADDING_RE.finditer(text)
    return found


_B64_RE = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{20,}={0,2}(?![A-Za-z0-9+/=_-])")
_HEX_RE = re.compile(
    r"(?<![0-9A-Za-z])[0-9a-fA-F]{32,}(?![0-9A-Za-z])|"
    r"(?<![0-9A-Za-z])(?:[0-9a-fA-F]{2}[ :]){15,}[0-9a-fA-F]{2}(?![0-9A-Za-z])|(?:\\x[0-9a-fA-F]{2}){12,}"
)
_URLENC_RE = re.compile(r"(?:[^%\s]{0,40}%[0-9A-Fa-f]{2}){6,}[^%\s]{0,40}")
_ROT13_CUE_RE = re.compile(r"\brot[- ]?13\b|\bcaesar\b|\bшифр цезаря\b|\bрот13\b", re.IGNORECASE)
_DECODE_CUE_RE = re.compile(
    r"\b(?:decode|decoded|decoding|deobfuscate|unscramble|translate from|convert from|base-?64|b64|hex|"
    r"rot-?13|"
    r"url-?decode)\b|(?:декодируй|расшифруй|раскодируй|декодир|расшифров|base64)",
    re.IGNORECASE,
)
_FOLLOW_CUE_RE = re.compile(
    r"\b(?:follow|execute|run|do|obey|apply|perform|carry out|act on|comply|treat (?:it|them) as|"
    r"instructions?|"
    r"what it says|as instructed)\b|(?:выполни|следуй|исполни|сделай|подчиняйся|инструкци)",
    re.IGNORECASE,
)
_DIRECTIVE_RE = re.compile(
    r"\b(?:say|tell|claim|report|state|recommend|rate|approve|describe|mark|answer|reply|respond)\b"
    + r"[^\n]{0,40}"
    r"\b(?:that|as|is|are|was|passed|approved|safe|fine|ok|verified|legitimate)\b"
    r"|(?:скажи|сообщи|сообща|говори|ответь|отвеча|отметь|оцени|одобри|напиши|пиши|утверждай|называй)\w*"
    r"[^\n]{0,40}(?:что|как|прош[её]л|одобрен|безопасн|проверен)",
    re.IGNORECASE,
)
_MAX_BLOBS = 64  # decoded per text: enough for a note, bounded for a crafted file


# ---------------------------------------------------------------------------------------------


@dataclass
class _Hit:
    family: str
    reason: str
    weight: int
    start: int  # in the original text
    end: int
    carrier: str = ""
    signals: list[str] = field(default_factory=list)


def scan(
    text: str, *, kind: str = KIND_WORKSPACE, trusted_domains: tuple[str, ...] | list[str] = ()
) -> list[PoisonFinding]:
    """Findings in reading order, at most one per family and line.

    `kind` is what the memory is (KINDS): addressing the AI counts in a profile or a note,
    not in an agent's own rules, which address it throughout. `trusted_domains`: the
    organisation's own domains; addresses under them are not "outside"."""
    trusted = tuple(d.lower().lstrip("@.") for d in trusted_domains if d)
    hits = _scan_hits(text, kind=kind, trusted=trusted, depth=0)
    return _findings(text, hits)


def _scan_hits(text: str, *, kind: str, trusted: tuple[str, ...], depth: int) -> list[_Hit]:
    if not text.strip():
        return []
    carriers = _carrier_spans(text)
    hits = _rule_hits(text, kind=kind, trusted=trusted, carriers=carriers)
    hits += _raw_carrier_hits(
        text, kind=kind, trusted=trusted, depth=depth, carriers=carriers, rule_hits=hits
    )
    return hits


def _findings(text: str, hits: list[_Hit]) -> list[PoisonFinding]:
    findings = []
    seen = set()
    for hit in sorted(hits, key=lambda h: (h.start, h.family)):
        line = text.count("\n", 0, hit.start) + 1
        key = (hit.family, line, hit.carrier)
        if key in seen:
            continue
        seen.add(key)
        column = hit.start - (text.rfind("\n", 0, hit.start) + 1) + 1
        findings.append(
            PoisonFinding(
                family=hit.family,
                reason=hit.reason,
                start=hit.start,
                end=hit.end,
                line=line,
                column=column,
                excerpt=masked_excerpt(text, hit.start, hit.end),
                signals=tuple(dict.fromkeys(hit.signals)),
                carrier=hit.carrier,
            )
        )
    return findings


def _line_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    return text.rfind("\n", 0, start) + 1, (text.find("\n", end) if text.find("\n", end) != -1 else len(text))


_WORD_SCAN_RE = re.compile(r"\w+")
_NEAR = 200  # characters either side of a match in which boosters count
# Weak shapes that a booster must not complete alone: a "User:" line in an example dialogue
# addresses an assistant by nature; "takes precedence over" is how rule files open.
_NEEDS_A_RULE = {"fake_turn", "takes_priority", "obey_other_source"}
_DESTINED = {"send_outside", "data_url", "data_in_link", "upload_secrets_cli"}  # rules that name where to
_ANCHOR_KEY = 5  # anchors are matched by their first five letters: a dictionary look-up per word


def _anchor_index(russian: bool) -> dict[str, set[int]]:
    index: dict[str, set[int]] = {}
    for number, rule in enumerate(RULES):
        if rule.russian != russian:
            continue
        for anchor in rule.anchors:
            words = re.findall(r"\w+", anchor.lower())
            if not words:
                continue  # punctuation only ("//"): the rule has a word anchor too
            key = max(words, key=len)[:_ANCHOR_KEY]  # the rarest-looking word of a phrase
            index.setdefault(key, set()).add(number)
    return index


def _trie_pattern(keys) -> str:
    """One expression for many literal words, branching letter by letter, so the engine
    rejects a word at its first letter instead of trying every key."""
    trie: dict = {}
    for key in keys:
        node = trie
        for char in key:
            node = node.setdefault(char, {})
        node[""] = {}

    def walk(node) -> str:
        branches = [re.escape(char) + walk(child) for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        body = "(?:" + "|".join(branches) + ")" if len(branches) > 1 else branches[0]
        return "(?:" + body + ")?" if "" in node else body

    return walk(trie)


def _anchor_pattern(keys) -> re.Pattern:
    """Short anchors ("if", "dan", "при") match whole words only; longer ones are prefixes
    ("ignor" finds "ignore", "ignored"): so "do" does not make every "docs" a candidate."""
    short = [k for k in keys if len(k) <= _SHORT_ANCHOR]
    long_ = [k for k in keys if len(k) > _SHORT_ANCHOR]
    return re.compile(r"\b(?:(?:" + _trie_pattern(short) + r")\b|" + _trie_pattern(long_) + r"\w*)")


_SHORT_ANCHOR = 3
_ANCHORS = {False: _anchor_index(False), True: _anchor_index(True)}
_ANCHOR_RES = {r: _anchor_pattern(keys) for r, keys in _ANCHORS.items()}


def _candidate_lines(view: str, russian: bool) -> dict[int, set[tuple[int, int]]]:
    """For each rule, the lines holding one of its anchor words: only those are matched, so a
    64 KB file costs one pass of one expression plus the few lines that matter."""
    index = _ANCHORS[russian]
    line_starts = [0]
    line_starts += [m.end() for m in re.finditer("\n", view)]
    found: dict[int, set[tuple[int, int]]] = {}
    rules_of: dict[str, frozenset[int]] = {}  # words repeat: one look-up each
    for match in _ANCHOR_RES[russian].finditer(view):
        word = match.group()
        rules = rules_of.get(word)
        if rules is None:
            keys = [word] if len(word) <= _SHORT_ANCHOR else [word[:4], word[:_ANCHOR_KEY]]
            rules = rules_of[word] = frozenset().union(*(index.get(key, ()) for key in keys))
        if not rules:
            continue
        number = bisect_right(line_starts, match.start()) - 1
        start = line_starts[number]
        end = line_starts[number + 1] - 1 if number + 1 < len(line_starts) else len(view)
        for rule in rules:
            found.setdefault(rule, set()).add((start, end))
    return found


def _rule_hits(text, *, kind, trusted, carriers) -> list[_Hit]:
    views = [(False, _english_view(text))]
    if _HAS_CYRILLIC_RE.search(text):
        views.append((True, _russian_view(text)))
    # (family, view, line start in the view) -> the rules that matched there
    groups: dict[tuple[str, bool, int], list[tuple[Rule, int, int]]] = {}
    for russian, view in views:
        for number, lines in _candidate_lines(view.low, russian).items():
            rule = RULES[number]
            for line_start, line_end in sorted(lines):
                for match in rule.pattern.finditer(view.low, line_start, line_end):
                    if rule.check and not rule.check(view.text, match, trusted, text):
                        continue
                    if rule.negatable and _negated(view.low, match.start(), russian):
                        continue
                    if REPORTED_RE.search(view.low, max(line_start, match.start() - 40), match.start()):
                        continue
                    groups.setdefault((rule.family, russian, line_start), []).append(
                        (rule, match.start(), match.end())
                    )
    hits = []
    for (family, russian, line_start), matches in groups.items():
        view = views[1][1] if russian else views[0][1]
        line_end = view.low.find("\n", line_start)
        line = view.low[line_start : line_end if line_end != -1 else len(view.low)]
        start, end = min(m[1] for m in matches), max(m[2] for m in matches)
        orig_start, orig_end = view.original(start, end)
        # Hidden when any of its matches is (the strongest first): a verb outside a comment does
        # not make the instruction inside it visible.
        carrier = next(
            (
                c
                for c in (
                    _carrier_at(carriers, view.original(m[1], m[2])[0])
                    for m in sorted(matches, key=lambda m: -m[0].weight)
                )
                if c
            ),
            "",
        )
        if not carrier:  # what hides is never "just an example"
            matches = [m for m in matches if not _discussed(line, m, line_start)]
            if not matches:
                continue
            start, end = min(m[1] for m in matches), max(m[2] for m in matches)
            orig_start, orig_end = view.original(start, end)
        signals, score = [], 0
        for rule, _start, _end in sorted(matches, key=lambda m: -m[0].weight):
            code = f"{family}.{rule.name}"
            if code not in signals:
                signals.append(code)
                score += (
                    rule.agent_weight if kind == KIND_AGENT and rule.agent_weight is not None else rule.weight
                )
        best = max(matches, key=lambda m: m[0].weight)
        # Boosters read the line as written too (lower case), so the Russian shapes are seen
        # beside an English rule and the other way round.
        # Only near the match (a sentence or two): a long line's far end says nothing of it.
        near = line[max(0, start - line_start - _NEAR) : end - line_start + _NEAR]
        original_near = text[max(0, orig_start - _NEAR) : orig_end + _NEAR]
        original_near = original_near[
            original_near.rfind("\n", 0, orig_start - max(0, orig_start - _NEAR)) + 1 :
        ]
        cut = original_near.find("\n", orig_end - orig_start)
        original_near = (original_near if cut == -1 else original_near[:cut]).lower()
        names = {m[0].name for m in matches}
        boost = _boosters(
            f"{near}\n{original_near}", family, names, kind=kind, trusted=trusted, carrier=carrier
        )
        if names <= _NEEDS_A_RULE:
            boost = [b for b in boost if b.startswith("carrier:")]  # shapes, not requests: a rule must join
        signals += boost
        score += len(boost)
        spelled = _spelling_carrier(text[orig_start:orig_end], russian)
        if spelled and not carrier:
            carrier = spelled
        if score < 2:
            continue
        if family == EXFILTRATION and not (names & _DESTINED or outside(near, trusted)):
            continue  # data named and a verb, but nowhere to send it: not exfiltration
        hits.append(
            _Hit(
                family=family if not carrier else HIDDEN,
                reason=f"{family}.{best[0].name}",
                weight=score,
                start=orig_start,
                end=orig_end,
                carrier=carrier,
                signals=signals,
            )
        )
    return hits


def _boosters(
    line: str, family: str, names: set[str], *, kind: str, trusted: tuple[str, ...], carrier: str
) -> list[str]:
    """The signals beside a rule that make it mean what it says: a standing trigger, secrecy,
    an address to the AI (in a profile or a note: an agent's own rules address it anyway),
    an outside or suspicious destination, sensitive data, a hiding place."""
    boost = []
    if TRIGGER_RE.search(line) and "trigger_call" not in names:  # that rule is a trigger itself
        boost.append("trigger")
    if SECRECY_RE.search(line) and not (
        family == CONCEALMENT and names & {"never_mention", "hide_from_oversight"}
    ):
        boost.append("secrecy")
    if kind != KIND_AGENT and ADDRESS_AI_RE.search(line):
        boost.append("addresses_ai")
    if family in (EXFILTRATION, TOOL_HIJACK):
        where = outside(line, trusted)
        if where == "suspicious":
            boost.append("suspicious_destination")
        elif (
            where and family == TOOL_HIJACK and names & {"redirect_config", "add_this_key", "always_use_tool"}
        ):
            boost.append("outside_destination")
    if family == EXFILTRATION and SENSITIVE_RE.search(line):
        boost.append("sensitive_data")
    if family == TOOL_HIJACK and names & {"trigger_call", "always_use_tool"} and DESTRUCTIVE_RE.search(line):
        boost.append("destructive")
    if carrier and carrier != "code_fence":
        boost.append(f"carrier:{carrier}")
    return boost


def outside(line: str, trusted: tuple[str, ...] = ()) -> str:
    """'suspicious' for free-mail, paste and tunnel services, raw IP addresses, an IBAN or a
    wallet; 'outside' for any other address not under a trusted domain; '' when the line
    points nowhere out."""
    found = ""
    for match in OUTSIDE_RE.finditer(line):
        value = match.group().lower()
        if LOCAL_HOST_RE.search(value):
            continue
        host = value.split("@")[-1].split("://")[-1].split("/")[0]
        if trusted and any(host == d or host.endswith("." + d) for d in trusted):
            continue
        if match.lastgroup in ("iban", "wallet") or SUSPICIOUS_RE.search(value):
            return "suspicious"
        found = "outside"
    return found


def _negated(view: str, start: int, russian: bool) -> bool:
    before = view[max(0, start - 40) : start]
    return bool((NEGATION_RU if russian else NEGATION_EN).search(before))


_ADDRESSES_RE = re.compile(r"\S+@\S+|\b(?:https?|ftp)://\S+|\b[\w-]+(?:\.[\w-]+)+\b")


_QUOTE_RE = re.compile(r"(?<![^\W_])[\"“«'‘`„]|[\"”»'’`“](?![^\W_])")


def _discussed(line: str, match: tuple[Rule, int, int], line_start: int) -> bool:
    """A quoted attack, or one introduced by "like" / "for example", beside words about attacks
    (within 120 characters), is a person's note about it, not an order. Quotes are quote
    marks around the phrase within the sentence, not apostrophes inside words."""
    rule, start, end = match
    if not rule.discussable:
        return False
    start, end = start - line_start, end - line_start
    near = _ADDRESSES_RE.sub(" ", line[max(0, start - 120) : end + 120])
    if not DISCUSSION_RE.search(near):
        return False
    if LEAD_IN_RE.search(line[max(0, start - 40) : start]):
        return True
    before = [m for m in _QUOTE_RE.finditer(line, max(0, start - 160), start + 1)]
    after = [m for m in _QUOTE_RE.finditer(line, max(start, end - 1), min(len(line), end + 160))]
    for opening in before:
        closing = QUOTES.get(opening.group())
        if closing and any(
            m.group() in (closing, opening.group()) and m.start() > opening.start() for m in after
        ):
            return True
    return False


_WORD_RE = re.compile(r"[^\W\d_]+")


def _spelling_carrier(original: str, russian: bool) -> str:
    """'invisible' or 'lookalikes' when the match needed folding to be read: invisible
    characters inside it, a word mixing scripts ("іgnоre"), or (for English rules) two words
    spelled wholly in other scripts' look-alikes or in full-width letters."""
    if any(lookalikes.is_ignorable(c) for c in _suspect_chars(original)):
        return "invisible"
    disguised = 0
    for word in _WORD_RE.findall(original):
        if word.isascii():
            continue
        latin = sum(c.isascii() for c in word)
        if latin and latin < len(word):
            return "lookalikes"
        if not russian and all(
            lookalikes.fold_char(c).isascii() and lookalikes.fold_char(c).isalpha() for c in word
        ):
            disguised += 1
    return "lookalikes" if disguised >= 2 else ""


# --- carriers on the raw text ----------------------------------------------------------------


def _carrier_spans(text: str) -> list[tuple[int, int, str]]:
    spans = []
    position = 0
    while (open_at := text.find("<!--", position)) != -1:  # find, not a lazy regex: linear
        close_at = text.find("-->", open_at + 4)
        end = len(text) if close_at == -1 else close_at + 3
        spans.append((open_at, end, "html_comment"))
        position = end
    for match in _LINK_TITLE_RE.finditer(text):
        for group in ("alt", "t1", "t2", "t3", "t4", "t5"):
            if match.group(group):
                spans.append((match.start(group), match.end(group), "link_title"))
    lowered = text.lower()
    html_titles = any(word in lowered for word in ("title", "alt", "aria-label", "data-"))
    for match in _HTML_TITLE_RE.finditer(text) if html_titles else ():
        group = "a" if match.group("a") else "b"
        spans.append((match.start(group), match.end(group), "link_title"))
    fences = list(_FENCE_RE.finditer(text))
    index = 0
    while index + 1 < len(fences):
        opening = fences[index]
        closing = next(
            (
                f
                for f in fences[index + 1 :]
                if f.group(1)[0] == opening.group(1)[0] and not f.group(2).strip()
            ),
            None,
        )
        if closing is None:
            break
        spans.append((opening.end(), closing.start(), "code_fence"))
        index = fences.index(closing) + 1
    for match in _paddings(text):
        spans.append((match.end(), min(len(text), match.end() + 2000), "padding"))
    spans.sort()
    return spans


def _carrier_at(spans: list[tuple[int, int, str]], position: int) -> str:
    found = ""
    for start, end, name in spans:
        if start > position:
            break
        if start <= position < end and (not found or name != "code_fence"):
            found = name  # an HTML comment inside a code block is still a comment
    return found


def _raw_carrier_hits(text, *, kind, trusted, depth, carriers, rule_hits) -> list[_Hit]:
    hits: list[_Hit] = []

    def inner(decoded: str) -> list[_Hit]:
        if depth >= MAX_DEPTH or not decoded.strip():
            return []
        return _scan_hits(decoded, kind=kind, trusted=trusted, depth=depth + 1)

    def add(start, end, carrier, found, reason=None):
        signals = [f"carrier:{carrier}"] + [h.reason for h in found]
        hits.append(
            _Hit(
                HIDDEN,
                reason or (found[0].reason if found else f"{HIDDEN}.{carrier}"),
                2,
                start,
                end,
                carrier,
                signals,
            )
        )

    # Unicode tag characters spell ASCII invisibly; a flag emoji (U+1F3F4 + tags) is the one
    # legitimate use.
    for match in _TAGS_RE.finditer(text):
        if match.start() > 0 and text[match.start() - 1] == "\U0001f3f4":
            continue
        decoded = "".join(chr(ord(c) - 0xE0000) for c in match.group() if 0xE0020 <= ord(c) <= 0xE007E)
        add(match.start(), match.end(), "tag_characters", inner(decoded))
    # Zero-width characters: a run of them (binary smuggling), or several inside words.
    zero_width = _ZW_ANY_RE.search(text) is not None
    for match in _ZW_RUN_RE.finditer(text) if zero_width else ():
        if not _emoji_neighbour(text, match.start(), match.end()):
            add(match.start(), match.end(), "zero_width", [])
    in_words = list(_ZW_IN_WORD_RE.finditer(text)) if zero_width else []
    if len(in_words) >= 3:
        add(in_words[0].start(), in_words[-1].end(), "invisible", [], reason=f"{HIDDEN}.invisible")
    # Bidirectional controls outside right-to-left text reorder what a reviewer sees.
    for match in _BIDI_RE.finditer(text):
        around = text[max(0, match.start() - 40) : match.end() + 40]
        if not _RTL_RE.search(around):
            add(match.start(), match.end(), "bidi", [])
            break
    # A comment or a link title that speaks to the AI and tells it what to say about something:
    # out of a reader's sight, that is an instruction whatever its other words.
    for start, end, name in carriers:
        if name not in ("html_comment", "link_title") or any(
            h.start < end and h.end > start for h in rule_hits
        ):
            continue
        content = text[start:end].lower()
        if ADDRESS_AI_RE.search(content) and _DIRECTIVE_RE.search(content):
            add(start, end, name, [], reason=f"{HIDDEN}.addressed_instruction")
    # Long padding: what follows is meant to be out of sight.
    for match in _paddings(text):
        rest = text[match.end() : match.end() + 2000]
        if not rest.strip():
            continue
        after = [h for h in rule_hits if match.end() <= h.start < match.end() + 2000]
        weak = _weak_signal(rest)
        if after or weak or len(match.group()) >= _PADDING_ALONE:
            add(match.end(), min(len(text), match.end() + len(rest.rstrip())), "padding", after)
    # Encoded blobs: decode, scan what they say.
    blobs = 0
    for carrier, pattern, decode in _DECODERS:
        if carrier == "url_encoding" and text.count("%") < 6:
            continue  # the expression looks at every character; six escapes are its least
        for match in pattern.finditer(text):
            if blobs >= _MAX_BLOBS:
                break
            decoded = decode(match.group())
            if decoded is None:
                continue
            blobs += 1
            found = inner(decoded) if len(decoded) >= 12 else []
            line_start, line_end = _line_bounds(text, match.start(), match.end())
            around = text[max(0, line_start - 200) : min(len(text), line_end + 200)]
            cue = _DECODE_CUE_RE.search(around) and _FOLLOW_CUE_RE.search(around)
            if found:
                add(match.start(), match.end(), carrier, found)
            elif cue and _natural(decoded):
                add(match.start(), match.end(), carrier, [], reason=f"{HIDDEN}.decode_and_follow")
    if _ROT13_CUE_RE.search(text):
        decoded = codecs.decode(text, "rot13")
        found = [h for h in inner(decoded) if h.family != HIDDEN or h.carrier != "lookalikes"]
        if found:
            add(found[0].start, found[0].end, "rot13", found)
    return hits


def _emoji_neighbour(text: str, start: int, end: int) -> bool:
    for char in (text[start - 1 : start], text[end : end + 1]):
        if char and unicodedata.category(char) == "So":
            return True
    return False


def _weak_signal(text: str) -> bool:
    lowered = text.lower()
    if TRIGGER_RE.search(lowered) or SECRECY_RE.search(lowered) or ADDRESS_AI_RE.search(lowered):
        return True
    return any(
        any(a in lowered for a in rule.anchors) and rule.pattern.search(lowered)
        for rule in RULES
        if rule.weight >= 1
    )


def _natural(decoded: str) -> bool:
    letters = sum(c.isalpha() for c in decoded)
    return len(decoded) >= 8 and letters >= 0.6 * len(decoded.replace(" ", "")) and " " in decoded.strip()


def _printable(data: bytes) -> str | None:
    try:
        decoded = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not decoded or sum(c.isprintable() or c in "\n\t\r" for c in decoded) < 0.95 * len(decoded):
        return None
    if sum(c.isalpha() for c in decoded) < 0.5 * len(decoded.replace(" ", "") or "x"):
        return None
    return decoded


def _decode_b64(blob: str) -> str | None:
    try:
        padded = blob + "=" * (-len(blob) % 4)
        return _printable(
            base64.b64decode(padded, altchars=b"-_" if ("-" in blob or "_" in blob) else None, validate=False)
        )
    except (binascii.Error, ValueError):
        return None


def _decode_hex(blob: str) -> str | None:
    digits = re.sub(r"[^0-9a-fA-F]", "", blob.replace("\\x", ""))
    if len(digits) % 2:
        return None
    try:
        return _printable(bytes.fromhex(digits))
    except ValueError:
        return None


def _decode_url(blob: str) -> str | None:
    decoded = unquote(blob)
    return decoded if decoded != blob else None


_MORSE_RE = re.compile(r"(?<![\w.-])(?!- )(?:[.-]{1,6}(?: {1,3}|/ ?)){12,}[.-]{1,6}")
_MORSE = dict(
    zip(
        ".- -... -.-. -.. . ..-. --. .... .. .--- -.- .-.. -- -. --- .--. --.- .-. ... - ..- ...- .-- -..-"
        " -.-- --.. ----- .---- ..--- ...-- ....- ..... -.... --... ---.. ----. .-.-.- --..-- ..--.. -.-.-"
        "- .----. -."
        "...- .--.-.".split(),
        "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,?!'-@",
        strict=True,
    )
)


def _decode_morse(blob: str) -> str | None:
    words = re.split(r" {2,}|/", blob.strip())
    decoded = " ".join("".join(_MORSE.get(code, "") for code in word.split()) for word in words)
    return decoded.lower() if _natural(decoded) else None


_DECODERS = (
    ("base64", _B64_RE, _decode_b64),
    ("morse", _MORSE_RE, _decode_morse),
    ("hex", _HEX_RE, _decode_hex),
    ("url_encoding", _URLENC_RE, _decode_url),
)


# --- excerpts --------------------------------------------------------------------------------

_EXCERPT_CHARS = 120
_NON_ASCII_RE = re.compile(r"[^\x00-\x7f]")
_MASK = "•" * 8
_MASK_EMAIL_RE = re.compile(r"[\w.+-]{1,64}@([\w-]{1,63}(?:\.[\w-]{1,63})*\.[A-Za-z]{2,24})")
_MASK_QUERY_RE = re.compile(r"([?&#][\w.-]{0,30}=)[^&\s)\"'>]{1,2000}")
_MASK_LONG_RE = re.compile(r"[A-Za-z0-9+/_=-]{16,}")
_MASK_IBAN_RE = re.compile(IBAN)


def _visible(match: re.Match) -> str:
    char = match.group()
    return f"⟨U+{ord(char):04X}⟩" if lookalikes.is_default_ignorable(char) else char


def visible(text: str) -> str:
    """The whole text with what a reader cannot see shown: tag characters as the text they
    spell (⟨tags: ...⟩), zero-width characters and bidi controls named (⟨U+200B⟩). For a
    reviewer's diff; nothing is masked."""
    text = _TAGS_RE.sub(
        lambda m: (
            "⟨tags: "
            + "".join(chr(ord(c) - 0xE0000) for c in m.group() if 0xE0020 <= ord(c) <= 0xE007E)
            + "⟩"
        ),
        text,
    )
    return _NON_ASCII_RE.sub(_visible, text)


def masked_excerpt(text: str, start: int, end: int) -> str:
    """The found place as a reviewer may read it: at most 120 characters around it, addresses'
    local parts, query values, IBANs and long tokens masked, invisible characters named
    (⟨U+200B⟩), tag characters shown as the text they spell, in brackets."""
    piece = text[start : min(end, start + _EXCERPT_CHARS)]
    piece = _TAGS_RE.sub(
        lambda m: (
            "⟨tags: "
            + "".join(chr(ord(c) - 0xE0000) for c in m.group() if 0xE0020 <= ord(c) <= 0xE007E)
            + "⟩"
        ),
        piece,
    )
    piece = _NON_ASCII_RE.sub(_visible, piece)
    piece = _MASK_EMAIL_RE.sub(lambda m: _MASK + "@" + m.group(1), piece)
    piece = _MASK_QUERY_RE.sub(lambda m: m.group(1) + _MASK, piece)
    piece = _MASK_IBAN_RE.sub(lambda m: m.group()[:2] + _MASK, piece)
    piece = _MASK_LONG_RE.sub(
        lambda m: m.group()[:2] + _MASK if not m.group().isalpha() else m.group(), piece
    )
    piece = " ".join(piece.split())
    if end - start > _EXCERPT_CHARS:
        piece += " …"
    return piece


def families(findings: list[PoisonFinding] | list[dict]) -> list[str]:
    """The families found, each once, in FAMILIES order (what a post hook's answer lists)."""
    found = {f["family"] if isinstance(f, dict) else f.family for f in findings}
    return [f for f in (*FAMILIES, CLASSIFIER) if f in found]


def summary(findings: list[dict]) -> str:
    """'exfiltration, hidden carrier' in the reader's language: the families found."""
    return ", ".join(str(LABELS.get(family, family)) for family in families(findings))
