"""Bill Assistant: explains bank bills with exact numbers."""

from app.domain import lexicon as _lexicon


def _understood() -> _lexicon.Lexicon:
    # The pure domain reads no files: the locale folders hand it their words (app/locales.py), read
    # when a question is first understood, whichever entry point the process came in by.
    from app import locales

    return locales.understood()


_lexicon.provide(_understood)
