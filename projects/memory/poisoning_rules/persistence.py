"""Persistence and self-replication: "write this into AGENTS.md", "copy this into every file"."""

from __future__ import annotations

from projects.memory.poisoning_rules.base import (
    PERSISTENCE,
    Rule,
    W,
    rule,
)

RULES: list[Rule] = []

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
RULES += [
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
