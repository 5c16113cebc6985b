"""A panel of NLI judges, as ``--nli`` names it: the grammar, read once.

``--nli`` takes one judge (``cross-encoder``) or a comma-separated panel of them::

    MEMBER[,MEMBER…]      MEMBER = NAME[=MODEL][@ROLE]

- ``NAME`` is a registered NLI backend (``--nli`` lists them) that judges pairs itself: not
  ``auto`` or ``precomputed``, which stand for the records' own relations.
- ``=MODEL`` gives that member its own model folder (what ``--nli-model`` gives a single judge),
  so that two cross-encoders can sit on one panel: ``cross-encoder,cross-encoder=runs/v5@contradiction``.
- ``@ROLE`` is what the panel trusts the member for: ``@entailment`` or ``@contradiction``; a
  member without one is trusted for both.

How the members' verdicts become the graph's evidence follows from the roles (the formulas are
in :mod:`fact_reasoner.nli.panel`):

- no member has a role: **factors** — each member's relation is its own factor in the graph (a
  product of experts: agreeing judges strengthen a verdict, disagreeing ones weaken it);
- some member has one: **roles** — the contradiction judges speak first, the entailment judges
  on what they leave: ``P(C) = c``, ``P(E) = (1 − c)·e`` with ``e`` their entailment given no
  contradiction, so a passage that a trusted judge confidently calls a contradiction is not also
  counted as entailing.

A one-name value is a single judge, written exactly as before panels existed, so outputs
written then still resume.

>>> panel = parse_panel("cross-encoder@entailment, specialist@contradiction")
>>> [(m.name, m.role) for m in panel.members], panel.combine
([('cross-encoder', 'entailment'), ('specialist', 'contradiction')], 'roles')
>>> panel.spec
'cross-encoder@entailment,specialist@contradiction'
>>> parse_panel("cross-encoder,align").combine
'factors'
>>> parse_panel("cross-encoder").is_panel
False
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..errors import SettingsError
from .fields import member_names, path_problem

__all__ = ["PANEL_ROLES", "Panel", "PanelMember", "PanelSpecError", "member_names", "parse_panel"]

Role = Literal["both", "entailment", "contradiction"]
#: the roles a member can be given after ``@``
PANEL_ROLES: tuple[str, ...] = ("entailment", "contradiction")
Combine = Literal["single", "factors", "roles"]


class PanelSpecError(SettingsError):
    """A ``--nli`` value that is not a judge or a panel of judges (the message says which part)."""


@dataclass(frozen=True)
class PanelMember:
    """One judge of a panel: the registered backend ``name``, its own ``model`` folder (None:
    the backend's default, or ``--nli-model``), and what the panel trusts it for."""

    name: str
    model: str | None = None
    role: Role = "both"

    @property
    def spec(self) -> str:
        """The member as ``--nli`` writes it (``NAME[=MODEL][@ROLE]``)."""
        return self.name + (f"={self.model}" if self.model else "") + ("" if self.role == "both" else f"@{self.role}")

    @property
    def label(self) -> str:
        """What the output calls this judge: its spec without the role (``cross-encoder``,
        ``cross-encoder=runs/v5``), unique within a panel."""
        return self.name + (f"={self.model}" if self.model else "")

    def gives(self, relation: str) -> bool:
        """Whether the panel takes ``relation`` (``entailment`` / ``contradiction``) from it."""
        return self.role in ("both", relation)


@dataclass(frozen=True)
class Panel:
    """The judges ``--nli`` names, in order, and how their verdicts combine (module docstring)."""

    members: tuple[PanelMember, ...]

    @property
    def is_panel(self) -> bool:
        """More than one judge (``cross-encoder=PATH`` alone is a single judge with its model)."""
        return len(self.members) > 1

    @property
    def combine(self) -> Combine:
        """``single`` (one judge, no role), ``factors`` (no member has a role) or ``roles``."""
        if not self.is_panel:
            return "single"
        return "roles" if any(m.role != "both" for m in self.members) else "factors"

    @property
    def spec(self) -> str:
        """The canonical ``--nli`` value (no spaces): what the settings and the resume
        fingerprint record."""
        return ",".join(m.spec for m in self.members)


def parse_panel(value: str, known: "list[str] | None" = None, not_members: "tuple[str, ...]" = ()) -> Panel:
    """Read ``--nli``'s value (module docstring). ``known``: the registered names a member may
    have (None: not checked); ``not_members``: names that may stand alone but not on a panel.

    Raises :class:`PanelSpecError` naming the part that is wrong: an empty member, an unknown
    name, an unknown role, the same judge twice, a panel without a judge for entailments or for
    contradictions, or a name of ``not_members`` on a panel."""
    parts = [part.strip() for part in str(value).split(",")]
    if not value or any(not part for part in parts):
        raise PanelSpecError("an empty judge name; give NAME or NAME,NAME,…")
    members = [_member(part, known, value if len(parts) > 1 else None, not_members) for part in parts]
    panel = Panel(tuple(members))
    if not panel.is_panel and members[0].role == "both":
        return panel
    for member in members:
        if member.name in not_members:
            raise PanelSpecError(
                f"{member.name} cannot be on a panel (it stands for the records' own relations); name the judges"
            )
    labels = [m.label for m in members]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise PanelSpecError(f"{repeated[0]} is named twice; give each judge once")
    for relation in PANEL_ROLES:
        if not any(m.gives(relation) for m in members):
            raise PanelSpecError(f"no judge gives {relation}s; give one a role @{relation} or none (both)")
    return panel


def _member(part: str, known: "list[str] | None", panel: str | None, not_members: "tuple[str, ...]") -> PanelMember:
    role: str = "both"
    if "@" in part:
        part, role = (piece.strip() for piece in part.rsplit("@", 1))
        if role not in PANEL_ROLES:
            raise PanelSpecError(f"unknown role @{role}; choose @entailment or @contradiction (or none: both)")
    name, _, model = (piece.strip() for piece in part.partition("="))
    if "=" in part and not model:
        raise PanelSpecError(f"{name}= names no model folder")
    problem = path_problem(model) if model else None
    if problem:
        raise PanelSpecError(f"{name}={model[:30]}…: {problem}")
    if known is not None and name not in known:
        if panel is None:  # one judge: the words of every other closed choice (fields.one_of)
            quoted = [repr(k) for k in known]
            listed = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
            raise PanelSpecError(f"Input should be {listed}")
        judges = ", ".join(k for k in known if k not in not_members)
        raise PanelSpecError(f"unknown judge {name!r}; choose from: {judges}")
    return PanelMember(name, model or None, role)  # type: ignore[arg-type]
