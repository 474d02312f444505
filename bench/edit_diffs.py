"""What an approval's diff costs: `engine.core.edits.edit_preview` on large and hostile inputs,
and colouring its lines for the dialog (`tui.widgets.diff_view.preview_text`).

    python bench/edit_diffs.py [--lines 100000] [--repeat 3]

Both run on the UI thread when the approval dialog opens, so each is bounded whatever the
call carries. Prints the best of --repeat for: one line edited in a --lines-line file (the
shared start and end are set aside before difflib), a 10 MB content (no diff: its start),
two files that differ everywhere (cut at MAX_DIFF_LINES), difflib's bad case (few distinct
lines in a shuffled order, at MAX_DIFF_LINES), and the colouring of the longest preview.
Files are written to a temporary folder.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.options import at_least  # noqa: E402


def _best(fn, repeat: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - started)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=at_least(10), default=100_000)
    parser.add_argument("--repeat", type=at_least(1), default=3)
    args = parser.parse_args()

    from engine.core.edits import MAX_DIFF_LINES, edit_preview
    from tui.widgets.diff_view import preview_text

    folder = Path(tempfile.mkdtemp(prefix="edit-diffs-bench-"))
    big = folder / "big.txt"
    big.write_text("".join(f"{n}\n" for n in range(args.lines)))
    bad = folder / "bad.txt"
    bad.write_text("".join(f"{n % 100}\n" for n in range(MAX_DIFF_LINES)))
    middle = args.lines // 2
    cases = {
        f"one line of {args.lines:,} edited": ("edit_file", {"path": str(big), "edits": [{"oldText": f"\n{middle}\n", "newText": "\nX\n"}]}),
        "10 MB content": ("write_file", {"path": str(big), "content": "y\n" * 5_000_000}),
        f"{args.lines:,} lines all different": ("write_file", {"path": str(big), "content": "".join(f"o{n}\n" for n in range(args.lines))}),
        f"difflib's bad case, {MAX_DIFF_LINES:,} lines": (
            "write_file", {"path": str(bad), "content": "".join(f"{(n * 7) % 100}\n" for n in range(MAX_DIFF_LINES))},
        ),
    }
    longest = None
    for name, (tool, call) in cases.items():
        seconds, preview = _best(lambda: edit_preview(tool, call), args.repeat)
        assert preview is not None
        if preview.shows == "diff" and (longest is None or len(preview.lines) > len(longest.lines)):
            longest = preview
        print(f"{name:<40} {seconds * 1e3:8.1f} ms  {len(preview.lines):>5} lines  ({preview.note[-40:]})")
    assert longest is not None
    seconds, _ = _best(lambda: preview_text(longest), args.repeat)
    print(f"{'colouring ' + format(len(longest.lines), ',') + ' lines':<40} {seconds * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
