"""Settings read from the environment before Surprise is imported.

Importing this module (``dprec/__init__.py`` does, first) checks them.
"""

from __future__ import annotations

import os
import warnings


def check_surprise_data_folder() -> str | None:
    """Drop an unusable ``SURPRISE_DATA_FOLDER``, with a warning naming it; returns what
    was dropped and why (`IGNORED`), or ``None``.

    Surprise creates ``$SURPRISE_DATA_FOLDER`` when it is first imported and
    crashes there (``FileNotFoundError: ''``) on an empty value or one it
    cannot create, before any of dprec's code could explain.  Such a value is
    removed from the environment, so Surprise falls back to
    ``~/.surprise_data`` and dprec's loaders say what they looked for, in the
    warning's words.
    """
    folder = os.environ.get("SURPRISE_DATA_FOLDER")
    if folder is None:
        return None
    problem = None
    if not folder.strip():
        problem = "is empty"
    else:
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as error:
            problem = f"cannot be used ({error.strerror or error})"
    if problem is None:
        return None
    del os.environ["SURPRISE_DATA_FOLDER"]
    ignored = f"SURPRISE_DATA_FOLDER={folder!r} {problem}: ignored, so Surprise uses " \
        "~/.surprise_data"
    warnings.warn(f"{ignored}. Point it at the folder that holds ml-100k/ (dprec never "
                  "downloads data), or unset it.", UserWarning, stacklevel=3)
    return ignored


#: The unusable ``SURPRISE_DATA_FOLDER`` dropped at import, and why (``None``: none was):
#: what the loaders' messages say instead of "not set"
IGNORED: str | None = check_surprise_data_folder()
