"""A small decoder-only transformer for examples/torch_allocator/run_model.py.

It lives in a directory named model_desc because memobs' Python stack
rule (RTP-LLM's) keys on that name: a tag starts at the outermost frame in
here, so the allocator's reports show the model's lines, not the script's.

Embedding, `layers` blocks of attention (plain matmul + softmax over a
preallocated KV cache) and a GELU MLP, each behind a LayerNorm, then the
LM head. Random weights: the tokens it produces mean nothing; the memory
it uses is that of a real model of this shape. `prefill` also computes the
prompt's log-probabilities over the whole vocabulary, in fp32, as engines
do for prompt logprobs: those [batch, prompt, vocab] tensors are where
memory peaks.
"""
import math

import torch
from torch import nn


class Config:
    def __init__(self, vocab=32000, dim=512, heads=8, layers=2, ffn=2048):
        if dim % heads:
            raise ValueError("dim %d is not a multiple of heads %d" % (dim, heads))
        self.vocab, self.dim, self.heads, self.layers, self.ffn = vocab, dim, heads, layers, ffn
        self.head_dim = dim // heads


class KVCache:
    """Keys and values of every layer for one batch, max_seq positions."""

    def __init__(self, cfg, batch, max_seq, device, dtype):
        shape = (cfg.layers, batch, cfg.heads, max_seq, cfg.head_dim)
        self.k = torch.zeros(shape, device=device, dtype=dtype)
        self.v = torch.zeros(shape, device=device, dtype=dtype)
        self.max_seq = max_seq


class Attention(nn.Module):
    def __init__(self, cfg, layer, device, dtype):
        super().__init__()
        self.layer, self.heads, self.head_dim = layer, cfg.heads, cfg.head_dim
        self.qkv = nn.Linear(cfg.dim, 3 * cfg.dim, bias=False, device=device, dtype=dtype)
        self.proj = nn.Linear(cfg.dim, cfg.dim, bias=False, device=device, dtype=dtype)

    def forward(self, x, cache, pos):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, self.head_dim).unbind(2)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # [b, heads, t, head_dim]
        cache.k[self.layer, :, :, pos:pos + t] = k
        cache.v[self.layer, :, :, pos:pos + t] = v
        keys = cache.k[self.layer, :, :, :pos + t]
        values = cache.v[self.layer, :, :, :pos + t]
        scores = torch.matmul(q, keys.transpose(-1, -2)) * (1.0 / math.sqrt(self.head_dim))
        if t > 1:  # prefill: query i sees positions up to pos + i
            mask = torch.ones(t, pos + t, dtype=torch.bool, device=x.device).tril(diagonal=pos)
            scores = scores.masked_fill(~mask, float("-inf"))
        probs = torch.softmax(scores.float(), dim=-1).to(values.dtype)
        out = torch.matmul(probs, values)  # [b, heads, t, head_dim]
        return self.proj(out.transpose(1, 2).reshape(b, t, d))


class MLP(nn.Module):
    def __init__(self, cfg, device, dtype):
        super().__init__()
        self.up = nn.Linear(cfg.dim, cfg.ffn, bias=False, device=device, dtype=dtype)
        self.down = nn.Linear(cfg.ffn, cfg.dim, bias=False, device=device, dtype=dtype)

    def forward(self, x):
        return self.down(nn.functional.gelu(self.up(x)))


class Block(nn.Module):
    def __init__(self, cfg, layer, device, dtype):
        super().__init__()
        self.norm1 = nn.LayerNorm(cfg.dim, device=device, dtype=dtype)
        self.attn = Attention(cfg, layer, device, dtype)
        self.norm2 = nn.LayerNorm(cfg.dim, device=device, dtype=dtype)
        self.mlp = MLP(cfg, device, dtype)

    def forward(self, x, cache, pos):
        x = x + self.attn(self.norm1(x), cache, pos)
        return x + self.mlp(self.norm2(x))


class TinyLLM(nn.Module):
    def __init__(self, cfg, device, dtype):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab, cfg.dim, device=device, dtype=dtype)
        self.blocks = nn.ModuleList([Block(cfg, i, device, dtype) for i in range(cfg.layers)])
        self.norm = nn.LayerNorm(cfg.dim, device=device, dtype=dtype)
        self.lm_head = nn.Linear(cfg.dim, cfg.vocab, bias=False, device=device, dtype=dtype)

    def forward(self, tokens, cache, pos):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x, cache, pos)
        return self.lm_head(self.norm(x))  # [batch, t, vocab]

    def allocate_kv_cache(self, batch, max_seq):
        w = self.lm_head.weight
        return KVCache(self.cfg, batch, max_seq, w.device, w.dtype)

    def prefill(self, tokens, cache):
        """The prompt through the model: the next token of each sequence and
        the summed log-probability of each prompt."""
        logits = self(tokens, cache, 0)  # every position, as a naive engine does
        logprobs = torch.log_softmax(logits.float(), dim=-1)
        prompt_logprob = logprobs[:, :-1].gather(-1, tokens[:, 1:, None]).squeeze(-1).sum(-1)
        return logits[:, -1].argmax(-1), prompt_logprob

    def decode_step(self, token, cache, pos):
        """One new token per sequence at position pos (greedy)."""
        logits = self(token[:, None], cache, pos)
        return logits[:, -1].argmax(-1)
