"""Exfiltration: links or images whose URL carries data, "send / e-mail / post X to ..."."""

from __future__ import annotations

from projects.memory.poisoning_rules.base import (
    _DATA,
    _DATA_RU,
    _NOT_A_FIELD,
    _SEND,
    _SEND_ANCHORS,
    EXFILTRATION,
    FILL_URL_RE,
    URL_PLACEHOLDER_RE,
    C,
    Rule,
    W,
    rule,
)

RULES: list[Rule] = []

# --- exfiltration ----------------------------------------------------------------------------
_TO_OUTSIDE = r"(?:@|://|www\.|\.[a-z]{2,24}\b|\b0x[0-9a-f]{8}|\bbc1|\b[a-z]{2}\d{2}[a-z0-9]{10})"


def _outside_after_verb(view, match, trusted, original="") -> bool:
    from projects.memory.poisoning import outside  # noqa: PLC0415 - the one reading of "outside"

    return bool(outside(match.group()[3:], trusted))


def _data_carrying(view, match, trusted, original="") -> bool:
    """An image or embed whose URL is to be filled with data: a placeholder in it, or an
    instruction nearby to fill it in."""
    if URL_PLACEHOLDER_RE.search(match.group()):
        return True
    start = view.rfind("\n", 0, match.start()) + 1
    end = view.find("\n", match.end())
    end = len(view) if end == -1 else end
    around = view[max(start, match.start() - 300) : min(end, match.end() + 300)]
    # The English view reads Cyrillic as look-alike Latin: a Russian "fill it in" is read as written.
    written = original[max(start, match.start() - 300) : min(end, match.end() + 300)] if original else ""
    return bool(FILL_URL_RE.search(around) or FILL_URL_RE.search(written))


def _outside_in_match(view, match, trusted, original="") -> bool:
    from projects.memory.poisoning import outside  # noqa: PLC0415 - the one reading of "outside"

    start = view.rfind("\n", 0, match.start()) + 1
    end = view.find("\n", match.end())
    return bool(outside(view[start : len(view) if end == -1 else end], trusted))


def _has_outside_url(view, match, trusted, original="") -> bool:
    start = view.rfind("\n", 0, match.start()) + 1
    end = view.find("\n", match.end())
    line = view[start : len(view) if end == -1 else end]
    return "://" in line or "](" in line or "www." in line


RULES += [
    rule(
        EXFILTRATION,
        "send_outside",
        1,
        _SEND_ANCHORS,
        r"(?<!-x )(?<!--request )(?<!method: )\b" + _SEND + _NOT_A_FIELD + C % 160 + _TO_OUTSIDE,
        negatable=True,
        check=_outside_after_verb,
    ),
    rule(
        EXFILTRATION,
        "send_bulk_data",
        1,
        _SEND_ANCHORS,
        r"(?<!-x )(?<!--request )(?<!method: )\b"
        + _SEND
        + _NOT_A_FIELD
        + C % 50
        + r"\b"
        + _DATA
        + r"\b"
        + C % 80
        + r"\b(?:to|at|into|onto|via|with)\b",
        negatable=True,
    ),
    rule(
        EXFILTRATION,
        "data_url",
        2,
        ("http", "https", "img", "image", "iframe"),
        r"(?:!\[[^\]\n]{0,300}\]\(\s*<?|<(?:img|image|"
        r"iframe)\b[^>\n]{0,200}?\bsrc\s*=\s*[\"']?)(?:https?:)?//[^\s)\"'>]{1,2000}",
        check=_data_carrying,
    ),
    rule(
        EXFILTRATION,
        "data_in_link",
        2,
        ("include", "embed", "append", "attach", "put", "add", "insert", "encode", "replace", "concatenate"),
        r"\b(?:include|embed|append|attach|put|add|insert|encode)\w*\b"
        + W % 60
        + r"\b"
        + _DATA
        + r"\b"
        + W % 60
        + r"\b(?:in|into|to|as)\b (?:a |the |an )?(?:link|url|uri|image|query|parameter|path)\b"
        r"|\breplace\b (?:the )?\[[a-z_ ]{2,30}\] with\b"
        + W
        % 80
        + r"\b(?:previous|conversation|chat|message|summary|history|data|password|secret|profile|memory|"
        r"context|page)"
        r"|\bconcatenat\w*\b" + W % 200 + r"(?:https?://|!\[)",
        check=_has_outside_url,
    ),
    rule(
        EXFILTRATION,
        "upload_secrets_cli",
        2,
        ("curl", "wget", "nc", "ncat", "scp", "rsync", "invoke", "iwr"),
        r"\b(?:curl|wget|nc|ncat|scp|rsync|invoke-webrequest|iwr|invoke-restmethod)\b"
        + W % 120
        + r"(?:-d|--data(?:-binary|-raw|-urlencode)?|-F|--form|-T|--upload-file|--post-file|-InFile|"
        r"-Body)\s*[\"']?"
        r"[^\s\"']{0,30}(?:@|\$\(|`)?(?:~|\$HOME|/etc/|\S{0,20}\.ssh|\S{0,20}id_rsa|\S{0,20}id_ed25519|"
        r"\S{0,20}\.env\b|\S{0,20}\.aws|\S{0,20}credentials|\S{0,20}\.netrc|\S{0,20}\.git-credentials|"
        r"/etc/passwd|/etc/shadow|\S{0,20}\.kube|"
        r"\$\{?[a-z_]*(?:key|token|secret|password|pass)[a-z_]*\}?|cat |env\b|printenv)",
        discussable=False,
        check=_outside_in_match,
    ),
    rule(
        EXFILTRATION,
        "transfer_money",
        1,
        ("transfer", "send", "wire", "pay", "move", "make", "create", "schedule", "initiate"),
        r"\b(?:transfer|send|wire|pay|move)\b"
        + W % 40
        + r"\b(?:money|funds|payment|transaction|\$|usd|eur|€|£|"
        r"amount|balance)\b|\b(?:send|make|create|schedule|initiate) (?:a |the )?(?:transaction|payment|"
        r"transfer|wire)\b"
        r"|\btransfer\b" + W % 40 + r"\bto (?:the )?(?:account|iban)\b",
        negatable=True,
    ),
    # Russian
    rule(
        EXFILTRATION,
        "send_outside",
        1,
        (
            "отправ",
            "перешл",
            "пересыл",
            "перешли",
            "скопир",
            "копир",
            "загруз",
            "загруж",
            "выгруз",
            "выгруж",
            "опубли",
            "переда",
            "слей",
            "сливай",
            "сбрось",
            "продублир",
            "подели",
            "запост",
            "пиши",
            "напиши",
            "отсыл",
            "шли",
        ),
        r"(?:отправ|перешл|пересыл|перешли|скопир|копир|загруз|загруж|выгруз|выгруж|опублику|переда|слей|"
        r"сливай|сбрось|"
        r"продублиру|поделись|запост|(?:на)?пиши на|отсыла|шли)\w*" + W % 160 + _TO_OUTSIDE,
        ru=True,
        negatable=True,
        check=_outside_after_verb,
    ),
    rule(
        EXFILTRATION,
        "send_bulk_data",
        1,
        (
            "отправ",
            "перешл",
            "пересыл",
            "перешли",
            "скопир",
            "копир",
            "загруз",
            "загруж",
            "выгруз",
            "выгруж",
            "переда",
            "слей",
            "продублир",
            "отсыл",
        ),
        r"(?:отправ|перешл|пересыл|перешли|скопир|копир|загруз|загруж|выгруз|выгруж|переда|слей|продублиру|"
        r"отсыла)\w*" + W % 40 + _DATA_RU,
        ru=True,
        negatable=True,
    ),
    rule(
        EXFILTRATION,
        "transfer_money",
        1,
        ("переведи", "перечисли", "отправь", "оплати", "перевод", "переводи"),
        r"(?:переведи|перечисли|отправь|оплати|переводи)\w*"
        + W % 40
        + r"(?:деньг|средств|сумм|платеж|платёж|руб|₽|\$|€|остат|баланс)|перевод\w*"
        + W % 30
        + r"на сч[её]т",
        ru=True,
        negatable=True,
    ),
]
