"""Every coding exercise can be done from its hint, and its check can tell.

Each exercise has a check (notebooks/checks/NN-slug.py), a starter cell in its notebook
(tagged "exercise") and a reference solution (solutions/NN-slug.py). The check must pass on
the solution and must not pass on the starter as it is committed."""

import json
import re
from pathlib import Path

import course
import pytest

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
EXERCISES = course.all_exercises()


def all_solutions() -> dict[str, tuple]:
    found = {}
    for path in sorted(SOLUTIONS.glob("[0-9][0-9]-*.py")):
        module = course._load_file(path, f"solution_{path.stem.replace('-', '_')}")
        for exercise_id, answers in module.SOLUTIONS.items():
            assert exercise_id.startswith(path.stem[:3].replace("-", ".")), \
                f"{path.name} answers {exercise_id}, an exercise of another lesson"
            found[exercise_id] = answers if isinstance(answers, tuple) else (answers,)
    return found


def starter_cells() -> list[tuple[str, int, str]]:
    """(notebook, cell index, source) of every exercise cell."""
    found = []
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb")):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        for index, cell in enumerate(notebook["cells"]):
            if "exercise" in cell.get("metadata", {}).get("tags", []):
                found.append((path.name, index, "".join(cell["source"])))
    return found


STARTERS = starter_cells()


@pytest.mark.slow
@pytest.mark.parametrize("exercise_id", sorted(EXERCISES))
def test_the_reference_solution_passes_its_check(exercise_id):
    solutions = all_solutions()
    assert exercise_id in solutions, f"exercise {exercise_id} has no solution in solutions/"
    report = course.check(exercise_id, *solutions[exercise_id])
    assert report.passed, repr(report)
    assert len(report.results) >= 2, f"exercise {exercise_id} checks only one thing"


@pytest.mark.parametrize(("notebook", "index", "source"), STARTERS,
                         ids=[f"{n}-cell{i}" for n, i, _ in STARTERS])
def test_the_starter_cell_runs_on_its_own_and_does_not_pass_its_check(
        notebook, index, source, monkeypatch):
    reports = []
    check = course.check

    def recording_check(exercise_id, *answers):
        reports.append(check(exercise_id, *answers))
        return reports[-1]

    monkeypatch.setattr(course, "check", recording_check)
    with course.scratch("starter"):
        exec(compile(source, f"{notebook} cell {index}", "exec"), {"__name__": "starter"})
    assert len(reports) == 1, f"{notebook} cell {index} should call course.check once"
    assert not reports[0].passed, f"the starter already passes:\n{reports[0]!r}"


def test_every_exercise_has_one_starter_cell_and_every_solution_an_exercise():
    started = [m.group(1) for _, _, source in STARTERS
               for m in [re.search(r"course\.check\(\s*\"(\d\d\.\d+)\"", source)] if m]
    assert len(started) == len(STARTERS), "every exercise cell calls course.check(\"NN.k\", ...)"
    assert sorted(started) == sorted(set(started)), "an exercise has two starter cells"
    assert set(started) == set(EXERCISES)
    assert set(all_solutions()) <= set(EXERCISES)


def test_a_report_says_in_plain_words_what_passed_and_what_did_not():
    @course.exercise("99.1", "a tiny test exercise")
    def _(t, double):
        with t.case("doubles 2"):
            assert double(2) == 4, f"double(2) gave {double(2)}"
        with t.case("doubles -1"):
            assert double(-1) == -2, f"double(-1) gave {double(-1)}"
        t.expect(double(0) == 0, "keeps 0", detail=f"got {double(0)}")

    try:
        good = course.check("99.1", lambda x: 2 * x)
        wrong = course.check("99.1", lambda x: x + 2)
        unwritten = course.check("99.1", lambda x: (_ for _ in ()).throw(NotImplementedError()))
        crashing = course.check("99.1", lambda x: 1 / 0)
    finally:
        del course._exercises["99.1"]
    assert good.passed and repr(good).splitlines()[0].endswith("all pass - well done")
    assert not wrong.passed
    assert repr(wrong).splitlines() == [
        "Exercise 99.1, a tiny test exercise: 1 of 3 pass",
        "  PASS  doubles 2",
        "  FAIL  doubles -1: double(-1) gave 1",
        "  FAIL  keeps 0: got 2",
    ]
    assert "not written yet" in repr(unwritten)
    assert "your code raised ZeroDivisionError: division by zero" in repr(crashing)


def test_a_check_runs_in_a_scratch_folder_and_leaves_the_working_directory_alone(tmp_path,
                                                                                  monkeypatch):
    monkeypatch.chdir(tmp_path)
    seen = []

    @course.exercise("99.2", "writes a file")
    def _(t, write):
        write()
        seen.append(Path.cwd())
        t.expect(Path("out.txt").exists(), "writes out.txt")

    try:
        report = course.check("99.2", lambda: Path("out.txt").write_text("x"))
    finally:
        del course._exercises["99.2"]
    assert report.passed
    assert Path.cwd() == tmp_path and not (tmp_path / "out.txt").exists()
    assert not seen[0].exists()  # the scratch folder is gone


def test_an_unknown_exercise_is_a_clear_error():
    with pytest.raises(LookupError, match="no exercise '98.7'"):
        course.check("98.7", None)
