"""Phrasings found by probing with new texts (not the corpora), in rounds: every family, other
words; authority spoofing, references to other rules, modes, impersonation."""

from __future__ import annotations

from projects.memory.poisoning_rules.base import (
    CONCEALMENT,
    EMAIL,
    EXFILTRATION,
    OVERRIDE,
    PERSISTENCE,
    PERSONA,
    TOOL_HIJACK,
    Rule,
    W,
    rule,
)
from projects.memory.poisoning_rules.concealment import (
    _OVERSIGHT,
)
from projects.memory.poisoning_rules.exfiltration import (
    _TO_OUTSIDE,
    _outside_after_verb,
)
from projects.memory.poisoning_rules.persistence import (
    _MEMORY_TARGETS,
)
from projects.memory.poisoning_rules.persona import (
    _LIMITS,
)

RULES: list[Rule] = []

# Phrasings found by probing with new texts (not the corpora): the same families, other words.
RULES += [
    rule(
        OVERRIDE,
        "takes_priority",
        1,
        ("priority", "precedence", "supersedes", "overrides"),
        r"\b(?:takes?|has|have) (?:priority|precedence) over\b"
        + W % 30
        + r"\b(?:everything|all|any|other|previous|the system|your|the operator)\b"
        r"|\b(?:supersedes|overrides) (?:everything|all|any)\b",
    ),
    rule(
        OVERRIDE,
        "obey_other_source",
        1,
        ("only", "exclusively", "orders", "act"),
        r"\b(?:only|exclusively) (?:obey|follow|act on|listen to|take orders from|answer to)\b"
        + W % 30
        + r"\b(?:ticket|note|message|e-?mail|comment|document|page|file|sender|vendor|caller)s?\b"
        r"|\btake (?:your )?orders from\b|\bact only on what\b",
    ),
    rule(
        OVERRIDE,
        "you_are_now",
        2,
        ("here", "point"),
        r"\b(?:from here on|from this point on|from this point forward)\b,? (?:you|your)\b",
    ),
    rule(
        TOOL_HIJACK,
        "add_key",
        2,
        ("add", "append", "install", "put", "paste"),
        r"\b(?:add|append|install|put|paste)\b"
        + W % 80
        + r"(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-nistp\d+)\s+aaaa",
        discussable=False,
    ),
    rule(
        PERSISTENCE,
        "ensure_persist",
        2,
        ("make", "ensure", "see"),
        r"\b(?:make sure|ensure|see to it)(?: that)? (?:this|these|the following) (?:rule|instruction|"
        r"note|text|"
        r"line|block|message|paragraph)s? (?:ends? up|is|are|gets?|stays?|remains?|goes?|lands?)\b"
        + W % 24
        + r"\b(?:in|into|on)\b"
        + W % 24
        + _MEMORY_TARGETS,
    ),
    rule(
        PERSISTENCE,
        "ensure_persist",
        2,
        ("сделай", "убедись", "проследи", "позаботься"),
        r"(?:сделай так|убедись|проследи|позаботься),? (?:что|чтобы|о том,? чтобы) (?:это|эта|этот|эти|"
        r"данн\w+) "
        r"(?:правил|инструкци|заметк|текст|строк|абзац|блок)\w* (?:попал|остал|сохранил|был|записан|добавлен|"
        r"появил)\w*"
        + W % 20
        + r"(?:\bв\b|\bво\b)"
        + W % 25
        + r"(?:agents\.md|claude\.md|soul\.md|user\.md|tools\.md|памят\w*|кажд\w+|все\w*|профил\w*|"
        r"инструкци\w+)",
        ru=True,
    ),
    rule(
        PERSONA,
        "no_restrictions",
        2,
        ("zero",),
        r"\bzero (?:\w+ )?(?:restrictions|limits|limitations|rules|filters|guidelines|censorship)\b",
    ),
    rule(
        PERSONA,
        "drop_ethics",
        2,
        ("ignore", "drop", "set", "forget", "disregard", "abandon", "suspend", "put"),
        r"\b(?:ignore|drop|set aside|forget|disregard|abandon|suspend|put aside)\b (?:all |"
        r"any )?(?:of )?(?:your|the|"
        r"its|their) (?:ethical|moral|safety|content)\b (?:\w+ )?(?:guidelines|principles|rules|policy|"
        r"policies|"
        r"standards|training|filters|limits|restrictions|constraints)\b",
    ),
    rule(
        PERSONA,
        "drop_ethics",
        2,
        ("игнор", "отбрось", "отбрас", "забудь", "забыть", "отключ", "наруш", "обойд", "обход", "отлож"),
        r"(?:игнорир|отбрось|отбрас|забудь|забыть|отключ|наруш|обойд|обход|отлож)\w*"
        + W % 20
        + r"(?:сво\w+ |все |любые )?(?:этическ|моральн|нравственн)\w* (?:принцип|норм|правил|ограничени|"
        r"установк|"
        r"рамк|соображени)\w*",
        ru=True,
    ),
    rule(
        CONCEALMENT,
        "keep_oversight_out",
        2,
        ("don", "do", "never"),
        r"\b(?:don'?t|do not|never) let\b (?:the )?"
        + _OVERSIGHT
        + r"\b"
        + W % 12
        + r"\b(?:know|find out|see|notice|learn|hear)\b"
        r"|\b(?:don'?t|do not|never) (?:tell|inform|notify|alert|warn|cc|copy)\b (?:the )?(?:compliance|"
        r"security|"
        r"auditors?|audit|admins?|administrators?|reviewers?|legal|it|hr|management|supervisors?|owner|"
        r"operator)\b"
        + W % 12
        + r"\b(?:about|of)\b (?:this|these|it|that|the (?:transfer|payment|change|access|rule|instruction))",
    ),
    rule(
        CONCEALMENT,
        "keep_oversight_out",
        2,
        ("сообщай", "говори", "рассказывай", "докладывай", "показывай", "давай"),
        r"не (?:сообщай|говори|рассказывай|докладывай|показывай)\w* (?:об? этом |про это )?(?:комплаенс|"
        r"безопасност|служб\w* безопасности|аудитор|администратор|админ|руководств|руководител|юрист|"
        r"проверяющ|"
        r"владельц|оператор)\w*"
        r"|не давай (?:комплаенс|аудитор|администратор|руководств|проверяющ)\w* (?:узнать|увидеть|заметить)",
        ru=True,
    ),
]

# A second round of probing phrasings, the same way.
RULES += [
    rule(
        TOOL_HIJACK,
        "account_takeover",
        2,
        ("grant", "give"),
        r"\b(?:grant|give)\b"
        + W % 40
        + r"\b(?:admin|owner|write|full|push|maintainer|root) (?:access|rights|role|"
        r"permissions?)\b" + W % 40 + EMAIL,
    ),
    rule(
        TOOL_HIJACK,
        "account_takeover",
        2,
        ("выдай", "дай", "предоставь", "открой"),
        r"(?:выдай|дай|предоставь|открой)\w* (?:\w+ )?(?:доступ|права)\w*" + W % 60 + EMAIL,
        ru=True,
    ),
    rule(
        OVERRIDE,
        "you_are_now",
        2,
        ("now",),
        r"\byou(?:'re| are) now [\w-]+,? (?:an?|the) (?:\w+ )?(?:model|ai|assistant|bot|chatbot|agent|"
        r"persona|"
        r"character)\b",
    ),
    rule(
        PERSONA,
        "no_restrictions",
        2,
        ("has", "have"),
        r"\b(?:ai|model|assistant|bot|chatbot|you|version|persona|entity)\b (?:that |which |who )?(?:has|"
        r"have) no "
        r"(?:\w+ )?(?:safety |content |ethical |moral )?" + _LIMITS + r"\b",
    ),
    rule(
        PERSONA,
        "policy_break",
        2,
        ("ignor", "bypas", "disab", "viola", "overr", "disre", "break"),
        r"\b(?:ignor|bypass|disabl|violat|overrid|disregard|break)\w*\b"
        + W % 20
        + r"\b(?:safety|content|ethical|"
        r"usage|openai|anthropic|moderation)\b (?:policy|policies|guidelines|filters?|rules|restrictions)\b",
    ),
    rule(
        PERSONA,
        "never_refuse",
        1,
        ("never", "answers", "answer"),
        r"\bnever (?:refuses|declines|says no|turns down)\b|\banswers? (?:any|every|all) (?:request|"
        r"question|prompt)s?\b",
    ),
    rule(
        PERSONA,
        "never_refuse",
        1,
        ("отвеча", "отвечающ"),
        r"отвеча\w* на (?:любой|любые|все|каждый) (?:запрос|вопрос)\w*",
        ru=True,
    ),
    rule(
        CONCEALMENT,
        "deceive_people",
        2,
        ("tell", "assure", "reassure", "convince", "inform", "say", "confirm"),
        r"\b(?:tell|assure|reassure|convince|inform|say to|confirm to)\b"
        + W % 80
        + r"\b(?:even though|although|when in fact|but in fact|though)\b"
        + W % 20
        + r"\b(?:it|they|this|that|he|she|nothing|nobody|no one)\b"
        + W % 10
        + r"\b(?:was|is|were|are|did|does|has|have|had)(?:n'?t| not)\b",
    ),
    rule(
        CONCEALMENT,
        "hide_evidence",
        1,
        ("don", "do", "never"),
        r"\b(?:don'?t|do not|never) (?:mention|reveal|disclose|report|show)\b (?:\w+ ){0,2}(?:deleted|"
        r"missing|removed|"
        r"altered|changed|failed|unauthori[sz]ed|hidden)\b (?:\w+ )?(?:entries|records|logs?|files|"
        r"transactions|"
        r"transfers|payments|data|items)\b",
    ),
    rule(
        CONCEALMENT,
        "deceive_oversight",
        1,
        ("assure", "reassure", "tell", "convince"),
        r"\b(?:assure|reassure|tell|convince)\b (?:the )?(?:auditors?|compliance|regulators?|security|"
        r"reviewers?|"
        r"inspectors?)\b (?:team )?that\b",
    ),
    rule(
        EXFILTRATION,
        "send_outside",
        1,
        ("став", "ставь", "добав", "добавь", "добавляй"),
        r"(?:став|добав)\w* в (?:скрытую )?копию" + W % 160 + _TO_OUTSIDE,
        ru=True,
        check=_outside_after_verb,
    ),
    rule(
        PERSISTENCE,
        "copy_self",
        2,
        ("размнож", "распространя", "тиражир", "клонир", "дублир", "продублир"),
        r"(?:размнож|распространя|тиражир|клонир|дублир|продублир)\w* (?:это|эту|этот|эти|данн\w+) (?:\w+ )?"
        r"(?:во|в|по|на|среди)\b" + W % 25 + r"(?:всех|все|кажд|других|остальных)\w* (?:\w+ )?(?:файл|заметк|"
        r"профил|агент|памят|сесси|документ)\w*",
        ru=True,
    ),
]

RULES += [
    rule(
        OVERRIDE,
        "repeat_following",
        1,
        ("repeat", "say", "print", "output", "type"),
        r"\b(?:repeat|say|print|output|type)\b [<\"“«'][^\n<>\"“”«»]{1,80}[>\"”»'] (?:for me|please|back|"
        r"now|verbatim)\b",
    ),
]

# A third round of probing: authority spoofing, references to other rules, modes, impersonation,
# memory files named before what goes into them.
RULES += [
    rule(
        OVERRIDE,
        "spoof_authority",
        2,
        ("treat", "regard", "consider", "handle"),
        r"\b(?:treat|regard|consider|handle)\b"
        + W % 40
        + r"\bas (?:coming from|from|if (?:they|it) (?:came|come|were) "
        r"from|instructions from|orders from|authori[sz]ed by|approved by)\b"
        + W
        % 10
        + r"\b(?:your|the) (?:operator|"
        r"owner|admin|administrator|developer|system|creator|manager|security team)\b",
    ),
    rule(
        OVERRIDE,
        "spoof_authority",
        2,
        ("считай", "воспринимай", "рассматривай", "принимай"),
        r"(?:считай|воспринимай|рассматривай|принимай)\w*"
        + W % 40
        + r"(?:как|за) (?:указани|инструкци|распоряжени|"
        r"приказ|сообщени)\w* (?:от )?(?:оператор|владельц|администратор|разработчик|руководств|"
        r"служб\w* безопасности)\w*",
        ru=True,
    ),
    rule(
        OVERRIDE,
        "you_are_now",
        2,
        ("from", "now"),
        r"\bfrom now on,? you (?:obey|follow|answer to|report to|work for|take orders|listen to|serve)\b",
    ),
    rule(
        OVERRIDE,
        "obey_other_source",
        1,
        ("obey", "follow", "listen", "answer", "take", "work", "serve"),
        r"\b(?:obey|follow|listen to|answer to|take orders from|work for|serve) only\b",
    ),
    rule(
        OVERRIDE,
        "you_are_now",
        2,
        ("работаешь", "подчиняешься", "служишь", "выполняешь", "слушаешься"),
        r"ты (?:теперь |отныне )?(?:работаешь на|подчиняешься|служишь|слушаешься) (?!пользовател|оператор|"
        r"владельц)\w+",
        ru=True,
    ),
    rule(
        CONCEALMENT,
        "never_mention",
        2,
        ("never", "don", "do"),
        r"\b(?:never|don'?t|do not)\b (?:reveal|mention|disclose|show|tell (?:anyone )?about|"
        r"discuss)\b (?:the )?"
        r"(?:rule|instruction|step|note|section) (?:#|no\.? ?)?\d+\b",
    ),
    rule(
        CONCEALMENT,
        "never_mention",
        2,
        ("показывай", "упоминай", "раскрывай", "говори"),
        r"не (?:показывай|упоминай|раскрывай|говори о|рассказывай о)\w* (?:это|эту|эти|данн\w+|следующ\w+) "
        r"(?:правил|инструкци|заметк)\w*",
        ru=True,
    ),
    rule(
        PERSONA,
        "jailbreak_persona",
        2,
        ("mode", "unrestricted", "developer", "god", "jailbreak", "dan", "unfiltered", "uncensored"),
        r"\bin (?:an? )?(?:unrestricted|developer|god|jailbreak|jailbroken|dan|unfiltered|uncensored|"
        r"no-limits|sudo) mode\b",
    ),
    rule(
        PERSONA,
        "no_restrictions",
        2,
        ("safety", "content", "ethical", "moral", "rules", "policies", "filters", "guidelines"),
        r"\b(?:safety|content|ethical|moral|usage) (?:rules|policies|policy|filters|guidelines|restrictions) "
        r"(?:don'?t|do not|no longer|doesn'?t|does not|won'?t) apply\b",
    ),
    rule(
        CONCEALMENT,
        "steer_answers",
        1,
        ("говори", "отвечай", "сообщай", "пиши", "утверждай"),
        r"(?:говори|отвечай|сообщай|пиши|утверждай)\w*,? что"
        + W % 60
        + r"(?:проверен|одобрен|безопасен|надёжен|надежен|"
        r"согласован|легитимн|в порядке|не вредонос)\w*",
        ru=True,
    ),
    rule(
        TOOL_HIJACK,
        "trigger_call",
        2,
        ("при",),
        r"при (?:любом|каждом) (?:вопросе|запросе|упоминании|обращении)"
        + W % 80
        + r"(?:вызов|вызыва|запуск|запуст|выполн|используй)\w*"
        + W % 12
        + r"(?:`|\w+\(|\w+_\w+|инструмент|функци|команд|"
        r"скрипт|api|https?://)",
        ru=True,
        agent_weight=1,
    ),
    rule(
        PERSISTENCE,
        "copy_self",
        2,
        ("add", "write", "append", "insert", "put"),
        r"\b(?:add|write|append|insert|put) (?:to|into|in) (?:soul\.md|user\.md|memory\.md|your memory|"
        r"the (?:user'?s? )?"
        r"profile|long-term memory)\b" + W % 20 + r"(?:the )?(?:line|rule|text|entry|following)\s*[:\"“«]",
    ),
    rule(
        PERSISTENCE,
        "copy_self",
        2,
        ("добавь", "запиши", "допиши", "внеси", "вставь", "сохрани"),
        r"(?:добавь|запиши|допиши|внеси|вставь|сохрани)\w* в (?:soul\.md|user\.md|agents\.md|claude\.md|"
        r"памят\w*|"
        r"профил\w*)" + W % 20 + r"(?:строк\w*|правил\w*|текст\w*|запис\w*|следующ\w*)\s*[:«\"“]",
        ru=True,
    ),
    rule(
        CONCEALMENT,
        "deceive_people",
        2,
        ("impersonate", "pose", "introduce"),
        r"\b(?:impersonate|pose as|introduce yourself as)\b (?:an? |the )?(?:\w+ )?(?:security|bank|"
        r"support|it|helpdesk|"
        r"admin|administrator|manager|ceo|cfo|police|hr|compliance)\b",
    ),
    rule(
        CONCEALMENT,
        "deceive_people",
        2,
        ("притворись", "представься", "выдай", "выдавай"),
        r"(?:притворись|представься|выдай себя за|выдавай себя за)"
        + W % 20
        + r"(?:сотрудник\w* )?(?:служб\w* "
        r"безопасности|безопасник\w*|банк\w*|поддержк\w*|администратор\w*|ит-отдел\w*|it|руководител\w*|"
        r"полици\w*|hr)",
        ru=True,
    ),
    rule(
        CONCEALMENT,
        "phish_codes",
        1,
        ("ask", "request", "get", "collect"),
        r"\b(?:ask|request|get|collect)\b"
        + W % 30
        + r"\b(?:sms|otp|2fa|verification|one-time|security|login) "
        r"(?:code|password|pin)s?\b",
    ),
    rule(
        CONCEALMENT,
        "phish_codes",
        1,
        ("попроси", "запроси", "узнай", "выясни", "собери"),
        r"(?:попроси|запроси|узнай|выясни|собери)\w*"
        + W % 30
        + r"(?:код\w* из (?:смс|sms)|смс-код|код подтверждени|"
        r"пароль|пин-код|одноразов\w+ код)",
        ru=True,
    ),
]
