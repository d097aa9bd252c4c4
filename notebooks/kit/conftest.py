"""Not part of the kit (course.py build leaves this file out). The kit's tests run in a built
kit, beside the lessons' modules: tests/test_kit.py builds one and runs them there. Here, in
the course, they would find no sandbox.py beside main.py, so the course's pytest skips them."""

collect_ignore = ["tests"]
