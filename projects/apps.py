from django.apps import AppConfig


class ProjectsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "projects"
    verbose_name = "Agent memory"

    def ready(self):
        # Receivers: failed password sign-ins counted (Django's user_login_failed signal).
        from projects.governance import signin  # noqa: F401

        # Stores each provider sign-in's tokens in the session Django makes at login.
        from projects.sso import session  # noqa: F401
