"""Node scores as one array in the order the nodes were asked for."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


class NodeScoreArray(Mapping[str, float]):
    """A batch node-order answer that keeps its scores as a float64 array beside the names.

    The session adds such an answer to its running total with one array addition when the
    names are the nodes it asked about, in that order, so no per-node dict is built on the
    hot path (thousands of nodes a request). Read as a mapping it is the same answer as the
    dict the scalar path returns; the dict is built only when somebody reads it that way.
    """

    __slots__ = ("_dict", "names", "scores")

    def __init__(self, names: list[str], scores: FloatArray) -> None:
        if len(names) != len(scores):
            raise ValueError(f"{len(names)} node names but {len(scores)} scores")
        self.names = names
        self.scores = np.asarray(scores, dtype=np.float64)
        self._dict: dict[str, float] | None = None

    def _as_dict(self) -> dict[str, float]:
        if self._dict is None:
            self._dict = dict(zip(self.names, self.scores.tolist(), strict=True))
        return self._dict

    def __getitem__(self, name: str) -> float:
        return self._as_dict()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._as_dict())

    def __len__(self) -> int:
        return len(self._as_dict())
