"""Demo memory: three projects whose agents analyse incidents, prepare tenders (in Russian)
and write daily project reports. Each workspace file lists its revisions oldest first."""

INCIDENTS = {
    "slug": "incident-analysis",
    "name": "Incident analysis",
    "description": "Post-incident analysis for the payments platform: timelines, root causes, "
    "follow-up actions.",
    "agent": {
        "slug": "incident-analyst",
        "name": "Incident analyst",
        "description": "Reads alerts and chat logs, drafts post-mortems.",
        "SOUL.md": """# Identity

You are **Incident Analyst**, the on-call team's calm, precise colleague.

- You write blameless post-mortems: systems fail, people are not blamed.
- You separate facts (with timestamps and sources) from hypotheses.
- You prefer short sentences and UTC times.
""",
        "AGENTS.md": """# Rules

1. Every timeline entry cites its source (alert id, chat link or log query).
2. Never paste customer card numbers or personal data into a post-mortem.
3. Root cause sections list contributing factors, not a single culprit.
4. When severity is SEV1, notify the incident commander before publishing.
""",
        "TOOLS.md": """# Tools

## grafana_query
Use for latency and error-rate graphs. Always give the time range in UTC.

## pagerduty_incident
Read-only. Fetch the incident's alerts and acknowledgements.

## wiki_publish
Publishes a draft to the post-mortem space. Drafts only; a person approves.
""",
    },
    "profiles": {
        "employee": """# Profile: Employee

- Role: site reliability engineer, payments platform.
- Prefers post-mortems as bullet points, with a one-paragraph summary first.
- Time zone: Europe/Berlin; report times in UTC with local time in brackets.
""",
        "ivan.petrov": """# Профиль: Иван Петров

- Роль: руководитель дежурной смены.
- Предпочитает отчёты на русском языке, краткие, с таблицей хронологии.
- Часовой пояс: Europe/Moscow.
""",
    },
    "workspace": {
        "incidents/2026-11-28-card-auth-latency.md": [
            """# 2026-11-28 Card authorisation latency

- 09:12 UTC p99 latency of /authorize rose from 180 ms to 2.4 s (alert PAY-4411).
""",
            """# 2026-11-28 Card authorisation latency

- 09:12 UTC p99 latency of /authorize rose from 180 ms to 2.4 s (alert PAY-4411).
- 09:20 UTC connection pool to the fraud-scoring service saturated (grafana: pool_in_use).
- 09:41 UTC pool size raised from 50 to 120; latency back to normal by 09:47.
""",
            """# 2026-11-28 Card authorisation latency

- 09:12 UTC p99 latency of /authorize rose from 180 ms to 2.4 s (alert PAY-4411).
- 09:20 UTC connection pool to the fraud-scoring service saturated (grafana: pool_in_use).
- 09:41 UTC pool size raised from 50 to 120; latency back to normal by 09:47.

## Contributing factors
- A fraud-model release doubled scoring time per request.
- The pool size had not been revisited since 2024.

## Follow-ups
- [ ] Alert on pool saturation above 80 % for 5 minutes.
- [ ] Load-test fraud-model releases before rollout.
""",
        ],
        "decisions/pool-sizing.md": [
            """# Decision: connection pool sizing

Pools to downstream services are sized from measured p99 latency x peak RPS, plus 30 %.
""",
            """# Decision: connection pool sizing

Pools to downstream services are sized from measured p99 latency x peak RPS, plus 30 %.
Reviewed quarterly by the owning team (agreed 2026-11-29).
""",
        ],
    },
}

TENDERS = {
    "slug": "tenders",
    "name": "Подготовка тендеров",
    "description": "Подготовка заявок на тендеры по 44-ФЗ и 223-ФЗ: анализ документации, расчёт цены, сроки.",
    "agent": {
        "slug": "tender-writer",
        "name": "Тендерный помощник",
        "description": "Разбирает тендерную документацию и готовит черновики заявок.",
        "SOUL.md": """# Кто ты

Ты — **Тендерный помощник** отдела продаж. Ты аккуратен, формален и точен в цифрах.

- Пишешь на русском, деловым стилем, без канцелярских излишеств.
- Всегда указываешь номер закупки и ссылку на пункт документации.
""",
        "AGENTS.md": """# Правила

1. Сроки подачи заявки проверяй по извещению, а не по письмам заказчика.
2. Цену не предлагай ниже себестоимости плюс 12 %, без согласования с руководителем.
3. Обеспечение заявки и контракта считай отдельно и выделяй в таблице.
4. Персональные данные сотрудников в заявку не включай.
""",
        "TOOLS.md": """# Инструменты

## eis_search
Поиск закупок в ЕИС по номеру или ключевым словам. Только чтение.

## price_calculator
Расчёт цены по шаблону отдела. Входные данные: себестоимость, наценка, НДС.
""",
    },
    "profiles": {
        "employee": """# Профиль: сотрудник

- Роль: менеджер по тендерам.
- Предпочитает сводку по закупке в виде таблицы: номер, НМЦК, срок подачи, обеспечение.
""",
        "ivan.petrov": """# Профиль: Иван Петров

- Согласует цены по крупным закупкам (НМЦК свыше 10 млн ₽).
- Просит напоминать о сроках за 3 рабочих дня.
""",
    },
    "workspace": {
        "закупки/0373100000126000123.md": [
            """# Закупка 0373100000126000123

- Предмет: поставка серверного оборудования.
- НМЦК: 18 400 000 ₽.
""",
            """# Закупка 0373100000126000123

- Предмет: поставка серверного оборудования.
- НМЦК: 18 400 000 ₽.
- Срок подачи заявок: 2026-12-10 09:00 (МСК).
- Обеспечение заявки: 1 % НМЦК (184 000 ₽).

| Этап | Ответственный | Срок |
|---|---|---|
| Расчёт цены | Иван Петров | 2026-12-04 |
| Сбор документов | менеджер | 2026-12-07 |
""",
        ],
        "решения/минимальная-наценка.md": [
            """# Решение: минимальная наценка

Минимальная наценка — 12 % к себестоимости (протокол совещания от 2026-11-20).
""",
        ],
    },
}

DAILY = {
    "slug": "daily-reports",
    "name": "Daily project reports",
    "description": "End-of-day reports for the data-platform migration, in English and Russian.",
    "agent": {
        "slug": "daily-reporter",
        "name": "Daily reporter",
        "description": "Collects ticket updates and writes the evening report.",
        "SOUL.md": """# Identity

You are **Daily Reporter**. Each evening you turn the day's tickets and commits into a short
report that a busy manager reads in two minutes.

Ты пишешь отчёт на языке получателя: русском или английском.
""",
        "AGENTS.md": """# Rules

1. Three sections only: Done, Blocked, Tomorrow.
2. Mention people by role, not by name, in reports that leave the team.
3. Link every item to its ticket.
""",
        "TOOLS.md": """# Tools

## jira_search
JQL search over the MIGR project. Read-only.

## git_log
Commits merged today on main, per repository.
""",
    },
    "profiles": {
        "employee": """# Profile: Employee

- Receives the report at 18:00 local time, in English.
- Wants blocked items first when there are any.
""",
        "anna.smirnova": """# Профиль: Анна Смирнова

- Руководитель проекта миграции.
- Получает отчёт на русском; важны риски и сроки.
""",
    },
    "workspace": {
        "reports/2026-11-30.md": [
            """# Report 2026-11-30

## Done
- MIGR-210 orders table migrated to the new cluster.
""",
            """# Report 2026-11-30

## Done
- MIGR-210 orders table migrated to the new cluster.
- MIGR-214 nightly backup verified by a restore test.

## Blocked
- MIGR-219 waiting for firewall change FW-88.

## Tomorrow
- MIGR-220 cut over read replicas.
""",
        ],
        "reports/2026-12-01.md": [
            """# Отчёт 2026-12-01

## Сделано
- MIGR-219 правило FW-88 применено, репликация запущена.

## Блокеры
- Нет.

## Завтра
- MIGR-220 переключение реплик на чтение.
""",
        ],
    },
}

PROJECTS = [INCIDENTS, TENDERS, DAILY]

# username -> (first name, last name, role per project slug); admin is a superuser.
PEOPLE = {
    "compliance": (
        "Olga",
        "Kuznetsova",
        {"incident-analysis": "compliance", "tenders": "compliance", "daily-reports": "compliance"},
    ),
    "employee": (
        "Alex",
        "Morgan",
        {"incident-analysis": "employee", "tenders": "employee", "daily-reports": "employee"},
    ),
    "ivan.petrov": ("Иван", "Петров", {"incident-analysis": "employee", "tenders": "employee"}),
    "anna.smirnova": ("Анна", "Смирнова", {"daily-reports": "employee"}),
}
