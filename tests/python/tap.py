"""The checks' output, shared by the Python check scripts: one
"ok - SUITE: LABELNAME" or "not ok - SUITE: LABELNAME" line per check,
the details of a failure as "    # " lines under it."""


class Tap:
    def __init__(self, suite, label=""):
        self.suite, self.label, self.failed = suite, label, 0

    def __call__(self, name, ok, *details):
        """Prints the line; returns ok. exit status: self.failed."""
        print("%s - %s: %s%s" % ("ok" if ok else "not ok", self.suite, self.label, name))
        if not ok:
            self.failed = 1
            for d in details:
                for line in str(d).splitlines() or [""]:
                    print("    # " + line)
        return ok
