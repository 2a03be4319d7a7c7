/*
 * The zoo's convolutional networks: AlexNet, VGG-16/19, ResNet (torchvision's
 * 18..152 and the deep family of SuperNeurons Table 4), Inception-v4,
 * DenseNet-121, MobileNet-V2 and U-Net.  Layer structure, shapes and
 * parameter shapes follow the reference implementations named at each
 * builder; ReLU is in place where they do it in place.  O(layers).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build.h"

/* ---- ResNet ------------------------------------------------------------- */

int zoo_resnet_stages(uint32_t depth, uint32_t n[4], int *bottleneck,
		      uint32_t *effective, struct mp_error *err)
{
	static const struct { uint32_t depth, n[4]; int bottleneck; } std[] = {
		{ 18, { 2, 2, 2, 2 }, 0 }, { 34, { 3, 4, 6, 3 }, 0 },
		{ 50, { 3, 4, 6, 3 }, 1 }, { 101, { 3, 4, 23, 3 }, 1 },
		{ 152, { 3, 8, 36, 3 }, 1 },
	};

	for (size_t i = 0; i < sizeof(std) / sizeof(std[0]); i++)
		if (std[i].depth == depth) {
			memcpy(n, std[i].n, sizeof(std[i].n));
			*bottleneck = std[i].bottleneck;
			*effective = depth;
			return 0;
		}
	if (depth < 134 || depth > 50000) {
		mp_error_set(err, "resnet: depth %u is not 18, 34, 50, 101, 152, nor 3*(6+32+n3+6)+2 for n3 >= 0 (134 to 50000)", depth);
		return -1;
	}
	/* SuperNeurons Table 4: n1 = 6, n2 = 32, n4 = 6, n3 varies */
	n[0] = 6;
	n[1] = 32;
	n[2] = (depth - 2) / 3 - 44;
	n[3] = 6;
	*bottleneck = 1;
	*effective = 3 * (44 + n[2]) + 2;
	return 0;
}

/* torchvision BasicBlock / Bottleneck (v1.5: the stride on the 3x3 conv). */
static struct zt resnet_block(struct zb *b, const struct zt *x, unsigned planes, unsigned stride,
			      bool bottleneck)
{
	unsigned expansion = bottleneck ? 4 : 1;
	struct zt y, sc = *x;

	if (bottleneck) {
		y = conv2d(b, x, planes, 1, 1, 0, false, "conv1");
		y = bn(b, &y, "bn1");
		y = relu(b, &y, "relu1");
		y = conv2d(b, &y, planes, 3, stride, 1, false, "conv2");
		y = bn(b, &y, "bn2");
		y = relu(b, &y, "relu2");
		y = conv2d(b, &y, planes * 4, 1, 1, 0, false, "conv3");
		y = bn(b, &y, "bn3");
	} else {
		y = conv2d(b, x, planes, 3, stride, 1, false, "conv1");
		y = bn(b, &y, "bn1");
		y = relu(b, &y, "relu1");
		y = conv2d(b, &y, planes, 3, 1, 1, false, "conv2");
		y = bn(b, &y, "bn2");
	}
	if (stride != 1 || x->d[1] != (uint64_t)planes * expansion) {
		sc = conv2d(b, x, planes * expansion, 1, stride, 0, false, "downsample.0");
		sc = bn(b, &sc, "downsample.1");
	}
	y = add2(b, &y, &sc, "add");
	return relu(b, &y, bottleneck ? "relu3" : "relu2");
}

static void gen_resnet(struct zb *b, uint32_t batch, uint32_t ih, uint32_t iw,
		       const uint32_t n[4], bool bottleneck)
{
	static const unsigned widths[4] = { 64, 128, 256, 512 };
	struct zt x = data(b, "data", 4, batch, 3, ih, iw, b->dt);

	x = conv2d(b, &x, 64, 7, 2, 3, false, "conv1");
	x = bn(b, &x, "bn1");
	x = relu(b, &x, "relu");
	x = pool(b, &x, true, 3, 2, 1, "maxpool");
	for (unsigned s = 0; s < 4 && !b->failed; s++)
		for (uint32_t i = 0; i < n[s] && !b->failed; i++) {
			size_t save = zb_push(b, "layer%u.%u", s + 1, i);

			x = resnet_block(b, &x, widths[s], i == 0 && s > 0 ? 2 : 1, bottleneck);
			zb_pop(b, save);
		}
	x = apool(b, &x, 1, 1, "avgpool");
	x = flatten(b, &x, "flatten");
	x = fc(b, &x, 1000, true, "fc");
	loss(b, &x, "loss");
}

int zoo_build_resnet(struct zb *b, const struct zoo_opts *o)
{
	uint32_t n[4] = { 0 }, eff = 0;
	int bottleneck = 0;

	if (zoo_resnet_stages(o->depth, n, &bottleneck, &eff, b->err) < 0)
		return -1;
	gen_resnet(b, o->batch, o->image_h, o->image_w, n, bottleneck);
	snprintf(b->name, sizeof(b->name), "resnet%u", eff);
	if (o->depth == 18 || o->depth == 34 || o->depth == 50 || o->depth == 101 || o->depth == 152)
		snprintf(b->desc, sizeof(b->desc), "ResNet-%u (He et al. 2016, torchvision v1.5: stride on the 3x3 conv), stages %u-%u-%u-%u, batch %u, 3x%ux%u.",
			 eff, n[0], n[1], n[2], n[3], o->batch, o->image_h, o->image_w);
	else
		snprintf(b->desc, sizeof(b->desc), "ResNet-%u of SuperNeurons Table 4: depth = 3*(n1+n2+n3+n4)+2 with bottleneck stages %u-%u-%u-%u%s, batch %u, 3x%ux%u.",
			 eff, n[0], n[1], n[2], n[3], eff != o->depth ? " (the requested depth rounded down to that form)" : "",
			 o->batch, o->image_h, o->image_w);
	json_object_set_new(b->gen, "depth", json_integer(o->depth));
	json_object_set_new(b->gen, "effective_depth", json_integer(eff));
	json_object_set_new(b->gen, "stages", dims_json(4, (uint64_t[4]){ n[0], n[1], n[2], n[3] }));
	json_object_set_new(b->gen, "block", json_string(bottleneck ? "bottleneck" : "basic"));
	return 0;
}

/* ---- AlexNet, VGG --------------------------------------------------------- */

/* torchvision alexnet (the one-tower variant without LRN of Krizhevsky 2014). */
static void gen_alexnet(struct zb *b, uint32_t batch, uint32_t ih, uint32_t iw)
{
	struct zt x = data(b, "data", 4, batch, 3, ih, iw, b->dt);

	x = conv2d(b, &x, 64, 11, 4, 2, true, "conv1");
	x = relu(b, &x, "relu1");
	x = pool(b, &x, true, 3, 2, 0, "pool1");
	x = conv2d(b, &x, 192, 5, 1, 2, true, "conv2");
	x = relu(b, &x, "relu2");
	x = pool(b, &x, true, 3, 2, 0, "pool2");
	x = conv2d(b, &x, 384, 3, 1, 1, true, "conv3");
	x = relu(b, &x, "relu3");
	x = conv2d(b, &x, 256, 3, 1, 1, true, "conv4");
	x = relu(b, &x, "relu4");
	x = conv2d(b, &x, 256, 3, 1, 1, true, "conv5");
	x = relu(b, &x, "relu5");
	x = pool(b, &x, true, 3, 2, 0, "pool5");
	if (x.d[2] != 6 || x.d[3] != 6)
		x = apool(b, &x, 6, 6, "avgpool");
	x = flatten(b, &x, "flatten");
	x = dropout(b, &x, "drop6");
	x = fc(b, &x, 4096, true, "fc6");
	x = relu(b, &x, "relu6");
	x = dropout(b, &x, "drop7");
	x = fc(b, &x, 4096, true, "fc7");
	x = relu(b, &x, "relu7");
	x = fc(b, &x, 1000, true, "fc8");
	loss(b, &x, "loss");
}


int zoo_build_alexnet(struct zb *b, const struct zoo_opts *o)
{
	gen_alexnet(b, o->batch, o->image_h, o->image_w);
	snprintf(b->name, sizeof(b->name), "alexnet");
	snprintf(b->desc, sizeof(b->desc), "AlexNet as torchvision builds it (5 conv, 3 fc, no LRN), batch %u, 3x%ux%u.", o->batch, o->image_h, o->image_w);
	return 0;
}

/* torchvision vgg16 / vgg19 (configurations D and E, no batch norm). */
static void gen_vgg(struct zb *b, uint32_t batch, uint32_t ih, uint32_t iw, unsigned depth)
{
	static const unsigned width[5] = { 64, 128, 256, 512, 512 };
	unsigned convs[5] = { 2, 2, 3, 3, 3 };
	struct zt x = data(b, "data", 4, batch, 3, ih, iw, b->dt);
	char nm[32];

	if (depth == 19)
		convs[2] = convs[3] = convs[4] = 4;
	for (unsigned s = 0; s < 5; s++) {
		for (unsigned i = 0; i < convs[s]; i++) {
			snprintf(nm, sizeof(nm), "conv%u_%u", s + 1, i + 1);
			x = conv2d(b, &x, width[s], 3, 1, 1, true, nm);
			snprintf(nm, sizeof(nm), "relu%u_%u", s + 1, i + 1);
			x = relu(b, &x, nm);
		}
		snprintf(nm, sizeof(nm), "pool%u", s + 1);
		x = pool(b, &x, true, 2, 2, 0, nm);
	}
	if (x.d[2] != 7 || x.d[3] != 7)
		x = apool(b, &x, 7, 7, "avgpool");
	x = flatten(b, &x, "flatten");
	x = fc(b, &x, 4096, true, "fc6");
	x = relu(b, &x, "relu6");
	x = dropout(b, &x, "drop6");
	x = fc(b, &x, 4096, true, "fc7");
	x = relu(b, &x, "relu7");
	x = dropout(b, &x, "drop7");
	x = fc(b, &x, 1000, true, "fc8");
	loss(b, &x, "loss");
}

static int build_vgg(struct zb *b, const struct zoo_opts *o, unsigned depth)
{
	gen_vgg(b, o->batch, o->image_h, o->image_w, depth);
	snprintf(b->name, sizeof(b->name), "%s", b->model);
	snprintf(b->desc, sizeof(b->desc), "VGG-%u (Simonyan and Zisserman 2015, torchvision, no batch norm), batch %u, 3x%ux%u.", depth, o->batch, o->image_h, o->image_w);
	return 0;
}

int zoo_build_vgg16(struct zb *b, const struct zoo_opts *o)
{
	return build_vgg(b, o, 16);
}

int zoo_build_vgg19(struct zb *b, const struct zoo_opts *o)
{
	return build_vgg(b, o, 19);
}

/* ---- Inception-v4 --------------------------------------------------------- */

/* BasicConv2d of Szegedy et al. 2016 as in Cadene's pretrainedmodels / timm:
 * conv (no bias), batch norm, ReLU in place. */
static struct zt cbr(struct zb *b, const struct zt *x, unsigned cout, unsigned kh, unsigned kw,
		     unsigned s, unsigned ph, unsigned pw, const char *name)
{
	struct convp c = { cout, kh, kw, s, s, ph, pw, 1, false };
	size_t save = zb_push(b, "%s", name);
	struct zt y = conv(b, x, &c, "conv");

	y = bn(b, &y, "bn");
	y = relu(b, &y, "relu");
	zb_pop(b, save);
	return y;
}

static struct zt cat_n(struct zb *b, unsigned n, const struct zt *xs, const char *suffix)
{
	const struct zt *p[8];

	MP_ASSERT(n <= 8);
	for (unsigned i = 0; i < n; i++)
		p[i] = &xs[i];
	return concat(b, n, p, 1, NULL, suffix);
}

static struct zt inception_a(struct zb *b, const struct zt *x)
{
	struct zt br[4], t;

	br[0] = cbr(b, x, 96, 1, 1, 1, 0, 0, "b0");
	t = cbr(b, x, 64, 1, 1, 1, 0, 0, "b1_0");
	br[1] = cbr(b, &t, 96, 3, 3, 1, 1, 1, "b1_1");
	t = cbr(b, x, 64, 1, 1, 1, 0, 0, "b2_0");
	t = cbr(b, &t, 96, 3, 3, 1, 1, 1, "b2_1");
	br[2] = cbr(b, &t, 96, 3, 3, 1, 1, 1, "b2_2");
	t = pool(b, x, false, 3, 1, 1, "b3_pool");
	br[3] = cbr(b, &t, 96, 1, 1, 1, 0, 0, "b3_1");
	return cat_n(b, 4, br, "concat");
}

static struct zt inception_b(struct zb *b, const struct zt *x)
{
	struct zt br[4], t;

	br[0] = cbr(b, x, 384, 1, 1, 1, 0, 0, "b0");
	t = cbr(b, x, 192, 1, 1, 1, 0, 0, "b1_0");
	t = cbr(b, &t, 224, 1, 7, 1, 0, 3, "b1_1");
	br[1] = cbr(b, &t, 256, 7, 1, 1, 3, 0, "b1_2");
	t = cbr(b, x, 192, 1, 1, 1, 0, 0, "b2_0");
	t = cbr(b, &t, 192, 7, 1, 1, 3, 0, "b2_1");
	t = cbr(b, &t, 224, 1, 7, 1, 0, 3, "b2_2");
	t = cbr(b, &t, 224, 7, 1, 1, 3, 0, "b2_3");
	br[2] = cbr(b, &t, 256, 1, 7, 1, 0, 3, "b2_4");
	t = pool(b, x, false, 3, 1, 1, "b3_pool");
	br[3] = cbr(b, &t, 128, 1, 1, 1, 0, 0, "b3_1");
	return cat_n(b, 4, br, "concat");
}

static struct zt inception_c(struct zb *b, const struct zt *x)
{
	struct zt br[6], t;

	br[0] = cbr(b, x, 256, 1, 1, 1, 0, 0, "b0");
	t = cbr(b, x, 384, 1, 1, 1, 0, 0, "b1_0");
	br[1] = cbr(b, &t, 256, 1, 3, 1, 0, 1, "b1_1a");
	br[2] = cbr(b, &t, 256, 3, 1, 1, 1, 0, "b1_1b");
	t = cbr(b, x, 384, 1, 1, 1, 0, 0, "b2_0");
	t = cbr(b, &t, 448, 3, 1, 1, 1, 0, "b2_1");
	t = cbr(b, &t, 512, 1, 3, 1, 0, 1, "b2_2");
	br[3] = cbr(b, &t, 256, 1, 3, 1, 0, 1, "b2_3a");
	br[4] = cbr(b, &t, 256, 3, 1, 1, 1, 0, "b2_3b");
	t = pool(b, x, false, 3, 1, 1, "b3_pool");
	br[5] = cbr(b, &t, 256, 1, 1, 1, 0, 0, "b3_1");
	return cat_n(b, 6, br, "concat");
}

static void gen_inception_v4(struct zb *b, uint32_t batch, uint32_t ih, uint32_t iw)
{
	struct zt x = data(b, "data", 4, batch, 3, ih, iw, b->dt), br[3], t;
	size_t save;

	x = cbr(b, &x, 32, 3, 3, 2, 0, 0, "stem.conv1");
	x = cbr(b, &x, 32, 3, 3, 1, 0, 0, "stem.conv2");
	x = cbr(b, &x, 64, 3, 3, 1, 1, 1, "stem.conv3");
	save = zb_push(b, "mixed_3a");
	br[0] = pool(b, &x, true, 3, 2, 0, "pool");
	br[1] = cbr(b, &x, 96, 3, 3, 2, 0, 0, "conv");
	x = cat_n(b, 2, br, "concat");
	zb_pop(b, save);
	save = zb_push(b, "mixed_4a");
	t = cbr(b, &x, 64, 1, 1, 1, 0, 0, "b0_0");
	br[0] = cbr(b, &t, 96, 3, 3, 1, 0, 0, "b0_1");
	t = cbr(b, &x, 64, 1, 1, 1, 0, 0, "b1_0");
	t = cbr(b, &t, 64, 1, 7, 1, 0, 3, "b1_1");
	t = cbr(b, &t, 64, 7, 1, 1, 3, 0, "b1_2");
	br[1] = cbr(b, &t, 96, 3, 3, 1, 0, 0, "b1_3");
	x = cat_n(b, 2, br, "concat");
	zb_pop(b, save);
	save = zb_push(b, "mixed_5a");
	br[0] = cbr(b, &x, 192, 3, 3, 2, 0, 0, "conv");
	br[1] = pool(b, &x, true, 3, 2, 0, "pool");
	x = cat_n(b, 2, br, "concat");
	zb_pop(b, save);
	for (unsigned i = 0; i < 4; i++) {
		save = zb_push(b, "inception_a%u", i + 1);
		x = inception_a(b, &x);
		zb_pop(b, save);
	}
	save = zb_push(b, "reduction_a");
	br[0] = cbr(b, &x, 384, 3, 3, 2, 0, 0, "b0");
	t = cbr(b, &x, 192, 1, 1, 1, 0, 0, "b1_0");
	t = cbr(b, &t, 224, 3, 3, 1, 1, 1, "b1_1");
	br[1] = cbr(b, &t, 256, 3, 3, 2, 0, 0, "b1_2");
	br[2] = pool(b, &x, true, 3, 2, 0, "b2_pool");
	x = cat_n(b, 3, br, "concat");
	zb_pop(b, save);
	for (unsigned i = 0; i < 7; i++) {
		save = zb_push(b, "inception_b%u", i + 1);
		x = inception_b(b, &x);
		zb_pop(b, save);
	}
	save = zb_push(b, "reduction_b");
	t = cbr(b, &x, 192, 1, 1, 1, 0, 0, "b0_0");
	br[0] = cbr(b, &t, 192, 3, 3, 2, 0, 0, "b0_1");
	t = cbr(b, &x, 256, 1, 1, 1, 0, 0, "b1_0");
	t = cbr(b, &t, 256, 1, 7, 1, 0, 3, "b1_1");
	t = cbr(b, &t, 320, 7, 1, 1, 3, 0, "b1_2");
	br[1] = cbr(b, &t, 320, 3, 3, 2, 0, 0, "b1_3");
	br[2] = pool(b, &x, true, 3, 2, 0, "b2_pool");
	x = cat_n(b, 3, br, "concat");
	zb_pop(b, save);
	for (unsigned i = 0; i < 3; i++) {
		save = zb_push(b, "inception_c%u", i + 1);
		x = inception_c(b, &x);
		zb_pop(b, save);
	}
	x = apool(b, &x, 1, 1, "avgpool");
	x = flatten(b, &x, "flatten");
	x = fc(b, &x, 1000, true, "fc");
	loss(b, &x, "loss");
}

int zoo_build_inception_v4(struct zb *b, const struct zoo_opts *o)
{
	gen_inception_v4(b, o->batch, o->image_h, o->image_w);
	snprintf(b->name, sizeof(b->name), "inception-v4");
	snprintf(b->desc, sizeof(b->desc), "Inception-v4 (Szegedy et al. 2016, as pretrainedmodels/timm build it, 1000 classes), batch %u, 3x%ux%u.", o->batch, o->image_h, o->image_w);
	return 0;
}

/* ---- DenseNet-121 --------------------------------------------------------- */

/* torchvision densenet121: growth 32, bottleneck 4, blocks 6-12-24-16; each
 * dense layer concatenates every earlier feature map of its block (the
 * default, not the memory-efficient checkpointed variant). */
static void gen_densenet121(struct zb *b, uint32_t batch, uint32_t ih, uint32_t iw)
{
	static const unsigned blocks[4] = { 6, 12, 24, 16 };
	const unsigned growth = 32, bottleneck = 4;
	struct zt x = data(b, "data", 4, batch, 3, ih, iw, b->dt);
	struct zt *feat = mp_xcalloc(64 + 1, sizeof(*feat));
	const struct zt **fp = mp_xcalloc(64 + 1, sizeof(*fp));

	x = conv2d(b, &x, 64, 7, 2, 3, false, "conv0");
	x = bn(b, &x, "norm0");
	x = relu(b, &x, "relu0");
	x = pool(b, &x, true, 3, 2, 1, "pool0");
	for (unsigned s = 0; s < 4 && !b->failed; s++) {
		size_t save = zb_push(b, "denseblock%u", s + 1), save2;
		unsigned nf = 1;

		feat[0] = x;
		for (unsigned i = 0; i < blocks[s]; i++) {
			struct zt y;

			save2 = zb_push(b, "denselayer%u", i + 1);
			for (unsigned k = 0; k < nf; k++)
				fp[k] = &feat[k];
			y = concat(b, nf, fp, 1, NULL, "concat");
			y = bn(b, &y, "norm1");
			y = relu(b, &y, "relu1");
			y = conv2d(b, &y, bottleneck * growth, 1, 1, 0, false, "conv1");
			y = bn(b, &y, "norm2");
			y = relu(b, &y, "relu2");
			feat[nf++] = conv2d(b, &y, growth, 3, 1, 1, false, "conv2");
			zb_pop(b, save2);
		}
		for (unsigned k = 0; k < nf; k++)
			fp[k] = &feat[k];
		x = concat(b, nf, fp, 1, NULL, "concat");
		zb_pop(b, save);
		if (s < 3) {
			save = zb_push(b, "transition%u", s + 1);
			x = bn(b, &x, "norm");
			x = relu(b, &x, "relu");
			x = conv2d(b, &x, (unsigned)(x.d[1] / 2), 1, 1, 0, false, "conv");
			x = pool(b, &x, false, 2, 2, 0, "pool");
			zb_pop(b, save);
		}
	}
	free(feat);
	free(fp);
	x = bn(b, &x, "norm5");
	x = relu(b, &x, "relu5");
	x = apool(b, &x, 1, 1, "avgpool");
	x = flatten(b, &x, "flatten");
	x = fc(b, &x, 1000, true, "classifier");
	loss(b, &x, "loss");
}

int zoo_build_densenet121(struct zb *b, const struct zoo_opts *o)
{
	gen_densenet121(b, o->batch, o->image_h, o->image_w);
	snprintf(b->name, sizeof(b->name), "densenet-121");
	snprintf(b->desc, sizeof(b->desc), "DenseNet-121 (Huang et al. 2017, torchvision, concatenating every earlier feature map), batch %u, 3x%ux%u.", o->batch, o->image_h, o->image_w);
	return 0;
}

/* ---- MobileNet-V2 --------------------------------------------------------- */

static struct zt cbr6(struct zb *b, const struct zt *x, unsigned cout, unsigned k, unsigned s,
		      unsigned groups, bool act_after, const char *name)
{
	struct convp c = { cout, k, k, s, s, k / 2, k / 2, groups, false };
	size_t save = zb_push(b, "%s", name);
	struct zt y = conv(b, x, &c, "conv");

	y = bn(b, &y, "bn");
	if (act_after)
		y = act(b, &y, "relu6", true, "relu6");
	zb_pop(b, save);
	return y;
}

/* torchvision mobilenet_v2 (width 1.0): inverted residuals, ReLU6 in place. */
static void gen_mobilenet_v2(struct zb *b, uint32_t batch, uint32_t ih, uint32_t iw)
{
	static const unsigned cfg[7][4] = {
		{ 1, 16, 1, 1 }, { 6, 24, 2, 2 }, { 6, 32, 3, 2 }, { 6, 64, 4, 2 },
		{ 6, 96, 3, 1 }, { 6, 160, 3, 2 }, { 6, 320, 1, 1 },
	};
	struct zt x = data(b, "data", 4, batch, 3, ih, iw, b->dt);
	unsigned blk = 1;

	x = cbr6(b, &x, 32, 3, 2, 1, true, "stem");
	for (unsigned r = 0; r < 7; r++)
		for (unsigned i = 0; i < cfg[r][2]; i++, blk++) {
			unsigned t = cfg[r][0], cout = cfg[r][1], s = i ? 1 : cfg[r][3];
			unsigned hid = (unsigned)x.d[1] * t;
			size_t save = zb_push(b, "block%u", blk);
			struct zt y = x;

			if (t != 1)
				y = cbr6(b, &y, hid, 1, 1, 1, true, "expand");
			y = cbr6(b, &y, hid, 3, s, hid, true, "dw");
			y = cbr6(b, &y, cout, 1, 1, 1, false, "project");
			if (s == 1 && x.d[1] == cout)
				y = add2(b, &y, &x, "add");
			x = y;
			zb_pop(b, save);
		}
	x = cbr6(b, &x, 1280, 1, 1, 1, true, "head");
	x = apool(b, &x, 1, 1, "avgpool");
	x = flatten(b, &x, "flatten");
	x = dropout(b, &x, "dropout");
	x = fc(b, &x, 1000, true, "classifier");
	loss(b, &x, "loss");
}

int zoo_build_mobilenet_v2(struct zb *b, const struct zoo_opts *o)
{
	gen_mobilenet_v2(b, o->batch, o->image_h, o->image_w);
	snprintf(b->name, sizeof(b->name), "mobilenet-v2");
	snprintf(b->desc, sizeof(b->desc), "MobileNet-V2 (Sandler et al. 2018, torchvision, width 1.0), batch %u, 3x%ux%u.", o->batch, o->image_h, o->image_w);
	return 0;
}

/* ---- U-Net ---------------------------------------------------------------- */

/* Ronneberger et al. 2015, Fig. 1: valid 3x3 convolutions with ReLU, 2x2 max
 * pooling, 2x2 up-convolutions halving the channels, skip features cropped
 * (a view: the concatenation reads the larger map), dropout at the end of
 * the contracting path, a 1x1 convolution to 2 classes; 1 input channel. */
static void gen_unet(struct zb *b, uint32_t batch, uint32_t ih, uint32_t iw)
{
	struct zt x = data(b, "data", 4, batch, 1, ih, iw, b->dt), skip[4];
	unsigned w = 64;

	for (unsigned lv = 0; lv < 4; lv++, w *= 2) {
		size_t save = zb_push(b, "enc%u", lv + 1);

		x = conv2d(b, &x, w, 3, 1, 0, true, "conv1");
		x = relu(b, &x, "relu1");
		x = conv2d(b, &x, w, 3, 1, 0, true, "conv2");
		x = relu(b, &x, "relu2");
		if (!b->failed && (x.d[2] % 2 || x.d[3] % 2))
			zb_fail(b, "image %ux%u gives an odd %llux%llu map before pooling at level %u (the valid-convolution U-Net needs even sizes there; 572x572 is the paper's)",
				ih, iw, (unsigned long long)x.d[2], (unsigned long long)x.d[3], lv + 1);
		skip[lv] = x;
		x = pool(b, &x, true, 2, 2, 0, "pool");
		zb_pop(b, save);
	}
	{
		size_t save = zb_push(b, "bottom");

		x = conv2d(b, &x, w, 3, 1, 0, true, "conv1");
		x = relu(b, &x, "relu1");
		x = conv2d(b, &x, w, 3, 1, 0, true, "conv2");
		x = relu(b, &x, "relu2");
		x = dropout(b, &x, "dropout");
		zb_pop(b, save);
	}
	for (unsigned lv = 4; lv-- > 0;) {
		size_t save = zb_push(b, "dec%u", lv + 1);
		const struct zt *xs[2];
		struct zt shape;

		w /= 2;
		x = upconv(b, &x, w, "upconv");
		if (!b->failed && (skip[lv].d[2] < x.d[2] || skip[lv].d[3] < x.d[3]))
			zb_fail(b, "image %ux%u is too small", ih, iw);
		xs[0] = &skip[lv];
		xs[1] = &x;
		shape = x;
		shape.d[1] = 2 * (uint64_t)w;
		x = concat(b, 2, xs, 1, &shape, "concat");
		x = conv2d(b, &x, w, 3, 1, 0, true, "conv1");
		x = relu(b, &x, "relu1");
		x = conv2d(b, &x, w, 3, 1, 0, true, "conv2");
		x = relu(b, &x, "relu2");
		zb_pop(b, save);
	}
	x = conv2d(b, &x, 2, 1, 1, 0, true, "final");
	loss(b, &x, "loss");
}

int zoo_build_unet(struct zb *b, const struct zoo_opts *o)
{
	gen_unet(b, o->batch, o->image_h, o->image_w);
	snprintf(b->name, sizeof(b->name), "unet");
	snprintf(b->desc, sizeof(b->desc), "U-Net (Ronneberger et al. 2015, valid convolutions), batch %u, 1x%ux%u in, 2 classes.", o->batch, o->image_h, o->image_w);
	return 0;
}
