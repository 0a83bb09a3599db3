# The model zoo's vision, speech and OCR families (issue #37): torchvision CNNs, ViT, wav2vec 2.0, a CRNN text
# recogniser and a GRU classifier; their builders and input makers, imported by make_zoo.py (which holds the table,
# FAMILIES, and the export machinery).
"""Each builder returns a small model with random weights; make_zoo.py seeds torch before calling it, moves every
parameter by N(0, 0.02^2) after it, and gives every BatchNorm non-trivial running statistics (bn_stats). Each input
maker takes one stored size ({dim: value}) and a torch.Generator and returns the inputs by graph input name."""
import functools

import torch
import torch.nn as nn
import torchvision
import transformers as T
from torchvision.models.efficientnet import EfficientNet, MBConvConfig
from torchvision.models.resnet import BasicBlock, ResNet


def bn_stats(model, g=None):
    """Running mean ~ N(0, 0.1^2) and running var ~ U(0.5, 1.5) in every BatchNorm: a fresh module's 0 and 1 would let
    an importer that drops the statistics (or folds them wrongly) pass."""
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.track_running_stats:
            with torch.no_grad():
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) + 0.5)


# -- torchvision CNNs -------------------------------------------------------------------------------------------------

class TinyResNet(ResNet):
    """torchvision's ResNet (its forward and _make_layer, BasicBlock) with one block per stage and widths 8, 16, 32,
    64 instead of 64..512 (resnet18's [2, 2, 2, 2] blocks of 64..512 would be 45 MB): the stem conv 7x7/2, BN, ReLU,
    max pool 3x3/2, one identity block and three downsampling blocks (1x1/2 conv + BN shortcut), global average pool,
    a linear head of 10 classes."""

    def __init__(self, widths=(8, 16, 32, 64), blocks=(1, 1, 1, 1), num_classes=10):
        nn.Module.__init__(self)
        self._norm_layer = nn.BatchNorm2d
        self.inplanes, self.dilation, self.groups, self.base_width = widths[0], 1, 1, 64
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(BasicBlock, widths[0], blocks[0])
        self.layer2 = self._make_layer(BasicBlock, widths[1], blocks[1], stride=2)
        self.layer3 = self._make_layer(BasicBlock, widths[2], blocks[2], stride=2)
        self.layer4 = self._make_layer(BasicBlock, widths[3], blocks[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(widths[3] * BasicBlock.expansion, num_classes)


def resnet():
    return TinyResNet()


def mobilenet_v3():
    # torchvision's mobilenet_v3_small at a quarter of its width (channels rounded to multiples of 8): Hardswish,
    # squeeze-excite with Hardsigmoid, depthwise 3x3/5x5 convs, adaptive average pool, a 2-layer head of 10 classes.
    return torchvision.models.mobilenet_v3_small(width_mult=0.25, num_classes=10)


def efficientnet():
    # EfficientNet-B0's seven MBConv stages (expand 1/6, kernels 3/5, squeeze-excite with SiLU and Sigmoid,
    # stochastic depth, an identity in eval) at width 0.25 and depth 0.25: one block per stage, channels 8..80, a
    # 320-channel head conv, 10 classes. torchvision's own efficientnet_b0 is 21 MB.
    bneck = functools.partial(MBConvConfig, width_mult=0.25, depth_mult=0.25)
    setting = [bneck(1, 3, 1, 32, 16, 1), bneck(6, 3, 2, 16, 24, 2), bneck(6, 5, 2, 24, 40, 2),
               bneck(6, 3, 2, 40, 80, 3), bneck(6, 5, 1, 80, 112, 3), bneck(6, 5, 2, 112, 192, 4),
               bneck(6, 3, 1, 192, 320, 1)]
    return EfficientNet(setting, dropout=0.2, num_classes=10)


def images(size, g, channels=3):
    return {"input": torch.randn(size["batch"], channels, size["height"], size["width"], generator=g)}


# -- transformers: ViT and wav2vec 2.0 --------------------------------------------------------------------------------

def vit():
    # 32x32 images in 8x8 patches (16 patches + CLS = 17 tokens), hidden 32, 2 layers, 2 heads, FFN 64, pooler.
    cfg = T.ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, image_size=32,
                      patch_size=8, num_channels=3)
    return T.ViTModel(cfg, add_pooling_layer=True)


def beit():
    # BEiT as ViT's sizes, with its relative position bias in every layer (a table indexed by a relative position
    # index the exporters write as a constant, or TorchScript's ScatterND building it) and mean pooling.
    cfg = T.BeitConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                       image_size=32, patch_size=8, num_channels=3, use_relative_position_bias=True,
                       use_mean_pooling=True)
    return T.BeitModel(cfg, add_pooling_layer=True)


def vit_inputs(size, g):
    return {"pixel_values": torch.randn(size["batch"], 3, 32, 32, generator=g)}


def vit_images(size, g):
    return {"pixel_values": torch.randn(size["batch"], 3, size["height"], size["width"], generator=g)}


def wav2vec2():
    # The feature encoder: two 1-D convs of 16 channels (kernel 10 stride 5, kernel 3 stride 2: 10 samples per frame,
    # a frame every 10; the first conv's GroupNorm, GELU), a feature projection to 32, a grouped positional conv
    # (kernel 16, 2 groups, weight-normed), 2 post-norm transformer layers of 2 heads, FFN 64. At least 20 samples.
    cfg = T.Wav2Vec2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                           conv_dim=(16, 16), conv_kernel=(10, 3), conv_stride=(5, 2), num_conv_pos_embeddings=16,
                           num_conv_pos_embedding_groups=2, feat_extract_norm="group", do_stable_layer_norm=False,
                           vocab_size=32)
    return T.Wav2Vec2Model(cfg)


def convnext():
    # Two stages (widths 8, 16; one block each): a 4x4/4 patchify stem with a channels-first LayerNorm, depthwise 7x7
    # convs, LayerNorm over channels (permuted), inverted-bottleneck MLP with GELU, layer scale; a 2x2/2 downsampling
    # conv between the stages; global average pool and LayerNorm (pooler_output). At least 8x8.
    cfg = T.ConvNextConfig(num_channels=3, patch_size=4, num_stages=2, hidden_sizes=[8, 16], depths=[1, 1])
    return T.ConvNextModel(cfg)


def segformer():
    # SegFormer (MiT encoder + all-MLP head): overlapping patch embeddings (7x7/4, 3x3/2 convs), efficient attention
    # whose keys and values come from a strided conv (sequence reduction 2 in stage 1), Mix-FFN with a depthwise 3x3
    # conv; the head projects both stages, upsamples them bilinearly to stage 1's size and classifies 5 classes.
    cfg = T.SegformerConfig(num_channels=3, num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1],
                            hidden_sizes=[16, 32], patch_sizes=[7, 3], strides=[4, 2], num_attention_heads=[1, 2],
                            mlp_ratios=[2, 2], decoder_hidden_size=32, num_labels=5)
    model = T.SegformerForSemanticSegmentation(cfg)
    # transformers initialises the classifier with std 0.02 (logits up to 0.05, within the test's 1e-4 of anything
    # near them); a trained head's scale makes a wrong encoder show.
    torch.nn.init.normal_(model.decode_head.classifier.weight, std=0.5)
    return model


def detr():
    # DETR: a transformers ResNet backbone (basic blocks of 8 and 16; stride 8 overall), the pixel mask resized to the
    # feature map (nearest), sine position embeddings from its cumulative sums, a 1-layer encoder and decoder of 32 over
    # 5 object queries, class logits (4 labels + no-object) and boxes (an MLP, sigmoid). Heads re-drawn at std 0.5:
    # at transformers' 0.02 the logits and boxes barely move with the image, and the test's 1e-4 would pass anything.
    backbone = T.ResNetConfig(num_channels=3, embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], layer_type="basic",
                              out_features=["stage2"])
    cfg = T.DetrConfig(use_timm_backbone=False, backbone_config=backbone, use_pretrained_backbone=False, d_model=32,
                       encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
                       encoder_ffn_dim=64, decoder_ffn_dim=64, num_queries=5, num_labels=4)
    model = T.DetrForObjectDetection(cfg)
    for head in (model.class_labels_classifier, *model.bbox_predictor.layers):
        torch.nn.init.normal_(head.weight, std=0.5)
    return model


def audio(size, g):
    return {"input_values": torch.randn(size["batch"], size["samples"], generator=g)}


# -- plain nn.Modules: CRNN and a GRU classifier --------------------------------------------------------------------

class CRNN(nn.Module):
    """A CRNN text-line recogniser (Shi et al.): grey images [batch, 1, 32, width] through conv 3x3 + BN + ReLU
    stages and max pools (2x2, 2x2, then 2x2 of stride (2, 1) padded (0, 1) and (2, 1): the height 32 goes to 2 and
    the width to width // 4 + 1), a (2, 1) conv to height 1, then a bidirectional LSTM of 32 per direction over the
    width, time-major as CTC wants it, and a linear head: logits [width // 4 + 1, batch, 20]. At least width 4."""

    def __init__(self, classes=20, hidden=32):
        super().__init__()

        def stage(cin, cout):
            return [nn.Conv2d(cin, cout, 3, 1, 1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)]

        self.cnn = nn.Sequential(
            *stage(1, 8), nn.MaxPool2d(2, 2),
            *stage(8, 16), nn.MaxPool2d(2, 2),
            *stage(16, 32), nn.MaxPool2d((2, 2), (2, 1), (0, 1)),
            *stage(32, 32), nn.MaxPool2d((2, 1), (2, 1)),
            nn.Conv2d(32, 32, (2, 1)), nn.BatchNorm2d(32), nn.ReLU(inplace=True))
        self.rnn = nn.LSTM(32, hidden, bidirectional=True)
        self.head = nn.Linear(2 * hidden, classes)

    def forward(self, input):
        x = self.cnn(input)                  # [b, 32, 1, w']
        x = x.squeeze(2).permute(2, 0, 1)    # [w', b, 32]
        x, _ = self.rnn(x)                   # [w', b, 64]
        return self.head(x)                  # [w', b, classes]


def crnn():
    return CRNN()


def text_lines(size, g):
    return {"input": torch.randn(size["batch"], 1, 32, size["width"], generator=g)}


class GRUClassifier(nn.Module):
    """Token ids [batch, seq] -> embeddings of 32 -> a 2-layer batch-first GRU of 32 -> the last layer's final state
    -> a linear head: logits [batch, 5]."""

    def __init__(self, vocab=128, dim=32, classes=5):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.gru = nn.GRU(dim, dim, num_layers=2, batch_first=True)
        self.head = nn.Linear(dim, classes)

    def forward(self, input_ids):
        _, h = self.gru(self.embed(input_ids))  # h: [layers, b, dim]
        return self.head(h[-1])


def gru_classifier():
    return GRUClassifier()


def tokens(size, g):
    return {"input_ids": torch.randint(0, 128, (size["batch"], size["seq"]), generator=g, dtype=torch.int64)}
