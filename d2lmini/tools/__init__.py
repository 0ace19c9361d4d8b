"""Command-line tools, as in MXNet's ``tools/`` folder.

``python -m d2lmini.tools.im2rec``: pack a folder of images into a RecordIO
file (``.rec`` + ``.idx``) for :class:`mx.io.ImageRecordIter`.
"""
