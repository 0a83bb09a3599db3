# Small BERT- and GPT-style PyTorch modules, written as Hugging Face writes them, for the ONNX import tests.
"""The two transformer models of the ONNX import tests.

`Bert`: token, position and token-type embeddings, a padding mask turned into
an additive bias, post-norm encoder layers (self-attention, GELU feed-forward)
and a tanh pooler over the first token. Inputs `input_ids`, `attention_mask`
(i64 [batch, seq]); outputs `last_hidden_state`, `pooler_output`.

`Gpt`: token and position embeddings, pre-norm decoder layers with a causal
mask sliced from a buffer (as GPT-2 does), a tied LM head, and the argmax of
the last position's logits. Input `input_ids`; outputs `logits`, `next_token`.

Both take their shapes from the input at run time (`x.shape`, `view`,
`reshape`, slicing by the sequence length), so an export with dynamic axes
keeps `batch` and `seq` symbolic.
"""
import math

import torch
from torch import nn

MAX_SEQ = 64


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.h, self.dh = heads, d // heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

    def split(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.h, self.dh).transpose(1, 2)

    def forward(self, x, bias):
        b, s, d = x.shape
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.dh) + bias
        p = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(p, v).transpose(1, 2).reshape(b, s, d)
        return self.o(ctx)


class BertLayer(nn.Module):
    def __init__(self, d, heads, ff):
        super().__init__()
        self.attn = Attention(d, heads)
        self.ln1, self.ln2 = nn.LayerNorm(d, eps=1e-12), nn.LayerNorm(d, eps=1e-12)
        self.up, self.down = nn.Linear(d, ff), nn.Linear(ff, d)

    def forward(self, x, bias):
        x = self.ln1(x + self.attn(x, bias))
        return self.ln2(x + self.down(nn.functional.gelu(self.up(x))))


class Bert(nn.Module):
    def __init__(self, vocab=97, d=32, heads=4, ff=64, layers=2):
        super().__init__()
        self.word = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(MAX_SEQ, d)
        self.token_type = nn.Embedding(2, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(d, heads, ff) for _ in range(layers))
        self.pool = nn.Linear(d, d)
        self.register_buffer("position_ids", torch.arange(MAX_SEQ).unsqueeze(0))

    def forward(self, input_ids, attention_mask):
        s = input_ids.shape[1]
        pos = self.position_ids[:, :s]
        types = torch.zeros_like(input_ids)
        x = self.ln(self.word(input_ids) + self.pos(pos) + self.token_type(types))
        bias = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, bias)
        pooled = torch.tanh(self.pool(x[:, 0]))
        return x, pooled


class GptBlock(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.h, self.dh = heads, d // heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.register_buffer("causal", torch.tril(torch.ones(MAX_SEQ, MAX_SEQ, dtype=torch.bool)).view(
            1, 1, MAX_SEQ, MAX_SEQ))

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (t.view(b, s, self.h, self.dh).transpose(1, 2) for t in (q, k, v))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.dh)
        mask = self.causal[:, :, :s, :s]
        scores = torch.where(mask, scores, torch.tensor(-1e4, dtype=scores.dtype))
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(ctx)
        return x + self.down(nn.functional.gelu(self.up(self.ln2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self, vocab=101, d=32, heads=4, layers=2):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(MAX_SEQ, d)
        self.blocks = nn.ModuleList(GptBlock(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)

    def forward(self, input_ids):
        s = input_ids.shape[1]
        pos = torch.arange(s, dtype=torch.long, device=input_ids.device).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(pos)
        for blk in self.blocks:
            x = blk(x)
        logits = torch.matmul(self.ln(x), self.wte.weight.t())
        return logits, torch.argmax(logits[:, -1, :], dim=-1)


def make(name, seed=0):
    """The model `name` ('bert' or 'gpt') with weights drawn from `seed`, in eval mode."""
    torch.manual_seed(seed)
    m = Bert() if name == "bert" else Gpt()
    with torch.no_grad():  # non-trivial LayerNorm affine parameters
        for mod in m.modules():
            if isinstance(mod, nn.LayerNorm):
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.uniform_(-0.2, 0.2)
    return m.eval()


def inputs(name, batch, seq, seed):
    """Random inputs for `name` at [batch, seq]: token ids, and for BERT a padding mask (each row a random length >= 1)."""
    g = torch.Generator().manual_seed(seed)
    vocab = 97 if name == "bert" else 101
    ids = torch.randint(0, vocab, (batch, seq), generator=g)
    if name == "gpt":
        return {"input_ids": ids}
    lens = torch.randint(1, seq + 1, (batch,), generator=g)
    mask = (torch.arange(seq)[None, :] < lens[:, None]).to(torch.long)
    return {"input_ids": ids, "attention_mask": mask}


INPUTS = {"bert": ["input_ids", "attention_mask"], "gpt": ["input_ids"]}
OUTPUTS = {"bert": ["last_hidden_state", "pooler_output"], "gpt": ["logits", "next_token"]}
