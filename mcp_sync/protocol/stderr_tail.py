"""The bounded, redacted tail of a server's stderr, and which of its lines to show.

A failing server's stderr says why it failed, but not always last: npm
prints its ``404 ... could not be found`` several lines before the end, and a
Python server its traceback before whatever it logs on the way out. So the
tail keeps, within its byte bound, the lines that say what went wrong before
the plain lines around them:

1. the last line;
2. the first and last lines of the last Python traceback (the exception);
3. the rest of that traceback, its deepest frames first;
4. lines that read like an error (``error``, ``ERR!``, ``404``, ``not
   found``, ``exception``, ``failed``...), the newest first;
5. every other line, the newest first.

The kept lines are shown in the order they came, each with its indentation
(tabs as four spaces) and other runs of whitespace collapsed to one space,
joined with newlines; each run of lines left out shows as one line
``[… N lines left out]``. Every line is redacted whole before it is
measured or cut (:mod:`.redaction`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .redaction import _MASK, _PEM_BEGIN, _PEM_END, _PEM_KEY, MAX_STDERR_LINE_BYTES, KnownSecrets, redact

__all__ = ["StderrTail", "pick_lines"]

# Lower-case fragments that mark a line as saying what went wrong.
_TELLING = (
    "error", "err!", "404", "not found", "exception", "fatal", "failed", "failure", "panic",
    "denied", "cannot", "can't", "could not", "unable", "no such", "refused", "enoent",
    "eacces",
)  # fmt: skip
_TRACEBACK = "Traceback (most recent call last):"
_MAX_INDENT = 40
_GAP_PREFIX = "[… "
_GAP_SUFFIXES = (" line left out]", " lines left out]")

# The weights: lower is kept first.
_LAST, _TRACEBACK_ENDS, _TRACEBACK_BODY, _TELLS, _PLAIN = range(5)


def _gap(count: int) -> str:
    return f"{_GAP_PREFIX}{count}{_GAP_SUFFIXES[count != 1]}"


def _gap_count(line: str) -> int | None:
    """``N`` when ``line`` is the mark of ``N`` lines left out."""
    if not line.startswith(_GAP_PREFIX):
        return None
    for suffix in _GAP_SUFFIXES:
        if line.endswith(suffix):
            digits = line[len(_GAP_PREFIX) : -len(suffix)]
            if digits.isdigit() and len(digits) < 10:
                return int(digits)
    return None


def _telling(line: str) -> bool:
    lowered = line.lower()
    return any(fragment in lowered for fragment in _TELLING)


@dataclass(slots=True)
class _Line:
    seq: int  # its place in the stream, counted from 0
    text: str
    size: int  # UTF-8 bytes
    traceback: int  # the traceback it belongs to (-1: none)
    ends: bool  # a traceback's first or last line
    tells: bool


class _Tracebacks:
    """Which lines belong to a Python traceback: from its ``Traceback (most
    recent call last):`` line through the indented frames to the first line
    that is not indented (the exception)."""

    __slots__ = ("inside", "last")

    def __init__(self) -> None:
        self.last = -1  # the id of the newest traceback begun
        self.inside = False

    def step(self, line: str) -> tuple[int, bool]:
        """``(traceback id or -1, is its first or last line)`` of the next line."""
        if line.lstrip().startswith(_TRACEBACK):
            self.last += 1
            self.inside = True
            return self.last, True
        if not self.inside:
            return -1, False
        if line[:1].isspace():
            return self.last, False
        self.inside = False
        return self.last, True


def _cut(text: str, max_bytes: int) -> tuple[str, int]:
    """``text`` cut to at most ``max_bytes`` UTF-8 bytes (its head and ``…``), and its size."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text, len(data)
    if max_bytes < 8:  # too little room to mark the cut
        head = data[:max_bytes].decode("utf-8", "ignore")
    else:
        head = data[: max_bytes - 3].decode("utf-8", "ignore") + "…"
    return head, len(head.encode("utf-8"))


def _weight(line: _Line, last_traceback: int, last_seq: int) -> int:
    if line.seq == last_seq:
        return _LAST
    if line.traceback >= 0 and line.traceback == last_traceback:
        return _TRACEBACK_ENDS if line.ends else _TRACEBACK_BODY
    return _TELLS if line.tells else _PLAIN


def _gap_bytes(before: int, after: int) -> int:
    """The bytes of the gap line (and its newline) between two shown places."""
    left_out = after - before - 1
    # "…" is one character of three bytes; then the newline.
    return len(_gap(left_out)) + 3 if left_out > 0 else 0


def _pick(lines: Sequence[_Line], total: int, max_bytes: int, max_lines: int | None) -> list[str]:
    """The text lines to show of ``lines`` (sorted by ``seq``, out of
    ``total`` lines in the stream), gaps marked, in at most ``max_bytes``
    bytes once joined with newlines and at most ``max_lines`` lines.

    Linear after a sort: the lines that say something are taken first, each
    reserving room for a gap line beside it (but for the stream's first and
    last lines, which split no gap); then plain lines from the end
    backwards, as long as the next one fits, each costing exactly what it
    adds (itself, less the gap it shortens)."""
    if not lines:
        return []
    last_traceback = max(line.traceback for line in lines)
    weights = [_weight(line, last_traceback, total - 1) for line in lines]
    most = len(lines) if max_lines is None else max_lines
    reserve = len(_gap(total)) + 3
    chosen = [False] * len(lines)
    count = 0
    used = reserve
    for at in sorted((at for at in range(len(lines)) if weights[at] < _PLAIN),
                     key=lambda at: (weights[at], -lines[at].seq)):  # fmt: skip
        # A line splits a gap in two, except at either end of the stream.
        cost = lines[at].size + 1 + (0 if lines[at].seq in (0, total - 1) else reserve)
        if count < most and used + cost <= max_bytes + 1:  # the last line has no newline
            chosen[at] = True
            count += 1
            used += cost
    if not count:
        return [_cut(lines[-1].text, max_bytes)[0]]
    # What the lines so far take exactly; then fill backwards from the end.
    left = [-1] * len(lines)  # the seq of the nearest chosen line before each
    nearest = -1
    for at, line in enumerate(lines):
        left[at] = nearest
        if chosen[at]:
            nearest = line.seq
    used = _layout_bytes(lines, chosen, total)
    right = total
    for at in range(len(lines) - 1, -1, -1):
        line = lines[at]
        if chosen[at]:
            right = line.seq
            continue
        before = left[at]
        cost = (
            line.size + 1 - _gap_bytes(before, right) + _gap_bytes(before, line.seq) + _gap_bytes(line.seq, right)
        )
        if count >= most or used + cost > max_bytes + 1:
            break
        chosen[at] = True
        count += 1
        used += cost
        right = line.seq
    return _layout(lines, chosen, total)


def _layout(lines: Sequence[_Line], chosen: Sequence[bool], total: int) -> list[str]:
    out: list[str] = []
    before = -1
    for line, shown in zip(lines, chosen, strict=True):
        if shown:
            if line.seq - before > 1:
                out.append(_gap(line.seq - before - 1))
            out.append(line.text)
            before = line.seq
    if total - before > 1:
        out.append(_gap(total - before - 1))
    return out


def _layout_bytes(lines: Sequence[_Line], chosen: Sequence[bool], total: int) -> int:
    """The UTF-8 bytes of ``_layout``'s lines, each counted with a newline."""
    used = 0
    before = -1
    for line, shown in zip(lines, chosen, strict=True):
        if shown:
            used += _gap_bytes(before, line.seq) + line.size + 1
            before = line.seq
    return used + _gap_bytes(before, total)


def pick_lines(text: str, *, max_lines: int) -> list[str]:
    """At most ``max_lines`` lines of a tail's ``text`` (what
    :meth:`StderrTail.text` gave), chosen by the same rules, gaps marked."""
    lines: list[_Line] = []
    tracebacks = _Tracebacks()
    seq = 0
    for raw in text.split("\n"):
        left_out = _gap_count(raw)
        if left_out is not None:
            seq += left_out
            continue
        traceback, ends = tracebacks.step(raw)
        lines.append(_Line(seq, raw, len(raw.encode("utf-8")), traceback, ends, _telling(raw)))
        seq += 1
    return _pick(lines, seq, len(text.encode("utf-8")) + 64 * max_lines, max_lines)


class StderrTail:
    """Keeps the redacted tail of a byte stream, at most ``max_bytes`` of it
    shown, chosen as the module says.

    Fed raw chunks by the stderr thread. Memory is bounded by
    ``MAX_STDERR_LINE_BYTES`` for the line being assembled plus about three
    times ``max_bytes`` for the lines kept: the newest, the last traceback's,
    and the telling ones that came before them.
    """

    def __init__(self, max_bytes: int, *, secrets: Iterable[str] = ()) -> None:
        self._max = max_bytes
        self._known = KnownSecrets(secrets)
        self._partial: list[bytes] = []
        self._partial_len = 0
        self._overlong = False  # the current line already passed the line cap
        self._in_key = False  # inside a PEM private key that began on an earlier line
        self._tracebacks = _Tracebacks()
        self._seq = 0
        self._recent: deque[_Line] = deque()
        self._recent_bytes = 0
        self._traceback = _Kept(max_bytes)  # of the last traceback, older than _recent
        self._told = _Kept(max_bytes)  # telling lines older than _recent

    def feed(self, chunk: bytes) -> None:
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                self._add_partial(chunk[start:])
                return
            self._add_partial(chunk[start:nl])
            self._finish_line()
            start = nl + 1

    def finish(self) -> None:
        """The stream ended: an unterminated last line is kept too."""
        if self._partial_len or self._overlong:
            self._finish_line()

    def text(self) -> str:
        """The tail: at most ``max_bytes`` UTF-8 bytes, lines joined with newlines."""
        kept = {line.seq: line for line in (*self._told.lines, *self._traceback.lines, *self._recent)}
        lines = [kept[seq] for seq in sorted(kept)]
        return "\n".join(_pick(lines, self._seq, self._max, None))

    def _redact_line(self, raw: str) -> str:
        # A PEM key's body spans lines: from a BEGIN line to its END line,
        # every line is withheld whole.
        if self._in_key:
            end = raw.find(_PEM_END)
            if end < 0:
                return _MASK
            self._in_key = False
            raw = _MASK + raw[end:]
        begin = raw.rfind(_PEM_BEGIN)
        if begin >= 0 and _PEM_KEY in raw[begin : begin + 64] and raw.find(_PEM_END, begin) < 0:
            self._in_key = True
        return redact(raw, self._known)

    def _add_partial(self, piece: bytes) -> None:
        if self._overlong or not piece:
            return
        if self._partial_len + len(piece) > MAX_STDERR_LINE_BYTES:
            self._overlong = True
            self._partial.clear()
            self._partial_len = 0
            return
        self._partial.append(piece)
        self._partial_len += len(piece)

    def _finish_line(self) -> None:
        if self._overlong:
            line = f"[a stderr line over {MAX_STDERR_LINE_BYTES} bytes was withheld]"
        else:
            raw = b"".join(self._partial).decode("utf-8", "replace")
            line = _tidy(self._redact_line(raw))
        self._partial.clear()
        self._partial_len = 0
        self._overlong = False
        if not line.strip():
            return
        begun = self._tracebacks.last
        traceback, ends = self._tracebacks.step(line)
        if self._tracebacks.last != begun:
            # A new traceback: the older one's lines stay only if they tell.
            for older in self._traceback.take_all():
                if older.tells:
                    self._told.add(older)
        text, size = _cut(line, self._max)
        self._recent.append(_Line(self._seq, text, size, traceback, ends, _telling(line)))
        self._recent_bytes += size + 1
        self._seq += 1
        # Drop old lines while the rest alone still fills the budget; the
        # last traceback's and the telling ones are kept aside.
        while self._recent and self._recent_bytes - (self._recent[0].size + 1) >= self._max:
            older = self._recent.popleft()
            self._recent_bytes -= older.size + 1
            if older.traceback >= 0 and older.traceback == self._tracebacks.last:
                self._traceback.add(older, keep_first=True)
            elif older.tells:
                self._told.add(older)


class _Kept:
    """Lines kept aside, oldest first, at most ``max_bytes`` of them (and one more line)."""

    __slots__ = ("_max", "lines", "size")

    def __init__(self, max_bytes: int) -> None:
        self._max = max_bytes
        self.lines: deque[_Line] = deque()
        self.size = 0

    def add(self, line: _Line, *, keep_first: bool = False) -> None:
        """Keep ``line``; drop the oldest (after the first, with ``keep_first``) past the bound."""
        self.lines.append(line)
        self.size += line.size
        while len(self.lines) > 1 and self.size > self._max:
            first = self.lines.popleft() if keep_first else None
            self.size -= self.lines.popleft().size
            if first is not None:
                self.lines.appendleft(first)
                if len(self.lines) == 1:
                    break

    def take_all(self) -> list[_Line]:
        lines = list(self.lines)
        self.lines.clear()
        self.size = 0
        return lines


def _tidy(line: str) -> str:
    """A line's indentation kept (tabs as four spaces, at most 40 columns),
    every other run of whitespace collapsed to one space."""
    body = line.lstrip(" \t")
    indent = line[: len(line) - len(body)].expandtabs(4)[:_MAX_INDENT]
    return indent + " ".join(body.split())
