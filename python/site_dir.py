"""Prints the folder in which this python3 finds the packages installed under PREFIX.

usage: python3 site_dir.py PREFIX

It is the folder that this python3's default installation scheme (sysconfig) uses for pure
Python packages, moved from that scheme's prefix to PREFIX. On Debian 12 the default scheme
(posix_local) installs into /usr/local/lib/python3.11/dist-packages, which Debian's
python3 searches: for PREFIX=/usr/local the package lands there, and for any other prefix
at PREFIX/lib/python3.11/dist-packages. Elsewhere (a python3 whose scheme prefix is
sys.prefix) it is PREFIX/lib/pythonX.Y/site-packages.
"""
import os
import sys
import sysconfig


def site_dir(prefix):
    purelib = sysconfig.get_path("purelib")
    for scheme_prefix in (os.path.join(sys.prefix, "local"), sys.prefix):
        if purelib.startswith(scheme_prefix + os.sep):
            return os.path.join(prefix, os.path.relpath(purelib, scheme_prefix))
    raise SystemExit("site_dir.py: %s is under neither %s/local nor %s"
                     % (purelib, sys.prefix, sys.prefix))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python3 site_dir.py PREFIX")
    print(site_dir(os.path.abspath(sys.argv[1])))
