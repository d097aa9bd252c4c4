"""The course map's figures come from the code: its table of main-path words and notebook code
lines (lessons/README.md and its Chinese twin) says what tests/bench_pace.py computes today.

After a change to a lesson's main path, run `.venv/bin/python tests/bench_pace.py --no-run` and
put its "words" and "code" columns in both tables. (The run times beside them depend on the
machine, so no test compares them.)"""

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("bench_pace", ROOT / "tests" / "bench_pace.py")
bench_pace = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_pace)

ROW = re.compile(r"^\| (\d\d) \| ([\d,]+) \| ([\d,]+) \|", re.M)


def stated(path: Path) -> dict[str, tuple[int, int]]:
    return {n: (int(words.replace(",", "")), int(code.replace(",", "")))
            for n, words, code in ROW.findall(path.read_text(encoding="utf-8"))}


@pytest.mark.parametrize("name", ["README.md", "zh/README.md"])
def test_the_map_states_each_lesson_s_main_path_words_and_code_lines(name):
    table = stated(ROOT / "lessons" / name)
    computed = {}
    for notebook in sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb")):
        figures = bench_pace.lesson_figures(notebook, run=False)
        computed[notebook.stem[:2]] = (figures["words"], figures["code"])
    wrong = [f"{n}: says {table.get(n)} (words, code lines), bench_pace --no-run gives {c}"
             for n, c in computed.items() if table.get(n) != c]
    assert not wrong, f"lessons/{name}'s figures are stale:\n" + "\n".join(wrong)
