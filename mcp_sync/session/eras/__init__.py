"""The protocol eras: how a request is framed and checked in each.

``contract`` is the ``Era`` interface; ``handshake`` implements it for the
revisions with an ``initialize`` handshake, ``modern`` for 2026-07-28
(``server/discover``, ``_meta`` on every request); ``negotiation`` chooses
and constructs one for a new session (``race`` holds the attempts its
``auto`` race waits on). Only these modules know which era a
session speaks. They import the session's contracts and machinery, never
``session.core``.
"""
