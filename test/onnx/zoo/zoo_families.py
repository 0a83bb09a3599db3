# The model zoo's families added after the first eight (issue #36: "the more families the project checks, the
# better"): their builders, imported by make_zoo.py, which holds the table (FAMILIES) and the export machinery.
"""Each builder returns a transformers model (or a decode-step wrapper) at the zoo's small sizes: hidden 32, 2 layers,
FFN 64, vocabulary 128, 128 positions; make_zoo.py seeds torch before calling it and moves every parameter after."""
import torch
import transformers as T


def albert():
    # Factorised embeddings (16 -> 32) and one layer's weights shared by both layers.
    cfg = T.AlbertConfig(vocab_size=128, embedding_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=128, type_vocab_size=2)
    return T.AlbertModel(cfg)


def electra():
    # ELECTRA's discriminator body: embeddings of 16 projected to the hidden 32.
    cfg = T.ElectraConfig(vocab_size=128, embedding_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                          intermediate_size=64, max_position_embeddings=128, type_vocab_size=2)
    return T.ElectraModel(cfg)


def mpnet():
    # Positions after the padding id (pad 1: 130 positions hold seq 128) and a bucketed relative position bias.
    cfg = T.MPNetConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=130, relative_attention_num_buckets=32,
                        pad_token_id=1)
    return T.MPNetModel(cfg)


def deberta_v2():
    # Disentangled attention (content-to-position and position-to-content) over log-bucketed relative positions.
    cfg = T.DebertaV2Config(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=64, max_position_embeddings=128, type_vocab_size=0,
                            relative_attention=True, position_buckets=32, max_relative_positions=128,
                            pos_att_type=["p2c", "c2p"], norm_rel_ebd="layer_norm", share_att_key=True,
                            position_biased_input=False)
    return T.DebertaV2Model(cfg)


def bart_encoder():
    # BART's encoder alone (learned positions offset by 2, post-norm layers with an embedding LayerNorm).
    cfg = T.BartConfig(vocab_size=128, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
                       decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=128,
                       pad_token_id=1, use_cache=False)
    return T.BartModel(cfg).get_encoder()


def qwen2_config(use_cache):
    # Grouped-query attention (4 heads, 2 KV heads of 8), biases on q, k and v, rotary embeddings.
    return T.Qwen2Config(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                         use_cache=use_cache)


def qwen2():
    return T.Qwen2ForCausalLM(qwen2_config(False))


def mistral():
    # Grouped-query attention and rotary embeddings as Llama, with a sliding window of 16 (seq runs to 32).
    cfg = T.MistralConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                          sliding_window=16, use_cache=False)
    return T.MistralForCausalLM(cfg)


def gpt_neox():
    # Parallel attention and MLP, rotary embeddings on a quarter of each head (4 of 16 dims), fused QKV.
    cfg = T.GPTNeoXConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                          intermediate_size=64, max_position_embeddings=128, use_cache=False)
    return T.GPTNeoXForCausalLM(cfg)


def opt():
    # Learned positions from the mask's cumulative sum (offset 2), pre-norm layers, ReLU.
    cfg = T.OPTConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2, ffn_dim=64, num_attention_heads=2,
                      max_position_embeddings=128, word_embed_proj_dim=32, pad_token_id=1, use_cache=False)
    return T.OPTForCausalLM(cfg)


def phi():
    # Parallel attention and MLP with one LayerNorm, rotary embeddings on half of each head, gelu_new, biased LM head.
    cfg = T.PhiConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                      max_position_embeddings=128, partial_rotary_factor=0.5, use_cache=False)
    return T.PhiForCausalLM(cfg)


def bloom():
    # ALiBi: no position embeddings, a per-head linear bias on key distance; embedding LayerNorm, fused QKV.
    cfg = T.BloomConfig(vocab_size=128, hidden_size=32, n_layer=2, n_head=2, use_cache=False)
    return T.BloomForCausalLM(cfg)


class DecodeStep(torch.nn.Module):
    """One decode step of a 2-layer causal LM with the KV cache passed in and returned as plain tensors, the way a
    generation loop outside PyTorch needs it: (input_ids [b, 1], attention_mask [b, past + 1], past_key_L /
    past_value_L [b, kv_heads, past, head_dim]) -> (logits [b, 1, vocab], present_key_L / present_value_L
    [b, kv_heads, past + 1, head_dim]); a DynamicCache inside."""

    def __init__(self, lm):
        super().__init__()
        self.lm = lm

    def forward(self, input_ids, attention_mask, past_key_0, past_value_0, past_key_1, past_value_1):
        cache = T.DynamicCache([(past_key_0, past_value_0), (past_key_1, past_value_1)], config=self.lm.config)
        out = self.lm(input_ids=input_ids, attention_mask=attention_mask, cache=cache, use_cache=True)
        present = out.cache if hasattr(out, "cache") else out.past_key_values
        return (out.logits, present.layers[0].keys, present.layers[0].values,
                present.layers[1].keys, present.layers[1].values)


def qwen2_decode():
    return DecodeStep(T.Qwen2ForCausalLM(qwen2_config(True)))


def t5_config(use_cache):
    # As make_zoo.t5_encoder's: relative position buckets (32, up to distance 128), ReLU FFN, RMS-style LayerNorm.
    return T.T5Config(vocab_size=128, d_model=32, d_kv=16, d_ff=64, num_layers=2, num_heads=2,
                      relative_attention_num_buckets=32, relative_attention_max_distance=128, use_cache=use_cache,
                      decoder_start_token_id=0)


class Seq2SeqDecodeStep(torch.nn.Module):
    """One decoder step of an encoder-decoder (T5, BART) after its encoder ran: (decoder_input_ids [b, 1],
    encoder_hidden_states [b, src, 32], encoder_attention_mask [b, src], past_key_L / past_value_L [b, 2, past, 16],
    the decoder's self-attention cache) -> (logits [b, 1, 128], present_key_L / present_value_L [b, 2, past + 1, 16]).
    The cross-attention keys and values come from encoder_hidden_states (the cross cache starts empty); the new
    token's position is `past` (T5: its relative position bias; BART: its learned position). An EncoderDecoderCache of
    two DynamicCaches inside (transformers 5; zoo_tf4.T5DecodeStep builds it the 4.x way)."""

    def __init__(self, lm):
        super().__init__()
        self.lm = lm

    def forward(self, decoder_input_ids, encoder_hidden_states, encoder_attention_mask,
                past_key_0, past_value_0, past_key_1, past_value_1):
        cache = T.EncoderDecoderCache(T.DynamicCache([(past_key_0, past_value_0), (past_key_1, past_value_1)]),
                                      T.DynamicCache())
        out = self.lm(decoder_input_ids=decoder_input_ids, encoder_outputs=(encoder_hidden_states,),
                      attention_mask=encoder_attention_mask, cache=cache, use_cache=True)
        present = (out.cache if hasattr(out, "cache") else out.past_key_values).self_attention_cache
        return (out.logits, present.layers[0].keys, present.layers[0].values,
                present.layers[1].keys, present.layers[1].values)


def t5_decode():
    return Seq2SeqDecodeStep(T.T5ForConditionalGeneration(t5_config(True)))


def bart_decode():
    # BART's decoder: learned positions offset by 2, post-norm layers with an embedding LayerNorm, GELU, the LM head
    # tied to the embeddings plus final_logits_bias.
    cfg = T.BartConfig(vocab_size=128, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
                       decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=128,
                       pad_token_id=1, use_cache=True)
    return Seq2SeqDecodeStep(T.BartForConditionalGeneration(cfg))


def seq2seq_step(size, g):
    """The inputs of an encoder-decoder's decode step at size {batch, past, src}: a new decoder token, the encoder's
    states (normal), its mask (1s, some trailing 0s in rows after the first), the decoder's past keys and values."""
    b, past, src = size["batch"], size["past"], size["src"]
    mask = torch.ones(b, src, dtype=torch.int64)
    for row in range(1, b):
        pad = int(torch.randint(0, src // 2 + 1, (1,), generator=g))
        if pad:
            mask[row, src - pad:] = 0
    feeds = {"decoder_input_ids": torch.randint(0, 128, (b, 1), generator=g, dtype=torch.int64),
             "encoder_hidden_states": torch.randn(b, src, 32, generator=g), "encoder_attention_mask": mask}
    for name in ("past_key_0", "past_value_0", "past_key_1", "past_value_1"):
        feeds[name] = torch.randn(b, 2, past, 16, generator=g)
    return feeds


def whisper_encoder():
    # 16 mel bins, 16 encoder positions: the input is exactly 32 frames (conv k3, GELU, conv k3 stride 2, GELU, fixed
    # sinusoidal positions, 2 pre-norm layers); Whisper refuses any other length, so only the batch is dynamic.
    cfg = T.WhisperConfig(vocab_size=128, num_mel_bins=16, d_model=32, encoder_layers=2, decoder_layers=2,
                          encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
                          decoder_ffn_dim=64, max_source_positions=16, max_target_positions=32, use_cache=False,
                          pad_token_id=1, bos_token_id=2, eos_token_id=2, decoder_start_token_id=3)
    return T.WhisperModel(cfg).get_encoder()


def mel(size, g):
    return {"input_features": torch.randn(size["batch"], 16, 32, generator=g)}


def gemma():
    # RMSNorm scaled by (1 + weight), embeddings scaled by sqrt(hidden), GeGLU (tanh GELU) MLP, multi-query attention
    # (4 heads, 1 KV head of 8), tied LM head.
    cfg = T.GemmaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                        num_attention_heads=4, num_key_value_heads=1, head_dim=8, max_position_embeddings=128,
                        use_cache=False)
    return T.GemmaForCausalLM(cfg)


def falcon():
    # Falcon-7B's layout: multi-query attention (4 heads, one shared KV head of 8), parallel attention and MLP off one
    # LayerNorm, rotary embeddings, no biases.
    cfg = T.FalconConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                         multi_query=True, parallel_attn=True, new_decoder_architecture=False, alibi=False,
                         bias=False, max_position_embeddings=128, use_cache=False)
    return T.FalconForCausalLM(cfg)


def mobilebert():
    # MobileBERT: trigram embeddings (each token's with its neighbours', 3 x 16 projected to 32), bottlenecks of 16
    # around each attention, 2 stacked FFNs per layer, NoNorm (an elementwise scale and shift) instead of LayerNorm.
    cfg = T.MobileBertConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                             intermediate_size=64, embedding_size=16, intra_bottleneck_size=16,
                             num_feedforward_networks=2, normalization_type="no_norm", max_position_embeddings=128,
                             type_vocab_size=2, trigram_input=True, use_bottleneck=True)
    return T.MobileBertModel(cfg)
