# A TCP sink on 127.0.0.1:PORT: accepts, reads until the peer closes, never answers.
# With COUNT_FILE, writes the number of connections accepted so far there.
import socket
import sys

s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(8)
n = 0
while True:
    c, _ = s.accept()
    n += 1
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            f.write(str(n))
    while c.recv(65536):
        pass
    c.close()
