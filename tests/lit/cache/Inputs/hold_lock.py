# Another program's write transaction on a cache: BEGIN EXCLUSIVE held for SECONDS, then rolled back.
# Usage: hold_lock.py DB SECONDS READY_FILE (READY_FILE appears once the lock is held).
import sqlite3
import sys
import time

db, seconds, ready = sys.argv[1], float(sys.argv[2]), sys.argv[3]
c = sqlite3.connect(db, isolation_level=None)
c.execute("BEGIN EXCLUSIVE")
c.execute("INSERT INTO meta VALUES('held by hold_lock.py', '1')")
open(ready, "w").close()
time.sleep(seconds)
c.execute("ROLLBACK")
