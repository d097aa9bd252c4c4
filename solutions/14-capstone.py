"""Reference solutions of lesson 14's coding exercises."""

import capstone  # course's finder loads notebook 14's export cells
import diff_approval
import evaluation
import streaming


# 14.1: a new test file is approved on its own; everything else goes to the person
def new_tests_only(ask):
    def policy(path, diff):
        if diff.startswith("--- /dev/null") and diff_approval.path_matches(path, "test_*.py"):
            return diff_approval.APPROVE
        return ask(path, diff)
    return policy


# 14.2: CompactingAgent.ask_model calls super(); StreamingAgent.ask_model does not (it replaces
# Agent's). So CapstoneAgent (and with it CompactingAgent) must come before StreamingAgent:
# CompactingAgent.ask_model compacts, then its super() is StreamingAgent.ask_model, which
# streams the compacted request (it sends self.request_messages(), CompactingAgent's).
class StreamingCapstone(capstone.CapstoneAgent, streaming.StreamingAgent):
    """CapstoneAgent whose model calls stream (lesson 11)."""


# 14.3: page_items drops the last item of every full page; a test of the first page finds it
BUGGY_SLICE = "    return items[start:start + per_page - 1]\n"
RIGHT_SLICE = "    return items[start:start + per_page]\n"
FIRST_PAGE_TEST = ("\n\ndef test_a_full_first_page():\n"
                   "    assert page_items(list(range(21)), 1, 10) == list(range(10))\n")


def second_bug():
    pages = capstone.PAGES.replace(RIGHT_SLICE, BUGGY_SLICE)
    files = {**capstone.PROJECT, "pages.py": pages,
             "test_pages.py": capstone.TEST_PAGES + FIRST_PAGE_TEST}

    def solve(texts):
        fixed = capstone.rounded_up(texts)["pages.py"].replace(BUGGY_SLICE, RIGHT_SLICE)
        return {"pages.py": fixed}, "Fixed page_count and page_items in pages.py."

    return evaluation.Task("fix-pages-twice", capstone.TASK.text, files, capstone.TASK.checks,
                           solve, reads=("pages.py",))


SOLUTIONS = {"14.1": (new_tests_only,), "14.2": (StreamingCapstone,), "14.3": (second_bug,)}
