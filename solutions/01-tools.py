"""Reference solutions to lesson 01's coding exercises (checked by tests/test_exercises.py).

Each is a plain function beside agent.py's tools: copy one next to agent.py, give it a schema
and a registry entry (lesson 02), and an agent can use it."""

from pathlib import Path

from agent import edit_file, list_files, occurrences, read_file

# --- 01.1: the article's edit_file, fixed -------------------------------------------------------


def fixed_edit_file(path, old_str, new_str):
    """The article's edit_file after every step of the hint: now it is agent.edit_file."""
    file = Path(path)
    if not old_str:  # step 1: this branch is the one for an EMPTY old_str
        if file.is_dir():  # step 2: refuse a folder, make missing ones, say which it was
            raise IsADirectoryError(f"{path} is a directory, not a file")
        action = "overwritten" if file.exists() else "created"
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(new_str.encode("utf-8"))  # step 5: bytes, so "\r\n" stays
        return {"path": path, "action": action}
    original = read_file(path)["content"]  # step 3: raises for missing, folder, not UTF-8
    found = occurrences(original, old_str)  # step 4: count first (overlaps too), then write
    if found != 1:
        hint = "add surrounding lines to make it unique" if found else "read the file again"
        raise ValueError(f"old_str must occur exactly once in {path}, found {found} ({hint})")
    file.write_bytes(original.replace(old_str, new_str, 1).encode("utf-8"))
    return {"path": path, "action": "edited"}


# --- 01.2: find_text ---------------------------------------------------------------------------


def find_text(text: str, path: str = ".") -> dict:
    """The text files under path (all subfolders) that contain text, sorted by path, each with
    the number of the first line that contains it. Files that are not UTF-8 are skipped."""
    list_files(path)  # raises as list_files does: a missing folder, or a file
    matches = []
    for file in Path(path).rglob("*"):
        if not file.is_file():
            continue
        try:
            content = read_file(str(file))["content"]
        except ValueError:  # not UTF-8 text: nothing to search
            continue
        at = content.find(text)
        if at != -1:
            matches.append({"path": file.as_posix(), "line": content.count("\n", 0, at) + 1})
    return {"path": path, "matches": sorted(matches, key=lambda match: match["path"])}


# --- 01.3: explain the line-ending trap ---------------------------------------------------------


def edit_file_crlf_hint(path: str, old_str: str, new_str: str) -> dict:
    """edit_file, except that a miss explained by \\r\\n line endings says so (and edits
    nothing: guessing which \\n the model meant as \\r\\n is not the tool's job)."""
    if old_str:
        text = read_file(path)["content"]
        if (occurrences(text, old_str) == 0 and "\r\n" in text
                and occurrences(text.replace("\r\n", "\n"), old_str.replace("\r\n", "\n"))):
            raise ValueError(f"old_str must occur exactly once in {path}, found 0: the file "
                             "uses \\r\\n line endings; send old_str with \\r\\n")
    return edit_file(path, old_str, new_str)


# --- 01.4: replace_all -----------------------------------------------------------------------


def edit_file_all(path: str, old_str: str, new_str: str, replace_all: bool = False) -> dict:
    """edit_file, or with replace_all every match, reporting how many were replaced."""
    if not old_str or not replace_all:
        return edit_file(path, old_str, new_str)
    text = read_file(path)["content"]
    found = occurrences(text, old_str)
    if found == 0:
        raise ValueError(f"old_str must occur at least once in {path}, found 0 "
                         "(read the file again)")
    if text.count(old_str) != found:  # overlapping matches: which of them did the model mean?
        raise ValueError(f"old_str occurs {found} times in {path} and the matches overlap, "
                         "so they cannot all be replaced; send a longer old_str")
    Path(path).write_bytes(text.replace(old_str, new_str).encode("utf-8"))
    return {"path": path, "action": "edited", "replaced": found}


SOLUTIONS = {
    "01.1": (fixed_edit_file,),
    "01.2": (find_text,),
    "01.3": (edit_file_crlf_hint,),
    "01.4": (edit_file_all,),
}
