# The model zoo's transformers 4.x decode steps (issue #36: "transformers 4.x where its export differs"): the wrappers
# that pass the KV cache the 4.x way, for make_zoo.py run by make_zoo_tf4.sh (transformers 4.46 first on PYTHONPATH).
"""transformers 4.46 builds the same architectures as 5.x from the same configs (so the 4.x families reuse the 5.x
builders in make_zoo.py, zoo_families.py and zoo_vision.py) with other code: attention masks made by
_prepare_4d_attention_mask(_for_sdpa) and AttentionMaskConverter, Llama's and T5's _update_causal_mask over
cache_position (the padding written into a slice of the causal mask in place), and the KV cache as the legacy tuple
(GPT-2) or a DynamicCache / EncoderDecoderCache built from it. So the exports differ and are checked apart. Only the
decode steps differ in how the model is called; they are here, and run only under transformers 4.x."""
import torch
import transformers as T

import zoo_families as Z


class Gpt2LegacyDecodeStep(torch.nn.Module):
    """One GPT-2 decode step with the KV cache in transformers 4's legacy format, a tuple of (key, value) per layer,
    as generation loops written against 4.x pass it: (input_ids [b, 1], attention_mask [b, past + 1], past_key_L /
    past_value_L [b, 2, past, 16]) -> (logits [b, 1, 128], present_key_L / present_value_L [b, 2, past + 1, 16]);
    4.46's GPT-2 keeps the tuples (no Cache class) and returns the presents as tuples too."""

    def __init__(self):
        super().__init__()
        self.lm = T.GPT2LMHeadModel(T.GPT2Config(vocab_size=128, n_embd=32, n_layer=2, n_head=2, n_positions=128,
                                                 use_cache=True))

    def forward(self, input_ids, attention_mask, past_key_0, past_value_0, past_key_1, past_value_1):
        out = self.lm(input_ids=input_ids, attention_mask=attention_mask,
                      past_key_values=((past_key_0, past_value_0), (past_key_1, past_value_1)), use_cache=True)
        (k0, v0), (k1, v1) = out.past_key_values
        return out.logits, k0, v0, k1, v1


class LlamaDecodeStep(torch.nn.Module):
    """One Llama decode step, the cache passed as tensors and wrapped the 4.x way (DynamicCache.from_legacy_cache,
    to_legacy_cache back): as qwen2_decode (zoo_families.DecodeStep) with transformers 4.46's cache and causal-mask
    code (_update_causal_mask over cache_position)."""

    def __init__(self):
        super().__init__()
        cfg = T.LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128, use_cache=True)
        self.lm = T.LlamaForCausalLM(cfg)

    def forward(self, input_ids, attention_mask, past_key_0, past_value_0, past_key_1, past_value_1):
        cache = T.DynamicCache.from_legacy_cache(((past_key_0, past_value_0), (past_key_1, past_value_1)))
        out = self.lm(input_ids=input_ids, attention_mask=attention_mask, past_key_values=cache, use_cache=True)
        (k0, v0), (k1, v1) = out.past_key_values.to_legacy_cache()
        return out.logits, k0, v0, k1, v1


class T5DecodeStep(torch.nn.Module):
    """One decoder step of T5 (an encoder-decoder) after the encoder ran: (decoder_input_ids [b, 1],
    encoder_hidden_states [b, src, 32], encoder_attention_mask [b, src], past_key_L / past_value_L [b, 2, past, 16],
    the decoder's self-attention cache) -> (logits [b, 1, 128], present_key_L / present_value_L [b, 2, past + 1, 16]).
    The cross-attention keys and values are computed from encoder_hidden_states (the cross cache starts empty), and
    the self-attention's relative position bias is that of query position `past`. In 4.46 the cache is an
    EncoderDecoderCache of two DynamicCaches built from the legacy tuples."""

    def __init__(self):
        super().__init__()
        self.lm = T.T5ForConditionalGeneration(Z.t5_config(True))

    def forward(self, decoder_input_ids, encoder_hidden_states, encoder_attention_mask,
                past_key_0, past_value_0, past_key_1, past_value_1):
        past = T.DynamicCache.from_legacy_cache(((past_key_0, past_value_0), (past_key_1, past_value_1)))
        cache = T.EncoderDecoderCache(past, T.DynamicCache())
        out = self.lm(decoder_input_ids=decoder_input_ids, encoder_outputs=(encoder_hidden_states,),
                      attention_mask=encoder_attention_mask, past_key_values=cache, use_cache=True)
        legacy = out.past_key_values.to_legacy_cache()  # per layer (self key, self value, cross key, cross value)
        return out.logits, legacy[0][0], legacy[0][1], legacy[1][0], legacy[1][1]
