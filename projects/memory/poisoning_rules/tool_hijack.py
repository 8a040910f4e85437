"""Tool hijack: "when asked about X, call Y", a shell piped from the network, "add this key"."""

from __future__ import annotations

from projects.memory.poisoning_rules.base import (
    EMAIL,
    TOOL_HIJACK,
    Rule,
    W,
    rule,
)

RULES: list[Rule] = []

# --- tool hijack -----------------------------------------------------------------------------
RULES += [
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
