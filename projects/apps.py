from django.apps import AppConfig


class ProjectsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "projects"
    verbose_name = "Agent memory"

    def ready(self):
        # Django 6.1's blank choice of a select ("- Select an option -") has no Russian in
        # Django's own catalogue yet: the console's words, in its catalogue.
        from django.db.models import fields
        from django.utils.translation import gettext_lazy

        fields.BLANK_CHOICE_LABEL = gettext_lazy("- choose -")

        # Receivers: failed password sign-ins counted (Django's user_login_failed signal).
        from projects.governance import signin  # noqa: F401

        # Stores each provider sign-in's tokens in the session Django makes at login.
        from projects.sso import session  # noqa: F401
