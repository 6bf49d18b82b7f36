"""python3 install-dir.py PREFIX: where `make install` puts the gpuctl module for this python3.

Debian's python3 looks in /usr/lib/python3/dist-packages (its deb_system scheme, for PREFIX=/usr)
and /usr/local/lib/python3.X/dist-packages (posix_local, for /usr/local); another python3 in its
own prefix; anything else gets the standard PREFIX/lib/python3.X/site-packages (then set
PYTHONPATH). Standard library only: sysconfig knows each scheme.
"""

import os
import sys
import sysconfig

prefix = os.path.normpath(sys.argv[1])
schemes = sysconfig.get_scheme_names()
if prefix == "/usr" and "deb_system" in schemes:
    path = sysconfig.get_path("purelib", "deb_system", {"base": "/usr", "platbase": "/usr"})
elif prefix == "/usr/local" and "posix_local" in schemes:
    path = sysconfig.get_path("purelib", "posix_local", {"base": "/usr", "platbase": "/usr"})
elif prefix in (os.path.normpath(sys.prefix), os.path.normpath(sys.base_prefix)):
    path = sysconfig.get_path("purelib")
else:
    path = sysconfig.get_path("purelib", "posix_prefix", {"base": prefix, "platbase": prefix})
print(path)
if path not in sys.path:
    print("note: %s is not on %s's module path: set PYTHONPATH=%s" % (path, sys.executable, path),
          file=sys.stderr)
