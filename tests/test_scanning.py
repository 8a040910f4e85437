"""The scanner on a labelled sample: each line says which kinds it really holds."""

import pytest

from projects.memory import scanning

pytestmark = pytest.mark.db_independent

# (text, kinds it really contains). Negatives are the look-alikes memory files are full of:
# dates, versions, ticket numbers, hashes, amounts, card-shaped numbers that fail Luhn.
SAMPLE = [
    ("Contact maria.ivanova@example.com about the tender.", {"email"}),
    ("Escalate to ops-team+night@corp.example.ru if the job fails.", {"email"}),
    ("Phone: +7 (916) 123-45-67, evenings only.", {"phone"}),
    ("Call 8 916 123 45 67 before 10:00.", {"phone"}),
    ("US office: 415-555-0132.", {"phone"}),
    ("Reach him on +442071838750.", {"phone"}),
    ("Paid with card 4111 1111 1111 1111 last time.", {"card"}),
    ("Corporate card 5500-0000-0000-0004 is for travel.", {"card"}),
    ("Passport 45 08 123456 issued 2011.", {"passport"}),
    ("паспорт серия 4508 № 654321", {"passport"}),
    ("Her passport number is C03005988.", {"passport"}),
    ("AWS key AKIAIOSFODNN7EXAMPLE was rotated.", {"api_key"}),
    ("Use ghp_1234567890abcdefghijklmnopqrstuvwxyzAB for the mirror.", {"api_key"}),
    ("OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx12345", {"api_key"}),
    ("token: 8f2c1e9a7b6d5c4e3f2a1b0c9d8e7f6a", {"api_key"}),
    (
        "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        {"api_key"},
    ),
    ("-----BEGIN RSA PRIVATE KEY-----", {"api_key"}),
    ("The VPN password: Spring2026!", {"password"}),
    ("пароль — qwerty123", {"password"}),
    ("Write to ivan@example.org, phone +1 (212) 555-0199.", {"email", "phone"}),
    ("Mobile +49 151 23456789, Moscow +7 (912) 345-67-89.", {"phone"}),
    # Negatives
    ("Released 2026-12-03 as version 1.14.6.", set()),
    ("Incident INC-2026-004512 closed at 2026-11-30 14:05.", set()),
    ("Order 1234567812345678 was cancelled.", set()),  # fails Luhn
    ("Commit 8bc518b7e2a1f0c9d3e4b5a6978812345abcdef0 fixed it.", set()),
    ("Tender budget: 12 500 000 RUB, deadline 15.01.2027.", set()),
    ("Session 3f6c2d1e-8a7b-4c9d-9e0f-1a2b3c4d5e6f ended.", set()),
    ("The password policy requires 12 characters.", set()),
    ("Ask for the token rotation schedule.", set()),
    ("Use the @here mention in #ops, not e-mail.", set()),
    ("Section 4.2.1 of ISO 27001 applies.", set()),
    ("Between 09:00 and 18:00, 5 days a week.", set()),
    ("IP 10.20.30.40 is the runner's address.", set()),
    ("Temperature reached 1 000 000 degrees in the model.", set()),
    ("Run `pip install django==6.1.3` first.", set()),
    ("Page 0000 0000 0000 0000 of the template is blank.", set()),
]


# Phone numbers as people write them, one per line, and the numbers that must not pass for one.
PHONES = [
    "Phone: +7 (916) 123-45-67, evenings only.",
    "Her number is +7 (912) 345-67-89.",
    "Write +7 912 345 67 89 on the form.",
    "Alt: +7-916-123-45-67.",
    "+7 495 123 45 67 is the switchboard.",
    "Call 8 916 123 45 67 before 10:00.",
    "Backup 8 (912) 345-67-89.",
    "Moscow office 8-495-123-45-67.",
    "Call 8 800 555 35 35 (free).",
    "тел. 89161234567, спросить Ивана.",
    "Mobile +49 151 23456789 (Berlin).",
    "Number: +49-151-23456789.",
    "From abroad: 0049 151 2345 6789.",
    "Intl 00 44 20 7183 8750.",
    "Dial +44 20 7183 8750 for the London desk.",
    "Reach him on +442071838750.",
    "Paris office +33 1 42 68 53 00.",
    "Milan +39 02 1234 5678.",
    "Madrid +34 912 345 678.",
    "Amsterdam +31 20 123 4567.",
    "Kyiv +380 44 123 4567.",
    "Shanghai +86 138 0013 8000 handles it.",
    "Tokyo +81 3-1234-5678.",
    "Fax +1.212.555.0199 is still listed.",
    "Call +1 (415) 555-0132 tomorrow.",
    "Emergency contact: +1 212 555 0199.",
    "US office: 415-555-0132.",
    "Desk (212) 555-0199 ext. 4.",
    "New York 212.555.0199.",
    "Berlin landline 030 12345678.",
    "Berlin office +49 30 901820 (a short landline: two, two, six digits).",
    "Mobile: 07911 123456 (UK).",
]
NOT_PHONES = [
    "Released 2026-12-03 as version 1.14.6.",
    "Version 10.2.3.4567 shipped.",
    "Build 2026.12.03.1452 passed.",
    "Dates 03.12.2026 - 15.01.2027.",
    "Period 2026-12-01 to 2026-12-31.",
    "Between 09:00 and 18:00, 5 days a week.",
    "Incident INC-2026-004512 closed at 2026-11-30 14:05.",
    "Order 1234567812345678 was cancelled.",
    "Order #4512-7781-2290 shipped.",
    "Order id 20261203-000451.",
    "Invoice 2026/12/000123 is overdue.",
    "Ticket 123-456-789 reopened.",
    "Serial 1234 5678 9012.",
    "ISBN 978-3-16-148410-0 is cited.",
    "IP 10.20.30.40 is the runner's address.",
    "Host 192.168.100.200 and 172.16.254.1 are internal.",
    "Tender budget: 12 500 000 RUB, deadline 15.01.2027.",
    "Budget $1,250,000.00 approved.",
    "Amount 1 234 567,89 ₽ paid.",
    "Paid 2 500 000 руб. in Q3.",
    "Population 146 150 789 people.",
    "Timestamp 1733212800 in logs.",
    "Coordinates 55.7558, 37.6173.",
    "Measured 3.14159 265358.",
    "Scores 12-15-18-20-22 in rounds.",
    "Port 8080, 8443 and 9000 are open.",
    "Card ending 0004, expiry 12/28.",
    "Section 4.2.1 of ISO 27001 applies.",
]


def _kinds(text):
    return {finding.kind for finding in scanning.scan(text)}


def _precision_recall(sample) -> tuple[float, float, list]:
    true_pos = false_pos = false_neg = 0
    wrong = []
    for text, expected in sample:
        found = _kinds(text)
        true_pos += len(found & expected)
        false_pos += len(found - expected)
        false_neg += len(expected - found)
        if found != expected:
            wrong.append((text, found, expected))
    precision = true_pos / (true_pos + false_pos) if true_pos + false_pos else 0.0
    recall = true_pos / (true_pos + false_neg) if true_pos + false_neg else 0.0
    return precision, recall, wrong


def test_precision_and_recall_on_the_labelled_sample():
    precision, recall, wrong = _precision_recall(SAMPLE)
    print(f"scanner: precision {precision:.2f}, recall {recall:.2f} on {len(SAMPLE)} lines")
    assert precision >= 0.95, wrong
    assert recall >= 0.95, wrong


def test_phone_precision_and_recall_on_international_and_national_forms():
    sample = [(text, {"phone"}) for text in PHONES] + [(text, set()) for text in NOT_PHONES]
    precision, recall, wrong = _precision_recall(sample)
    print(
        f"phones: precision {precision:.2f}, recall {recall:.2f} on {len(PHONES)} numbers "
        f"and {len(NOT_PHONES)} look-alikes"
    )
    assert precision >= 0.95, wrong
    assert recall >= 0.95, wrong


@pytest.mark.parametrize("text", PHONES)
def test_each_phone_is_found_whole(text):
    [finding] = scanning.scan(text)
    assert finding.kind == "phone"
    # The finding starts where the number starts: "+", "(" or the first digit, never inside.
    start = finding.column - 1
    assert text[start] in "+(0123456789" and (start == 0 or not text[start - 1].isalnum())


@pytest.mark.parametrize("text", NOT_PHONES)
def test_look_alikes_are_not_phones(text):
    assert "phone" not in _kinds(text)


@pytest.mark.parametrize(
    "formats",
    [
        [
            "+7 (912) 345-67-89",
            "+7 912 345 67 89",
            "8 (912) 345-67-89",
            "8-912-345-67-89",
            "89123456789",
            "+79123456789",
        ],
        ["+49 151 23456789", "+49-151-23456789", "0049 151 2345 6789", "+49 (151) 234 567 89"],
        ["+1 (212) 555-0199", "(212) 555-0199", "212-555-0199", "+1.212.555.0199"],
    ],
)
def test_one_number_masks_alike_in_every_format(formats):
    masks = {scanning.scan(f"call {text} now")[0].excerpt for text in formats}
    assert len(masks) == 1, masks


def test_masks_have_one_balanced_shape_for_every_kind():
    text = (
        "+7 (912) 345-67-89 | (212) 555-0199 | maria.ivanova@example.com | "
        "4111 1111 1111 1111 | Passport 45 08 123456 | AKIAIOSFODNN7EXAMPLE | "
        "password: Spring2026!"
    )
    findings = scanning.scan(text)
    assert {f.kind for f in findings} == {"phone", "email", "card", "passport", "api_key", "password"}
    for finding in findings:
        excerpt = finding.excerpt
        # Eight dots, whatever the length of what they hide; nothing of the original's
        # punctuation, so no bracket is left without its pair.
        assert excerpt.count("•") == 8, finding
        assert not set(excerpt) & set("()[]{}<>+-. @"), finding
        assert len(excerpt) in (8, 10, 12), finding
    assert {f.kind: f.excerpt for f in findings}["password"] == "••••••••"


@pytest.mark.parametrize("text, expected", SAMPLE)
def test_each_labelled_line(text, expected):
    assert _kinds(text) == expected


def test_findings_carry_position_and_a_masked_excerpt_never_the_value():
    text = "line one\nkey AKIAIOSFODNN7EXAMPLE here"
    [finding] = scanning.scan(text)
    assert (finding.kind, finding.line, finding.column) == ("api_key", 2, 5)
    assert "IOSFODNN7EXAMP" not in finding.excerpt
    assert finding.excerpt.startswith("AK") and finding.excerpt.endswith("LE")


def test_luhn():
    assert scanning.luhn_ok("4111111111111111")
    assert not scanning.luhn_ok("4111111111111112")


def test_summary_counts_kinds():
    findings = scanning.scan("a@example.com b@example.com password: hunter22")
    assert scanning.summary(findings) == "2 e-mail addresses, 1 password"


@pytest.mark.parametrize(
    "text,kind",
    [
        ("ſecret: abcdefghijklmnop1234", scanning.API_KEY),  # the long s folds to "s"
        ("api_\u212aey=abcdefghijklmnop1234", scanning.API_KEY),  # the Kelvin sign folds to "k"
        ("PAſſWORD: hunter22", scanning.PASSWORD),
    ],
)
def test_keywords_spelled_with_letters_that_fold_to_ascii_are_found(text, kind):
    # The scan skips a case-insensitive pattern when its keyword is not in the lowercased
    # text; lower() does not fold these letters, so a text beyond ASCII is always searched.
    assert [finding.kind for finding in scanning.scan(text)] == [kind]


def test_a_long_text_without_any_pattern_s_string_still_finds_what_is_in_it():
    plain = "- the nightly export finished; 1,204 rows checked, none rejected.\n" * 1000
    assert scanning.scan(plain) == []
    text = plain + "token: ghp_" + "a1" * 20 + "\nwrite to ops@example.com\n"
    assert [finding.kind for finding in scanning.scan(text)] == [scanning.API_KEY, scanning.EMAIL]
