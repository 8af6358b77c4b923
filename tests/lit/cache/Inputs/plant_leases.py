# Leases no live builder keeps: one of a process of this host that is gone, one stamped an hour
# ahead (a host whose clock is wrong). Usage: plant_leases.py DB
import socket
import sqlite3
import subprocess
import sys
import time

db = sys.argv[1]
gone = subprocess.Popen(["true"])
gone.wait()
now = int(time.time() * 1000)
c = sqlite3.connect(db, isolation_level=None)
c.execute("INSERT INTO leases VALUES('gone-builder', ?, ?, 't1', ?, ?)", (gone.pid, socket.gethostname(), now, now))
c.execute("INSERT INTO leases VALUES('clock-ahead', 1, 'elsewhere', 't2', ?, ?)", (now, now + 3600 * 1000))
