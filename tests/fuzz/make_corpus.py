#!/usr/bin/env python3
"""Writes the seed corpora of tests/fuzz/corpus/<target>/: a few small valid
and invalid inputs per reader. Run from anywhere; overwrites the seed files
(crash reproducers, named crash-*, are left alone)."""
import gzip, os, struct, zlib

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(target, name, data):
    d = os.path.join(root, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def gz(data, mtime=0):
    return gzip.compress(data, compresslevel=6, mtime=mtime)


def idx(type_byte, dims, payload):
    return bytes([0, 0, type_byte, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + payload


# IDX (plain or gzip, detected from content)
u8 = idx(0x08, [2, 2, 2], bytes(range(8)))
put("idx", "u8_2x2x2", u8)
put("idx", "u8_2x2x2.gz", gz(u8))
put("idx", "f32_3", idx(0x0D, [3], struct.pack(">3f", 1.5, -2.0, 0.25)))
put("idx", "i16_2x2", idx(0x0B, [2, 2], struct.pack(">4h", 1, -2, 300, -32768)))
put("idx", "bad_magic", b"\x00\x01\x08\x01\x00\x00\x00\x01\x05")
put("idx", "truncated_header", b"\x00\x00\x08\x03\x00\x00\x00\x02\x00")
put("idx", "claims_4g_images", idx(0x08, [0xFFFFFFFF, 28, 28], bytes(64)))
put("idx", "trailing_bytes", u8 + b"xyz")
put("idx", "gz_cut_trailer", gz(u8)[:-8])

# gzip streams (ByteReader)
text = b"line one\nline two\r\n\nlast line without newline"
put("gzip", "text.gz", gz(text))
put("gzip", "two_members.gz", gz(b"ab\n") + gz(b"cd\n"))
put("gzip", "empty_member.gz", gz(b""))
put("gzip", "plain.txt", text)
put("gzip", "cut_trailer.gz", gz(text)[:-8])
bad = bytearray(gz(text))
bad[-8] ^= 1
put("gzip", "bad_crc.gz", bytes(bad))
put("gzip", "trailing_garbage.gz", gz(text) + b"junk")
put("gzip", "header_only.gz", gz(text)[:10])

# CSV: the first byte selects the options (see fuzz_entries.h)
put("csv", "labelled_onehot", b"\x00" + b"2,0.1,0.2\n0,0.3,0.4\n1,0.5,0.6\n2,0.7,0.8\n")
put("csv", "header_semicolon_last_label", b"\x07" + b"a;b;label\n1.5;-2e3;1\n4;5;0\n")
put("csv", "index_labels", b"\x08" + b"3,1,2\n1,3,4\n")
put("csv", "num_classes_3_preshaped", b"\xb0" + b"0,1,2\n1,3,4\n2,5,6\n1,7,8\n")
put("csv", "huge_label", b"\x00" + b"4503599627370495,1,2\n0,3,4\n")
put("csv", "ragged", b"\x00" + b"1,2,3\n4,5\n")
put("csv", "not_a_number", b"\x00" + b"1,abc,3\n")
put("csv", "negative_label", b"\x00" + b"-1,2\n")
put("csv", "gzip_csv", b"\x00" + gz(b"1,2\n0,3\n"))

# CIFAR: first byte bit 0 = CIFAR-100, bit 1 = io::read_cifar_bin only
pix = bytes((i * 7) % 256 for i in range(3072))
put("cifar", "cifar10_one_record", b"\x00" + b"\x03" + pix)
put("cifar", "cifar10_io_only", b"\x02" + b"\x09" + pix)
put("cifar", "cifar100_one_record", b"\x01" + b"\x13\x63" + pix)
put("cifar", "cifar100_coarse", b"\x05" + b"\x02\x07" + pix)
put("cifar", "cifar10_gz", b"\x00" + gz(b"\x01" + pix))
put("cifar", "bad_label", b"\x00" + b"\x0a" + pix)
put("cifar", "short_record", b"\x00" + b"\x03" + pix[:100])
put("cifar", "empty", b"\x00")


# Checkpoint: magic, u32 version, u64 payload size, payload, u32 CRC-32
def ck_payload(meta, tensors):
    out = struct.pack("<I", len(meta))
    for k, v in meta:
        out += struct.pack("<I", len(k)) + k.encode() + struct.pack("<I", len(v)) + v.encode()
    out += struct.pack("<I", len(tensors))
    for name, code, shape, data in tensors:
        out += struct.pack("<I", len(name)) + name.encode() + bytes([code, len(shape)])
        out += b"".join(struct.pack("<q", d) for d in shape) + struct.pack("<Q", len(data)) + data
    return out


def ck_file(payload):
    body = b"MDNNCKPT" + struct.pack("<IQ", 1, len(payload)) + payload
    return body + struct.pack("<I", zlib.crc32(body))


good = ck_payload([("epoch", "3"), ("lr", "0.5"), ("history.count", "18446744073709551615")],
                  [("fc1/W", 0, [2, 2], struct.pack("<4f", 1, 2, 3, 4)), ("steps", 5, [1], struct.pack("<q", 7))])
put("checkpoint", "valid", ck_file(good))
put("checkpoint", "payload_wrapped", good)  # no magic: wrapped with a valid header and CRC
put("checkpoint", "payload_bad_dtype", ck_payload([], [("x", 9, [1], b"\x00")]))
put("checkpoint", "payload_huge_dim", ck_payload([], [("x", 0, [1 << 62, 4], b"")]))
put("checkpoint", "payload_huge_string", struct.pack("<II", 1, 0xFFFFFFF0) + b"abc")
flipped = bytearray(ck_file(good))
flipped[30] ^= 0x10
put("checkpoint", "bad_crc", bytes(flipped))
put("checkpoint", "truncated", ck_file(good)[:25])
put("checkpoint", "wrong_magic", b"MDNNCKPX" + ck_file(good)[8:])

# Run configuration JSON
put("config", "minimal", b'{"layers": [{"type": "dense", "units": 10}]}')
put("config", "full", b'{"epochs": 2, "batch_size": 16, "learning_rate": 0.01, "optimizer": "adam",'
                      b' "layers": [{"type": "dense", "units": 32, "activation": "relu"}, {"type": "dense", "units": 10}]}')
put("config", "unknown_key", b'{"epochz": 2}')
put("config", "wrong_type", b'{"epochs": "two"}')
put("config", "syntax_error", b'{"epochs": 2,')
put("config", "deep_1001", b"[" * 1001 + b"]" * 1001)
put("config", "brackets_in_string", b'{"name": "[[[[{{{{"}')
put("config", "not_object", b"[1, 2, 3]")
