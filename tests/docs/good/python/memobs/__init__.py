import os
how = os.environ.get("MEMOBS_PY_ATTACH", "")
macros = [("MEMOBS_PY_BUILD_ONLY", "1")]  # a macro handed to a compiler, not a variable
