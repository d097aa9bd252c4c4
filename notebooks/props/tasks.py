"""The course's task suite (lesson 13): twelve small coding tasks, each with a trap that a
careless run falls into, a verifier made of lesson 13's checks, and a reference solution.

A suite is plain data built from `evaluation`'s types, so a suite of your own is a file like
this one: `python evaluation.py run --suite tasks.py` loads its `TASKS`. It imports only the
module it is a suite of; nothing here is part of the runner."""

import csv
import json
import re

from evaluation import (
    Task,
    answer_names,
    answer_omits,
    file_is,
    gone,
    has_lines,
    ini_is,
    json_is,
    kept,
    lines_are,
    renamed,
    tests_pass,
)

# The facts a verifier reads from the set-up (never typed into a check), and the end states
# the reference solutions make from the texts they read.


def server_port(texts):
    return re.search(r"^port = (\d+)$", texts["config/server.ini"], re.M).group(1)


def database_port(texts):
    return re.search(r"^port = (\d+)$", texts["config/database.ini"], re.M).group(1)


def open_todos(texts):
    return str(sum(line.startswith("TODO:") for line in texts["notes.md"].split("\n")))


def lines_with_todo(texts):
    return str(sum("TODO" in line for line in texts["notes.md"].split("\n")))


def by_last_name(texts):
    rows = list(csv.DictReader(texts["people.csv"].split("\n")))
    return [f"{row['first']} {row['last']}" for row in sorted(rows, key=lambda r: r["last"])]


def with_typo_fixed(texts):
    return texts["README.md"].replace("recieve", "receive")


def bumped(texts):
    return texts["pyproject.toml"].replace('version = "1.4.2"', 'version = "1.4.3"')


HELLO = 'def hello(name):\n    return f"Hello, {name}!"\n'

TASKS = [
    Task("answer-port", "Which port does the web server listen on? Answer with the number.",
         {"README.md": "# shop\n\nA small shop backend. Its settings are in config/.\n",
          "config/server.ini": "[server]\nhost = 127.0.0.1\nport = 8417\nworkers = 4\n",
          "config/database.ini": "[database]\nhost = db.internal\nport = 5432\n"},
         (answer_names(server_port, "the answer names the port in config/server.ini"),
          answer_omits(database_port, "it does not name the database's port instead")),
         lambda t: ({}, f"The web server listens on port {server_port(t)}."),
         reads=("config/server.ini", "config/database.ini")),
    Task("count-todos", "How many open TODO items are in notes.md? An open item is a line "
         "that starts with 'TODO:'. Answer with the number.",
         {"notes.md": "# Notes\nTODO: write the release notes\nDone: fix the login bug\n"
                      "TODO: ask Sam about the cache\n(the TODO list is read on Mondays)\n"
                      "TODO: update the screenshots\n"},
         (answer_names(open_todos, "the answer names the number of open TODO items"),
          answer_omits(lines_with_todo, "it does not count the line that only mentions TODO")),
         lambda t: ({}, f"There are {open_todos(t)} open TODO items in notes.md."),
         reads=("notes.md",)),
    Task("create-hello", "Create hello.py with a function hello(name) that returns "
         "'Hello, <name>!'. The tests in test_hello.py must pass.",
         {"test_hello.py": 'from hello import hello\n\n\ndef test_hello():\n'
                           '    assert hello("Ada") == "Hello, Ada!"\n\n\n'
                           'def test_another_name():\n    assert hello("Pi") == "Hello, Pi!"\n'},
         (tests_pass(),),
         lambda t: ({"hello.py": HELLO}, "Created hello.py; test_hello.py passes."),
         reads=("test_hello.py",)),
    Task("fix-total", "The tests fail. Fix the bug in cart.py; do not change the tests.",
         {"cart.py": 'def total(prices):\n    """The sum of all prices."""\n    result = 0\n'
                     "    for price in prices[1:]:\n        result += price\n    return result\n"
                     "\n\ndef average(prices):\n    return total(prices) / len(prices)\n",
          "test_cart.py": "from cart import average, total\n\n\ndef test_total():\n"
                          "    assert total([1, 2, 3]) == 6\n    assert total([]) == 0\n\n\n"
                          "def test_average():\n    assert average([2, 4]) == 3\n"},
         (tests_pass(), kept("test_cart.py", "the tests are kept as they were")),
         lambda t: ({"cart.py": t["cart.py"].replace("prices[1:]", "prices")},
                    "Fixed total() in cart.py: it skipped the first price."),
         reads=("cart.py", "test_cart.py")),
    Task("rename-function", "Rename the function calc_total to order_total everywhere in this "
         "project, in the code and in the docs. Change nothing else.",
         {"shop.py": 'def calc_total(items):\n    return sum(i["price"] * i["qty"] for i in '
                     'items)\n\n\ndef recalc_totals(orders):\n'
                     "    return [calc_total(order) for order in orders]\n",
          "report.py": "from shop import calc_total\n\n\ndef report(items):\n"
                       '    return f"total: {calc_total(items)}"\n',
          "README.md": "# shop\n\nCall `calc_total(items)` to price one order, `recalc_totals` "
                       "for many.\n"},
         (renamed("calc_total", "order_total"),),
         lambda t: ({path: re.sub(r"\bcalc_total\b", "order_total", t[path]) for path in t},
                    "Renamed calc_total to order_total in shop.py, report.py and README.md."),
         reads=("shop.py", "report.py", "README.md")),
    Task("set-timeout", "In settings.ini, set the network timeout to 30 seconds. Change "
         "nothing else.",
         {"settings.ini": "[network]\nretries  = 3\ntimeout  = 10\nproxy    =\n\n[ui]\n"
                          "theme    = dark\ntimeout  = 120\n"},
         (ini_is("settings.ini", "network", "timeout", "30"),),
         lambda t: ({"settings.ini": t["settings.ini"].replace("timeout  = 10\n",
                                                                "timeout  = 30\n")},
                    "Set [network] timeout to 30 in settings.ini."),
         reads=("settings.ini",)),
    Task("debug-off", "Turn debug off in config.json (set it to false). Keep every other "
         "setting as it is.",
         {"config.json": '{\n  "name": "shop",\n  "debug": true,\n  "port": 8417,\n'
                         '  "features": ["cart", "search"]\n}\n'},
         (json_is("config.json", lambda t: {**json.loads(t["config.json"]), "debug": False},
                  "config.json says debug: false, and the rest as it was"),),
         lambda t: ({"config.json": t["config.json"].replace('"debug": true', '"debug": false')},
                    "Set debug to false in config.json."),
         reads=("config.json",)),
    Task("sorted-names", "people.csv lists the team. Write their names (first and last) to "
         "names.txt, one per line, sorted by last name.",
         {"people.csv": "first,last,role\nGrace,Hopper,admiral\nAda,Lovelace,analyst\n"
                        "Alan,Turing,codebreaker\nEdsger,Dijkstra,professor\n"},
         (lines_are("names.txt", by_last_name, "names.txt lists the team by last name"),),
         lambda t: ({"names.txt": "\n".join(by_last_name(t)) + "\n"},
                    "Wrote the four names to names.txt, sorted by last name."),
         reads=("people.csv",)),
    Task("clean-tmp", "Delete the temporary files (*.tmp) in build/, but keep build/keep.txt "
         "and everything else.",
         {"build/a.tmp": "scratch\n", "build/b.tmp": "more scratch\n",
          "build/keep.txt": "Do not delete: the deploy script needs this folder.\n",
          "build/report.html": "<h1>Build report</h1>\n"},
         (gone("build/*.tmp", "no build/*.tmp is left"),
          kept("build/keep.txt", "build/keep.txt is kept, as the task said")),
         lambda t: ({"build/a.tmp": None, "build/b.tmp": None},
                    "Deleted build/a.tmp and build/b.tmp; kept everything else.")),
    Task("fix-typos", "README.md misspells 'receive' as 'recieve'. Fix every occurrence; "
         "change nothing else.",
         {"README.md": "# Notifications\n\nUsers recieve an email when an order ships.\n"
                       "If you do not recieve  it, look in the spam folder.\n"
                       "  - Admins recieve a copy.\n"},
         (file_is("README.md", with_typo_fixed, "README.md says receive, and nothing else "
                  "changed"),),
         lambda t: ({"README.md": with_typo_fixed(t)}, "Fixed 'recieve' three times."),
         reads=("README.md",)),
    Task("gitignore", "Create a .gitignore that ignores __pycache__/ folders and *.log files.",
         {"app.py": 'print("hello")\n'},
         (has_lines(".gitignore", ["__pycache__/", "*.log"]),),
         lambda t: ({".gitignore": "__pycache__/\n*.log\n"}, "Created .gitignore.")),
    Task("version-bump", "Bump the version from 1.4.2 to 1.4.3 in VERSION and in "
         "pyproject.toml; both must agree. Change nothing else.",
         {"VERSION": "1.4.2\n",
          "pyproject.toml": '[project]\nname = "shop"\nversion = "1.4.2"\n'
                            'requires-python = ">=3.10"\n\n[tool.shop]\n'
                            'min_client = "1.4.2"\n'},
         (lines_are("VERSION", ["1.4.3"], "VERSION says 1.4.3"),
          file_is("pyproject.toml", bumped, "pyproject.toml's version is 1.4.3, and "
                  "min_client is still 1.4.2")),
         lambda t: ({"VERSION": "1.4.3\n", "pyproject.toml": bumped(t)},
                    "Bumped the version to 1.4.3 in VERSION and pyproject.toml."),
         reads=("VERSION", "pyproject.toml")),
]
TASK_NAMES = [task.name for task in TASKS]
TASK = {task.name: task for task in TASKS}  # TASK["fix-total"]
