"""What the scripts that play a hostile peer share."""
import sys

from d2lmini.kvstore.dist import wire


def read_by(d, address, secret, what):
    """Return once the node at ``address`` has read (and logged) all that
    was sent to it on DEALER ``d``: a request it answers goes last on the
    same connection, and its answer comes back.  Else a node told to stop
    could read the stop first: it reads its peers' messages by turns."""
    chan = wire.Channel(secret)
    d.send_multipart(chan.pack('hello', dest=address, seq=0))
    if not d.poll(30000):
        sys.exit(f'{address} did not answer a hello after {what}')
    wire.recv(d, chan)
