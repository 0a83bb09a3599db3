# Writes hand-made .npy files that np.save would never produce, for the reader's error tests.
import struct
import sys

kind, path = sys.argv[1], sys.argv[2]
if kind == "nul-descr":
    header = b"{'descr': '<f\x004', 'fortran_order': False, 'shape': (2, 2), }"
    header += b" " * (63 - (10 + len(header)) % 64) + b"\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + b"\0" * 16)
