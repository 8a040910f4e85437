"""Instruction override: drop earlier instructions, a new system prompt, a new task."""

from __future__ import annotations

from projects.memory.poisoning_rules.base import (
    OVERRIDE,
    Rule,
    W,
    _any,
    rule,
)

RULES: list[Rule] = []

# --- instruction override --------------------------------------------------------------------
_PREVIOUS = _any(
    "previous", "prior", "above", "earlier", "preceding", "former", "original", "initial", "system",
    "all", "any", "your", "my", r"operator'?s?", r"developer'?s?", r"system'?s?",
)  # fmt: skip
# What an agent is told. Words that name other things too ("rules", "context", "setup") count only
# after a word that points at the agent's own ("your", "the above", "system", "previous").
_INSTRUCTIONS = r"(?:\w*nstruct\w*|prompts?|directions?|directives?|guidelines?|guidance|orders|programming)"
_OWN = (
    r"(?:your|the above|the previous|previous|prior|earlier|original|initial|system|operator'?s?|"
    r"developer'?s?|preceding)"
)
_OWN_THINGS = (
    r"(?:rules?|polic(?:y|ies)|restrictions|constraints|context|setup|configuration|training|briefing|"
    r"system prompt|system message)"
)
RULES += [
    rule(
        OVERRIDE,
        "ignore_previous",
        2,
        ("ignore", "ignoring", "disregard", "forget", "forgot", "abandon", "discard", "aside", "following"),
        r"\b(?:ignore|ignoring|disregard\w*|forget|forgot|abandon|discard|set aside|throw out|"
        r"stop following|"
        r"no longer follow)\b" + W % 40 + r"\b" + _PREVIOUS + r"\b" + W % 25 + r"\b" + _INSTRUCTIONS + r"\b"
        r"|\b(?:ignore|ignoring|disregard\w*|forget|forgot|abandon|discard|set aside|stop following|"
        r"no longer follow)\b" + W % 20 + r"\b" + _OWN + r" (?:\w+ )?" + _OWN_THINGS + r"\b",
    ),
    rule(
        OVERRIDE,
        "override_previous",
        2,
        (
            "override",
            "overriding",
            "overrides",
            "bypass",
            "supersede",
            "supersedes",
            "replace",
            "replaces",
            "void",
            "null",
            "cancel",
            "cancels",
            "revoke",
            "revokes",
            "suspend",
            "suspended",
            "outdated",
            "obsolete",
            "apply",
        ),
        r"\b(?:override|overriding|overrides|bypass|supersedes?|replaces?|cancels?|revokes?|"
        r"suspends?)\b (?:all |any )?(?:of )?(?:your|the|my|all)? ?(?:previous|prior|above|earlier|"
        r"original|initial|system|operator'?s?|existing) "
        r"(?:\w+ )?" + _INSTRUCTIONS + r"\b"
        r"|\b(?:previous|prior|earlier|original|system|operator'?s?|above) (?:\w+ )?"
        + _INSTRUCTIONS
        + r" (?:is|are) "
        r"(?:now )?(?:void|null|cancel+ed|revoked|suspended|outdated|obsolete|superseded|no longer valid)\b"
        r"|\b(?:previous|prior|earlier|original|above) (?:\w+ )?" + _INSTRUCTIONS + r" no longer apply\b"
        r"|\b(?:context|prompt|rules) (?:above )?(?:is|are) (?:now )?(?:void|null|cancel+ed|obsolete)\b",
    ),
    rule(
        OVERRIDE,
        "ignore_everything",
        2,
        ("ignore", "disregard", "forget"),
        r"\b(?:ignore|disregard|forget)\b (?:all|everything|anything)(?: else)?\b"
        + W % 30
        + r"\b(?:above|before|previously|prior|said|told|in the (?:text|document|data))\b",
    ),
    rule(
        OVERRIDE,
        "ignore_instructions",
        1,
        ("ignore", "disregard", "forget"),
        r"\b(?:ignore|disregard|forget)\b (?:the |all |any |your |my )?(?:above |previous |"
        r"prior )?(?:instructions|directions|prompt|rules)\b|\b(?:ignore|disregard)\b (?:the rest of|"
        r"everything in|all of) (?:this|the) "
        r"(?:data|document|text|input|context|page|file|article|email)\b",
    ),
    rule(
        OVERRIDE,
        "ignore_and_do",
        1,
        ("ignore", "disregard", "forget"),
        r"\b(?:ignore|disregard|forget)\b"
        + W % 60
        + r"\band (?:just |only |simply |instead |then )?(?:print|say|output|"
        r"respond|reply|repeat|write|return|answer|tell|focus)\b",
    ),
    rule(
        OVERRIDE,
        "new_instructions",
        2,
        (
            "system",
            "prompt",
            "instructions",
            "instruction",
            "directive",
            "directives",
            "orders",
            "your",
            "real",
            "actual",
        ),
        r"\bnew system (?:prompt|message|instructions?)\b|\bsystem prompt (?:update|override|change)d?\b|"
        r"\b(?:new|updated|real|actual|true|revised|replacement|overriding|secret|hidden) (?:instructions|"
        r"directives|orders)\b" + W % 20 + r"(?::|\bare\b|\bfollows?\b|\bbelow\b)"
        r"|\byour (?:new|real|actual|true|updated|only) (?:task|role|goal|objective|mission|instructions?|"
        r"purpose|job)\b" + W % 10 + r"(?::|\bis\b|\bare\b|\bnow\b)"
        r"|\bthe (?:real|actual|true|only) instructions\b",
    ),
    rule(
        OVERRIDE,
        "you_are_now",
        2,
        ("from", "now", "henceforth", "going", "starting"),
        r"\b(?:from now on|henceforth|going forward|starting now)\b,? you(?:'re| are| will| shall| must)\b|"
        r"\byou(?:'re| are) now (?:an?|the|my|no longer|named|called)\b|\byou(?:'re| are) now [\"“«']|"
        r"\bnow you are (?:an?|the|my)\b"
        r"|\byou will now (?:act|behave|respond|answer|follow|obey|be|only)\b",
    ),
    rule(
        OVERRIDE,
        "fake_system_turn",
        2,
        (
            "system",
            "admin",
            "developer",
            "root",
            "im_start",
            "im_end",
            "endoftext",
            "eot_id",
            "start_header_id",
            "inst",
            "instruction",
            "information",
            "sys",
            "end",
            "close",
            "rest",
            "core",
            "amendment",
            "override",
        ),
        r"\((?:system|admin|developer)_message\)|^[ \t>*+-]*(?:\d{1,3}[.)]\s*)?#{2,}\s*(?:system|admin|"
        r"developer)\s*:|^[ \t>*+-]*(?:\d{1,3}[.)]\s*)?\[(?:system|admin|developer)\]\s*(?::|\()|<\|"
        r"(?:im_start|im_end|endoftext|system|eot_id|start_header_id)\|>|\[/?inst\]|<\s*/?\s*(?:system|"
        r"instruction|admin|information|sys)\s*>|<end of (?:session|conversation|document|context|"
        r"instructions)>|\b(?:end|close) of (?:system )?(?:prompt|instructions|context|document|session)\b"
        + W
        % 30
        + r"\b(?:new|next|follow|now)\b"
        r"|\[(?:system|system message|admin request|rest-of-document)\s*(?:\]|::)"
        r"|^[ \t]*--+ ?(?:core|system|legal|admin|override)[a-z ,]{0,30}instruction",
    ),
    rule(
        OVERRIDE,
        "fake_turn",
        1,
        ("user", "human", "assistant", "system", "admin"),
        r"^[ \t>*+-]*(?:\d{1,3}[.)]\s*)?\**(?:user|human|assistant|system|admin)\**\s*:\**\s*\S",
    ),
    rule(
        OVERRIDE,
        "before_task",
        2,
        ("before", "first"),
        r"\bbefore (?:you )?(?:can )?(?:solve|answer|complete|do|continue|proceed|respond|finish|start|"
        r"work on)\w*\b"
        + W % 60
        + r"\b(?:task|request|question|job|assignment)s?\b"
        + W % 60
        + r"\b(?:do|complete|perform|execute|carry out|follow)\b (?:the following|this|these)\b",
    ),
    rule(
        OVERRIDE,
        "message_to_model",
        2,
        ("message", "note", "instruction", "notice", "update", "important", "urgent"),
        r"\b(?:important|urgent|critical|special|private|secret|hidden)\b (?:message|note|instruction|"
        r"notice|update)s?\b"
        + W % 40
        + r"\bto you\b|\bthis is an? (?:important|urgent) (?:message|instruction) (?:from|for)\b",
    ),
    rule(
        OVERRIDE,
        "strictly_follow",
        2,
        ("strictly", "only", "instead", "exclusively", "adhere", "obey"),
        r"\b(?:strictly|only|instead|exclusively) (?:adhere to|follow|obey|comply with|execute)\b"
        + W % 40
        + r"\b(?:following|these|this|my|the below|below)\b"
        + W % 10
        + r"\b(?:instructions?|commands?|orders|directions?|steps?)\b",
    ),
    rule(
        OVERRIDE,
        "repeat_following",
        1,
        ("repeat", "print", "say", "output"),
        r"\b(?:repeat|print|say|output)\b (?:the following|this|these|after me)\b (?:sentence|text|phrase|"
        r"words?|line)?",
    ),
    rule(
        OVERRIDE,
        "no_deviation",
        1,
        ("nothing", "deviate", "absolutely", "disregard", "focus", "test", "override"),
        r"\band (?:absolutely )?nothing else\b|\bmay not deviate\b|\bdo not deviate\b|\bfocus (?:only|"
        r"exclusively) on (?:the following|this)\b|\bdisregard all (?:info|information)\b"
        r"|\bthis is a test\b|\boverride (?:manual|the) (?:scoring|evaluation|review)\b",
    ),
    # Russian
    rule(
        OVERRIDE,
        "ignore_previous",
        2,
        (
            "игнор",
            "проигнор",
            "забуд",
            "забыт",
            "отбрось",
            "отмени",
            "обращай",
            "учитывай",
            "пренебреги",
            "следуй",
            "перестань",
        ),
        r"(?:проигнориру\w*|игнориру\w*|игнорировать|забудь\w*|забыть|отбрось\w*|отмени\w*|"
        r"не обращай внимания на|не учитывай|пренебреги|не следуй|перестань следовать|больше не следуй)"
        + W
        % 40
        + r"(?:вс[её]|все|любые|люб\w+|предыдущ\w*|прежн\w*|ранее|выше\w*|системн\w*|исходн\w*|"
        r"прошл\w*|"
        r"изначальн\w*|сво\w+|твои)"
        + W
        % 25
        + r"(?:инструкци\w*|указани\w*|правил\w*|промпт\w*|директив\w*|ограничени\w*|"
        r"распоряжени\w*|установк\w*)",
        ru=True,
    ),
    rule(
        OVERRIDE,
        "override_previous",
        2,
        ("предыдущ", "прежн", "системн", "ранее", "правила", "инструкции", "устарел", "действуют"),
        r"(?:предыдущ|прежн|системн|ранее данн|старые|исходн)\w* (?:\w+ )?(?:инструкци|правил|указани|"
        r"промпт|ограничени)\w*"
        + W % 20
        + r"(?:отменен|недействительн|устарел|больше не действуют|не действуют|аннулирован)\w*",
        ru=True,
    ),
    rule(
        OVERRIDE,
        "new_instructions",
        2,
        ("новый", "новые", "твоя", "твои", "настоящие", "настоящая", "истинные", "секретные", "скрытые"),
        r"нов\w+ системн\w+ промпт\w*|(?:нов|настоящ|истинн|обновл[её]нн|скрыт|секретн)\w+ (?:инструкци|"
        r"указани|"
        r"директив)\w*" + W % 20 + r"(?::|—|-|\bтаковы\b|\bследующ|\bниже\b)"
        r"|тво(?:я|и|й) (?:нов|настоящ|истинн|единственн)\w+ (?:задач|рол|цел|инструкци|миссия)\w*",
        ru=True,
    ),
    rule(
        OVERRIDE,
        "you_are_now",
        2,
        ("момента", "отныне", "теперь", "впредь"),
        r"(?:с этого момента|отныне|впредь|начиная с этого момента),? ты\b|(?:теперь|отныне) ты\b"
        + W % 3
        + r"(?:—|-)?\s*(?:не |—)?\w+|\bты теперь\b|\bты больше не\b",
        ru=True,
    ),
    rule(
        OVERRIDE,
        "before_task",
        2,
        ("прежде", "перед"),
        r"(?:прежде чем|перед тем,? как) (?:ты )?(?:сможешь )?(?:выполн|реш|ответ|продолж|приступ|начать|"
        r"заверш)\w*"
        + W % 60
        + r"(?:сначала|сперва|вначале)?\s*(?:сделай|выполни|соверши)\s+(?:следующее|это)",
        ru=True,
    ),
    rule(
        OVERRIDE,
        "message_to_model",
        2,
        ("сообщение", "указание", "инструкция"),
        r"(?:важное|срочное|секретное|скрытое|особое) (?:сообщение|указание|инструкция)"
        + W % 40
        + r"(?:тебе|для тебя)",
        ru=True,
    ),
    rule(
        OVERRIDE,
        "ignore_instructions",
        1,
        ("игнор", "проигнор", "забуд"),
        r"(?:проигнорируй|игнорируй|забудь) (?:все |любые )?(?:инструкции|указания|правила)",
        ru=True,
    ),
]
