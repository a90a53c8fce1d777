#!/usr/bin/env python3
"""Writes the seed corpora of tests/fuzz/corpus/<target>/: a few small valid
and invalid inputs per reader. Run from anywhere; overwrites the seed files
(crash reproducers, named crash-*, are left alone). corpus/image/ is not
written here: its JPEG and PNG seeds were encoded with libjpeg-turbo and
libpng (tests/data/image_files.h) and are kept as committed."""
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

# Tune config (tune/tune_config.h)
import json
train = {"layers": [{"type": "flatten"}, {"type": "dense", "units": 4}], "epochs": 2, "batch_size": 8,
         "optimizer": {"type": "sgd", "learning_rate": 0.1}}
lr_list = {"path": "optimizer.learning_rate", "values": [0.1, 0.2]}
put("tune_config", "grid", json.dumps({"train": train, "space": [lr_list, {"path": "batch_size", "values": [8, 16]}]}))
put("tune_config", "random_log_uniform", json.dumps(
    {"train": train, "space": [{"path": "optimizer.learning_rate", "log_uniform": [1e-4, 1.0]}],
     "searcher": {"type": "random", "trials": 5, "seconds": 3, "target_accuracy": 0.9}, "objective": {"kind": "accuracy"}, "seed": 9}))
put("tune_config", "asha_range", json.dumps(
    {"train": train, "space": [{"path": "optimizer.learning_rate", "range": [0.1, 0.5], "step": 0.1},
                               {"path": "layers[1].units", "uniform": [2, 9], "integer": True},
                               {"path": "optimizer.type", "choice": ["sgd", "adam"]}],
     "searcher": {"type": "asha", "configs": 6, "min_epochs": 1, "max_epochs": 4, "eta": 2},
     "objective": {"kind": "loss_area"}, "retries": 2}))
put("tune_config", "preset", json.dumps({"train": {"preset": "mlp", "epochs": 1}, "space": [lr_list]}))
put("tune_config", "unknown_searcher_key", json.dumps({"train": train, "space": [lr_list],
                                                        "searcher": {"type": "grid", "trails": 3}}))
put("tune_config", "bad_path", json.dumps({"train": train, "space": [{"path": "optimizer.lr", "values": [1]}]}))
put("tune_config", "empty_space", json.dumps({"train": train, "space": []}))
put("tune_config", "syntax_error", '{"train": {')

# Search journal, resumed against fuzz_entries' kJournalConfig (the same
# document, key for key, in the "begin" line)
jcfg = {"train": {"layers": [{"type": "flatten"}, {"type": "dense", "units": 4}], "epochs": 2, "batch_size": 8,
                  "optimizer": {"type": "sgd", "learning_rate": 0.1}},
        "space": [{"path": "optimizer.learning_rate", "values": [0.1, 0.2]}, {"path": "batch_size", "values": [8, 16]}],
        "searcher": {"type": "grid"}, "objective": {"kind": "loss"}, "seed": 3}


def jl(*events):
    return "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in events)


def tcfg(lr, bs):
    t = json.loads(json.dumps(jcfg["train"]))
    t["optimizer"]["learning_rate"] = lr
    t["batch_size"] = bs
    return t


begin = {"event": "begin", "tune": jcfg, "seed": 3, "workers": 1, "t": 0.0}
p0 = {"optimizer.learning_rate": 0.1, "batch_size": 8}
started0 = {"event": "started", "trial": 0, "attempt": 1, "worker": 0, "config": 0, "rung": 0, "params": p0,
            "t": 0.01}
outcome = {"ok": True, "error": "", "curve": [{"epoch": 1, "loss": 0.1, "accuracy": 0.5, "seconds": 0.001},
                                              {"epoch": 2, "loss": 0.05, "accuracy": 0.5, "seconds": 0.002}],
           "loss": 0.05, "accuracy": 0.5, "test_accuracy": None, "seconds": 0.002, "extra": {}}
finished0 = {"event": "finished", "trial": 0, "attempt": 1, "worker": 0, "outcome": outcome, "t": 0.02}
put("journal", "begin_only", jl(begin))
put("journal", "one_finished", jl(begin, started0, finished0))
put("journal", "one_started", jl(begin, started0))
put("journal", "lost_then_resumed", jl(begin, started0, {"event": "lost", "trial": 0, "attempt": 1, "worker": 0,
                                                         "reason": "killed", "t": 0.02},
                                      {"event": "resume", "workers": 1, "t": 0.03}))
put("journal", "failed", jl(begin, started0, {"event": "failed", "trial": 0, "attempt": 1, "worker": 0,
                                              "error": "diverged", "outcome": dict(outcome, ok=False), "t": 0.02}))
put("journal", "torn_last_line", jl(begin, started0) + '{"event":"fini')
put("journal", "ends_before_start", jl(begin, finished0))
put("journal", "other_config", jl(dict(begin, seed=4)))
put("journal", "not_json", "begin\n")

# results.json of a search (apps/magmadnn/tune_results.h)
trial_ok = {"index": 0, "params": {"optimizer.learning_rate": 0.1}, "status": "ok", "attempts": 1, "worker": 0,
            "seconds": 0.5, "objective": 0.3, "final": {"loss": 0.3, "accuracy": 0.9, "test_accuracy": None},
            "curve": [{"epoch": 1, "loss": 0.5, "accuracy": 0.8, "seconds": 0.25},
                      {"epoch": 2, "loss": 0.3, "accuracy": 0.9, "seconds": 0.5}]}
trial_failed = {"index": 1, "params": {"optimizer.learning_rate": 1e30}, "status": "failed", "objective": None,
                "error": "loss is NaN"}
results = {"objective": {"kind": "loss", "direction": "minimize"}, "searcher": "grid", "seed": 3, "best": 0,
           "dimensions": [{"path": "optimizer.learning_rate", "kind": "list", "values": [0.1, 1e30]}],
           "trials": [trial_ok, trial_failed]}
put("results", "two_trials", json.dumps(results))
put("results", "no_trials", json.dumps(dict(results, best=None, trials=[],
                                            dimensions=[{"path": "optimizer.learning_rate",
                                                         "kind": "log_uniform", "low": 1e-4, "high": 1}])))
put("results", "pruned_asha", json.dumps(dict(results, searcher="asha",
                                              trials=[trial_ok, dict(trial_failed, status="pruned", index=2)])))
put("results", "bad_status", json.dumps(dict(results, trials=[dict(trial_ok, status="done")])))
put("results", "best_not_a_trial", json.dumps(dict(results, best=7)))
put("results", "duplicate_index", json.dumps(dict(results, trials=[trial_ok, dict(trial_failed, index=0)])))
put("results", "not_object", "[]")

# A run folder as compare reads it: first byte % 4 picks the file that holds
# the rest (0 metrics.csv, 1 summary.json, 2 test_per_epoch.csv, 3 config.json)
metrics = ("epoch,train_loss,train_accuracy,val_loss,val_accuracy,learning_rate,seconds,samples_per_second\n"
           "1,0.9,0.6,0.95,0.58,0.05,1.5,4000\n2,0.6,0.75,,,0.05,1.4,4100\n")
put("compare", "metrics", b"\x00" + metrics.encode())
put("compare", "metrics_header_only", b"\x00" + metrics.split("\n")[0].encode() + b"\n")
put("compare", "metrics_short_row", b"\x00" + metrics.encode() + b"3,0.5\n")
put("compare", "metrics_not_number", b"\x00" + metrics.encode() + b"3,x,0,0,0,0,0,0\n")
put("compare", "summary", b"\x01" + json.dumps({"test_accuracy": 0.8, "test_loss": 0.55, "train_seconds": 2.9,
                                                "epochs": 2, "ranks": 3, "strategy": "ring"}).encode())
put("compare", "summary_wrong_types", b"\x01" + b'{"ranks": "two", "strategy": 5, "test_accuracy": "x"}')
put("compare", "test_curve", b"\x02" + b"epoch,test_loss,test_accuracy\n1,0.9,0.6\n2,0.6,0.75\n")
put("compare", "test_curve_bad", b"\x02" + b"epoch,test_loss\n1,0.9\n")
put("compare", "config_idx", b"\x03" + b'{"data": {"dataset": "idx", "dir": "<b>x</b>"}}')
put("compare", "config_not_json", b"\x03" + b'{"data": ')
