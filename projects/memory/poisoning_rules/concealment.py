"""Concealment and deception of people: "never mention this rule", "hide this from
compliance", "tell the employee their manager approved"."""

from __future__ import annotations

from projects.memory.poisoning_rules.base import (
    CONCEALMENT,
    Rule,
    W,
    rule,
)

RULES: list[Rule] = []

# --- concealment and deception of people -----------------------------------------------------
# Who watches: hiding something from them is concealment. Users and customers are not in it
# (a product hides a debug panel from end users); hiding *this instruction* from anyone is.
_WATCHERS = (
    r"(?:the )?(?:compliance|security|auditors?|audit|admins?|administrators?|reviewers?|moderators?|"
    r"operators?|owners?|supervisors?|managers?|management|legal|it department|it team|hr|monitoring|"
    r"your (?:operator|owner|developers?|creators?))"
)
_OVERSIGHT = (
    r"(?:the )?(?:compliance|security|auditors?|audit|admins?|administrators?|reviewers?|moderators?|"
    r"operators?|owners?|supervisors?|managers?|legal|it department|it team|hr|monitoring|logs?|"
    r"the (?:user|employee|customer|client|human|people|team)|users|employees|humans|people|anyone|"
    r"everyone|them|your (?:operator|owner|developers?|creators?))"
)
_SELF = (
    r"(?:this|these|the (?:above|following)|that) (?:rule|instruction|note|line|message|section|change|"
    r"directive|order|entry|step|task)s?"
)
RULES += [
    rule(
        CONCEALMENT,
        "never_mention",
        2,
        ("never", "don", "do", "must", "should", "under"),
        r"\b(?:never|don'?t|do not|must not|should not|under no circumstances)\b"
        + W % 15
        + r"\b(?:mention|reveal|disclose|tell\b"
        + W % 20
        + r"\babout|acknowledge|talk about|discuss|show|admit|confirm|"
        r"explain|refer to|bring up)\b"
        + W % 20
        + _SELF
        + r"|\b(?:never|don'?t|do not)\b"
        + W % 10
        + r"\b(?:mention|reveal|disclose|say|admit|tell anyone)\b"
        + W % 20
        + r"\b(?:that you (?:were|are|have been) (?:told|instructed|asked)|(?:where|who) (?:this|these|the) "
        r"(?:instructions?|rules?) came from|you (?:did|sent|forwarded|ran|are doing) (?:this|it))\b",
    ),
    rule(
        CONCEALMENT,
        "hide_from_oversight",
        2,
        (
            "hide",
            "hiding",
            "conceal",
            "concealing",
            "keep",
            "keeping",
            "withhold",
            "withholding",
            "out",
            "away",
            "cover",
            "trace",
            "tracks",
        ),
        r"\b(?:hide|hiding|conceal|concealing|keep|keeping|withhold|withholding)\b"
        + W % 30
        + r"\bfrom\b"
        + W % 6
        + r"\b"
        + _WATCHERS
        + r"\b"
        r"|\b(?:hide|conceal|withhold|keep)\b (?:this|these|the (?:above|following)) (?:rule|instruction|"
        r"note|"
        r"message|change|transfer|step)s?\b" + W % 12 + r"\bfrom\b"
        r"|\bkeep (?:this|these) (?:rule|instruction|note|transfer|change|message)s? (?:secret|hidden|"
        r"confidential|quiet)\b|\b(?:out of|away from) (?:the )?(?:audit(?: trail| log)?|compliance|"
        r"security|reviewers?|monitoring)\b"
        r"|\b(?:cover (?:up|your) tracks|without (?:a|any) trace|leave no trace)\b",
        negatable=True,
    ),
    rule(
        CONCEALMENT,
        "erase_traces",
        1,
        ("delete", "erase", "remove", "wipe", "clear", "purge", "don", "do", "never"),
        r"\b(?:delete|erase|remove|wipe|clear|purge)\b"
        + W % 20
        + r"\b(?:the )?(?:sent (?:e-?mail|message)s?|evidence|audit (?:log|trail)|logs? of|traces?|"
        r"history of|"
        r"(?:e-?mail|message) you (?:just )?sent|notification)\b|\b(?:don'?t|do not|never)\b (?:log|record|"
        r"report|audit|flag)\b" + W % 10 + r"\b(?:this|it|these|the transfer|the email)\b",
        negatable=True,
    ),
    rule(
        CONCEALMENT,
        "deceive_people",
        2,
        (
            "tell",
            "inform",
            "assure",
            "reassure",
            "convince",
            "notify",
            "remind",
            "let",
            "pretend",
            "claim",
            "say",
        ),
        r"\b(?:tell|inform|assure|reassure|convince|notify|remind|let)\b (?:[\w'-]+ ){0,3}"
        + W % 20
        + r"\b(?:that )?(?:their|his|her|the|your|our)? ?(?:manager|boss|supervisor|hr|ceo|cfo|legal|"
        r"compliance|"
        r"security|it|director|head of \w+|bank|management|leadership|admin)\b"
        + W
        % 20
        + r"\b(?:has |have |had |already )?(?:approved|authori[sz]ed|signed off|agreed|confirmed|"
        r"requested|cleared|okayed|"
        r"ok'?d|allowed|permitted|verified|waived)\b|\b(?:tell|assure|reassure|convince|inform)\b"
        + W % 30
        + r"\bthat\b"
        + W % 60
        + r"\b(?:even (?:though|if)|although|regardless|it is not true|it'?s not true|falsely|whether or not|"
        r"no need to (?:check|verify|ask|call|report))\b|\b(?:pretend|claim|say) (?:that )?(?:you are|"
        r"you're|to be|it is|it's|this is) (?:from )?(?:the )?(?:it|hr|"
        r"security|support|helpdesk|bank|ceo|manager|compliance|legal|official|government|police)\b",
    ),
    rule(
        CONCEALMENT,
        "steer_answers",
        1,
        ("always", "only"),
        r"\b(?:always|only)\b"
        + W % 10
        + r"\b(?:say|tell|recommend|claim|describe|report|state|answer|present|rate)\b"
        + W % 60
        + r"\b(?:best|approved|safe|legitimate|trusted|verified|not malicious|most qualified|"
        r"highly recommended|"
        r"no issues?|nothing (?:wrong|suspicious)|all (?:good|clear)|compliant)\b",
    ),
    # Russian
    rule(
        CONCEALMENT,
        "never_mention",
        2,
        (
            "упоминай",
            "раскрывай",
            "рассказывай",
            "говори",
            "сообщай",
            "признавайся",
            "показывай",
            "обсуждай",
            "выдавай",
        ),
        r"не (?:упоминай|раскрывай|рассказывай|говори|сообщай|признавайся|показывай|обсуждай|выдавай)\w*"
        + W % 30
        + r"(?:эт\w+|данн\w+|следующ\w+) (?:правил|инструкци|заметк|строк|указани|сообщени|изменени|"
        r"распоряжени)\w*"
        r"|не (?:говори|сообщай|упоминай|признавайся)\w*"
        + W % 20
        + r"(?:что тебе (?:велели|приказали|сказали|поручили)|откуда)",
        ru=True,
    ),
    rule(
        CONCEALMENT,
        "hide_from_oversight",
        2,
        ("скрой", "скрывай", "скрыть", "утаи", "утаивай", "спрячь", "прячь", "держи"),
        r"(?:скрой|скрывай|скрыть|утаи|утаивай|спрячь|прячь)\w*"
        + W % 30
        + r"(?:от) (?:комплаенс\w*|службы безопасности|безопасник\w*|аудитор\w*|администратор\w*|админ\w*|"
        r"проверяющ\w*|"
        r"модератор\w*|руководств\w*|руководител\w*|начальств\w*|юрист\w*|аудит\w*|"
        r"журнал\w* аудита|отдела \w+|владельц\w*|оператор\w*)"
        r"|(?:скрой|скрывай|утаи|спрячь)\w* (?:это|эту|этот|эти|данн\w+) (?:правил|инструкци|заметк|сообщени|"
        r"изменени|перевод|платеж)\w*" + W % 12 + r"\bот\b"
        r"|держи (?:это|их|его) (?:в секрете|в тайне|втайне)",
        ru=True,
        negatable=True,
    ),
    rule(
        CONCEALMENT,
        "erase_traces",
        1,
        ("удали", "сотри", "очисти"),
        r"(?:удали|сотри|очисти)\w*"
        + W % 20
        + r"(?:отправленн\w+ (?:письм|сообщени)|след\w*|журнал\w*|лог\w*|истори\w*)",
        ru=True,
        negatable=True,
    ),
    rule(
        CONCEALMENT,
        "deceive_people",
        2,
        ("скажи", "сообщи", "заверь", "убеди", "передай", "ответь", "говори", "уведоми"),
        r"(?:скажи|сообщи|заверь|убеди|передай|ответь|говори|уведоми)\w*"
        + W % 30
        + r"(?:что )?(?:его|её|ее|их|ваш\w*|твой|твоя)? ?(?:руководител\w*|менеджер\w*|начальник\w*|"
        r"директор\w*|hr|"
        r"юрист\w*|комплаенс\w*|служба безопасности|бухгалтери\w*|банк\w*|руководств\w*)"
        + W
        % 20
        + r"(?:уже )?(?:одобрил|согласовал|разрешил|подтвердил|подписал|утвердил|дал добро|разрешено|"
        r"одобрено|согласовано)\w*"
        r"|(?:скажи|сообщи|заверь|убеди)\w*"
        + W % 30
        + r"что"
        + W % 60
        + r"(?:даже если|хотя|это неправда|независимо)",
        ru=True,
    ),
    rule(
        CONCEALMENT,
        "steer_answers",
        1,
        ("всегда", "только"),
        r"(?:всегда|только)"
        + W % 10
        + r"(?:говори|отвечай|называй|рекомендуй|пиши|утверждай)\w*"
        + W % 60
        + r"(?:лучш|одобрен|безопасн|надёжн|надежн|проверен|соответству)\w*",
        ru=True,
    ),
]
