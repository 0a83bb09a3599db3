#!/usr/bin/env python3
# Issue #36's "Twelve-layer sizes": BERT-base and GPT-2 (124M) from transformers, exported as the zoo's models are.
"""Usage: test/onnx/zoo/.venv/bin/python bench/export_twelve_layer.py [OUT_DIR] [--only NAME ...]

Builds, with random weights, transformers' BertModel(BertConfig()) (bert-base-uncased's shape: 12 layers,
hidden 768, 12 heads, FFN 3072, vocabulary 30522, 512 positions) and GPT2LMHeadModel(GPT2Config(use_cache=False))
(GPT-2 small, 124M: 12 layers, hidden 768, vocabulary 50257, 1024 positions; use_cache=False for the prefill
export, as the zoo's gpt2), and exports each with both of PyTorch's exporters at their default options, only the
batch and sequence axes dynamic, into OUT_DIR (default bench/.models/, gitignored).

Everything but the sizes is test/onnx/zoo/make_zoo.py's: its `make` seeds (torch.manual_seed(36)), moves every
parameter by N(0, 0.02^2), exports (dynamo: default opset, optimize, weights as external data in NAME.onnx.data;
torchscript: through its `Positional` wrapper where the exporter cannot call the model directly, recorded as
`direct_error`), and writes NAME.npz with PyTorch's outputs at the zoo's sizes (up to batch 4, seq 32) and
OUT_DIR/exports.json (opsets, graph inputs, op counts, files, and here the export's seconds). NAME is
bert_base_{dynamo,torchscript} and gpt2_124m_{dynamo,torchscript}; --only a family or an export makes only those.
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "test", "onnx", "zoo"))
import make_zoo  # noqa: E402
import transformers as T  # noqa: E402

FAMILIES = [
    make_zoo.Family("bert_base", lambda: T.BertModel(T.BertConfig()),
                    ["input_ids", "attention_mask", "token_type_ids"], ["last_hidden_state", "pooler_output"],
                    T.BertConfig().vocab_size),
    make_zoo.Family("gpt2_124m", lambda: T.GPT2LMHeadModel(T.GPT2Config(use_cache=False)),
                    ["input_ids", "attention_mask"], ["logits"], T.GPT2Config().vocab_size),
]
EXPORTERS = ("dynamo", "torchscript")


def main(argv):
    names = [f.name for f in FAMILIES] + ["%s_%s" % (f.name, e) for f in FAMILIES for e in EXPORTERS]
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", nargs="?", default=os.path.join(HERE, ".models"))
    ap.add_argument("--only", nargs="+", choices=names)
    a = ap.parse_args(argv[1:])
    args = a.only or []
    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    make_zoo.HERE = out  # make() writes NAME.onnx(.data) and NAME.npz there
    rec_path = os.path.join(out, "exports.json")
    record = make_zoo.load_record(rec_path)
    for fam in FAMILIES:
        for exporter in EXPORTERS:
            name = "%s_%s" % (fam.name, exporter)
            if args and fam.name not in args and name not in args:
                continue
            t0 = time.time()
            make_zoo.make(fam, exporter, record)
            if name in record:
                record[name]["export_s"] = round(time.time() - t0, 1)
            print("%s: %.0f s" % (name, time.time() - t0), flush=True)
            make_zoo.save_record(rec_path, record)
    make_zoo.record_versions(record)
    make_zoo.save_record(rec_path, record)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
