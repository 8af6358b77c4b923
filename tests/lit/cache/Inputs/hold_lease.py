# A live builder on this host: holds the build lease of KEY in DB for SECONDS, refreshing its
# heartbeat every 100 ms, then gives it up without storing anything.
# Usage: hold_lease.py DB KEY SECONDS READY_FILE (READY_FILE appears once the lease is held).
import os
import socket
import sqlite3
import sys
import time

db, key, seconds, ready = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
now = lambda: int(time.time() * 1000)
c = sqlite3.connect(db, isolation_level=None)
c.execute("INSERT INTO leases VALUES(?, ?, ?, 'hold_lease.py', ?, ?)", (key, os.getpid(), socket.gethostname(), now(), now()))
open(ready, "w").close()
end = time.time() + seconds
while time.time() < end:
    time.sleep(0.1)
    c.execute("UPDATE leases SET heartbeat_ms = ? WHERE key = ?", (now(), key))
c.execute("DELETE FROM leases WHERE key = ?", (key,))
