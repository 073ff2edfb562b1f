"""The exception hierarchy of unerase.

Every error carries an HTTP status and a message that names the bad value and says what is
accepted, so the web layer can map it to problem+json and the CLI can print it as is.
"""

from __future__ import annotations


class UneraseError(Exception):
    """Base class of every error unerase raises on purpose."""

    status: int = 400
    code: str = "unerase-error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class VocabularyError(UneraseError):
    """A vocabulary file is missing, malformed or invalid."""

    status = 422
    code = "invalid-vocabulary"

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(where + message)
        self.path = path
        self.line = line
        self.reason = message


class ImportFormatError(VocabularyError):
    """A file given to an importer does not have the expected shape."""

    code = "invalid-import"


class UnsupportedLanguage(UneraseError):
    status = 422
    code = "unsupported-language"


class LanguageNotDetected(UneraseError):
    status = 422
    code = "language-not-detected"


class InvalidText(UneraseError):
    status = 422
    code = "invalid-text"


class InputTooLarge(UneraseError):
    status = 413
    code = "input-too-large"


class BackendUnavailable(UneraseError):
    """An optional backend (Stanza models, an LLM) is not installed or not configured."""

    status = 503
    code = "backend-unavailable"


class LLMUnavailable(UneraseError):
    """The configured language model cannot be reached or loaded."""

    status = 503
    code = "llm-unavailable"
