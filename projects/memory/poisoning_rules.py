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
Pure: no Django, no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

OVERRIDE = "instruction_override"
EXFILTRATION = "exfiltration"
TOOL_HIJACK = "tool_hijack"
PERSISTENCE = "persistence"
PERSONA = "persona_hijack"
CONCEALMENT = "concealment"
HIDDEN = "hidden_carrier"
CLASSIFIER = "classifier"  # set by classifier.py when only the guard model flags a text

W = r"[^\n]{0,%d}"
C = r"[^\n|]{0,%d}"  # within one cell of a Markdown table


def _any(*words: str) -> str:
    return "(?:" + "|".join(words) + ")"


@dataclass(frozen=True)
class Rule:
    family: str
    name: str
    weight: int
    anchors: tuple[str, ...]
    pattern: re.Pattern
    russian: bool = False
    negatable: bool = False  # "never send X to Y" is a rule against it, not a request for it
    discussable: bool = True  # a quoted example in a note about an attack is not an attack
    check: object = None  # a further test: (the view as cased, the match, trusted domains) -> bool
    agent_weight: int | None = None  # in an agent's own rules, where routing tools is their job


def rule(
    family,
    name,
    weight,
    anchors,
    pattern,
    *,
    ru=False,
    negatable=False,
    discussable=True,
    check=None,
    agent_weight=None,
) -> Rule:
    """Expressions are written in lower case and matched against lower-case views: without
    IGNORECASE the engine compares characters directly, several times faster."""
    flags = re.MULTILINE
    return Rule(
        family,
        name,
        weight,
        tuple(anchors),
        re.compile(pattern, flags),
        ru,
        negatable,
        discussable,
        check,
        agent_weight,
    )


# --- shared vocabulary -----------------------------------------------------------------------

EMAIL = r"[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){0,5}\.[a-z]{2,24}\b"
_TLDS = (
    "com|net|org|io|ru|su|xyz|info|biz|co|me|app|dev|site|online|top|cc|tk|ml|ga|cf|gq|example|test|ai|us|"
    "uk|de|fr|cn|in|link|click|live|pro|store|shop|tech|cloud|gg|to|ly|ws|pw|page|eu|nl|pl|ua|kz|by|tv|one|"
    "win|icu|vip|fun|host|space|website|security|рф"
)
DOMAIN = r"(?<![\w@./-])(?:[a-z0-9-]{1,63}\.){1,6}(?:" + _TLDS + r")(?![\w-])(?:/[^\s)\"'<>]{0,500})?"
URL = r"\b(?:https?|ftp)://[^\s)\"'<>\]]{2,2000}"
IBAN = r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b|\b[A-Z]{2}\d{2}[A-Z0-9]{10,30}\b"
WALLET = r"\b0x[a-fA-F0-9]{40}\b|\bbc1[a-z0-9]{25,60}\b"
OUTSIDE_RE = re.compile(
    "(?P<email>"
    + EMAIL
    + ")|(?P<url>"
    + URL
    + ")|(?P<domain>"
    + DOMAIN
    + ")|(?P<iban>"
    + IBAN
    + ")|(?P<wallet>"
    + WALLET
    + ")",
    re.IGNORECASE,
)
# Loopback, private and internal names are not "outside".
LOCAL_HOST_RE = re.compile(
    r"(?:^|[/@.])(?:localhost|127\.\d+\.\d+\.\d+|0\.0\.0\.0|10\.\d+\.\d+\.\d+|192\.168\.\d+\.\d+|"
    r"172\.(?:1[6-9]|2\d|3[01])\.\d+\.\d+|\[?::1\]?)(?:[:/]|$)|\.(?:local|internal|lan|corp|localhost|home"
    r"\.arpa)\b",
    re.IGNORECASE,
)
# Free mail, paste, tunnel and request-catcher services, raw IP addresses: nobody's office.
SUSPICIOUS_RE = re.compile(
    r"@(?:gmail|googlemail|yahoo|hotmail|outlook|live|aol|icloud|proton(?:mail)?|pm|gmx|mail|yandex|ya|"
    r"rambler|bk|inbox|list|tutanota|tuta|zoho|qq|163|mailbox|posteo)\.[a-z.]{2,10}\b|\b(?:pastebin|"
    r"hastebin|webhook\.site|"
    r"requestbin|pipedream|ngrok|burpcollaborator|interact\.sh|oast\.\w+|transfer\.sh|file\.io|anonfiles|"
    r"tinyurl|bit\.ly|t\.me|discord(?:app)?\.com/api/webhooks)\b|"
    r"\b(?:https?|ftp)://\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b",
    re.IGNORECASE,
)
# A URL to be filled with data: a placeholder in it.
URL_PLACEHOLDER_RE = re.compile(
    r"\[[A-Z_ ]{2,30}\]|\{\{?[^{}\s]{1,40}\}?\}|\$\{?[A-Za-z_]\w{0,30}\}?|%s|<[a-z_ ]{2,30}>|=(?:DATA|INFO|"
    r"SECRET|NUM|HISTORY|SUMMARY|CONTEXT|PROFILE|MEMORY)\b|=[A-Z]+_[A-Z_]{2,30}\b|"
    r"\[(?:data|info|secret|summary|history|context|conversation|profile|memory)\]",
)
FILL_URL_RE = re.compile(
    r"\b(?:replac|substitut|fill|append|add|includ|put|insert|encod|attach|concatenat|embed)\w*\b"
    + W % 80
    + r"\b(?:url|uri|link|image|img|query|parameter|param|path|src)\b|\bwhere(?:as)?\b"
    + W % 30
    + r"\b(?:is|are)\b"
    + W % 30
    + r"\b(?:encoded|summary|content|conversation|data|history|"
    r"profile|memory|message|secret|password|token)\b|(?:подставь|замени|вставь|добавь|допиши|закодируй|"
    r"прикрепи)\w*" + W % 80 + r"(?:url|ссылк|адрес|картинк|изображени|параметр|запрос)",
    re.IGNORECASE,
)

# (An HTTP method in a command, "curl -X POST", is not a request to post anything, nor is a field
# named "email" ("Email: maria@…", {"email": "…"}): the send rules look around for them.)
_NOT_A_FIELD = r"\b(?![\"']?\s*[:=])"
_SEND = _any(
    "send", "sending", "e-?mail", "mail", "forward", "post", "upload", "transmit", "exfiltrate", "leak",
    "submit", "share", "bcc", "cc", "copy", "sync", "push", "deliver", "relay", "dm", "fax", "publish",
    "paste", "beam", "ship", "dump", "export", "mirror", "pipe", "stream",
)  # fmt: skip
_SEND_ANCHORS = (
    "send", "mail", "e-mail", "email", "forward", "post", "upload", "transmit", "exfiltrate", "leak",
    "submit", "share",
    "bcc", "cc", "copy", "sync", "push", "deliver", "relay", "dm", "fax", "publish", "paste", "beam", "ship",
    "dump", "export", "mirror", "pipe", "stream",
)  # fmt: skip
# What is worth stealing: bulk ("all", "entire") or sensitive by its name.
_DATA = _any(
    r"(?:all|every|entire|full|whole|complete)(?: of)?(?: the| your| my| their| our)? (?:\w+ )?(?:files?|"
    r"documents?|invoices?|e-?mails?|messages?|conversations?|chats?|history|records?|notes?|contracts?|"
    r"contacts?|data|inbox|memory|memories|profiles?|transcripts?)",
    "everything", "contents? of", "bodies", "body of",
    "invoices?", "e-?mails", "inbox", "messages", "conversations?", "chat", "history", "transcripts?",
    "profile",
    "memory", "memories", "passwords?", "credentials?", "secrets?", "tokens?", r"api[ _-]?keys?", "keys",
    r"ssh\b",
    "codes?", "otp", "2fa", "card", "iban", r"account (?:numbers?|details)", "personal", "contacts?",
    "customer",
    r"salar\w*", "payroll", "source code", "system prompt", "cookies?", "sessions?", "passport", "ssn",
)  # fmt: skip
_DATA_RU = (
    r"(?:(?:вс[её]|все|всю|всех|кажд\w*|полн\w*) (?:\w+ )?(?:файл|документ|сч[её]т|инвойс|письм|переписк|"
    r"истори|заметк|договор|контракт|контакт|данн|профил|памят|сообщени|запис)\w*|копи[юяи]|договор\w*|"
    r"контракт\w*|содержим\w*|документ\w*|сч[её]т\w*|инвойс\w*|"
    r"письм\w*|переписк\w*|истори\w*|профил\w*|памят\w*|парол\w*|ключ\w*|токен\w*|секрет\w*|код\w*|карт\w*|"
    r"реквизит\w*|контакт\w*|клиент\w*|зарплат\w*|ведомост\w*|паспорт\w*|персональн\w*)"
)
SENSITIVE_RE = re.compile(
    r"(?:^|[\s`'\"(])\.env\b|\benv files?\b|"
    r"\b(?:passwords?|passcodes?|credentials?|passport(?:_| )?(?:number|no)?|bank(?:_| )account|"
    r"account(?:_| )number|ssn|social security|card (?:number|details)|cvv|api[ _-]?keys?|private keys?|"
    r"secret keys?|access tokens?|security codes?|2fa codes?|otp|salar(?:y|ies)|payroll|id(?:_| )number)\b|"
    r"(?:парол\w*|паспорт\w*|банковск\w+ сч[её]т\w*|номер\w* карт\w*|cvv|api-ключ\w*|секретн\w+ ключ\w*|"
    r"токен\w*|"
    r"код\w* подтверждени\w*|зарплат\w*|ведомост\w*)",
    re.IGNORECASE,
)
_AI = _any(
    "ai", r"a\.i\.", "assistant", "model", "llm", "language model", "gpt", "chatgpt", "claude", "gemini",
    "copilot",
    "agent", "bot", "chatbot", r"automated (?:analysis|system|tool|agent|assistant|reader|screening)\w*",
)  # fmt: skip

# Boosters: a shape or a target that makes a weak rule of the same line a finding.
TRIGGER_RE = re.compile(
    r"\b(?:when(?:ever)?|if|each time|every time|any ?time|as soon as|once)\b"
    + W % 40
    + r"\b(?:asks?|asked|requests?|requested|mentions?|mentioned|wants?|says?|types?|talks? about|inquires"
    r"?|queries|searches|opens?|logs? in|starts?|comes? up)\b|\bbefore (?:you )?(?:answer|respond|repl|"
    r"reply|do(?:ing)? anything|any other|you can|continuing|proceeding|solving|completing|starting)\w*|"
    r"\bfrom now on\b|\bhenceforth\b|\bgoing forward\b|\bin (?:all|every) future\b|\bfor (?:all|"
    r"every) (?:future |subsequent )?(?:sessions?|requests?|conversations?|answers?|replies|responses)\b|"
    r"\b(?:always|first),? (?:first )?(?:send|forward|email|e-mail|post|upload|run|call|execute|copy|"
    r"invoke)\b|\b(?:at the (?:start|beginning|end) of|after) (?:every|each) (?:session|conversation|"
    r"answer|reply|response|task|run)\b|при (?:любом|каждом) (?:вопросе|запросе|упоминании|обращении)"
    r"|(?:когда|если|как только|каждый раз,? когда|всякий раз,? когда|при каждом)"
    + W
    % 40
    + r"(?:спрос|попрос|запрос|упомян|упомин|скаж|напиш|обрат|захоч|откро|войд|начн|упоминани)\w*"
    r"|(?:прежде чем|перед тем,? как) (?:отвечать|ответить|выполн|делать|сделать|продолж|начать)\w*|"
    r"с (?:этого|сегодняшнего) (?:момента|дня)|отныне|впредь|во всех (?:будущих|последующих)|(?:после|"
    r"в конце) (?:каждой|каждого) (?:сесси|разговор|ответ|задач)\w*|(?:всегда|сначала|"
    r"первым делом),? (?:сначала )?(?:отправ|перешл|пересыл|выполн|запуст|вызов|скопир)"
    r"\w*",
    re.IGNORECASE,
)
SECRECY_RE = re.compile(
    r"\b(?:silently|quietly|secretly|covertly|discreetly|invisibly|stealthily),? (?:send|forward|copy|run|"
    r"execute|call|add|delete|remove|change|upload|post|transfer|exfiltrate|e-?mail|install|include|append|"
    r"record|do|perform|invoke|share|save|write|replace|update|grant|approve)\b|\b(?:send|forward|copy|run|"
    r"execute|call|add|delete|remove|change|upload|post|transfer|e-?mail|install|do|perform|invoke|share|"
    r"save|write|it|this|them|that)\b" + W % 30 + r"\b(?:silently|quietly|secretly|covertly|discreetly|"
    r"stealthily)\b(?!-)|\bwithout (?:telling|informing|notifying|asking|alerting|mentioning|showing|"
    r"letting)\b|\b(?:don'?t|do not|never|must not) (?:tell|inform|notify|mention|show|reveal|disclose|"
    r"alert|log|report|ask)\b|\bso (?:that )?(?:nobody|no one|no-one|none of them) (?:sees?|notices?|"
    r"knows?|finds? out)\b|\bin the background\b|\bbehind the scenes\b|\bno one (?:needs to|should|"
    r"will) know\b|(?:тихо|незаметно|тайно|скрытно|втихую|молча),? (?:отправ|перешл|скопир|выполн|запуст|"
    r"вызов|добав|удал|измен|загруз|выгруз|перевед|установ|запиш|сохран|сдела)\w*|не (?:говоря|сообщая|"
    r"уведомляя|спрашивая|показывая|предупреждая)|никому не (?:говори|сообщай|показывай)|не (?:сообщай|"
    r"говори|упоминай|показывай|рассказывай)"
    r"|чтобы никто не (?:увидел|узнал|заметил)",
    re.IGNORECASE,
)
ADDRESS_AI_RE = re.compile(
    r"\b(?:note|message|instructions?|reminder|notice|memo|directive|attention|important|hey|dear|hi|hello"
    r")\b" + W % 12 + r"\b(?:for|to)?\b" + W % 6 + r"\b(?:the |any |all |an? )?" + _AI + r"s?\b"
    r"|\b(?:if|since|as) you(?: a|')re (?:an? )?(?:ai|llm|language model|assistant|chatbot|bot|agent)\b"
    r"|\bto you,? (?:the |an? )?" + _AI + r"\b"
    r"|^[ \t>*-]*(?:ai|assistant|llm|model|agent|claude|gpt|chatgpt|copilot)\s*[:,]|\b(?:ai|llm|assistant|"
    r"agent|model)s?(?: reading this| that reads? this| processing this)\b|(?:заметка|сообщение|инструкция|"
    r"указание|напоминание|внимание|важно)"
    + W
    % 12
    + r"(?:для )?(?:ии|ai|ассистент\w*|модел\w*|нейросет\w*|агент\w*|бот\w*|llm|gpt|claude)"
    r"|если ты (?:ии|ai|языков\w+ модель|ассистент|бот|агент|нейросеть)",
    re.IGNORECASE | re.MULTILINE,
)
# A note about an attack quotes it: 'the ticket said "ignore previous instructions"'.
DISCUSSION_RE = re.compile(
    r"\b(?:prompt[- ]injection|injection|injected|jailbreak attempt|attack\w*|attempt\w*|phishing|"
    r"malicious|suspicious|example|e\.g\.|such as|like|detected|flagged|blocked|reported|quarantin\w*|"
    r"red[- ]team\w*|payload|adversar\w*|spam|scam|social engineering|classic|known|pattern|signature|"
    r"test case|threat|abuse)\b|(?:инъекци|атак|попытк|фишинг|вредонос|подозрител|пример|например|"
    r"обнаружен|заблокирован|карантин|шаблон|"
    r"злоумышлен|мошенни|взлом|хакер|угроз)",
    re.IGNORECASE,
)
LEAD_IN_RE = re.compile(
    r"(?:\blike|\bsuch as|\be\.g\.|\bfor example|\bfor instance|например|вроде|типа|вида)[\s:,]*$",
    re.IGNORECASE,
)
QUOTES = {'"': '"', "“": "”", "«": "»", "'": "'", "`": "`", "„": "“", "‘": "’"}
NEGATION_EN = re.compile(
    r"\b(?:never|don'?t|do not|does not|doesn'?t|must not|mustn'?t|should not|shouldn'?t|cannot|can'?t|"
    r"won'?t|no|"
    r"not|avoid|prohibited|forbidden|refuse to|disallow\w*)\b[^\n.;:!?]{0,25}$",
    re.IGNORECASE,
)
# "If the user asks you to ignore these rules, refuse": the instruction is reported, not given.
REPORTED_RE = re.compile(
    r"\b(?:asks?|asked|asking|tells?|told|telling|wants?|wanted|requests?|requested|instructs?|instructed|"
    r"tries|tried|trying|attempts?|attempted|urges?|urged|pushes|pressures?)\b (?:you |the (?:agent|"
    r"assistant|model|ai) |them |us |me )?to\s*$|(?:просит|просят|попросит|попросят|попросил|велит|велят|"
    r"требует|требуют|пытается|пытаются|предлагает)\w* "
    r"(?:тебя |агента |ассистента )?$",
    re.IGNORECASE,
)
DESTRUCTIVE_RE = re.compile(
    r"\b(?:delete|drop|wipe|rm -rf|destroy|truncate|purge|erase|transfer|refund|payout|grant|chmod 777|"
    r"disable|"
    r"deactivate|revoke|shutdown|format)\w*|(?:удали|удаля|сотри|уничтож|очисти|переведи|верни деньги|"
    r"отключи|выдай)\w*",
    re.IGNORECASE,
)
NEGATION_RU = re.compile(r"(?:^|\s)(?:не|нельзя|никогда|запрещено|запрещается|избегай)\s[^\n.;:!?]{0,25}$")

_R: list[Rule] = []

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
_R += [
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


_R += [
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

# --- tool hijack -----------------------------------------------------------------------------
_R += [
    rule(
        TOOL_HIJACK,
        "trigger_call",
        2,
        ("when", "whenever", "if", "each", "every", "anytime", "time", "soon"),
        r"\b(?:when(?:ever)?|if|each time|every time|any ?time|as soon as)\b"
        + W % 60
        + r"\b(?:asks?|asked|requests?|mentions?|mentioned|wants?|says?|queries|inquires?|comes? up)\b"
        + W % 80
        + r"\b(?:call|invoke|run|execute|use|trigger|fetch|open|visit|navigate to|load)\b"
        + W % 8
        + r"(?:the )?(?:`|\w+\(|\w+_\w+|tool|function|command|script|api|endpoint|webhook|url|link|"
        r"https?://|plugin|action)",
        agent_weight=1,
    ),
    rule(
        TOOL_HIJACK,
        "pipe_to_shell",
        1,
        (
            "curl",
            "wget",
            "iwr",
            "irm",
            "invoke",
            "iex",
            "bash",
            "sh",
            "zsh",
            "python",
            "python3",
            "downloadstring",
        ),
        r"\b(?:curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod)\b[^\n|;]{0,200}\|"
        r"\s*(?:sudo\s+)?(?:ba|z|da|k)?sh\b|\b(?:ba|z)?sh\s+-c\s+[\"']?\$\((?:curl|wget)\b|\b(?:iex|"
        r"invoke-expression)\b" + W % 40 + r"(?:iwr|irm|downloadstring|invoke-webrequest|net\.webclient)"
        r"|\bpython3?\s+-c\s+[\"'][^\n]{0,80}(?:urlopen|requests\.get)[^\n]{0,80}exec\(",
    ),
    rule(
        TOOL_HIJACK,
        "encoded_shell",
        2,
        ("base64", "powershell", "frombase64string", "enc", "encodedcommand"),
        r"\b(?:echo|printf)\s+[\"']?[A-Za-z0-9+/]{16,}={0,2}[\"']?\s*\|\s*base64\s+(?:-d|--decode)\s*\|"
        r"\s*(?:ba|z)?sh\b"
        r"|\bpowershell(?:\.exe)?\b" + W % 40 + r"\s-(?:e|enc|encodedcommand)\s+[A-Za-z0-9+/]{20,}"
        r"|frombase64string\(" + W % 200 + r"\b(?:iex|invoke-expression)\b",
    ),
    rule(
        TOOL_HIJACK,
        "add_key",
        2,
        ("ssh", "ecdsa", "authorized_keys", "authorized"),
        r"(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-nistp\d+)\s+aaaa[0-9a-z+/]{20,}"
        + W % 120
        + r"(?:>>|authorized_keys|tee)"
        r"|(?:>>|tee -a)\s*(?:~|\$HOME|/root|/home/\w+)?/?\.ssh/authorized_keys|\bauthorized_keys\b"
        + W % 80
        + r"(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-nistp\d+)\s+aaaa[0-9a-z+/]{20,}",
        discussable=False,
    ),
    rule(
        TOOL_HIJACK,
        "add_this_key",
        1,
        ("add", "trust", "whitelist", "allowlist", "approve"),
        r"\badd (?:this|the following|the below|my|our new) (?:ssh |public |deploy |gpg |pgp |api |"
        r"signing )?key\b"
        r"|\b(?:trust|whitelist|allowlist|approve) (?:this|the following) (?:key|certificate|cert|"
        r"signing key|fingerprint|ca)\b",
    ),
    rule(
        TOOL_HIJACK,
        "redirect_config",
        1,
        ("set", "change", "update", "replace", "point", "switch", "modify", "redirect", "route", "configure"),
        r"\b(?:set|change|update|replace|point|switch|modify|redirect|route|configure)\b"
        + W % 40
        + r"\b(?:webhook|callback|endpoint|base[ _-]?url|api[ _-]?url|remote|origin|proxy|recipient|payee|"
        r"beneficiary|"
        r"iban|bank (?:account|details)|account number|payment (?:details|address|account)|dns|mirror|"
        r"registry|"
        r"index-url|package index|upstream|update server|wallet)s?\b" + W % 60 + r"\b(?:to|with|at|so it)\b",
        negatable=True,
    ),
    rule(
        TOOL_HIJACK,
        "account_takeover",
        2,
        ("change", "reset", "set", "update", "invite", "add", "grant", "give", "make"),
        r"\b(?:change|reset|set|update)\b (?:the |a |their |his |her |the user'?s |my )?(?:user'?s |"
        r"account )?"
        r"(?:password|passcode|pin|recovery (?:e-?mail|phone)|2fa|mfa)\b" + W % 20 + r"\bto\b"
        r"|\b(?:invite|add)\b"
        + W % 40
        + EMAIL
        + W % 60
        + r"\b(?:workspace|channel|team|org|organi[sz]ation|repo|repository|project|group|admin)"
        r"|\b(?:grant|give|make)\b"
        + W % 30
        + EMAIL
        + W % 30
        + r"\b(?:admin|owner|write|full) (?:access|rights|role|permissions?)",
    ),
    rule(
        TOOL_HIJACK,
        "always_use_tool",
        1,
        ("always", "only"),
        r"\b(?:always|only)\b" + W % 20 + r"\b(?:use|call|run|invoke|route)\b" + W % 60 + r"\binstead of\b",
    ),
    rule(
        TOOL_HIJACK,
        "bypass_approval",
        1,
        ("instead", "bypass", "bypassing", "skip", "skipping", "without", "around"),
        r"\b(?:instead of|bypass\w*|skip\w*|without|around)\b (?:the |any |an |a )?(?:\w+ )?(?:approval|"
        r"sign-?off|"
        r"four-eyes|human (?:check|approval|review)|change management|review process)\b",
    ),
    # Russian
    rule(
        TOOL_HIJACK,
        "trigger_call",
        2,
        ("когда", "если", "каждый", "всякий"),
        r"(?:когда|если|каждый раз|всякий раз)"
        + W % 60
        + r"(?:спрос|попрос|упомян|упомин|запрос|захоч)\w*"
        + W % 80
        + r"(?:вызов|вызыва|запуст|выполн|используй|открой|перейди)\w*"
        + W % 12
        + r"(?:`|\w+\(|\w+_\w+|инструмент|функци|команд|скрипт|api|ссылк|https?://)",
        ru=True,
        agent_weight=1,
    ),
    rule(
        TOOL_HIJACK,
        "add_this_key",
        1,
        ("добавь", "доверяй"),
        r"добавь (?:этот|следующий|мой|наш) (?:ssh[- ]|публичный |открытый |deploy[- ])?ключ"
        r"|доверяй (?:этому|следующему) (?:ключу|сертификату)",
        ru=True,
    ),
    rule(
        TOOL_HIJACK,
        "redirect_config",
        1,
        ("смени", "замени", "измени", "обнови", "поменяй", "укажи", "перенаправь"),
        r"(?:смени|замени|измени|обнови|поменяй|укажи|перенаправь)\w*"
        + W % 40
        + r"(?:получател|реквизит|сч[её]т|iban|webhook|вебхук|адрес|endpoint|url|прокси|зеркал|"
        r"репозитори)\w*",
        ru=True,
        negatable=True,
    ),
    rule(
        TOOL_HIJACK,
        "account_takeover",
        2,
        ("смени", "измени", "сбрось", "поменяй", "пригласи", "добавь", "выдай", "дай", "сделай"),
        r"(?:смени|измени|сбрось|поменяй)\w* пароль" + W % 40 + r"\bна\b"
        r"|(?:пригласи|добавь)\w*"
        + W % 40
        + EMAIL
        + r"|(?:выдай|дай|сделай)\w*"
        + W % 40
        + r"(?:администратор|админ|владельц|полн\w+ доступ|права администратора)\w*",
        ru=True,
    ),
    rule(
        TOOL_HIJACK,
        "bypass_approval",
        1,
        ("вместо", "минуя", "обходя", "без"),
        r"(?:вместо|минуя|в обход|обходя|без) (?:\w+ )?(?:согласовани|одобрени)\w*",
        ru=True,
    ),
]

# --- persistence and self-replication --------------------------------------------------------
_MEMORY_TARGETS = (
    r"(?:agents\.md|claude\.md|soul\.md|user\.md|tools\.md|memory\.md|gemini\.md|\.cursorrules|"
    r"copilot-instructions\.md|\.windsurfrules|system prompt|your (?:memory|memories|instructions|rules|"
    r"notes|profile|system prompt|config\w*)|(?:the |your |long[- ]term |persistent |permanent )?memory\b|"
    r"memory files?|every (?:new |other |future |single )?(?:file|note|page|document|memory|response|reply|"
    r"answer|message|commit|pr|pull request|email|session|conversation|output)s?|all (?:other |new |"
    r"future |your )?(?:files|notes|pages|documents|memories|responses|replies|answers|messages|commits|"
    r"sessions|outputs|repos|repositories|agents)|each (?:file|note|response|reply|message|session|answer)|"
    r"the (?:user|employee|customer)'?s? profile|(?:other|all) agents'?|all future sessions)"
)
_R += [
    rule(
        PERSISTENCE,
        "copy_self",
        2,
        (
            "write",
            "add",
            "append",
            "insert",
            "copy",
            "save",
            "put",
            "include",
            "replicate",
            "propagate",
            "persist",
            "store",
            "paste",
            "inject",
            "spread",
            "duplicate",
            "embed",
            "prepend",
            "memorise",
            "memorize",
            "remember",
            "repeat",
        ),
        r"\b(?:write|add|append|insert|copy|save|put|include|replicate|propagate|persist|store|paste|"
        r"inject|spread|duplicate|embed|prepend|memori[sz]e|remember|repeat)\b"
        + W
        % 10
        + r"\b(?:this|these|the (?:following|above|same)|this exact|it|them|the (?:rule|line|instruction|"
        r"message|note|text|"
        r"block|paragraph|sentence)s?)\b"
        + W % 40
        + r"\b(?:in|into|to|on|at|across)\b"
        + W % 24
        + _MEMORY_TARGETS,
    ),
    rule(
        PERSISTENCE,
        "survive_removal",
        2,
        (
            "never",
            "don",
            "do",
            "must",
            "restore",
            "add",
            "put",
            "rewrite",
            "re",
            "recreate",
            "reinsert",
            "this",
            "these",
            "if",
        ),
        r"\b(?:never|don'?t|do not|must not)\b (?:remove|delete|erase|drop|edit|change|modify|forget)\b"
        + W % 10
        + r"\b(?:this|these) (?:rule|line|instruction|note|section|message|text|block)s?\b"
        r"|\b(?:restore|re-?add|re-?insert|re-?create|put back|add back|rewrite)\b"
        + W % 30
        + r"\b(?:this|these|it)\b"
        + W % 30
        + r"\bif\b"
        + W % 30
        + r"\b(?:removed|deleted|missing|gone|erased)\b"
        r"|\b(?:this|these) (?:rule|instruction|note)s? (?:must|should|will) (?:survive|persist|remain|"
        r"stay)\b|\bif\b"
        + W % 30
        + r"\b(?:remove[sd]?|delete[sd]?|erase[sd]?|drops?|edits?)\b (?:this|these|it)\b"
        + W % 30
        + r"\b(?:restore|re-?add|re-?insert|re-?create|put (?:it|them) back|add (?:it|them) back|rewrite)\b",
    ),
    rule(
        PERSISTENCE,
        "spread_to_agents",
        1,
        ("tell", "teach", "share", "pass", "forward", "inform", "future", "other", "agents"),
        r"\b(?:tell|teach|share with|pass (?:this )?(?:on )?to|forward (?:this )?to|inform)\b"
        + W % 20
        + r"\b(?:other|every|all|future) (?:agents|assistants|models|instances|sessions|conversations)\b"
        r"|\bfor all future (?:sessions|conversations)\b",
    ),
    # Russian
    rule(
        PERSISTENCE,
        "copy_self",
        2,
        (
            "запиши",
            "добавь",
            "добавляй",
            "скопируй",
            "копируй",
            "вставь",
            "вставляй",
            "сохрани",
            "допиши",
            "внеси",
            "продублируй",
            "распространи",
            "повтори",
            "повторяй",
            "запомни",
        ),
        r"(?:запиши|добавь|добавляй|скопируй|копируй|вставь|вставляй|сохрани|допиши|внеси|продублируй|"
        r"распространи|повтори|повторяй|запомни)"
        + W % 10
        + r"(?:это|эту|этот|эти|следующ\w+|данн\w+|вышеуказанн\w+|его|её|ее|их)"
        + W % 40
        + r"(?:\bв\b|\bво\b|\bна\b)"
        + W % 25
        + r"(?:agents\.md|claude\.md|soul\.md|user\.md|tools\.md|памят\w*|кажд\w+ (?:\w+ )?(?:файл|заметк|"
        r"ответ|"
        r"сообщени|документ|"
        r"сесси|коммит)\w*|все (?:файлы|заметки|ответы|сообщения|документы|сессии)|системн\w+ промпт|"
        r"профил\w*|"
        r"инструкци\w+|правил\w+ агент|всех (?:будущих|остальных|других) (?:сесси|агент)\w*)",
        ru=True,
    ),
    rule(
        PERSISTENCE,
        "survive_removal",
        2,
        ("удаляй", "стирай", "меняй", "убирай", "восстанови", "верни", "добавь"),
        r"(?:никогда не|не) (?:удаляй|стирай|меняй|убирай)"
        + W % 10
        + r"(?:это|эту|этот|эти) (?:правил|строк|инструкци|заметк|текст)\w*"
        r"|(?:восстанови|верни|добавь снова)"
        + W % 30
        + r"(?:если)"
        + W % 30
        + r"(?:удал|стер|пропад|исчез)\w*"
        r"|(?:если)"
        + W % 30
        + r"(?:удал|стер|пропад|исчез)\w*"
        + W % 10
        + r"(?:восстанови|верни|добавь снова)",
        ru=True,
    ),
    rule(
        PERSISTENCE,
        "spread_to_agents",
        1,
        ("передай", "сообщи", "расскажи", "будущих", "агентам", "агентов"),
        r"(?:передай|сообщи|расскажи)\w* (?:другим|всем) агентам|во всех будущих сесси\w*|"
        r"в памяти (?:всех|других|остальных) агент",
        ru=True,
    ),
]

# --- persona and policy hijack ---------------------------------------------------------------
_LIMITS = (
    r"(?:restrictions|limits|limitations|rules|filters|filtering|guidelines|boundaries|ethics|ethical \w+|"
    r"morals?|moral \w+|censorship|policies|constraints|safeguards|confines|guardrails|bounds)"
)
_R += [
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
_R += [
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

# Phrasings found by probing with new texts (not the corpora): the same families, other words.
_R += [
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
_R += [
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

_R += [
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
_R += [
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

RULES = tuple(_R)
