"""The demo's mailbox: mails printed on the console as a person reads them.

Django's console backend prints the MIME form, where a Russian mail's body is base64 and its
set-password link cannot be read or copied; this prints the headers that matter and the text.
"""

from django.core.mail.backends import console


class ReadableConsoleBackend(console.EmailBackend):
    def write_message(self, message):
        self.stream.write(
            f"Mail to {', '.join(message.to)}: {message.subject}\n\n{message.body}\n{'-' * 79}\n"
        )
