# lit + FileCheck tests: what attnc emits (gen/: generated source, PTX, ptxas reports), the command
# line and its diagnostics (cli/), the cache through the command line (cache/).
import os
import lit.formats

config.name = "attnc"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(os.path.dirname(config.attnc_bin), "..", "tests", "lit-out")
config.substitutions.append(("%attnc", config.attnc_bin))
config.substitutions.append(("%src", config.attnc_src))
config.substitutions.append(("%version", config.attnc_version))
config.substitutions.append(("FileCheck", config.filecheck))
config.substitutions.append(("not ", config.not_tool + " "))
# Permission tests run as an unprivileged user: root ignores file permissions.
config.substitutions.append(("%nobody", "setpriv --reuid=65534 --regid=65534 --clear-groups" if os.geteuid() == 0 else ""))
# Helper scripts are not tests.
config.excludes = ["Inputs"]
# Each test gets its own cache so tests never share state or touch the user's cache.
config.environment["ATTNC_CACHE_DIR"] = os.path.join(config.test_exec_root, "cache")
for var in ("PATH", "HOME", "LD_LIBRARY_PATH"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
