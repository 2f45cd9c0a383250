"""A view's field says what it means where it is defined.

The views of this package are the one definition of each answer: the people's API publishes
them as they are (``app.api.models`` builds its schema from their fields), so a field is
added, typed, defaulted and described in one place. The description rides in the dataclass
field's metadata, which plain dataclasses carry without knowing any schema library.
"""

from __future__ import annotations

from collections.abc import Mapping

#: The metadata key a view's field keeps its description under.
DESCRIPTION = "description"


def described(text: str) -> Mapping[str, str]:
    """``field(metadata=described("..."))``: the sentence a reader of the API sees."""
    return {DESCRIPTION: text}
