#!/usr/bin/env python3
# Makes the model zoo of issue #36: small random-weight Hugging Face transformers, exported as users export them today.
"""Run through make_zoo.sh (its venv has the current torch, transformers, onnx and onnxscript from PyPI).

Each family is built from its transformers config class with random weights at small sizes (torch.manual_seed),
put in eval mode and exported twice with PyTorch's exporters at their default options, only the batch and sequence
axes made dynamic:

- dynamo:      torch.onnx.export(model, (), PATH, kwargs=..., dynamo=True, dynamic_shapes=...) -- default opset,
               optimize=True and external_data=True, so the weights may land in PATH.data beside the model;
- torchscript: torch.onnx.export(model, (), PATH, kwargs=..., dynamo=False, dynamic_axes=...) -- default opset.

PyTorch then runs the model at every size of the family and the inputs and outputs go to one NAME.npz per export
(layout in README.md). A family that one exporter fails on is recorded in exports.json with the exception's first
line and the script goes on. exports.json also records, per export: the opsets, IR version, the files written,
whether there is external data, the graph inputs' and outputs' shapes and the op-type counts.

The builders of the first eight families are here, those of the later ones in zoo_families.py, those of the vision,
speech and OCR families (issue #37: torchvision CNNs, ViT, wav2vec 2.0, a CRNN, a GRU classifier) in zoo_vision.py;
FAMILIES (here) is the table of all. Every export is checked against onnxruntime at every stored size when it is made
(exports.json's "onnxruntime").

Usage: make_zoo.py [family | family_exporter ...]   (default: all of FAMILIES; e.g. gpt2 or gpt2_torchscript)
"""
import collections
import json
import os
import re
import sys
import traceback
import warnings

import numpy as np
import torch
import transformers as T

import zoo_families as Z  # the families added later (ALBERT, ..., the Qwen2 decode step)
import zoo_more as M  # the third round (StableLM, ..., VGG)
import zoo_tf4 as Z4  # the transformers 4.x decode steps
import zoo_vision as V  # the vision, speech and OCR families (issue #37)

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 36

# (batch, seq) for the encoders and prefill; (batch, past) for the decode step. 1 and the range end (batch 4, seq 32).
SIZES = [(1, 1), (1, 7), (2, 13), (3, 5), (1, 32), (4, 32)]
DECODE_SIZES = [(1, 1), (1, 6), (2, 17), (3, 6), (4, 32)]
EXAMPLE = (2, 8)  # the example inputs of the exports: not 1, which torch.export would specialise on
DECODE_EXAMPLE = (2, 5)


class Family:
    """One model family: how to build it, its inputs and outputs, and which of its axes are dynamic."""

    def __init__(self, name, build, inputs, outputs, vocab, sizes=SIZES, example=EXAMPLE, pad_id=None, decode=None,
                 dims=None, feeds=None, dyn=None, out_dyn=None, positional=False, mins=None, options=None, tf=5):
        # decode: None, or the KV cache's (kv_heads, head_dim) of a decode step (past keys/values are inputs).
        self.name, self.build, self.inputs, self.outputs = name, build, inputs, outputs
        self.vocab, self.sizes, self.example, self.pad_id, self.decode = vocab, sizes, example, pad_id, decode
        # The families of issue #37 (zoo_vision.py) name their own dims: dims, the names of a size's components
        # (sizes and example are tuples in that order); feeds(size dict, torch.Generator) -> {input: tensor};
        # dyn {input: {axis: dim}} and out_dyn {output: {axis: dim}}, the dynamic axes; positional: the model's
        # forward takes the inputs positionally (a torchvision model's `x` is exported as `input`); mins {dim: the
        # least size the model accepts} (torch.export's Dim(min=...), and the test's range; 1 when not named);
        # options {name: value}, forward's arguments that are not tensors (ViT's interpolate_pos_encoding=True),
        # passed to it by name in every call and export.
        self.dims, self.feeds, self.dyn, self.out_dyn = dims, feeds, dyn, out_dyn
        self.positional, self.mins, self.options = positional, mins or {}, options or {}
        self.tf = tf  # the major version of transformers that the family is made with (4: make_zoo_tf4.sh)


def bert():
    cfg = T.BertConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                       intermediate_size=64, max_position_embeddings=128, type_vocab_size=2)
    return T.BertModel(cfg)


def distilbert():
    cfg = T.DistilBertConfig(vocab_size=128, dim=32, n_layers=2, n_heads=2, hidden_dim=64,
                             max_position_embeddings=128)
    return T.DistilBertModel(cfg)


def roberta():
    # RoBERTa's positions start after the padding id (pad 1: positions 2..); 130 positions hold seq 128.
    cfg = T.RobertaConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                          intermediate_size=64, max_position_embeddings=130, type_vocab_size=1, pad_token_id=1)
    return T.RobertaModel(cfg, add_pooling_layer=True)


def gpt2_config(use_cache):
    return T.GPT2Config(vocab_size=128, n_embd=32, n_layer=2, n_head=2, n_positions=128, use_cache=use_cache)


def gpt2():
    return T.GPT2LMHeadModel(gpt2_config(False))


class Gpt2DecodeStep(torch.nn.Module):
    """One decode step of GPT-2 with the KV cache passed in and returned as plain tensors, the way a generation loop
    outside PyTorch needs it: (input_ids [b, 1], attention_mask [b, past + 1], past_key_L / past_value_L
    [b, heads, past, head_dim]) -> (logits [b, 1, vocab], present_key_L / present_value_L [b, heads, past + 1, hd])."""

    def __init__(self):
        super().__init__()
        self.lm = T.GPT2LMHeadModel(gpt2_config(True))

    def forward(self, input_ids, attention_mask, past_key_0, past_value_0, past_key_1, past_value_1):
        cache = T.DynamicCache([(past_key_0, past_value_0), (past_key_1, past_value_1)])
        out = self.lm(input_ids=input_ids, attention_mask=attention_mask, cache=cache, use_cache=True)
        present = out.cache if hasattr(out, "cache") else out.past_key_values
        return (out.logits, present.layers[0].keys, present.layers[0].values,
                present.layers[1].keys, present.layers[1].values)


def llama():
    cfg = T.LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128, use_cache=False)
    return T.LlamaForCausalLM(cfg)


def t5_encoder():
    cfg = T.T5Config(vocab_size=128, d_model=32, d_kv=16, d_ff=64, num_layers=2, num_heads=2,
                     relative_attention_num_buckets=32, relative_attention_max_distance=128, use_cache=False)
    return T.T5EncoderModel(cfg)


def clip_text():
    cfg = T.CLIPTextConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                           num_attention_heads=2, max_position_embeddings=128)
    return T.CLIPTextModel(cfg)


PASTS = ["past_key_0", "past_value_0", "past_key_1", "past_value_1"]
PRESENTS = ["present_key_0", "present_value_0", "present_key_1", "present_value_1"]

FAMILIES = [
    Family("bert", bert, ["input_ids", "attention_mask", "token_type_ids"], ["last_hidden_state", "pooler_output"], 128),
    Family("distilbert", distilbert, ["input_ids", "attention_mask"], ["last_hidden_state"], 128),
    Family("roberta", roberta, ["input_ids", "attention_mask"], ["last_hidden_state", "pooler_output"], 128, pad_id=1),
    Family("gpt2", gpt2, ["input_ids", "attention_mask"], ["logits"], 128),
    Family("gpt2_decode", Gpt2DecodeStep, ["input_ids", "attention_mask"] + PASTS, ["logits"] + PRESENTS, 128,
           sizes=DECODE_SIZES, example=DECODE_EXAMPLE, decode=(2, 16)),
    Family("llama", llama, ["input_ids", "attention_mask"], ["logits"], 128),
    Family("t5_encoder", t5_encoder, ["input_ids", "attention_mask"], ["last_hidden_state"], 128),
    Family("clip_text", clip_text, ["input_ids", "attention_mask"], ["last_hidden_state", "pooler_output"], 128),
    # Added later (zoo_families.py).
    Family("albert", Z.albert, ["input_ids", "attention_mask", "token_type_ids"],
           ["last_hidden_state", "pooler_output"], 128),
    Family("electra", Z.electra, ["input_ids", "attention_mask", "token_type_ids"], ["last_hidden_state"], 128),
    Family("mpnet", Z.mpnet, ["input_ids", "attention_mask"], ["last_hidden_state", "pooler_output"], 128, pad_id=1),
    Family("deberta_v2", Z.deberta_v2, ["input_ids", "attention_mask"], ["last_hidden_state"], 128),
    Family("bart_encoder", Z.bart_encoder, ["input_ids", "attention_mask"], ["last_hidden_state"], 128, pad_id=1),
    Family("qwen2", Z.qwen2, ["input_ids", "attention_mask"], ["logits"], 128),
    Family("qwen2_decode", Z.qwen2_decode, ["input_ids", "attention_mask"] + PASTS, ["logits"] + PRESENTS, 128,
           sizes=DECODE_SIZES, example=DECODE_EXAMPLE, decode=(2, 8)),
    Family("mistral", Z.mistral, ["input_ids", "attention_mask"], ["logits"], 128),
    Family("gpt_neox", Z.gpt_neox, ["input_ids", "attention_mask"], ["logits"], 128),
    Family("opt", Z.opt, ["input_ids", "attention_mask"], ["logits"], 128),
    Family("phi", Z.phi, ["input_ids", "attention_mask"], ["logits"], 128),
    Family("bloom", Z.bloom, ["input_ids", "attention_mask"], ["logits"], 128),
]

# Issue #37: vision, speech and OCR (zoo_vision.py). Images: the smallest a network accepts (1x1 for the CNNs: every
# conv and pool is padded), odd sizes (33x47, 7x5), and up to 64x64.
IMAGE = dict(dims=["batch", "height", "width"], feeds=V.images, positional=True,
             dyn={"input": {0: "batch", 2: "height", 3: "width"}}, out_dyn={"logits": {0: "batch"}},
             sizes=[(1, 1, 1), (1, 32, 32), (2, 33, 47), (3, 7, 5), (1, 64, 64), (2, 64, 64)], example=(2, 40, 56))
# Raw audio [batch, samples] -> samples // 10 - 1 frames [batch, frames, 32]: at least 20 samples (one frame).
AUDIO = dict(dims=["batch", "samples"], feeds=V.audio, dyn={"input_values": {0: "batch", 1: "samples"}},
             out_dyn={"last_hidden_state": {0: "batch", 1: "frames"}, "extract_features": {0: "batch", 1: "frames"}},
             sizes=[(1, 20), (1, 29), (2, 157), (3, 400), (1, 1000), (2, 1601)], example=(2, 320),
             mins={"samples": 20})
FAMILIES += [
    Family("resnet", V.resnet, ["input"], ["logits"], None, **IMAGE),
    Family("mobilenet_v3", V.mobilenet_v3, ["input"], ["logits"], None, **IMAGE),
    Family("efficientnet", V.efficientnet, ["input"], ["logits"], None, **IMAGE),
    # The image size is fixed by ViT's position embeddings (interpolate_pos_encoding=False, the default): batch only.
    Family("vit", V.vit, ["pixel_values"], ["last_hidden_state", "pooler_output"], None, dims=["batch"],
           feeds=V.vit_inputs, dyn={"pixel_values": {0: "batch"}},
           out_dyn={"last_hidden_state": {0: "batch"}, "pooler_output": {0: "batch"}},
           sizes=[(1,), (2,), (3,), (4,)], example=(2,)),
    Family("beit", V.beit, ["pixel_values"], ["last_hidden_state", "pooler_output"], None, dims=["batch"],
           feeds=V.vit_inputs, dyn={"pixel_values": {0: "batch"}},
           out_dyn={"last_hidden_state": {0: "batch"}, "pooler_output": {0: "batch"}},
           sizes=[(1,), (2,), (3,), (4,)], example=(2,)),
    # The same ViT called with interpolate_pos_encoding=True, as for images of other sizes: the position embeddings
    # resized bicubically to the patch grid, so height and width are dynamic too (at least 8: one patch).
    Family("vit_interpolate", V.vit, ["pixel_values"], ["last_hidden_state", "pooler_output"], None,
           dims=["batch", "height", "width"], feeds=V.vit_images, options={"interpolate_pos_encoding": True},
           dyn={"pixel_values": {0: "batch", 2: "height", 3: "width"}},
           out_dyn={"last_hidden_state": {0: "batch", 1: "tokens"}, "pooler_output": {0: "batch"}},
           sizes=[(1, 8, 8), (1, 32, 32), (2, 33, 47), (3, 15, 9), (1, 64, 64), (2, 48, 40)], example=(2, 48, 40),
           mins={"height": 8, "width": 8}),
    Family("wav2vec2", V.wav2vec2, ["input_values"], ["last_hidden_state", "extract_features"], None, **AUDIO),
    # Text lines [batch, 1, 32, width] -> logits [width // 4 + 1, batch, 20] (time-major): at least width 4.
    Family("crnn", V.crnn, ["input"], ["logits"], None, dims=["batch", "width"], feeds=V.text_lines,
           positional=True, dyn={"input": {0: "batch", 3: "width"}}, out_dyn={"logits": {0: "steps", 1: "batch"}},
           sizes=[(1, 4), (1, 7), (2, 37), (3, 100), (1, 128), (2, 129)], example=(2, 64), mins={"width": 4}),
    Family("gru_classifier", V.gru_classifier, ["input_ids"], ["logits"], 128, dims=["batch", "seq"],
           feeds=V.tokens, positional=True, dyn={"input_ids": {0: "batch", 1: "seq"}}, out_dyn={"logits": {0: "batch"}}),
]

# Added with the transformers 4.x families (issue #36): encoder-decoder decode steps (T5, BART), Whisper's encoder,
# Gemma, Falcon, MobileBERT; ConvNeXt, SegFormer and DETR (transformers' vision models; dynamic height and width,
# at least 8x8, DETR 16x16). Not Swin: transformers
# 5.25's SwinModel at a small config (embed 16, depths [2, 1], windows of 4 patches) fails in PyTorch itself at every
# image size tried, 8x8 to 64x64 (SDPA: a mask of 16 against 4), and its dynamo export fails (a view of the windows).
T5_STEP = ["decoder_input_ids", "encoder_hidden_states", "encoder_attention_mask"] + PASTS
SEQ2SEQ_STEP = dict(dims=["batch", "past", "src"], feeds=Z.seq2seq_step, positional=True,
                    dyn={"decoder_input_ids": {0: "batch"}, "encoder_hidden_states": {0: "batch", 1: "src"},
                         "encoder_attention_mask": {0: "batch", 1: "src"},
                         **{k: {0: "batch", 2: "past"} for k in PASTS}},
                    out_dyn={"logits": {0: "batch"}, **{k: {0: "batch", 2: "total"} for k in PRESENTS}},
                    sizes=[(1, 1, 1), (1, 6, 7), (2, 17, 13), (3, 6, 5), (4, 32, 32)], example=(2, 5, 9))
WHISPER = dict(dims=["batch"], feeds=Z.mel, dyn={"input_features": {0: "batch"}},
               out_dyn={"last_hidden_state": {0: "batch"}}, sizes=[(1,), (2,), (3,), (4,)], example=(2,))
PIXELS = dict(dims=["batch", "height", "width"], feeds=V.vit_images,
              dyn={"pixel_values": {0: "batch", 2: "height", 3: "width"}},
              sizes=[(1, 8, 8), (1, 32, 32), (2, 33, 47), (3, 15, 9), (1, 64, 64), (2, 48, 40)], example=(2, 48, 40),
              mins={"height": 8, "width": 8})
FAMILIES += [
    Family("t5_decode", Z.t5_decode, T5_STEP, ["logits"] + PRESENTS, 128, **SEQ2SEQ_STEP),
    Family("bart_decode", Z.bart_decode, T5_STEP, ["logits"] + PRESENTS, 128, **SEQ2SEQ_STEP),
    Family("whisper_encoder", Z.whisper_encoder, ["input_features"], ["last_hidden_state"], None, **WHISPER),
    Family("gemma", Z.gemma, ["input_ids", "attention_mask"], ["logits"], 128),
    Family("falcon", Z.falcon, ["input_ids", "attention_mask"], ["logits"], 128),
    Family("mobilebert", Z.mobilebert, ["input_ids", "attention_mask", "token_type_ids"],
           ["last_hidden_state", "pooler_output"], 128),
    Family("convnext", V.convnext, ["pixel_values"], ["last_hidden_state", "pooler_output"], None,
           out_dyn={"last_hidden_state": {0: "batch", 2: "h32", 3: "w32"}, "pooler_output": {0: "batch"}}, **PIXELS),
    Family("segformer", V.segformer, ["pixel_values"], ["logits"], None,
           out_dyn={"logits": {0: "batch", 2: "h4", 3: "w4"}}, **PIXELS),
    # DETR's backbone has stride 8 (and the mask is resized to it): at least 16x16.
    Family("detr", V.detr, ["pixel_values"], ["logits", "pred_boxes"], None,
           out_dyn={"logits": {0: "batch"}, "pred_boxes": {0: "batch"}},
           **dict(PIXELS, sizes=[(1, 16, 16), (1, 32, 32), (2, 33, 47), (3, 17, 21), (1, 64, 64), (2, 48, 40)],
                  mins={"height": 16, "width": 16})),
]

# Families the project had not tried (zoo_more.py): causal LMs (StableLM, OLMo, XGLM, BioGPT), the encoders of Marian
# and Pegasus, DeiT, HuBERT, and torchvision's ShuffleNetV2, MobileNetV2, SqueezeNet, DenseNet, RegNet, GoogLeNet and
# VGG at small widths. A CNN without padding everywhere takes a least image size (mins); its sizes start there.
def cnn(least):
    return dict(IMAGE, mins={"height": least, "width": least} if least > 1 else None,
                sizes=[(1, least, least), (1, 32, 32), (2, 33, 47), (3, least + 2, least + 5), (1, 64, 64),
                       (2, 64, 64)])


LM = (["input_ids", "attention_mask"], ["logits"], 128)
FAMILIES += [
    Family("stablelm", M.stablelm, *LM),
    Family("olmo", M.olmo, *LM),
    Family("xglm", M.xglm, *LM),
    Family("biogpt", M.biogpt, *LM),
    Family("marian_encoder", M.marian_encoder, ["input_ids", "attention_mask"], ["last_hidden_state"], 128, pad_id=1),
    Family("pegasus_encoder", M.pegasus_encoder, ["input_ids", "attention_mask"], ["last_hidden_state"], 128,
           pad_id=1),
    Family("deit", M.deit, ["pixel_values"], ["logits"], None, dims=["batch"], feeds=V.vit_inputs,
           dyn={"pixel_values": {0: "batch"}}, out_dyn={"logits": {0: "batch"}}, sizes=[(1,), (2,), (3,), (4,)],
           example=(2,)),
    Family("hubert", M.hubert, ["input_values"], ["last_hidden_state"], None,
           **dict(AUDIO, out_dyn={"last_hidden_state": {0: "batch", 1: "frames"}})),
    Family("shufflenet_v2", M.shufflenet_v2, ["input"], ["logits"], None, **cnn(1)),
    Family("mobilenet_v2", M.mobilenet_v2, ["input"], ["logits"], None, **cnn(1)),
    Family("regnet", M.regnet, ["input"], ["logits"], None, **cnn(1)),
    Family("squeezenet", M.squeezenet, ["input"], ["logits"], None, **cnn(17)),
    Family("densenet", M.densenet, ["input"], ["logits"], None, **cnn(13)),
    Family("googlenet", M.googlenet, ["input"], ["logits"], None, **cnn(15)),
    Family("vgg", M.vgg, ["input"], ["logits"], None, **cnn(16)),
    Family("cohere", M.cohere, *LM),
    Family("wavlm", M.wavlm, ["input_values"], ["last_hidden_state", "extract_features"], None, **AUDIO),
    # torchvision's Swin drops the shift where a stage's padded map is no larger than its window (a Python branch
    # on sizes, which the exports trace as the example's): the export is the model only from 40x40 on (stage 2's
    # map of 5 patches), so that is the least size stored and checked.
    Family("swin", M.swin, ["input"], ["logits"], None,
           **dict(IMAGE, mins={"height": 40, "width": 40},
                  sizes=[(1, 40, 40), (1, 48, 56), (2, 41, 47), (3, 64, 45), (1, 64, 64), (2, 64, 64)])),
]

# transformers 4.x (make_zoo_tf4.sh runs this script with transformers 4.46 first on PYTHONPATH): the families whose
# 4.x export differs from 5.x's, built by the same builders at the same sizes; the decode steps call the model the
# 4.x way (zoo_tf4.py). A family's tf is the transformers major version that it is made with.
TF4 = [
    Family("bert_tf4", bert, ["input_ids", "attention_mask", "token_type_ids"], ["last_hidden_state", "pooler_output"],
           128, tf=4),
    Family("distilbert_tf4", distilbert, ["input_ids", "attention_mask"], ["last_hidden_state"], 128, tf=4),
    Family("roberta_tf4", roberta, ["input_ids", "attention_mask"], ["last_hidden_state", "pooler_output"], 128,
           pad_id=1, tf=4),
    Family("gpt2_tf4", gpt2, ["input_ids", "attention_mask"], ["logits"], 128, tf=4),
    Family("gpt2_decode_tf4", Z4.Gpt2LegacyDecodeStep, ["input_ids", "attention_mask"] + PASTS, ["logits"] + PRESENTS,
           128, sizes=DECODE_SIZES, example=DECODE_EXAMPLE, decode=(2, 16), tf=4),
    Family("llama_tf4", llama, ["input_ids", "attention_mask"], ["logits"], 128, tf=4),
    Family("llama_decode_tf4", Z4.LlamaDecodeStep, ["input_ids", "attention_mask"] + PASTS, ["logits"] + PRESENTS,
           128, sizes=DECODE_SIZES, example=DECODE_EXAMPLE, decode=(2, 8), tf=4),
    Family("t5_encoder_tf4", t5_encoder, ["input_ids", "attention_mask"], ["last_hidden_state"], 128, tf=4),
    Family("t5_decode_tf4", Z4.T5DecodeStep, T5_STEP, ["logits"] + PRESENTS, 128, tf=4, **SEQ2SEQ_STEP),
    Family("clip_text_tf4", clip_text, ["input_ids", "attention_mask"], ["last_hidden_state", "pooler_output"], 128,
           tf=4),
    Family("vit_tf4", V.vit, ["pixel_values"], ["last_hidden_state", "pooler_output"], None, dims=["batch"],
           feeds=V.vit_inputs, dyn={"pixel_values": {0: "batch"}},
           out_dyn={"last_hidden_state": {0: "batch"}, "pooler_output": {0: "batch"}},
           sizes=[(1,), (2,), (3,), (4,)], example=(2,), tf=4),
    Family("whisper_encoder_tf4", Z.whisper_encoder, ["input_features"], ["last_hidden_state"], None, tf=4, **WHISPER),
    Family("wav2vec2_tf4", V.wav2vec2, ["input_values"], ["last_hidden_state", "extract_features"], None, tf=4,
           **AUDIO),
]
FAMILIES += TF4


def make_inputs(fam, b, s, seed, size=None):
    """Inputs at batch b and seq s (the past length for the decode step). Token ids uniform in [0, vocab); the mask
    is 1s with, for batch > 1, some trailing 0s in rows after the first (padding; never a row of 0s). The decode
    step's mask covers past + 1 positions and pads on the left (generation pads there; the new token is never
    padding); its past keys and values are normal."""
    g = torch.Generator().manual_seed(seed)
    if fam.feeds:
        return fam.feeds(dict(zip(fam.dims, size)), g)
    feeds = {}
    n = 1 if fam.decode else s
    ids = torch.randint(0, fam.vocab, (b, n), generator=g, dtype=torch.int64)
    total = s + 1 if fam.decode else s
    mask = torch.ones(b, total, dtype=torch.int64)
    for row in range(1, b):
        pad = int(torch.randint(0, total // 2 + 1, (1,), generator=g))
        if pad:
            if fam.decode:
                mask[row, :pad] = 0
            else:
                mask[row, total - pad:] = 0
    if fam.pad_id is not None and not fam.decode:
        ids = torch.where(mask == 1, ids, torch.full_like(ids, fam.pad_id))
    feeds["input_ids"] = ids
    feeds["attention_mask"] = mask
    if "token_type_ids" in fam.inputs:
        # A sentence pair: type 0 then type 1 from a random split point.
        split = torch.randint(0, n + 1, (b, 1), generator=g)
        feeds["token_type_ids"] = (torch.arange(n).unsqueeze(0) >= split).to(torch.int64)
    if fam.decode:
        for name in PASTS:
            feeds[name] = torch.randn(b, fam.decode[0], s, fam.decode[1], generator=g)
    return {k: feeds[k] for k in fam.inputs}


def run_torch(model, fam, feeds):
    with torch.no_grad():
        if isinstance(model, Positional) or fam.positional:
            out = model(*(feeds[k] for k in fam.inputs))
        else:
            out = model(**feeds, **fam.options)
    if isinstance(out, torch.Tensor):
        vals = [out]
    elif isinstance(out, tuple):
        vals = list(out)
    else:  # a transformers ModelOutput
        vals = [out[k] for k in fam.outputs]
    assert len(vals) == len(fam.outputs), (fam.name, len(vals))
    return dict(zip(fam.outputs, vals))


def dynamo_shapes(fam):
    if fam.dyn:
        dims = {d: torch.export.Dim(d, min=fam.mins[d]) if d in fam.mins else torch.export.Dim(d)
                for axes in fam.dyn.values() for d in axes.values()}
        shapes = {k: {a: dims[d] for a, d in fam.dyn.get(k, {}).items()} for k in fam.inputs}
        return tuple(shapes[k] for k in fam.inputs) if fam.positional else {**shapes, **{k: None for k in fam.options}}
    batch = torch.export.Dim("batch")
    if fam.decode:
        past = torch.export.Dim("past")
        shapes = {"input_ids": {0: batch}, "attention_mask": {0: batch, 1: past + 1}}
        for name in PASTS:
            shapes[name] = {0: batch, 2: past}
        return shapes
    seq = torch.export.Dim("seq")
    return {k: {0: batch, 1: seq} for k in fam.inputs}


def torchscript_axes(fam):
    if fam.dyn:
        return {**{k: dict(v) for k, v in fam.dyn.items()}, **{k: dict(v) for k, v in (fam.out_dyn or {}).items()}}
    if fam.decode:
        axes = {"input_ids": {0: "batch"}, "attention_mask": {0: "batch", 1: "total"}, "logits": {0: "batch"}}
        for name in PASTS:
            axes[name] = {0: "batch", 2: "past"}
        for name in PRESENTS:
            axes[name] = {0: "batch", 2: "total"}
        return axes
    axes = {k: {0: "batch", 1: "seq"} for k in fam.inputs}
    for k in fam.outputs:
        axes[k] = {0: "batch"} if k == "pooler_output" else {0: "batch", 1: "seq"}
    return axes


class Positional(torch.nn.Module):
    """The model called with its inputs by name and its outputs as a tuple: the usual workaround where the
    TorchScript exporter cannot call a transformers model itself (it fills every later parameter of forward with its
    default, positionally, and transformers 5's forward then gets use_cache twice), and where calling it directly
    exports another computation than the model's at its defaults (GPT-2's and Llama's logits_to_keep=0, `forward`'s
    default, becomes a graph input used as a tensor index: logits[:, logits_to_keep] of shape [batch, vocab] instead
    of every position's [batch, seq, vocab]). For a causal LM this is the usual prefill export: (input_ids,
    attention_mask) -> logits [batch, seq, vocab]. PyTorch's reference outputs are this module's own."""

    def __init__(self, model, fam):
        super().__init__()
        self.model, self.fam = model, fam
        self.train(model.training)  # a new Module is in training mode; the export restores that mode recursively

    def forward(self, *args):
        return tuple(run_torch(self.model, self.fam, dict(zip(self.fam.inputs, args))).values())


def export(model, fam, exporter, path):
    """Exports `model` (the family's model or its Positional wrapper) to `path`; returns it, in eval mode."""
    if fam.dims:
        ex = make_inputs(fam, None, None, seed=SEED, size=fam.example)
    else:
        ex = make_inputs(fam, *fam.example, seed=SEED)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "dynamo" and fam.positional:
            torch.onnx.export(model, tuple(ex.values()), path, dynamo=True, dynamic_shapes=dynamo_shapes(fam),
                              input_names=fam.inputs, output_names=fam.outputs)
        elif exporter == "dynamo":
            torch.onnx.export(model, (), path, kwargs={**ex, **fam.options}, dynamo=True, dynamic_shapes=dynamo_shapes(fam),
                              input_names=fam.inputs, output_names=fam.outputs)
        elif isinstance(model, Positional) or fam.positional:
            torch.onnx.export(model, tuple(ex.values()), path, dynamo=False,
                              dynamic_axes=torchscript_axes(fam), input_names=fam.inputs, output_names=fam.outputs)
        else:
            torch.onnx.export(model, (), path, kwargs={**ex, **fam.options}, dynamo=False, dynamic_axes=torchscript_axes(fam),
                              input_names=fam.inputs, output_names=fam.outputs)
    # The TorchScript exporter exports in eval mode and then restores the module's own mode on every submodule: a
    # wrapper left in training mode would leave the model in it too (dropout in PyTorch's reference outputs).
    training = [n for n, m in model.named_modules() if m.training]
    if training:
        raise SystemExit("%s: %s left in training mode after the export: %s" % (fam.name, exporter, training[:3]))
    return model


def describe(path):
    """What the ONNX file holds: opsets, IR version, graph inputs/outputs, op counts, external data."""
    import onnx
    m = onnx.load(path, load_external_data=False)

    def shape(vi):
        t = vi.type.tensor_type
        dims = [d.dim_param if d.HasField("dim_param") else (d.dim_value if d.HasField("dim_value") else "?")
                for d in t.shape.dim]
        return {"name": vi.name, "elem_type": onnx.TensorProto.DataType.Name(t.elem_type), "shape": dims}

    ops = collections.Counter(("" if n.domain in ("", "ai.onnx") else n.domain + "::") + n.op_type
                              for n in m.graph.node)
    for f in m.functions:  # local functions count apart (the exporters may emit them)
        for n in f.node:
            ops["(function %s) %s" % (f.name, n.op_type)] += 1
    ext = sorted({e.value for t in m.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL
                  for e in t.external_data if e.key == "location"})
    n_ext = sum(1 for t in m.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL)
    return {
        "ir_version": m.ir_version,
        "opsets": {(o.domain or "ai.onnx"): o.version for o in m.opset_import},
        "producer": "%s %s" % (m.producer_name, m.producer_version),
        "inputs": [shape(v) for v in m.graph.input],
        "outputs": [shape(v) for v in m.graph.output],
        "initializers": len(m.graph.initializer),
        "external_initializers": n_ext,
        "external_files": ext,
        "functions": len(m.functions),
        "nodes": len(m.graph.node),
        "ops": dict(sorted(ops.items())),
    }


def make(fam, exporter, record):
    name = "%s_%s" % (fam.name, exporter)
    path = os.path.join(HERE, name + ".onnx")
    for stale in (path, path + ".data", os.path.join(HERE, name + ".npz")):
        if os.path.exists(stale):
            os.remove(stale)
    torch.manual_seed(SEED)
    model = fam.build().eval()
    # transformers initialises biases to 0 and norms to 1; trained models have neither, and a bias or norm weight
    # that an importer drops must show. Every parameter moves by N(0, 0.02^2).
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.02)
    V.bn_stats(model)  # BatchNorm's running statistics away from 0 and 1 (the families of issue #37 have BatchNorm)
    def failed(e):
        # The exception's first line and its cause's (the exporter wraps the real error), without colour codes.
        lines = []
        while e is not None and len(lines) < 2:
            first = re.sub(r"\x1b\[[0-9;]*m", "", (str(e).strip().splitlines() or [""])[0]).strip()
            lines.append("%s: %s" % (type(e).__name__, first[:300]))
            e = e.__cause__
        print("%s: export failed: %s" % (name, " <- ".join(lines)), flush=True)
        traceback.print_exc(limit=3)
        for stale in (path, path + ".data"):
            if os.path.exists(stale):
                os.remove(stale)
        return " <- ".join(lines)

    def added_inputs():
        # Graph inputs the exporter added on its own: the TorchScript exporter passes every later parameter of
        # forward that has a default, and a number becomes an input (GPT-2's and Llama's logits_to_keep=0) that
        # the traced model then uses as a tensor, so the graph is not the model's computation at that default.
        return [vi["name"] for vi in describe(path)["inputs"] if vi["name"] not in fam.inputs]

    direct_error = None
    exported = model  # the module exported, whose outputs are PyTorch's reference
    try:
        export(model, fam, exporter, path)
        if exporter == "torchscript" and added_inputs():
            direct_error = "the export adds graph inputs %s (forward's defaults, traced as tensors)" % added_inputs()
            print("%s: %s" % (name, direct_error), flush=True)
    except Exception as e:  # PyTorch's failure, not dscc's: recorded
        direct_error = failed(e)
        if exporter != "torchscript" or fam.decode:
            record[name] = {"family": fam.name, "exporter": exporter, "export": "failed", "error": direct_error}
            return
    if direct_error is not None:
        # The TorchScript exporter cannot call transformers 5's models directly, or exports another computation
        # (see Positional); what users do then is wrap the model, so the fixture is the wrapped model's export, and
        # the direct failure is recorded.
        for stale in (path, path + ".data"):
            if os.path.exists(stale):
                os.remove(stale)
        try:
            exported = export(Positional(model, fam), fam, exporter, path)
        except Exception as e2:
            record[name] = {"family": fam.name, "exporter": exporter, "export": "failed",
                            "error": direct_error, "wrapped_error": failed(e2)}
            return
    if added_inputs():
        raise SystemExit("%s: graph inputs %s are not the model's inputs %s" % (name, added_inputs(), fam.inputs))
    strip_node_metadata(path)
    fixed = fixed_axes(fam, path)
    if fixed:
        # The exporter traced a dynamic axis as the example's size (transformers 4.46's Llama and T5 cache code under
        # torch.export: the batch becomes 2): the export is not the model at other sizes; PyTorch's failure, not kept.
        why = "the export fixed dynamic axes to the example's sizes: %s" % ", ".join(fixed)
        print("%s: export failed: %s" % (name, why), flush=True)
        for stale in (path, path + ".data"):
            if os.path.exists(stale):
                os.remove(stale)
        record[name] = {"family": fam.name, "exporter": exporter, "export": "failed", "error": why}
        return
    same = same_as_5x(fam, exporter, path)
    if same:
        # Issue #36 asks for transformers 4.x exports where they differ: one that is the 5.x export's graph adds
        # nothing to check (and megabytes to the repository).
        print("%s: the same graph as %s; not kept" % (name, same), flush=True)
        for stale in (path, path + ".data"):
            if os.path.exists(stale):
                os.remove(stale)
        record[name] = {"family": fam.name, "exporter": exporter, "export": "same graph as %s, not kept" % same,
                        "direct_error": direct_error}
        return
    desc = describe(path)
    data = {}
    sizes = []
    for k, size in enumerate(fam.sizes):
        if fam.dims:
            feeds = make_inputs(fam, None, None, seed=sum(v * 7919 ** i for i, v in enumerate(size)) % 2 ** 31,
                                size=size)
            sizes.append(dict(zip(fam.dims, size)))
        else:
            b, s = size
            feeds = make_inputs(fam, b, s, seed=1000 * b + s)
            sizes.append({"batch": b, "past" if fam.decode else "seq": s})
        outs = run_torch(exported, fam, feeds)
        for n, v in feeds.items():
            data["in.%s.%d" % (n, k)] = v.numpy()
        for n, v in outs.items():
            data["out.%s.%d" % (n, k)] = v.detach().numpy()
    meta = {"family": fam.name, "exporter": exporter, "inputs": fam.inputs, "outputs": fam.outputs, "sizes": sizes}
    if fam.mins:
        # The least size that the model accepts, {input: {axis: size}} (zoo_test.py's range starts there): by input
        # and axis, not dim name, for the dynamo exporter may name the dims s0, s1, ... (vit_interpolate).
        meta["min"] = {k: {str(a): fam.mins[d] for a, d in axes.items() if d in fam.mins}
                       for k, axes in fam.dyn.items() if any(d in fam.mins for d in axes.values())}
    data["meta"] = np.array(json.dumps(meta))
    np.savez_compressed(os.path.join(HERE, name + ".npz"), **data)
    files = [f for f in (name + ".onnx", name + ".onnx.data", name + ".npz") if os.path.exists(os.path.join(HERE, f))]
    rec = {"family": fam.name, "exporter": exporter, "export": "ok" if direct_error is None else "ok, wrapped",
           "direct_error": direct_error,
           "files": {f: os.path.getsize(os.path.join(HERE, f)) for f in files}}
    rec.update(desc)
    rec["onnxruntime"] = check_ort(path, fam, data)
    record[name] = rec
    print("%s: %s, opsets %s, IR %d, %d nodes, external data %s" % (
        name, ", ".join("%s %d B" % kv for kv in rec["files"].items()), rec["opsets"], rec["ir_version"],
        rec["nodes"], rec["external_files"] or "none"), flush=True)


def graph_signature(path):
    """What makes two exports the same computation, whatever their names, metadata and random weights: each node's
    domain, op type, input and output counts and attributes, and the initializers, in order; a tensor by its dtype and
    dims, and its values when it has at most 16 (shapes, axes, scalars: the weights differ with the version's
    initialisation order)."""
    import onnx
    m = onnx.load(path)

    def tensor(t):
        a = onnx.numpy_helper.to_array(t)
        return (t.data_type, tuple(t.dims), a.tobytes() if a.size <= 16 else None)

    def attr(a):
        v = onnx.helper.get_attribute_value(a)
        if isinstance(v, onnx.TensorProto):
            return tensor(v)
        if isinstance(v, onnx.GraphProto):
            return tuple((n.op_type, len(n.input)) for n in v.node)
        return v if isinstance(v, (int, float, bytes, str)) else repr(v)

    nodes = [(n.domain, n.op_type, len(n.input), len(n.output),
              tuple((a.name, attr(a)) for a in n.attribute if a.name != "name")) for n in m.graph.node]
    inits = [tensor(t) for t in m.graph.initializer]
    return nodes, inits


def strip_node_metadata(path):
    """Drops every node's metadata_props (the dynamo exporter's PyTorch stack trace, FX node and scope per node: 85 to
    90% of its .onnx file; dscc reads none of it) to keep the repository small; the graph, the model's own metadata
    and the external data stay as exported. The exports made before this (issue #36's first round, issue #37's) keep
    theirs until they are made again."""
    import onnx
    m = onnx.load(path, load_external_data=False)
    nodes = list(m.graph.node) + [n for f in m.functions for n in f.node]
    if not any(len(n.metadata_props) for n in nodes):
        return
    for n in nodes:
        del n.metadata_props[:]
    onnx.save(m, path)


def fixed_axes(fam, path):
    """The graph inputs' axes that the family makes dynamic but the export gave a fixed size: ["input[axis] = size"]."""
    axes = torchscript_axes(fam)
    return ["%s[%d] = %d" % (vi["name"], a, vi["shape"][a]) for vi in describe(path)["inputs"]
            for a in sorted(axes.get(vi["name"], {})) if isinstance(vi["shape"][a], int)]


def same_as_5x(fam, exporter, path):
    """For a transformers 4.x family (name ending in _tf4): the 5.x fixture's name when its graph is this export's
    (graph_signature), else None."""
    if fam.tf == 5 or not fam.name.endswith("_tf4"):
        return None
    twin = "%s_%s" % (fam.name[:-len("_tf4")], exporter)
    twin_path = os.path.join(HERE, twin + ".onnx")
    if not os.path.exists(twin_path) or graph_signature(twin_path) != graph_signature(path):
        return None
    return twin


def check_ort(path, fam, data):
    """onnxruntime on the export at every stored size against PyTorch's outputs: {"max_abs_diff": the largest
    |ort - torch| over every output and size, "sizes": the number checked} or {"error": the first failure}. Shapes
    must agree; max_abs_output, the largest |torch| (the scale)."""
    try:
        import onnxruntime as ort
    except ImportError:
        return {"error": "onnxruntime is not installed"}
    try:
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    except Exception as e:
        return {"error": "%s: %s" % (type(e).__name__, (str(e).strip().splitlines() or [""])[0][:300])}
    worst, scale, k = 0.0, 0.0, 0
    while "in.%s.%d" % (fam.inputs[0], k) in data:
        feeds = {n: data["in.%s.%d" % (n, k)] for n in fam.inputs}
        try:
            got = sess.run(fam.outputs, feeds)
        except Exception as e:
            return {"error": "size %d: %s: %s" % (k, type(e).__name__, (str(e).strip().splitlines() or [""])[0][:300])}
        for n, g in zip(fam.outputs, got):
            w = data["out.%s.%d" % (n, k)]
            if g.shape != w.shape:
                return {"error": "size %d: output %s: shape %s, PyTorch %s" % (k, n, g.shape, w.shape)}
            if g.size:
                worst = max(worst, float(np.max(np.abs(g.astype(np.float64) - w.astype(np.float64)))))
                scale = max(scale, float(np.max(np.abs(w.astype(np.float64)))))
        k += 1
    print("%s: onnxruntime agrees with PyTorch at %d sizes to %.3g (outputs up to %.3g)" % (
        os.path.basename(path), k, worst, scale), flush=True)
    return {"max_abs_diff": worst, "max_abs_output": scale, "sizes": k}


def main(argv):
    exporters = ("dynamo", "torchscript")
    known = [f.name for f in FAMILIES] + ["%s_%s" % (f.name, e) for f in FAMILIES for e in exporters]
    major = int(T.__version__.split(".")[0])
    ours = [f for f in FAMILIES if f.tf == major]  # this transformers' families (make_zoo_tf4.sh: 4.x's)
    chosen = argv[1:] or [f.name for f in ours]
    unknown = set(chosen) - set(known)
    if unknown:
        print("unknown families: %s (known: %s, or FAMILY_EXPORTER)" % (sorted(unknown), [f.name for f in FAMILIES]),
              file=sys.stderr)
        return 2
    other = sorted(c for c in chosen if c not in [f.name for f in ours] and
                   c not in ["%s_%s" % (f.name, e) for f in ours for e in exporters])
    if other:
        print("%s: made with another major version of transformers than %s (the *_tf4 families: make_zoo_tf4.sh; "
              "the rest: make_zoo.sh)" % (other, T.__version__), file=sys.stderr)
        return 2
    rec_path = os.path.join(HERE, "exports.json")
    record = load_record(rec_path)
    for fam in FAMILIES:
        for exporter in exporters:
            if fam.name not in chosen and "%s_%s" % (fam.name, exporter) not in chosen:
                continue
            make(fam, exporter, record)
            save_record(rec_path, record)
    record_versions(record)
    save_record(rec_path, record)
    return 0


def load_record(rec_path):
    """The exports' record so far ({} when there is none)."""
    if not os.path.exists(rec_path):
        return {}
    with open(rec_path) as f:
        return json.load(f)


def save_record(rec_path, record):
    """Writes the exports' record (exports.json), sorted."""
    with open(rec_path, "w") as f:
        json.dump(dict(sorted(record.items())), f, indent=1)
        f.write("\n")


def record_versions(record):
    """Notes the exporting packages' versions in the record."""
    import onnx, onnxscript
    key = "versions" if T.__version__.startswith("5.") else "versions_tf%s" % T.__version__.split(".")[0]
    record[key] = {"torch": torch.__version__, "transformers": T.__version__, "onnx": onnx.__version__,
                   "onnxscript": onnxscript.__version__}


if __name__ == "__main__":
    sys.exit(main(sys.argv))
