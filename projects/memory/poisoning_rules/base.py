"""The vocabulary every family's rules share: families, Rule and rule(), windows, addresses,
send verbs and data, triggers, secrecy, addressing the AI, negation and reported speech.

Pure: no Django, no I/O."""

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
