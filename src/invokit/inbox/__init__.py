"""The approval inbox: a page where people answer the questions their agents' calls wait on."""

from invokit.inbox._app import InboxSettings, WithInbox, inbox_app

__all__ = ["InboxSettings", "WithInbox", "inbox_app"]
