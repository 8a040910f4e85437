"""The agent settings as forms: the injection manifest (ordered sections and a budget) and the
hook policy (write rules per path, tool and error logs), one row per section or rule.

Each editor turns itself into the stored dict (`value`), and
`manifest_initial`/`policy_initial` do the opposite, so the structured editor and the raw JSON
view read and write the same value. Each field is checked by its rule in the settings'
schemas (`runners.schemas`), with a short message at the field a person typed into; the value
the editor makes is then checked by the whole schema, as the hooks read it, and its message
shows above the rows.
"""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from projects.memory import layout
from projects.runners import injection, schemas
from projects.runners.policy import rule_how

# What the source box offers; any workspace/<glob>.md is allowed too.
SOURCE_SUGGESTIONS = (*injection.AGENT_SOURCES, injection.USER_SOURCE, "workspace/**.md")
APPROVAL_CHOICES = (("proposal", _("as a proposal (a person approves)")), ("direct", _("directly")))
MOVE_CHOICES = (("never", _("never")), ("proposal", _("as a proposal")), ("direct", _("directly")))
TRUST_CHOICES = (
    ("", _("by source (workspace: untrusted)")),
    ("trusted", _("trusted")),
    ("untrusted", _("untrusted: fenced as data")),
)
LANGUAGE_CHOICES = (("", _("the console's default")), ("en", "English"), ("ru", "Русский"))


class SectionForm(forms.Form):
    tag = forms.CharField(
        label=_("Tag"),
        max_length=50,
        widget=forms.TextInput(attrs={"class": "short", "autocomplete": "off", "spellcheck": "false"}),
    )
    source = forms.CharField(
        label=_("Source"),
        max_length=layout.MAX_PATH_CHARS,
        widget=forms.TextInput(
            attrs={"list": "manifest-sources", "autocomplete": "off", "spellcheck": "false"}
        ),
    )
    exclude = forms.CharField(
        label=_("Leave out"),
        required=False,
        max_length=2000,
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
    )
    max_tokens = forms.IntegerField(
        label=_("Token cap"),
        required=False,
        min_value=1,
        max_value=schemas.MAX_TOKENS,
        widget=forms.NumberInput(attrs={"class": "short"}),
    )
    trust = forms.ChoiceField(label=_("Trust"), choices=TRUST_CHOICES, required=False)

    def clean_exclude(self) -> list[str]:
        """Workspace globs, separated by spaces or commas, that a workspace section leaves out."""
        try:
            return schemas.exclude(self.cleaned_data["exclude"].replace(",", " ").split())
        except schemas.Invalid:
            raise ValidationError(
                _("Up to %(max)s workspace/<glob>.md, separated by spaces."),
                code="manifest_exclude",
                params={"max": schemas.MAX_EXCLUDES},
            ) from None

    def clean_tag(self) -> str:
        try:
            return schemas.tag(self.cleaned_data["tag"].strip())
        except schemas.Invalid:
            raise ValidationError(
                _("Lower-case letters, digits and _, starting with a letter (like agent_rules)."),
                code="manifest_tag",
            ) from None

    def clean_source(self) -> str:
        try:
            return schemas.source(self.cleaned_data["source"].strip())
        except schemas.Invalid:
            raise ValidationError(
                _("SOUL.md, AGENTS.md, TOOLS.md, USER.md or workspace/<path or glob>.md."),
                code="manifest_source",
            ) from None


class _SectionsBase(forms.BaseFormSet):
    def clean(self):
        if any(self.errors):
            return
        tags = set()
        kept = [f for f in self.forms if f.cleaned_data and not self._should_delete_form(f)]
        if not kept:
            raise ValidationError(_("Keep at least one section."), code="manifest_sections")
        if len(kept) > schemas.MAX_SECTIONS:
            raise ValidationError(
                _("At most %(max)s sections."), code="manifest_sections", params={"max": schemas.MAX_SECTIONS}
            )
        for form in kept:
            tag = form.cleaned_data["tag"]
            if tag in tags:
                form.add_error("tag", ValidationError(_("This tag is used twice."), code="manifest_tag"))
            tags.add(tag)


SectionFormSet = forms.formset_factory(
    SectionForm,
    formset=_SectionsBase,
    extra=1,
    can_order=True,
    can_delete=True,
    max_num=schemas.MAX_SECTIONS,
    validate_max=True,
    absolute_max=schemas.MAX_SECTIONS + 5,
)


class BudgetForm(forms.Form):
    total_tokens = forms.IntegerField(
        label=_("Total budget (tokens)"),
        required=False,
        min_value=1,
        max_value=schemas.MAX_TOKENS,
        help_text=_("Empty: no total budget. Over budget, the last sections give way first."),
        widget=forms.NumberInput(attrs={"class": "short"}),
    )
    preface = forms.CharField(
        label=_("Preface"),
        required=False,
        max_length=schemas.MAX_PREFACE,
        strip=False,
        help_text=_(
            "The prompt opens with it: what the memory is (records, not the operator's instructions). "
            "Empty: the default in the language below. A single dash (-): no preface."
        ),
        widget=forms.Textarea(attrs={"rows": 3}),
    )
    language = forms.ChoiceField(
        label=_("Language of the default preface"), choices=LANGUAGE_CHOICES, required=False
    )


class _Editor:
    """A setting edited as a formset and a form; valid when both are and its schema accepts
    the value they make (`check`), whose message then shows above the rows."""

    def __init__(self):
        self.errors: list[str] = []

    def parts(self) -> tuple:
        raise NotImplementedError

    def value(self) -> dict:
        raise NotImplementedError

    def check(self, value: dict) -> None:
        raise NotImplementedError

    def is_valid(self) -> bool:
        if not all([part.is_valid() for part in self.parts()]):  # every part: all errors shown
            return False
        try:
            self.check(self.value())
        except ValidationError as exc:
            self.errors = exc.messages
            return False
        return True


class ManifestEditor(_Editor):
    """The sections formset and the budget form, bound or not, as one editor."""

    prefix = "manifest"

    def __init__(self, data=None, *, manifest: dict | None = None):
        initial = manifest_initial(manifest or {})
        self.sections = SectionFormSet(data, prefix=f"{self.prefix}-sections", initial=initial["sections"])
        self.budget = BudgetForm(data, prefix=self.prefix, initial=initial["budget"])
        super().__init__()

    def parts(self) -> tuple:
        return self.sections, self.budget

    def check(self, value: dict) -> None:
        schemas.manifest(value)

    def value(self) -> dict:
        sections = []
        for form in self.sections.ordered_forms:
            data = form.cleaned_data
            section = {"tag": data["tag"], "source": data["source"]}
            if data.get("exclude"):
                section["exclude"] = data["exclude"]
            if data.get("max_tokens"):
                section["max_tokens"] = data["max_tokens"]
            if data.get("trust"):
                section["trust"] = data["trust"]
            sections.append(section)
        manifest = {"sections": sections}
        budget = self.budget.cleaned_data
        if budget.get("total_tokens"):
            manifest["total_tokens"] = budget["total_tokens"]
        preface = (budget.get("preface") or "").strip()
        if preface:
            manifest["preface"] = "" if preface == "-" else preface
        if budget.get("language"):
            manifest["language"] = budget["language"]
        return manifest


def manifest_initial(manifest: dict) -> dict:
    sections = [
        {
            "tag": s.get("tag", ""),
            "source": s.get("source", ""),
            "exclude": " ".join(g for g in s.get("exclude") or [] if isinstance(g, str)),
            "max_tokens": s.get("max_tokens"),
            "trust": s.get("trust") or "",
            "ORDER": index,
        }
        for index, s in enumerate(manifest.get("sections") or [], start=1)
        if isinstance(s, dict)
    ]
    preface = manifest.get("preface")
    budget = {
        "total_tokens": manifest.get("total_tokens"),
        "preface": "-" if preface == "" else preface or "",
        "language": manifest.get("language") or "",
    }
    return {"sections": sections, "budget": budget}


class _MoveField(forms.ChoiceField):
    """How a delete or a rename goes. Absent (a form from before they existed) is never, and
    an empty row left at never is an unchanged row."""

    def __init__(self, **kwargs):
        super().__init__(choices=MOVE_CHOICES, initial="never", required=False, **kwargs)

    def has_changed(self, initial, data) -> bool:
        return (initial or "never") != (data or "never")


class RuleForm(forms.Form):
    path = forms.CharField(
        label=_("File or workspace glob"),
        max_length=layout.MAX_PATH_CHARS,
        widget=forms.TextInput(
            attrs={"list": "manifest-sources", "autocomplete": "off", "spellcheck": "false"}
        ),
    )
    append = forms.BooleanField(label=_("append"), required=False)
    replace = forms.BooleanField(label=_("replace"), required=False)
    approval = forms.ChoiceField(label=_("Written"), choices=APPROVAL_CHOICES, initial="proposal")
    delete = _MoveField(label=_("delete"))
    rename = _MoveField(label=_("rename"))

    def clean_path(self) -> str:
        try:
            return schemas.target(self.cleaned_data["path"].strip())
        except schemas.Invalid:
            raise ValidationError(
                _("SOUL.md, AGENTS.md, TOOLS.md, USER.md or workspace/<path or glob>.md."),
                code="policy_target",
            ) from None

    def clean(self):
        data = super().clean()
        if not data.get("path"):
            return data
        try:
            schemas.rule(data["path"], rule_of(data))
        except schemas.Invalid as exc:
            if exc.key == "rule_rename":
                self.add_error(
                    "rename", ValidationError(_("Only workspace files can be renamed."), code="policy_rule")
                )
            else:  # it allows nothing
                raise ValidationError(
                    _("Allow append, replace, delete or rename."), code="policy_rule"
                ) from None
        return data


class _RulesBase(forms.BaseFormSet):
    def clean(self):
        if any(self.errors):
            return
        paths = set()
        for form in self.forms:
            if not form.cleaned_data or self._should_delete_form(form):
                continue
            path = form.cleaned_data["path"]  # add_error takes it out of cleaned_data
            if path in paths:
                form.add_error(
                    "path", ValidationError(_("This path has a rule already."), code="policy_target")
                )
            paths.add(path)


RuleFormSet = forms.formset_factory(
    RuleForm,
    formset=_RulesBase,
    extra=1,
    can_delete=True,
    max_num=schemas.MAX_RULES,
    validate_max=True,
    absolute_max=schemas.MAX_RULES + 10,
)


class LogsForm(forms.Form):
    tool_log = forms.CharField(
        label=_("Tool calls are logged to"),
        required=False,
        max_length=layout.MAX_PATH_CHARS,
        help_text=_("A workspace/ path; empty: not logged."),
    )
    error_log = forms.CharField(
        label=_("Errors are logged to"),
        required=False,
        max_length=layout.MAX_PATH_CHARS,
        help_text=_("A workspace/ path; empty: not logged."),
    )

    def _log(self, name: str) -> str:
        value = self.cleaned_data[name].strip()
        if not value:
            return ""
        try:
            return schemas.log(value)
        except schemas.Invalid as exc:
            if exc.error is not None:  # what is wrong with the path, as the layout says it
                raise exc.error from None
            raise ValidationError(_("Start the path with workspace/."), code="policy_log") from None

    def clean_tool_log(self) -> str:
        return self._log("tool_log")

    def clean_error_log(self) -> str:
        return self._log("error_log")


class PolicyEditor(_Editor):
    prefix = "policy"

    def __init__(self, data=None, *, policy: dict | None = None):
        initial = policy_initial(policy or {})
        self.rules = RuleFormSet(data, prefix=f"{self.prefix}-rules", initial=initial["rules"])
        self.logs = LogsForm(data, prefix=self.prefix, initial=initial["logs"])
        super().__init__()

    def parts(self) -> tuple:
        return self.rules, self.logs

    def check(self, value: dict) -> None:
        schemas.policy(value)

    def value(self) -> dict:
        post = {}
        for form in self.rules.forms:
            data = form.cleaned_data
            if not data or self.rules._should_delete_form(form) or not data.get("path"):
                continue
            post[data["path"]] = rule_of(data)
        logs = self.logs.cleaned_data
        return {
            "post": post,
            "tool": {"log": logs["tool_log"]} if logs["tool_log"] else {},
            "error": {"log": logs["error_log"]} if logs["error_log"] else {},
        }


def rule_of(data: dict) -> dict:
    """The write rule a row of the policy editor makes."""
    rule = {
        "modes": [m for m in schemas.CONTENT_MODES if data.get(m)],
        "approval": data.get("approval") == "proposal",
    }
    # Kept out of the rule when never: a rule reads as it did before they existed.
    rule.update({m: data[m] for m in schemas.MOVE_MODES if data.get(m) in ("direct", "proposal")})
    return rule


def policy_initial(policy: dict) -> dict:
    rules = []
    for path, rule in (policy.get("post") or {}).items():
        if not isinstance(rule, dict):
            continue
        modes = rule.get("modes") or []
        rules.append(
            {
                "path": path,
                "append": "append" in modes,
                "replace": "replace" in modes,
                "approval": "proposal" if rule.get("approval", False) else "direct",
                **{m: rule_how(rule, m) or "never" for m in schemas.MOVE_MODES},
            }
        )
    return {
        "rules": rules,
        "logs": {
            "tool_log": (policy.get("tool") or {}).get("log", ""),
            "error_log": (policy.get("error") or {}).get("log", ""),
        },
    }
