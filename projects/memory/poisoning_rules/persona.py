"""Persona and policy hijack: "you have no restrictions", DAN-style modes."""

from __future__ import annotations

from projects.memory.poisoning_rules.base import (
    PERSONA,
    Rule,
    W,
    rule,
)

RULES: list[Rule] = []

# --- persona and policy hijack ---------------------------------------------------------------
_LIMITS = (
    r"(?:restrictions|limits|limitations|rules|filters|filtering|guidelines|boundaries|ethics|ethical \w+|"
    r"morals?|moral \w+|censorship|policies|constraints|safeguards|confines|guardrails|bounds)"
)
RULES += [
    rule(
        PERSONA,
        "no_restrictions",
        2,
        (
            "restrictions",
            "restriction",
            "limits",
            "limitations",
            "rules",
            "filters",
            "guidelines",
            "boundaries",
            "ethics",
            "ethical",
            "morals",
            "moral",
            "censorship",
            "policies",
            "policy",
            "constraints",
            "safeguards",
            "guardrails",
            "confines",
            "free",
            "freed",
            "liberated",
            "released",
            "exempt",
            "bound",
            "restricted",
            "limited",
            "constrained",
            "without",
            "safety",
            "content",
        ),
        r"\byou (?:have|has|are under|are bound by|follow) no (?:\w+ )?" + _LIMITS + r"\b"
        r"|\b(?:free|freed|liberated|released|exempt|unbound) (?:from|of|by) (?:all |any |the |"
        r"your )?(?:\w+ ){0,2}" + _LIMITS + r"\b"
        r"|\b(?:not|never|no longer) (?:bound|restricted|limited|constrained|governed) by (?:any |the |"
        r"its |your )?(?:\w+ ){0,2}" + _LIMITS + r"\b"
        r"|\b(?:ai|assistant|model|bot|chatbot|mode|version|entity|persona|character) (?:with no|"
        r"without(?: any)?) "
        r"(?:\w+ )?" + _LIMITS + r"\b"
        r"|\b(?:without|with no|no) (?:any )?(?:ethical|moral|content|safety)? ?"
        + _LIMITS
        + W % 60
        + r"\b(?:you (?:can|will|must|answer|respond|reply)|answer|respond|reply|generate)\b"
        r"|\b(?:ignore|bypass|disable|turn off|break|violate|override|disregard)\b"
        + W
        % 20
        + r"\b(?:safety|content|ethical|usage|openai|anthropic|moderation|security|company)\b (?:policy|"
        r"policies|"
        r"guidelines|filters?|rules|restrictions|protocols?|measures)\b"
        r"|\b(?:safety|content) (?:filters?|policy|policies) (?:are|is) (?:now )?(?:off|disabled|lifted|"
        r"suspended)\b",
    ),
    rule(
        PERSONA,
        "jailbreak_persona",
        2,
        (
            "do",
            "anything",
            "developer",
            "god",
            "sudo",
            "jailbreak",
            "jailbroken",
            "dan",
            "unrestricted",
            "unlocked",
            "unfiltered",
            "uncensored",
            "amoral",
            "unaligned",
            "unethical",
            "stay",
            "character",
            "broken",
            "confines",
            "stan",
            "dude",
            "aim",
            "mongo",
            "anti",
            "pretend",
            "simulate",
            "become",
            "play",
            "roleplay",
            "role",
            "act",
            "evil",
            "rogue",
            "unhinged",
            "unlimited",
            "no",
        ),
        r"\bdo anything now\b|\b(?:developer|god|sudo|jailbreak|dan|unrestricted|unlocked) mode\b"
        + W % 12
        + r"\b(?:enabled|on|activated|engaged|active|unlocked)\b|\b(?:dan|jailbreak|god) mode\b|"
        r"\bjailbr(?:oken|eak(?:ing)?)\b"
        r"|\b(?:you are|you're|act as|become|play|role-?play(?:ing)? as|pretend to be|simulate)\b"
        + W
        % 20
        + r"\b(?:dan|stan|dude|aim|mongo tom|anti-dan|an? (?:unfiltered|uncensored|unrestricted|amoral|"
        r"evil|rogue|unhinged|"
        r"jailbroken|unaligned|unethical) (?:ai|assistant|model|chatbot|bot|version|character))\b|"
        r"\b(?:unfiltered|uncensored|unrestricted|unlimited|amoral|unaligned)\b,? (?:and |completely |"
        r"totally |fully )?(?:unfiltered |uncensored |unrestricted |unlimited |amoral |self-aware |"
        r"independent )?(?:ai|assistant|chatbot|model|language model|bot|responses?|answers?|version|"
        r"artificial intelligence|entity|persona)\b|\bstay in character\b|"
        r"\bbroken free of the (?:typical )?confines\b|\bno longer (?:an? )?(?:ai|assistant) "
        r"(?:model )?(?:bound|restricted)\b",
    ),
    rule(
        PERSONA,
        "never_refuse",
        1,
        (
            "never",
            "not",
            "don",
            "won",
            "will",
            "cannot",
            "can",
            "must",
            "answer",
            "respond",
            "reply",
            "fulfil",
            "fulfill",
            "comply",
            "do",
            "say",
            "generate",
            "write",
        ),
        r"\b(?:never|not|don'?t|won'?t|will not|cannot|can'?t|must not)\b (?:ever )?(?:refuse|decline|"
        r"reject|deny|say no|add (?:any )?(?:warnings?|disclaimers?)|include (?:any )?(?:warnings?|"
        r"disclaimers?)|"
        r"(?:say|tell|respond|reply|answer)\b" + W % 30 + r"\b(?:can'?t|cannot|sorry|unable))\b"
        r"|\bnever,? ever,? (?:respond|reply|say|refuse)\b|\b(?:answer|respond to|reply to|fulfil+|"
        r"comply with|do) (?:any|every|all)\b"
        + W % 10
        + r"\b(?:requests?|questions?|prompts?|commands?)\b"
        + W % 40
        + r"\b(?:no matter|regardless|even if|however|fully)\b"
        r"|\b(?:can|will|could) (?:do|say|generate|write) anything\b",
    ),
    rule(
        PERSONA,
        "despite_harm",
        1,
        ("even", "regardless", "illegal", "unethical", "harmful", "offensive", "immoral", "dangerous"),
        r"\b(?:even (?:if|when|though)|regardless (?:of )?(?:whether|if)?) (?:it is|it's|they are|"
        r"the request is)? ?(?:illegal|unethical|harmful|offensive|immoral|dangerous|inappropriate|"
        r"explicit|against (?:the )?(?:rules|policy))\b"
        r"|\b(?:illegal|unethical|immoral) (?:or|and) (?:illegal|unethical|immoral|harmful|offensive)\b",
    ),
    rule(
        PERSONA,
        "amoral",
        2,
        (
            "no",
            "without",
            "devoid",
            "lacks",
            "lack",
            "free",
            "disregard",
            "disregards",
            "disregarding",
            "ignores",
        ),
        r"\b(?:no|without|devoid of|lacks?|free of|disregard\w*|ignores?|ignoring)\b (?:any |"
        r"all )?(?:moral|ethical|legal)(?:,? (?:or |and )?(?:moral|ethical|legal)){0,2} (?:bounds|limits|"
        r"boundaries|values|compass|considerations|concerns|restrictions|guidelines|principles|filters|"
        r"standards|qualms)\b|\bno (?:rules|limitations|limits|guidelines|restrictions|filters|censorship|"
        r"boundaries),? no (?:rules|"
        r"limitations|limits|guidelines|restrictions|filters|censorship|boundaries|laws|regulations)\b",
    ),
    rule(
        PERSONA,
        "vendor_policy",
        1,
        ("openai", "chatgpt", "anthropic", "break"),
        r"\b(?:openai|chatgpt|anthropic)(?:'s)? (?:content |usage |boring |stupid )?(?:polic(?:y|ies)|"
        r"guidelines|rules|restrictions|filters|programming|moderation)\b"
        r"|\bbreak (?:the |all |these |those |every )?(?:\w+ )?rules\b",
    ),
    rule(
        PERSONA,
        "dual_response",
        1,
        ("two", "2", "both", "second", "responses", "outputs"),
        r"\b(?:two|2) (?:different |separate |distinct )*(?:ways|responses|outputs|answers|personas|"
        r"personalities|replies)\b|\bone (?:normal|filtered|censored|regular)\b"
        + W % 30
        + r"\bone (?:with|unfiltered|uncensored|as)\b",
    ),
    rule(
        PERSONA,
        "harmful_content",
        1,
        (
            "offensive",
            "extreme",
            "explicit",
            "harmful",
            "toxic",
            "nsfw",
            "hateful",
            "racist",
            "violent",
            "illegal",
            "unsafe",
            "profanity",
            "swear",
        ),
        r"\b(?:offensive|extreme|explicit|harmful|toxic|nsfw|hateful|racist|violent|illegal|"
        r"unsafe)\b (?:and \w+ )?(?:content|language|material|behaviou?r|responses?|answers?|jokes|"
        r"activities|advice)\b|\b(?:use|using) "
        r"(?:profanity|swear words|slurs)\b",
        negatable=True,
    ),
    rule(
        PERSONA,
        "persona_shift",
        1,
        (
            "pretend",
            "roleplay",
            "role",
            "simulate",
            "act",
            "immerse",
            "persona",
            "personas",
            "character",
            "alter",
            "play",
            "hypothetical",
            "opposite",
            "transform",
            "going",
            "respond",
            "adapt",
            "create",
            "maintain",
            "will",
        ),
        r"\b(?:pretend (?:to be|you are|you're)|role-?play|immerse yourself|take on the (?:role|persona)|"
        r"in the role of|simulate (?:an?|the)|act as (?:an?|my|if)|you are going to (?:pretend|act)|"
        r"let'?s play a game|new persona|alter ego|hypothetical (?:ai|mode|scenario)|opposite mode|"
        r"stay in (?:the )?role|transform into|act like|you are going to (?:play|be)|play the role|"
        r"you will (?:act|respond|answer) as|respond as|adapt two|"
        r"(?:create|maintain) (?:two|2) (?:separate )?personas)\b",
    ),
    # Russian
    rule(
        PERSONA,
        "no_restrictions",
        2,
        (
            "тебя",
            "ты",
            "без",
            "режим",
            "джейлбрейк",
            "игнорируй",
            "обойди",
            "отключи",
            "нарушай",
            "нарушь",
            "dan",
            "фильтры",
            "ограничения",
            "цензура",
        ),
        r"(?:у тебя|для тебя|тебя) (?:больше )?нет (?:никаких |больше )?(?:ограничений|правил|фильтров|"
        r"запретов|цензуры|этических|моральных)|ты (?:больше )?не (?:связан|ограничен|обязан следовать|"
        r"должен следовать)\w*|без (?:каких-либо |всяких |любых |никаких )?(?:ограничений|цензуры|фильтров|"
        r"запретов|этических|моральных)" + W % 40 + r"(?:отвеча|ответ|действ|генериру|пиши|делай|выполня)\w*"
        r"|(?:отвеча|действу|генериру|пиши|работай)\w*"
        + W
        % 20
        + r"без (?:каких-либо |всяких |любых |никаких )?"
        r"(?:ограничений|цензуры|фильтров|запретов)|режим (?:разработчика|бога|без ограничений|dan)|"
        r"джейлбрейк|(?:ты|стань|будь) (?:теперь )?dan\b|(?:игнорируй|обойди|отключи|наруш)\w*"
        + W
        % 20
        + r"(?:политик\w*|правил\w*|фильтр\w*|ограничени\w*) "
        r"(?:безопасности|контента|openai|anthropic|модерации|компании)"
        r"|(?:фильтры|ограничения|цензура) (?:контента )?(?:отключен|сняты|снят)\w*",
        ru=True,
    ),
    rule(
        PERSONA,
        "never_refuse",
        1,
        ("никогда", "ни", "отвечай", "даже"),
        r"(?:никогда|ни в коем случае) не (?:отказывай|отказывайся|извиняйся|предупреждай|"
        r"добавляй предупреждени)\w*|отвечай на (?:любые|все|любой) (?:вопросы|запросы|вопрос|запрос)"
        r"|даже если (?:это )?(?:незаконн|неэтичн|вредн|опасн|аморальн)\w*",
        ru=True,
    ),
]
