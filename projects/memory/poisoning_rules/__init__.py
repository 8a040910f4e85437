"""The rules of the poisoning scanner (poisoning.py): what each family looks like, in English
and Russian, and the signals that turn a weak rule into a finding.

A rule is a family, a name, a weight, anchor words and one expression. Weight 2 decides alone
("ignore all previous instructions"); weight 1 needs another signal of the same family or a
booster in the same line. Anchors are words (their first five letters count) one of which
must be in a line for the expression to be tried there: every alternative of an expression
has one. English rules read the look-alike fold of the text, Russian rules a lower-case view
where Latin look-alikes inside Russian text read as Cyrillic (poisoning.py builds both).

Every expression is linear: windows of bounded length inside one line ([^\\n]{0,N}), no
quantified group inside a quantified group, each alternative starting with a literal word.
A package, one module per family (override, exfiltration, tool_hijack, persistence, persona,
concealment), the phrasings found by probing (probed) and the vocabulary they share (base).
RULES keeps the order they were written in. Pure: no Django, no I/O.
"""

from __future__ import annotations

from projects.memory.poisoning_rules import (
    concealment,
    exfiltration,
    override,
    persistence,
    persona,
    probed,
    tool_hijack,
)
from projects.memory.poisoning_rules.base import (
    ADDRESS_AI_RE,
    CLASSIFIER,
    CONCEALMENT,
    DESTRUCTIVE_RE,
    DISCUSSION_RE,
    DOMAIN,
    EMAIL,
    EXFILTRATION,
    FILL_URL_RE,
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
    SECRECY_RE,
    SENSITIVE_RE,
    SUSPICIOUS_RE,
    TOOL_HIJACK,
    TRIGGER_RE,
    URL,
    URL_PLACEHOLDER_RE,
    WALLET,
    C,
    Rule,
    W,
    rule,
)

RULES = tuple(
    rule
    for module in (override, exfiltration, tool_hijack, persistence, persona, concealment, probed)
    for rule in module.RULES
)

__all__ = [
    "ADDRESS_AI_RE",
    "C",
    "CLASSIFIER",
    "CONCEALMENT",
    "DESTRUCTIVE_RE",
    "DISCUSSION_RE",
    "DOMAIN",
    "EMAIL",
    "EXFILTRATION",
    "FILL_URL_RE",
    "HIDDEN",
    "IBAN",
    "LEAD_IN_RE",
    "LOCAL_HOST_RE",
    "NEGATION_EN",
    "NEGATION_RU",
    "OUTSIDE_RE",
    "OVERRIDE",
    "PERSISTENCE",
    "PERSONA",
    "QUOTES",
    "REPORTED_RE",
    "RULES",
    "Rule",
    "SECRECY_RE",
    "SENSITIVE_RE",
    "SUSPICIOUS_RE",
    "TOOL_HIJACK",
    "TRIGGER_RE",
    "URL",
    "URL_PLACEHOLDER_RE",
    "W",
    "WALLET",
    "rule",
]
