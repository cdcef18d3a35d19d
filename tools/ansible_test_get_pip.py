"""Offline stand-in for the pip bootstrap script ansible-test downloads.

ansible-test bootstraps pip into each sanity virtualenv by downloading ``get-pip-<ver>.py`` from
ci-files.testing.ansible.com, which CI cannot reach. This file is copied to the cache path
ansible-test looks at first (~/.ansible/test/cache/get_pip_<ver>.py). It installs pip from the
interpreter's own ``ensurepip`` and then lets that pip install what ansible-test asked for
(the pinned pip release), from the package index pip is configured with.
"""

import subprocess
import sys

if __name__ == "__main__":
    subprocess.check_call([sys.executable, "-m", "ensurepip", "--default-pip"], stdout=subprocess.DEVNULL)
    args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
    subprocess.check_call([sys.executable, "-m", "pip", "install", "-q"] + args)
