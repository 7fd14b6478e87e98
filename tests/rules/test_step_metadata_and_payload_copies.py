"""A step's batch metadata recomputed in every layer, and one payload copied twice, each
written in the styles of two engines the rule examples do not use (DeepSpeed's inference
v2 model implementations and Mistral's reference inference), reviewed end to end as the
change that adds them (`review --diff`): every line marked `# defect` is reported, and
nothing else; each look-alike stays quiet. A rule reports one finding per function
(repeats fold), so each defect has a function of its own."""

from __future__ import annotations

import pytest

from .helpers import marked_lines, reviewed_in_diff



METADATA = "step-metadata-rebuilt-per-layer"
PAYLOAD = "payload-copied-twice"

DEFECTS = {
    "Mistral: cu_seqlens from the prompt lengths in a block's forward": (METADATA, """
        import torch
        from torch import nn
        from typing import List

        class TransformerBlock(nn.Module):
            def forward(self, x: torch.Tensor, freqs_cis: torch.Tensor, seqlens: List[int]) -> torch.Tensor:
                cu_seqlens = torch.cumsum(torch.tensor([0] + seqlens, device=x.device), dim=0).to(torch.int32)  # defect
                r = self.attention(self.attention_norm(x), freqs_cis, cu_seqlens)
                return x + r

        class Transformer(nn.Module):
            def __init__(self, args):
                super().__init__()
                self.layers = nn.ModuleList([TransformerBlock(args) for _ in range(args.n_layers)])

            def forward(self, h: torch.Tensor, freqs_cis: torch.Tensor, seqlens: List[int]) -> torch.Tensor:
                for layer in self.layers:
                    h = layer(h, freqs_cis, seqlens)
                return h
        """),
    "DeepSpeed: token-to-sequence map in a per-layer helper": (METADATA, """
        import torch

        class DSLlamaModel(DSTransformerModelBase):
            def _forward_transformer(self, layer, residual, hidden_states, ragged_batch_info):
                token_to_seq = torch.repeat_interleave(  # defect
                    torch.arange(ragged_batch_info.current_sequences, device=hidden_states.device),
                    ragged_batch_info.query_lens)
                hidden_states = layer.attn(hidden_states, token_to_seq)
                residual, hidden_states = self.norm(residual, hidden_states, layer.mlp_norm_gamma)
                return residual, hidden_states

            def forward(self, wrapped_batch):
                residual = self._forward_embed(wrapped_batch)
                hidden_states = residual
                for layer_idx in range(self.num_layers):
                    residual, hidden_states = self._forward_transformer(
                        self._transformer[layer_idx], residual, hidden_states, wrapped_batch)
                return self._forward_unembed(residual, wrapped_batch)
        """),
    "Mistral: padding mask rebuilt inside the loop over the layers": (METADATA, """
        import torch
        from torch import nn

        class Transformer(nn.Module):
            def forward(self, h: torch.Tensor, seqlens: torch.Tensor) -> torch.Tensor:
                for layer in self.layers:
                    mask = torch.arange(h.shape[1], device=h.device)[None, :] < seqlens[:, None]  # defect
                    h = layer(h, mask)
                return self.norm(h)
        """),
    "DeepSpeed: query offsets from the batch's lengths in a layer's forward": (METADATA, """
        import torch
        import torch.nn.functional as F

        class DSMistralLayer(torch.nn.Module):
            def forward(self, hidden_states, batch):
                q_offsets = F.pad(batch.query_lens.cumsum(0), (1, 0))  # defect
                return self.attn(hidden_states, q_offsets)

        class DSMistralModel(torch.nn.Module):
            def __init__(self, config):
                super().__init__()
                self.layers = torch.nn.ModuleList([DSMistralLayer() for _ in range(config.num_layers)])

            def forward(self, hidden_states, batch):
                for layer in self.layers:
                    hidden_states = layer(hidden_states, batch)
                return hidden_states
        """),
    "Mistral: pixel values concatenated the same way into two structures": (PAYLOAD, """
        import torch
        from torch import nn

        class VisionTransformer(nn.Module):
            def forward(self, pixel_values: torch.Tensor, cache) -> torch.Tensor:
                patch_input = torch.cat([pixel_values, self.class_embedding], dim=0)
                cache.patches = torch.cat([pixel_values, self.class_embedding],  # defect
                                          dim=0)
                return self.transformer(patch_input)
        """),
    "DeepSpeed: KV block cloned for the cache and for the offload queue": (PAYLOAD, """
        import torch

        class DSStateManager(DSStateManagerBase):
            def forward(self, seq, kv_block: torch.Tensor) -> torch.Tensor:
                seq.kv_cache = kv_block.clone()
                self._offload_queue.append(kv_block.clone())  # defect
                return seq.kv_cache
        """),
    "DeepSpeed: micro-batch field concatenated twice": (PAYLOAD, """
        import torch

        class InferenceEngineV2:
            def forward(self, mb, new_tokens: torch.Tensor, pad: torch.Tensor):
                input_ids = torch.cat((mb.input_ids, new_tokens))
                logits = self.model(input_ids)
                self._history.append(torch.cat((mb.input_ids, new_tokens)))  # defect
                return logits
        """),
    "Mistral: contiguous of a fresh concatenation": (PAYLOAD, """
        import torch
        from torch import nn

        class Attention(nn.Module):
            def forward(self, xq: torch.Tensor, xk: torch.Tensor) -> torch.Tensor:
                qk = torch.cat([xq, xk], dim=-1).contiguous()  # defect
                return self.wo(qk)
        """),
    "DeepSpeed: contiguous of a buffer just allocated": (PAYLOAD, """
        import torch

        class DSEmbedding(DSEmbeddingBase):
            def forward(self, ids: torch.Tensor) -> torch.Tensor:
                output = torch.empty((ids.shape[0], self._dim), dtype=self._dtype, device=ids.device)
                self._embed_kernel(output, ids, self._weights)
                return output.contiguous()  # defect

        class DSUnembed(DSUnembedBase):
            def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
                hidden_states = hidden_states.contiguous()
                return self._unembed(hidden_states.contiguous())  # defect
        """),
}

LOOK_ALIKES = {
    "Mistral: mask that depends on the layer's sliding window": (METADATA, """
        import torch
        from torch import nn

        class TransformerBlock(nn.Module):
            def forward(self, x: torch.Tensor, seqlens: torch.Tensor) -> torch.Tensor:
                mask = torch.arange(x.shape[1], device=x.device)[None, :] < seqlens[:, None] - self.sliding_window
                return self.attention(x, mask)

        class Transformer(nn.Module):
            def __init__(self, args):
                super().__init__()
                self.layers = nn.ModuleList([TransformerBlock(args) for _ in range(args.n_layers)])

            def forward(self, h: torch.Tensor, seqlens: torch.Tensor) -> torch.Tensor:
                for layer in self.layers:
                    h = layer(h, seqlens)
                return h
        """),
    "DeepSpeed: offsets scaled by the layer's head count and index": (METADATA, """
        import torch

        class DSLlamaModel(DSTransformerModelBase):
            def _forward_transformer(self, layer, layer_idx, hidden_states, ragged_batch_info):
                kv_offsets = torch.cumsum(ragged_batch_info.query_lens * layer.n_kv_heads, dim=0)
                block_offsets = torch.cumsum(ragged_batch_info.query_lens, dim=0) + layer_idx
                return layer.attn(hidden_states, kv_offsets, block_offsets)

            def forward(self, wrapped_batch, hidden_states):
                for layer_idx in range(self.num_layers):
                    hidden_states = self._forward_transformer(
                        self._transformer[layer_idx], layer_idx, hidden_states, wrapped_batch)
                return hidden_states
        """),
    "Mistral: cu_seqlens computed once before the loop and passed down": (METADATA, """
        import torch
        from torch import nn

        class Transformer(nn.Module):
            def forward(self, h: torch.Tensor, seqlens: torch.Tensor) -> torch.Tensor:
                cu_seqlens = torch.cumsum(seqlens, dim=0)
                for layer in self.layers:
                    h = layer(h, cu_seqlens)
                return h
        """),
    "DeepSpeed: prefix sum of the carried hidden state": (METADATA, """
        import torch

        class DSMistralLayer(torch.nn.Module):
            def forward(self, hidden_states, batch):
                running = hidden_states.cumsum(dim=0)
                return self.attn(running, batch)

        class DSMistralModel(torch.nn.Module):
            def __init__(self, config):
                super().__init__()
                self.layers = torch.nn.ModuleList([DSMistralLayer() for _ in range(config.num_layers)])

            def forward(self, hidden_states, batch):
                for layer in self.layers:
                    hidden_states = layer(hidden_states, batch)
                return hidden_states
        """),
    "Mistral: keys and values concatenated, two different tensors": (PAYLOAD, """
        import torch
        from torch import nn

        class Attention(nn.Module):
            def forward(self, xk: torch.Tensor, xv: torch.Tensor, cache_k: torch.Tensor, cache_v: torch.Tensor):
                key = torch.cat([cache_k, xk], dim=1)
                value = torch.cat([cache_v, xv], dim=1)
                return key, value
        """),
    "DeepSpeed: one reference is a view, the copies are of different slices": (PAYLOAD, """
        import torch

        class DSStateManager(DSStateManagerBase):
            def forward(self, kv_block: torch.Tensor, split: int):
                flat = kv_block.view(-1)
                head = kv_block[:split].clone()
                tail = kv_block[split:].clone()
                return torch.cat([flat, head]), tail
        """),
    "Mistral: pixel values concatenated with different partners, a padding filler twice": (PAYLOAD, """
        import torch
        from torch import nn

        class VisionTransformer(nn.Module):
            def forward(self, pixel_values: torch.Tensor, text_embeds: torch.Tensor, mask: torch.Tensor):
                pad = torch.zeros(4, pixel_values.shape[1], device=pixel_values.device)
                patch_input = torch.cat([pixel_values, pad], dim=0)
                cached = torch.cat([pixel_values, text_embeds], dim=0)
                mask = torch.cat([mask, pad[:, 0]], dim=0)
                return self.transformer(patch_input, mask), cached
        """),
    "DeepSpeed: clones under different per-layer conditions": (PAYLOAD, """
        import torch

        class DSSkipModel(DSTransformerModelBase):
            def forward(self, hidden_states: torch.Tensor):
                for i, layer in enumerate(self.layers):
                    if i in self.save_at_first:
                        saved_a = hidden_states.clone()
                    if i in self.save_at_second:
                        saved_b = hidden_states.clone()
                    hidden_states = layer(hidden_states)
                return hidden_states, saved_a, saved_b
        """),
    "DeepSpeed: copies far apart, a buffer made well before its contiguous": (PAYLOAD, """
        import torch

        class DSStateManager(DSStateManagerBase):
            def forward(self, kv_block: torch.Tensor, ids: torch.Tensor):
                staged = kv_block.clone()
                out = torch.empty((ids.shape[0], self._dim), device=ids.device)
                self._kernel_a(staged, ids)
                self._kernel_b(staged, ids)
                self._kernel_c(staged, ids)
                self._kernel_d(staged, ids)
                self._kernel_e(staged, ids)
                self._kernel_f(staged, ids)
                self._kernel_g(staged, out)
                self._kernel_h(staged, out)
                self._kernel_i(staged, out)
                self._kernel_j(staged, out)
                self._kernel_k(staged, out)
                self._kernel_l(staged, out)
                self._kernel_m(staged, out)
                self._kernel_n(staged, out)
                self._kernel_o(staged, out)
                self._kernel_p(staged, out)
                self._kernel_q(staged, out)
                self._kernel_r(staged, out)
                self._kernel_s(staged, out)
                return staged, kv_block.clone(), out.contiguous()
        """),
    "DeepSpeed: one copy on each side of a branch": (PAYLOAD, """
        import torch

        class InferenceEngineV2:
            def forward(self, mb, new_tokens: torch.Tensor, pad: torch.Tensor):
                if new_tokens.numel():
                    input_ids = torch.cat((mb.input_ids, new_tokens))
                else:
                    input_ids = torch.cat((mb.input_ids, pad))
                return self.model(input_ids)
        """),
    "Mistral: contiguous of a clone or of a transposed view": (PAYLOAD, """
        import torch
        from torch import nn

        class Attention(nn.Module):
            def forward(self, xq: torch.Tensor, xk: torch.Tensor) -> torch.Tensor:
                q = xq.transpose(1, 2).clone().contiguous()
                k = torch.cat([xk, xk], dim=0).transpose(0, 1).contiguous()
                if q.shape[0] > 1:
                    xk = torch.cat([xk, q], dim=0)
                return self.wo(q, k, xk.contiguous())
        """),
}


def _reviewed(tmp_path, rule: str, code: str) -> list[int]:
    return reviewed_in_diff(tmp_path, rule, code, "engine/model.py")


@pytest.mark.parametrize("name", sorted(DEFECTS))
def test_each_defect_is_reported_on_its_line(tmp_path, name):
    rule, code = DEFECTS[name]
    assert marked_lines(code), "a defect case marks its lines"
    assert _reviewed(tmp_path, rule, code) == marked_lines(code)


@pytest.mark.parametrize("name", sorted(LOOK_ALIKES))
def test_each_look_alike_stays_quiet(tmp_path, name):
    rule, code = LOOK_ALIKES[name]
    assert _reviewed(tmp_path, rule, code) == []


def test_every_rule_has_three_defects_and_three_look_alikes():
    for rule in (METADATA, PAYLOAD):
        assert sum(r == rule for r, _ in DEFECTS.values()) >= 3
        assert sum(r == rule for r, _ in LOOK_ALIKES.values()) >= 3
