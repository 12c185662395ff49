"""What a terminal shows once a program has written to it: the screen, not the stream.

`script` records every byte, so a progress frame that the program erased is still in the recording. To say
what the user is left looking at, the recording is played onto a grid `columns` wide, as a VT100-style
terminal does it: printing wraps at the last column, carriage return, line feed, backspace, cursor moves
(`ESC[nA` up, `B` down, `C` right, `D` left, `G` to a column, `H` to a place) and erasing (`ESC[K`,
`ESC[J`). Styles and modes (colours, the cursor shown or hidden) change nothing on the grid. The screen has
no bottom: nothing scrolls away, so a test sees every line that is still drawn.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(
    r"\x1b\[([?0-9;]*)([A-Za-z])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Za-z0-9]|([\r\n\b\x07])"
)


class _Grid:
    def __init__(self, columns: int) -> None:
        self.columns = columns
        self.rows: list[list[str]] = [[]]
        self.row = self.col = 0
        self.pending_wrap = False  # the last column was written: the next character goes on the next line

    def _line(self) -> list[str]:
        while len(self.rows) <= self.row:
            self.rows.append([])
        return self.rows[self.row]

    def put(self, text: str) -> None:
        for char in text:
            if self.pending_wrap:
                self.row, self.col, self.pending_wrap = self.row + 1, 0, False
            line = self._line()
            line.extend(" " * (self.col + 1 - len(line)))
            line[self.col] = char
            if self.col == self.columns - 1:
                self.pending_wrap = True
            else:
                self.col += 1

    def control(self, char: str) -> None:
        self.pending_wrap = False
        if char == "\r":
            self.col = 0
        elif char == "\n":
            self.row += 1
        elif char == "\b":
            self.col = max(0, self.col - 1)

    def csi(self, params: str, final: str) -> None:
        if params.startswith("?") or final == "m":
            return  # a mode (the cursor hidden) or a style: nothing moves
        numbers = [int(p) if p else 0 for p in params.split(";")] if params else []
        n = max(1, numbers[0]) if numbers else 1
        self.pending_wrap = False
        if final == "A":
            self.row = max(0, self.row - n)
        elif final == "B":
            self.row += n
        elif final == "C":
            self.col = min(self.columns - 1, self.col + n)
        elif final == "D":
            self.col = max(0, self.col - n)
        elif final == "G":
            self.col = min(self.columns, n) - 1
        elif final in "Hf":
            self.row, self.col = n - 1, (max(1, numbers[1]) if len(numbers) > 1 else 1) - 1
        elif final == "K":
            self._erase_line(numbers[0] if numbers else 0)
        elif final == "J":
            self._erase_screen(numbers[0] if numbers else 0)

    def _erase_line(self, how: int) -> None:
        line = self._line()
        if how == 0:
            del line[self.col :]
        elif how == 1:
            line[: self.col + 1] = " " * min(len(line), self.col + 1)
        else:
            line.clear()

    def _erase_screen(self, how: int) -> None:
        if how == 0:
            self._erase_line(0)
            del self.rows[self.row + 1 :]
        else:
            self.rows = [[]]

    def lines(self) -> list[str]:
        shown = ["".join(line).rstrip() for line in self.rows]
        while shown and not shown[-1]:
            shown.pop()
        return shown


def screen(recording: str, columns: int) -> list[str]:
    """The lines a terminal `columns` wide shows after `recording` (what the program wrote) was played on it,
    trailing spaces and empty lines at the end left out."""
    grid = _Grid(columns)
    at = 0
    for m in _CONTROL.finditer(recording):
        grid.put(recording[at : m.start()])
        if m[3]:
            grid.control(m[3])
        elif m[2]:
            grid.csi(m[1], m[2])
        at = m.end()
    grid.put(recording[at:])
    return grid.lines()
