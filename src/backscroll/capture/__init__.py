"""Capture of coding agents' transcripts (Claude Code, Codex) into the session log.

The format modules (:mod:`~backscroll.capture.claude_code`, :mod:`~backscroll.capture.codex`) map
transcript lines to wire records; :mod:`~backscroll.capture.progress` remembers how far each
transcript was captured, so ``backscroll import``, the Claude Code hook (``backscroll capture``) and
``backscroll watch`` continue one another without a gap or a duplicate.
"""
