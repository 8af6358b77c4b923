"""`python -m attnc ARGS...`: the attnc command line (attnc --help), the binary the wheel carries in
attnc/bin/ (else a build tree's tools/attnc beside this package's repository), with NVRTC found the
way `import attnc` finds it."""
import os
import sys

from . import _capi


def cli_path():
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(os.path.dirname(here))
    # The wheel's bin/, then build trees, then tools/pack-device's layout (python/ beside tools/).
    tried = ([os.path.join(here, "bin", "attnc")]
             + [os.path.join(repo, b, "tools", "attnc") for b in ("build", "build-portable")]
             + [os.path.join(repo, "tools", "attnc")])
    for path in tried:
        if os.access(path, os.X_OK):
            return path
    raise FileNotFoundError("attnc: the command-line binary is not installed with this package (tried: "
                            + ", ".join(tried) + ")")


def main(argv):
    exe = cli_path()
    env = dict(os.environ)
    folder = _capi.nvrtc_dir()  # the binary links NVRTC too: show the loader the folder it is in
    if folder:
        env["LD_LIBRARY_PATH"] = folder + (os.pathsep + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    sys.stdout.flush()
    os.execve(exe, [exe] + argv, env)


def entry():
    """The `attnc` console script the wheel installs."""
    main(sys.argv[1:])


if __name__ == "__main__":
    entry()
