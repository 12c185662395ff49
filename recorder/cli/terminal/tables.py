"""Tables that fit the terminal without cutting what identifies a row.

rich fits a wide table to the terminal by cutting cells to `in…`, so four run ids that share a prefix look
the same. Here an identifying column (a run id, a step) is never cut or wrapped; other cells wrap; and when
that is not enough, the columns of least value are left out, least valuable first, and the command says
which. When even the identifying columns do not fit (a 40-column terminal), each row is printed as a short
block of `name: value` lines. `--wide` and any output that is not a terminal get every column as it is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # rich loads when a table is printed
    from rich.console import Console, RenderableType
    from rich.table import Table

_wide = False


def set_wide(wide: bool) -> None:
    """`--wide`: every column, whatever the terminal's width (the command's option)."""
    global _wide
    _wide = wide


@dataclass(frozen=True)
class Col:
    """A column: `whole` is never cut or wrapped (an id); `drop` > 0 may be left out to fit, highest first;
    `narrow` wraps at its longest word, leaving the width to the other columns (a list of choices beside a
    description)."""

    name: str
    justify: Literal["left", "right"] = "left"
    whole: bool = False
    drop: int = 0
    narrow: bool = False


def _table(cols: Sequence[Col], rows: Sequence[Sequence[str]], title: str | None, options: dict[str, Any]) -> Table:
    from rich.table import Table

    table = Table(title=title, **options)
    for i, c in enumerate(cols):
        longest = max(len(w) for v in [c.name, *(r[i] for r in rows)] for w in [*v.split(), ""]) if c.narrow else None
        table.add_column(c.name, justify=c.justify, no_wrap=c.whole, overflow="fold", max_width=longest)
    for row in rows:
        table.add_row(*row)
    return table


def _needs(cols: Sequence[Col], rows: Sequence[Sequence[str]], whole: bool = False, edge: bool = True) -> int:
    """The narrowest the table can be with no word cut (`whole`: no cell wrapped): an identifying cell whole
    (each of its lines), another cell's longest word, the header's, plus each column's padding and border (3,
    and 1; without the outer `edge`, 2 fewer)."""
    from rich.cells import cell_len

    def widest(i: int, c: Col) -> int:
        cells = [c.name, *(r[i] for r in rows)]
        if c.whole or whole:
            return max(cell_len(line) for v in cells for line in v.split("\n"))
        return max((cell_len(w) for v in cells for w in v.split()), default=1)

    return sum(widest(i, c) + 3 for i, c in enumerate(cols)) + (1 if edge else -1)


def fitted(
    console: Console,
    cols: Sequence[Col],
    rows: Sequence[Sequence[str]],
    title: str | None = None,
    **options: Any,
) -> tuple[RenderableType, list[str]]:
    """The table to print on `console`, and the names of the columns left out to fit it."""
    everything = _table(cols, rows, title, options)
    edge = options.get("show_edge", True)
    if _wide or not console.is_terminal or _needs(cols, rows, edge=edge) <= console.width:
        return everything, []
    from rich.console import Group
    from rich.text import Text

    if title:  # above a narrowed table, not inside it: a table's title wraps at the table's width, mid-id
        table, left_out = fitted(console, cols, rows, None, **options)
        return Group(Text(title, style="italic"), table), left_out
    kept = list(range(len(cols)))
    dropped: list[str] = []
    while any(cols[i].drop for i in kept):
        victim = max((i for i in kept if cols[i].drop), key=lambda i: cols[i].drop)
        kept.remove(victim)
        dropped.append(cols[victim].name)
        shown, cells = [cols[i] for i in kept], [[r[i] for i in kept] for r in rows]
        if _needs(shown, cells, edge=edge) <= console.width:
            return _table(shown, cells, title, options), dropped
    return _records(cols, rows, title), []


def _records(cols: Sequence[Col], rows: Sequence[Sequence[str]], title: str | None) -> RenderableType:
    """Each row as a block: its identifying cells on the first line, then `name: value` for the rest."""
    from rich.console import Group
    from rich.text import Text

    parts: list[RenderableType] = [Text(title, style="italic")] if title else []
    for row in rows:
        head = "  ".join(v for c, v in zip(cols, row, strict=True) if c.whole and v)
        parts.append(Text(head, style="bold", no_wrap=True, overflow="ignore"))
        for c, v in zip(cols, row, strict=True):
            if not c.whole and v:
                parts.append(Text(f"  {c.name}: {v}", overflow="fold"))
    return Group(*parts)


def print_fitted(
    console: Console, cols: Sequence[Col], rows: Sequence[Sequence[str]], title: str | None = None, **options: Any
) -> None:
    """Print `fitted`'s table and, when columns were left out, one line naming them."""
    shown, dropped = fitted(console, cols, rows, title, **options)
    if _wide and console.is_terminal:  # every cell whole, each line as long as it needs (the terminal folds it)
        width = console.width
        console.width = max(width, _needs(cols, rows, whole=True))  # rich caps a print's width at the console's
        try:
            console.print(shown, crop=False)
        finally:
            console.width = width
        return
    console.print(shown)
    if dropped:
        console.print(f"left out to fit {console.width} columns: {', '.join(dropped)} (--wide shows every column)")


def minutes_cell(m: float | None) -> str:
    """A number of minutes as a table shows it: three decimals, or `-` where there is none (a NaN run_stop is
    no number of minutes)."""
    return "-" if m is None or not math.isfinite(m) else f"{m:.3f}"
