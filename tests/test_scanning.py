"""The scanner on a labelled sample: each line says which kinds it really holds."""

import pytest

from projects.memory import scanning

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
    ("Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
     {"api_key"}),
    ("-----BEGIN RSA PRIVATE KEY-----", {"api_key"}),
    ("The VPN password: Spring2026!", {"password"}),
    ("пароль — qwerty123", {"password"}),
    ("Write to ivan@example.org, phone +1 (212) 555-0199.", {"email", "phone"}),
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


def _kinds(text):
    return {finding.kind for finding in scanning.scan(text)}


def test_precision_and_recall_on_the_labelled_sample():
    true_pos = false_pos = false_neg = 0
    wrong = []
    for text, expected in SAMPLE:
        found = _kinds(text)
        true_pos += len(found & expected)
        false_pos += len(found - expected)
        false_neg += len(expected - found)
        if found != expected:
            wrong.append((text, found, expected))
    precision = true_pos / (true_pos + false_pos)
    recall = true_pos / (true_pos + false_neg)
    print(f"scanner: precision {precision:.2f}, recall {recall:.2f} on {len(SAMPLE)} lines")
    assert precision >= 0.95, wrong
    assert recall >= 0.9, wrong


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
