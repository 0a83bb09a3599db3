# The model zoo's third round of families (families the project had not tried): their builders, imported by
# make_zoo.py (which holds the table, FAMILIES, and the export machinery).
"""Each builder returns a small model with random weights at the zoo's sizes (text: hidden 32, 2 layers, FFN 64,
vocabulary 128, 128 positions; CNNs: torchvision's own classes at a fraction of their widths, so that a fixture stays
well under a megabyte); make_zoo.py seeds torch before calling it, moves every parameter by N(0, 0.02^2) after it and
gives every BatchNorm non-trivial running statistics (zoo_vision.bn_stats)."""
import torch
import torch.nn as nn
import transformers as T
from torchvision.models.densenet import DenseNet
from torchvision.models.googlenet import BasicConv2d, GoogLeNet, Inception
from torchvision.models.mobilenetv2 import MobileNetV2
from torchvision.models.regnet import BlockParams, RegNet
from torchvision.models.shufflenetv2 import ShuffleNetV2
from torchvision.models.squeezenet import Fire, SqueezeNet
from torchvision.models.swin_transformer import SwinTransformer
from torchvision.models.vgg import VGG, make_layers


# -- transformers: causal LMs (prefill) -------------------------------------------------------------------------------

def stablelm():
    # StableLM 2: LayerNorm (not RMSNorm), rotary on a quarter of each head, q/k/v biases, a LayerNorm per head on the
    # queries and keys (qk_layernorm), grouped-query attention (4 heads, 2 KV heads of 8).
    cfg = T.StableLmConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                           partial_rotary_factor=0.25, use_qkv_bias=True, qk_layernorm=True, use_cache=False)
    return T.StableLmForCausalLM(cfg)


def olmo():
    # OLMo: LayerNorm without weight or bias, SwiGLU, rotary, and q/k/v clamped to [-clip_qkv, clip_qkv]; 0.1 is
    # inside the projections' range at these weights, so the clamp bites.
    cfg = T.OlmoConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128, clip_qkv=0.1,
                       pad_token_id=1, bos_token_id=2, eos_token_id=3, use_cache=False)
    return T.OlmoForCausalLM(cfg)


def xglm():
    # XGLM: sinusoidal positions offset by 2 (computed, not stored), embeddings scaled by sqrt(32), pre-norm, GELU.
    cfg = T.XGLMConfig(vocab_size=128, d_model=32, ffn_dim=64, num_layers=2, attention_heads=2,
                       max_position_embeddings=128, scale_embedding=True, pad_token_id=1, use_cache=False)
    return T.XGLMForCausalLM(cfg)


def biogpt():
    # BioGPT: learned positions offset by 2 from the mask's cumulative sum, embeddings scaled by sqrt(32), pre-norm.
    cfg = T.BioGptConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=128, scale_embedding=True, pad_token_id=1,
                         use_cache=False)
    return T.BioGptForCausalLM(cfg)


def cohere():
    # Cohere (Command-R): LayerNorm without bias, parallel attention and MLP off one norm, rotary embeddings on
    # interleaved pairs (repeat_interleave of the frequencies, not rotate_half's halves), logits scaled by 0.0625.
    cfg = T.CohereConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128, use_cache=False,
                         pad_token_id=1, bos_token_id=2, eos_token_id=3)
    return T.CohereForCausalLM(cfg)


# -- transformers: encoders of translation and summarisation models ----------------------------------------------------

def marian_encoder():
    # Marian's encoder: fixed sinusoidal positions (a weight filled at init: sin in the first half, cos in the second),
    # embeddings scaled by sqrt(32), post-norm layers with SiLU (Marian's default activation "swish").
    cfg = T.MarianConfig(vocab_size=128, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
                         decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=128,
                         pad_token_id=1, decoder_start_token_id=1, scale_embedding=True, use_cache=False)
    return T.MarianMTModel(cfg).get_encoder()


def pegasus_encoder():
    # Pegasus's encoder: sinusoidal positions, pre-norm layers with a final LayerNorm, ReLU.
    cfg = T.PegasusConfig(vocab_size=128, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
                          decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
                          max_position_embeddings=128, pad_token_id=1, scale_embedding=True, use_cache=False)
    return T.PegasusModel(cfg).get_encoder()


# -- transformers: vision and speech -------------------------------------------------------------------------------

def deit():
    # DeiT with its teacher head: a CLS and a distillation token (18 tokens), two linear heads averaged; at ViT's
    # sizes (32x32 images, 8x8 patches), 10 classes. The position embeddings fix the image size: batch only.
    cfg = T.DeiTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                       image_size=32, patch_size=8, num_channels=3, num_labels=10)
    model = T.DeiTForImageClassificationWithTeacher(cfg)
    for head in (model.cls_classifier, model.distillation_classifier):
        torch.nn.init.normal_(head.weight, std=0.5)  # logits large enough that a wrong body shows
    return model


def hubert():
    # HuBERT's model (wav2vec 2.0's body, another stack): the feature encoder with a LayerNorm after each conv (over
    # channels, so transposed around it) and conv biases, stable (pre-norm) layers with a final LayerNorm.
    cfg = T.HubertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                         conv_dim=(16, 16), conv_kernel=(10, 3), conv_stride=(5, 2), conv_bias=True,
                         num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, feat_extract_norm="layer",
                         do_stable_layer_norm=True, vocab_size=32)
    return T.HubertModel(cfg)


def wavlm():
    # WavLM: wav2vec 2.0's feature encoder and positional conv, then gated relative position bias in every layer
    # (log-spaced buckets of the frame distance, 32 buckets up to 64, computed in the first layer for the dynamic
    # number of frames, a per-head gate from the queries).
    cfg = T.WavLMConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                        conv_dim=(16, 16), conv_kernel=(10, 3), conv_stride=(5, 2), num_conv_pos_embeddings=16,
                        num_conv_pos_embedding_groups=2, feat_extract_norm="group", do_stable_layer_norm=False,
                        vocab_size=32, num_buckets=32, max_bucket_distance=64)
    return T.WavLMModel(cfg)


# -- torchvision CNNs at small widths ------------------------------------------------------------------------------

def shufflenet_v2():
    # ShuffleNetV2 with one unit per stage, channels 8, 16, 32, 64 and a 128 head conv: channel split (Split / Slice),
    # channel shuffle (a reshape to [b, 2, c/2, h, w], transpose, reshape back), depthwise 3x3 convs.
    return ShuffleNetV2([1, 1, 1], [8, 16, 32, 64, 128], num_classes=10)


def mobilenet_v2():
    # MobileNetV2 at width 0.25 with one block per stage (ReLU6: Clip), the 1280-channel head conv, 10 classes.
    setting = [[1, 16, 1, 1], [6, 24, 1, 2], [6, 32, 1, 2], [6, 64, 1, 2], [6, 96, 1, 1], [6, 160, 1, 2],
               [6, 320, 1, 1]]
    return MobileNetV2(num_classes=10, width_mult=0.25, inverted_residual_setting=setting)


class TinySqueezeNet(SqueezeNet):
    """torchvision's SqueezeNet 1.1 (its forward) at a quarter of its widths: an unpadded 3x3/2 stem conv, max pools
    3x3/2 with ceil_mode (their last window hangs over the edge), Fire modules (squeeze 1x1, expand 1x1 and 3x3
    concatenated), a 1x1 conv classifier with ReLU and a global average pool. At least 17x17 (the third pool
    needs 3 rows)."""

    def __init__(self, num_classes=10):
        nn.Module.__init__(self)
        self.num_classes = num_classes
        pool = lambda: nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True)
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, kernel_size=3, stride=2), nn.ReLU(inplace=True), pool(),
            Fire(16, 4, 16, 16), Fire(32, 4, 16, 16), pool(),
            Fire(32, 8, 32, 32), Fire(64, 8, 32, 32), pool(),
            Fire(64, 12, 48, 48), Fire(96, 12, 48, 48), Fire(96, 16, 64, 64), Fire(128, 16, 64, 64))
        self.classifier = nn.Sequential(nn.Dropout(p=0.5), nn.Conv2d(128, num_classes, kernel_size=1),
                                        nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d((1, 1)))


def squeezenet():
    return TinySqueezeNet()


def densenet():
    # DenseNet-BC with three dense blocks of 2 layers (growth 8, bottleneck 2 x 8): each layer's output concatenated
    # to its input, transitions of BN, ReLU, 1x1 conv and a 2x2/2 average pool. At least 13x13 (the stem's 4x
    # reduction, then two transitions).
    return DenseNet(growth_rate=8, block_config=(2, 2, 2), num_init_features=16, bn_size=2, num_classes=10)


def regnet():
    # RegNetY-style: 4 stages of one block each (widths 8..64 from the RegNet rule), grouped 3x3 convs (groups of 8),
    # squeeze-excite, a stem of 8.
    params = BlockParams.from_init_params(depth=4, w_0=8, w_a=8.0, w_m=2.0, group_width=8, se_ratio=0.25)
    return RegNet(params, num_classes=10, stem_width=8)


class TinyGoogLeNet(GoogLeNet):
    """torchvision's GoogLeNet (its forward: no auxiliary heads in eval, no input transform) at an eighth of its
    widths: 7x7/2 stem, max pools 3x3/2 and 2x2/2 with ceil_mode, nine Inception modules (1x1, 3x3, "5x5" (a 3x3 in
    torchvision) and pool branches concatenated), global average pool, 10 classes. At least 15x15."""

    def __init__(self, num_classes=10):
        nn.Module.__init__(self)
        self.aux_logits, self.transform_input = False, False
        self.aux1 = self.aux2 = None
        pool = lambda k: nn.MaxPool2d(k, stride=2, ceil_mode=True)
        self.conv1 = BasicConv2d(3, 8, kernel_size=7, stride=2, padding=3)
        self.maxpool1 = pool(3)
        self.conv2 = BasicConv2d(8, 8, kernel_size=1)
        self.conv3 = BasicConv2d(8, 24, kernel_size=3, padding=1)
        self.maxpool2 = pool(3)
        self.inception3a = Inception(24, 8, 12, 16, 2, 4, 4)      # -> 32
        self.inception3b = Inception(32, 16, 16, 24, 4, 12, 8)    # -> 60
        self.maxpool3 = pool(3)
        self.inception4a = Inception(60, 24, 12, 26, 2, 6, 8)     # -> 64
        self.inception4b = Inception(64, 20, 14, 28, 3, 8, 8)     # -> 64
        self.inception4c = Inception(64, 16, 16, 32, 3, 8, 8)     # -> 64
        self.inception4d = Inception(64, 14, 18, 36, 4, 8, 8)     # -> 66
        self.inception4e = Inception(66, 32, 20, 40, 4, 16, 16)   # -> 104
        self.maxpool4 = pool(2)
        self.inception5a = Inception(104, 32, 20, 40, 4, 16, 16)  # -> 104
        self.inception5b = Inception(104, 48, 24, 48, 6, 16, 16)  # -> 128
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(p=0.2)
        self.fc = nn.Linear(128, num_classes)


def googlenet():
    return TinyGoogLeNet()


def vgg():
    # VGG-11's layout with batch norm at an eighth of its widths (8, 16, 32, 32, 64), its adaptive average pool to
    # 7x7 (windows of uneven sizes unless the feature map is a multiple of 7) and a classifier of 32 instead of 4096.
    # At least 16x16 (four 2x2/2 max pools).
    model = VGG(make_layers([8, "M", 16, "M", 32, 32, "M", 64, 64, "M"], batch_norm=True), num_classes=10)
    model.classifier = nn.Sequential(nn.Linear(64 * 7 * 7, 32), nn.ReLU(True), nn.Dropout(), nn.Linear(32, 32),
                                     nn.ReLU(True), nn.Dropout(), nn.Linear(32, 10))
    return model


def swin():
    # torchvision's Swin Transformer (not transformers', which fails in PyTorch at small sizes): 4x4 patches of 16,
    # two stages of two blocks (1 and 2 heads) in windows of 4x4 patches, the feature map padded up to whole windows
    # (F.pad by sizes computed from the input), shifted windows (torch.roll) with their attention mask, relative
    # position bias, patch merging (odd sizes padded), 10 classes. PyTorch takes 4x4 and up, but the exports are the
    # model only from 40x40 (make_zoo.py).
    return SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[1, 2], window_size=[4, 4],
                           stochastic_depth_prob=0.0, num_classes=10)
